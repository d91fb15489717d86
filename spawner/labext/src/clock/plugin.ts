// The session clock's plugin: the time left and the GPUs in the status bar, and "Extend this session"
// in the command palette.
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { IStatusBar } from '@jupyterlab/statusbar';

import { SessionClock } from './clock';
import { NO_ARGUMENTS } from '../common/commands';
import { GpuUsage } from './gpus';

const EXTEND = 'dsportal:extend-session';

export const clockPlugin: JupyterFrontEndPlugin<SessionClock> = {
  id: 'dsportal:session-clock',
  description:
    "The session's time left, warnings before its end, saving before Slurm ends it.",
  autoStart: true,
  requires: [IDocumentManager],
  optional: [IStatusBar, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    docManager: IDocumentManager,
    statusBar: IStatusBar | null,
    palette: ICommandPalette | null
  ) => {
    const clock = new SessionClock(app, docManager);
    if (statusBar) {
      statusBar.registerStatusItem('dsportal:time-left', {
        item: clock.widget,
        align: 'left',
        rank: 1000
      });
      const gpus = new GpuUsage();
      statusBar.registerStatusItem('dsportal:gpu-usage', {
        item: gpus.widget,
        align: 'left',
        rank: 1001
      });
      gpus.start();
    }
    app.commands.addCommand(EXTEND, {
      label: 'Extend this session',
      caption:
        'Ask for more time for this session (where the cluster allows it)',
      describedBy: NO_ARGUMENTS,
      isEnabled: () => clock.canExtend,
      execute: () => clock.offerExtension()
    });
    if (palette) {
      palette.addItem({ command: EXTEND, category: 'DS Portal' });
    }
    clock.start();
    return clock;
  }
};
