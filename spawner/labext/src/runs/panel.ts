// DS Portal: the "Jobs" panel in the left sidebar — the user's Slurm jobs (those the portal submitted
// and their others), what each is doing in words, and Cancel / Run again / Output / Log.
// The list comes from dsportal/runs (active jobs first, then the history); the panel keeps one row
// element per job and updates it in place, so an open log and the buttons survive each refresh.
// What a row says is runs/rows.ts. A sweep is one row, with its progress; its "Table" button opens its
// tasks, results and plot in a main-area tab of their own (runs/sweeptable.ts).
import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { LabIcon } from '@jupyterlab/ui-components';
import { CommandRegistry } from '@lumino/commands';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { element } from '../common/dom';
import { Repeat } from '../common/repeat';
import { Reply, runsApi } from './api';
import {
  Action,
  actionsOf,
  buttonOf,
  mailNote,
  rowWords,
  sweepCounts,
  sweepProgress
} from './rows';
import { SweepAction, SweepTabs } from './sweeptable';
import { IJob, INotify } from './types';

export const RUNS_PANEL_ID = 'dsportal-jobs';
const VISIBLE_EVERY_MS = 10000;
const HIDDEN_EVERY_MS = 30000;
const LOG_EVERY_MS = 3000;
const LOG_LINES = 200;
const READING_LOG = 'Reading the log…';

export const runsIcon = new LabIcon({
  name: 'dsportal:jobs',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M4 4h16v3H4zm0 6.5h16v3H4zM4 17h10v3H4zm12 0 4 1.5-4 1.5z"/></g></svg>'
});

// --- one job ---------------------------------------------------------------------------------------

class JobRow {
  constructor(
    private readonly panel: RunsPanel,
    private job: IJob
  ) {
    this.node = element('div', 'dsportal-job');
    this.node.dataset.jobId = job.job_id;
    const head = element('div', 'dsportal-job-head');
    head.append(this.name, this.badge);
    this.log.hidden = true;
    this.progress.setAttribute('role', 'img');
    this.logRepeat = new Repeat(
      () => this.loadLog(),
      () => LOG_EVERY_MS
    );
    this.node.append(
      head,
      this.state,
      this.progress,
      this.facts,
      this.why,
      this.actions,
      this.log
    );
    this.update(job);
  }

  readonly node: HTMLDivElement;

  update(job: IJob): void {
    this.job = job;
    const words = rowWords(job);
    this.node.dataset.state = job.state;
    this.node.classList.toggle('dsportal-job-active', job.active);
    this.name.textContent = words.name;
    this.name.title = words.nameTitle;
    this.badge.textContent = words.badge;
    this.badge.title = words.badgeTitle;
    this.state.textContent = words.state;
    this.facts.textContent = words.facts;
    this.facts.title = words.factsTitle;
    this.why.textContent = words.why;
    this.why.hidden = !this.why.textContent;
    this.showProgress(job);
    this.showActions(actionsOf(job));
    if (!job.log && !this.log.hidden) {
      this.toggleLog();
    }
    this.panel.sweepTabs.update(job);
  }

  logToEnd(): void {
    if (!this.log.hidden) {
      this.log.scrollTop = this.log.scrollHeight;
    }
  }

  dispose(): void {
    this.logRepeat.stop();
    this.node.remove();
  }

  // A sweep's counts as a bar: completed, failed, ... running, waiting.
  private showProgress(job: IJob): void {
    this.progress.hidden = !job.sweep;
    this.node.classList.toggle('dsportal-job-sweep', Boolean(job.sweep));
    if (!job.sweep) {
      return;
    }
    const words = sweepCounts(job.sweep);
    this.progress.setAttribute('aria-label', `Progress: ${words}`);
    this.progress.title = words;
    this.progress.replaceChildren(
      ...sweepProgress(job.sweep).map(part => {
        const bar = element(
          'span',
          `dsportal-sweep-progress-part dsportal-sweep-progress-${part.kind}`
        );
        bar.style.width = `${part.percent}%`;
        return bar;
      })
    );
  }

