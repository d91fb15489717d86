// DS Portal: notebooks and scripts as Slurm jobs — the "Run as a job…" command (file browser menu,
// notebook toolbar), the Jobs panel in the left sidebar, and a word when a job this page saw running ends.
// The server side is the Jupyter server extension behind dsportal/runs (spawner/jupyter/runs/, which
// forwards to the hub).
import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { Notification, ToolbarButton } from '@jupyterlab/apputils';
import { DocumentRegistry, IDocumentWidget } from '@jupyterlab/docregistry';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { LabIcon } from '@jupyterlab/ui-components';

import { pathArgument, pathArguments } from '../common/commands';
import { isGuest } from '../sharing/guest';
import { runAsJob } from './dialog';
import { RUNS_PANEL_ID, RunsPanel } from './panel';
import { endedNotice, jobsThatEnded, submittedWords } from './rows';
import { IJob } from './types';

const RUN = 'dsportal:run-as-job';
const RUNNABLE = /\.(ipynb|py|sh)$/i;

const runIcon = new LabIcon({
  name: 'dsportal:run-as-job',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M3 4h11v2H3zm0 5h8v2H3zm0 5h6v2H3zm10-3v10l8-5z"/></g></svg>'
});

// The one runnable file selected in the file browser, or null.
function selectedRunnable(factory: IFileBrowserFactory): string | null {
  const browser = factory.tracker.currentWidget;
  if (!browser) {
    return null;
  }
  const items = Array.from(browser.selectedItems());
  return items.length === 1 &&
    items[0].type !== 'directory' &&
    RUNNABLE.test(items[0].name)
    ? items[0].path
    : null;
}

function showJobsAction(app: JupyterFrontEnd): Notification.IAction {
  return {
    label: 'Show jobs',
    callback: () => app.shell.activateById(RUNS_PANEL_ID)
  };
}

function openOutputAction(
  app: JupyterFrontEnd,
  job: IJob
): Notification.IAction {
  return {
    label: 'Open output',
    callback: () =>
      void app.commands.execute('docmanager:open', { path: job.output })
  };
}

function saySubmitted(app: JupyterFrontEnd, job: IJob): void {
  Notification.success(submittedWords(job), {
    autoClose: 5000,
    actions: [showJobsAction(app)]
  });
}

function sayEnded(app: JupyterFrontEnd, job: IJob): void {
  const { message, type, autoClose } = endedNotice(job);
  // a sweep's outputs are its tasks': its table opens them
  const actions =
    job.output && !job.sweep
      ? [openOutputAction(app, job), showJobsAction(app)]
      : [showJobsAction(app)];
  Notification.emit(message, type, { autoClose, actions });
}

// The notebook toolbar's button: the file on disk is what the job runs, so unsaved edits are saved first.
function addToolbarButton(app: JupyterFrontEnd): void {
  app.docRegistry.addWidgetExtension('Notebook', {
    createNew: (panel: IDocumentWidget, context: DocumentRegistry.Context) => {
      const button = new ToolbarButton({
        className: 'dsportal-run-as-job-button',
        icon: runIcon,
        tooltip: 'Run as a Slurm job… (saves the notebook first)',
        onClick: async () => {
          if (context.model.dirty && !context.model.readOnly) {
            await context.save();
          }
          await app.commands.execute(RUN, {
            path: context.localPath || context.path
          });
        }
      });
      if (
        !panel.toolbar.insertAfter('cellType', 'dsportal-run-as-job', button)
      ) {
        panel.toolbar.addItem('dsportal-run-as-job', button);
      }
      return button;
    }
  });
}

export const runsPlugin: JupyterFrontEndPlugin<RunsPanel | null> = {
  id: 'dsportal:runs',
  description:
    'Notebooks and scripts as Slurm jobs: Run as a job…, the Jobs panel, a word when a job ends.',
  autoStart: true,
  requires: [IFileBrowserFactory],
  optional: [ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    factory: IFileBrowserFactory,
    restorer: ILayoutRestorer | null
  ) => {
    if (isGuest()) {
      return null; // the jobs are the session owner's: a guest has no panel and no "Run as a job"
    }
    const seenActive = new Set<string>();
    const panel: RunsPanel = new RunsPanel({
      commands: app.commands,
      onList: jobs =>
        jobsThatEnded(seenActive, jobs)
          .filter(job => !panel.cancelledHere.has(job.job_id)) // the user knows: they cancelled it here
          .forEach(job => sayEnded(app, job)),
      onSubmitted: job => saySubmitted(app, job),
      mainArea: {
        add: widget => app.shell.add(widget, 'main'),
        activate: widget => app.shell.activateById(widget.id)
      }
    });
    app.shell.add(panel, 'left', { rank: 700 });
    if (restorer) {
      restorer.add(panel, RUNS_PANEL_ID);
    }
    app.commands.addCommand(RUN, {
      label: 'Run as a job…',
      caption: 'Run this notebook or script as a Slurm batch job of its own',
      icon: runIcon,
      describedBy: pathArguments(
        'The notebook, .py or .sh file to run (else the one selected in the file browser)'
      ),
      isVisible: args =>
        Boolean(pathArgument(args)) || selectedRunnable(factory) !== null,
      execute: async args => {
        const path = pathArgument(args) || selectedRunnable(factory);
        if (!path) {
          return;
        }
        const job = await runAsJob(app.serviceManager.contents.localPath(path));
        if (job) {
          saySubmitted(app, job);
          void panel.refreshSoon();
        }
      }
    });
    app.contextMenu.addItem({
      command: RUN,
      selector: '.jp-DirListing-item[data-isdir="false"]',
      rank: 2
    });
    addToolbarButton(app);
    panel.start(); // every 30 s while the panel is hidden, so that the word on an ending comes anyway
    return panel;
  }
};