  // Buttons are rebuilt only when the set changes, so a click is never lost to a refresh.
  private showActions(actions: Action[]): void {
    const key = actions.join(' ');
    if (key === this.actionsShown) {
      return;
    }
    this.actionsShown = key;
    this.actions.replaceChildren(
      ...actions.map(action => {
        const [label, title] = buttonOf(this.job, action);
        const button = element('button', 'dsportal-job-button', label);
        button.dataset.action = action;
        button.title = title;
        if (action === 'table') {
          button.setAttribute(
            'aria-label',
            `Table of sweep ${this.job.job_id}`
          );
        }
        button.addEventListener('click', () => this.act(action, button));
        return button;
      })
    );
    this.markLogButton();
  }

  private async act(action: Action, button: HTMLButtonElement): Promise<void> {
    if (action === 'log') {
      this.toggleLog();
      return;
    }
    if (action === 'table') {
      this.panel.sweepTabs.open(this.job);
      return;
    }
    button.disabled = true;
    try {
      await this.panel.act(action, this.job);
    } finally {
      button.disabled = false;
    }
  }

  private toggleLog(): void {
    this.log.hidden = !this.log.hidden;
    this.markLogButton();
    if (this.log.hidden) {
      this.logRepeat.stop();
    } else {
      this.log.textContent = READING_LOG;
      void this.logRepeat.start();
    }
  }

  private markLogButton(): void {
    const button = this.actions.querySelector('[data-action="log"]');
    if (button) {
      button.textContent = this.log.hidden ? 'Log' : 'Hide log';
      button.setAttribute('aria-expanded', String(!this.log.hidden));
    }
  }

  // The tail of the log, every 3 s while it is shown (and the job runs); it follows the end unless the
  // user scrolled up.
  private async loadLog(): Promise<void> {
    if (!this.panel.isVisible) {
      return;
    }
    const answer = await runsApi.log(this.job.job_id, LOG_LINES);
    if (this.log.hidden) {
      return;
    }
    const atEnd =
      this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 8;
    const first = this.log.textContent === READING_LOG;
    this.log.textContent = answer.ok
      ? answer.body.log || '(the log is empty so far)'
      : answer.body.message;
    this.log.classList.toggle('dsportal-job-log-error', !answer.ok);
    if (atEnd || first) {
      this.logToEnd();
    }
    if (answer.ok && !this.job.active) {
      this.logRepeat.stop(); // a finished job's log does not grow
    }
  }

  private readonly name = element('span', 'dsportal-job-name');
  private readonly badge = element('span', 'dsportal-job-id');
  private readonly state = element('div', 'dsportal-job-state');
  private readonly facts = element('div', 'dsportal-job-facts');
  private readonly why = element('div', 'dsportal-job-why');
  private readonly actions = element('div', 'dsportal-job-actions');
  private readonly log = element('pre', 'dsportal-job-log');
  private readonly progress = element('div', 'dsportal-sweep-progress');
  private readonly logRepeat: Repeat;
  private actionsShown = '';
}

// --- the panel -------------------------------------------------------------------------------------

export namespace RunsPanel {
  export interface IOptions {
    commands: CommandRegistry; // the application's commands (docmanager:open)
    onList: (jobs: IJob[]) => void; // called with each list the server sends (the word when a job ends)
    onSubmitted: (job: IJob) => void; // called when "Run again" submitted a job
    mainArea: SweepTabs.IMainArea; // where a sweep's tab opens (the shell's main area)
  }
}

export class RunsPanel extends Widget {
  constructor(options: RunsPanel.IOptions) {
    super();
    this.options = options;
    this.id = RUNS_PANEL_ID;
    this.addClass('dsportal-jobs');
    this.title.icon = runsIcon;
    this.title.caption = 'Jobs: notebooks and scripts running as Slurm jobs';
    this.mail = element('input');
    this.build();
    this.sweepTabs = new SweepTabs({
      commands: options.commands,
      onSubmitted: job => options.onSubmitted(job),
      refreshList: () => this.refreshSoon(),
      act: (action: SweepAction, job: IJob) => this.act(action, job),
      mainArea: options.mainArea,
      icon: runsIcon
    });
    this.repeat = new Repeat(
      () => this.refresh(),
      () => this.pace()
    );
  }

  readonly cancelledHere = new Set<string>(); // job ids cancelled with this panel's button: no word on their end
  readonly sweepTabs: SweepTabs; // the sweeps' tabs in the main area, one per sweep

  start(): void {
    void this.repeat.start();
    // back to the visible pace at once when the browser tab is seen again
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden && this.isVisible) {
        void this.refreshSoon();
      }
    });
  }

  // Asks for the list now (after an action, or when the panel is shown), or right after the
  // request in flight.
  refreshSoon(): Promise<void> {
    return this.repeat.now();
  }

  async act(action: Action, job: IJob): Promise<void> {
    if (action === 'output') {
      await this.options.commands.execute('docmanager:open', {
        path: job.output
      });
      return;
    }
    if (action === 'cancel' && !(await confirmCancel(job))) {
      return;
    }
    if (action === 'cancel') {
      const answer = await runsApi.cancel(job.job_id);
      if (!answer.ok) {
        Notification.error(answer.body.message, { autoClose: 10000 });
        return;
      }
      this.cancelledHere.add(job.job_id);
    } else {
      const answer = await runsApi.again(job.job_id);
      if (!answer.ok) {
        Notification.error(answer.body.message, { autoClose: 10000 });
        return;
      }
      this.options.onSubmitted(answer.body.job);
    }
    await this.refreshSoon();
  }

  dispose(): void {
    this.repeat.stop();
    for (const row of this.rows.values()) {
      row.dispose();
    }
    this.sweepTabs.dispose();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    if (!this.notifyLoaded) {
      void this.loadMail();
    }
    void this.refreshSoon();
  }

  private build(): void {
    const heading = element('h2', 'dsportal-jobs-title', 'Jobs');
    this.mail.type = 'checkbox';
    this.mail.name = 'mail';
    this.mail.disabled = true;
    this.mail.addEventListener('change', () => this.setMail());
    const label = element('label', 'dsportal-jobs-notify');
    label.append(
      this.mail,
      document.createTextNode(' E-mail me when a job ends or a session starts')
    );
    this.error.setAttribute('role', 'alert');
    this.error.hidden = true;
    this.empty.hidden = true;
    this.node.append(
      heading,
      label,
      this.mailNote,
      this.error,
      this.empty,
      this.active
    );
    this.more.hidden = true;
    this.node.append(this.historyHeading, this.history, this.more);
  }

  private pace(): number {
    return this.isVisible && !document.hidden
      ? VISIBLE_EVERY_MS
      : HIDDEN_EVERY_MS;
  }

  private async refresh(): Promise<void> {
    const answer = await runsApi.list();
    // Slurm or its accounting may not answer: say so, and keep the last list.
    const problem = answer.ok ? answer.body.error || '' : answer.body.message;
    this.error.textContent = problem;
    this.error.hidden = !problem;
    if (answer.ok) {
      const jobs = answer.body.jobs || [];
      this.showJobs(jobs);
      this.options.onList(jobs);
      const total = answer.body.total ?? jobs.length;
      this.more.hidden = total <= jobs.length;
      this.more.textContent = `The newest ${jobs.length} of your ${total} jobs are shown.`;
    }
  }

  private showJobs(jobs: IJob[]): void {
    const listed = new Set(jobs.map(job => job.job_id));
    for (const [id, row] of this.rows) {
      if (!listed.has(id)) {
        row.dispose();
        this.rows.delete(id);
      }
    }
    const place = { active: 0, history: 0 }; // the next position in each list
    for (const job of jobs) {
      let row = this.rows.get(job.job_id);
      if (row) {
        row.update(job);
      } else {
        row = new JobRow(this, job);
        this.rows.set(job.job_id, row);
      }
      if (job.active) {
        placeRow(this.active, row, place.active++);
      } else {
        placeRow(this.history, row, place.history++);
      }
    }
    this.historyHeading.hidden = !jobs.some(job => !job.active);
    this.empty.hidden = jobs.length > 0;
  }

  private async loadMail(): Promise<void> {
    const answer = await runsApi.notify();
    if (answer.ok) {
      this.notifyLoaded = true;
    }
    this.showMail(answer);
  }

  private async setMail(): Promise<void> {
    const wanted = this.mail.checked;
    this.mail.disabled = true;
    const answer = await runsApi.setNotify(wanted);
    if (!answer.ok) {
      this.mail.checked = !wanted; // the server kept the old choice
    }
    this.showMail(answer);
  }

  private showMail(answer: Reply<INotify>): void {
    this.mailNote.classList.toggle('dsportal-jobs-notify-error', !answer.ok);
    if (!answer.ok) {
      this.mail.disabled = !this.notifyLoaded;
      this.mailNote.textContent = answer.body.message;
      return;
    }
    this.mail.checked = Boolean(answer.body.mail);
    this.mail.disabled = !answer.body.address;
    this.mailNote.textContent = mailNote(answer.body);
  }

  private readonly options: RunsPanel.IOptions;
  private readonly rows = new Map<string, JobRow>();
  private readonly repeat: Repeat;
  private notifyLoaded = false;
  private readonly mail: HTMLInputElement;
  private readonly mailNote = element('div', 'dsportal-jobs-notify-note');
  private readonly error = element('div', 'dsportal-jobs-error');
  private readonly empty = element(
    'p',
    'dsportal-jobs-empty',
    'No jobs yet. To start one, right-click a notebook, a .py or a .sh file in the file browser and ' +
      'choose “Run as a job…”, or use the button in a notebook’s toolbar.'
  );
  private readonly active = element(
    'div',
    'dsportal-jobs-list dsportal-jobs-active'
  );
  private readonly historyHeading = element(
    'h3',
    'dsportal-jobs-history',
    'History'
  );
  private readonly history = element(
    'div',
    'dsportal-jobs-list dsportal-jobs-finished'
  );
  private readonly more = element('p', 'dsportal-jobs-more'); // the list is one page
}

// Puts the row at its place in the server's order; a row already there is left alone, as moving an
// element resets the scroll position of its open log.
function placeRow(list: HTMLElement, row: JobRow, index: number): void {
  const there = list.children[index] || null;
  if (there !== row.node) {
    list.insertBefore(row.node, there);
    row.logToEnd();
  }
}

async function confirmCancel(job: IJob): Promise<boolean> {
  if (job.sweep) {
    const result = await showDialog({
      title: `Cancel the rest of sweep ${job.job_id}?`,
      body:
        `The tasks of ${job.name || job.path} that have not ended stop now, and those waiting never start; ` +
        'those that ended keep their outputs and results.',
      buttons: [
        Dialog.cancelButton({ label: 'Keep it running' }),
        Dialog.warnButton({ label: 'Cancel the rest' })
      ]
    });
    return result.button.accept;
  }
  const result = await showDialog({
    title: `Cancel job ${job.job_id}?`,
    body: `${job.name || job.path} stops now, and Slurm gives its nodes to others.`,
    buttons: [
      Dialog.cancelButton({ label: 'Keep it running' }),
      Dialog.warnButton({ label: 'Cancel job' })
    ]
  });
  return result.button.accept;
}
