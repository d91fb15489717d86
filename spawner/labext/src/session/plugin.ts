// The session's page, usable sooner: the launcher and the file browser as soon as JupyterLab has restored its
// layout, not half a second later.
//
// Why a plugin of ours: JupyterLab (4.x) opens its first launcher and lists the file browser's folder only once
// its router has run every route of the URL (filebrowser-extension, on IRouter.routed), and the state plugin's
// route (apputils-extension:state, loadState) ends by awaiting a save of the workspace that a Debouncer holds for
// its default 500 ms, then its PUT.  The layout was restored before that save; on the dev cluster the launcher
// came 0.6-0.8 s after it, in a bare `jupyter lab` as in a session (docs/developers/benchmarks.md).  This opens
// both once the layout is restored, as JupyterLab's own handler would: the launcher only when the main area is
// empty (a restored notebook keeps its place), and neither for a URL that names a file or folder
// (/lab/tree/...), which JupyterLab's handler opens itself.  That handler still runs after routing: it finds the
// file browser restored and the main area not empty, and adds nothing.
import {
  ILabShell,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { PageConfig } from '@jupyterlab/coreutils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';

import { opensAPath } from './treepath';

const CREATE_LAUNCHER = 'launcher:create';

export const sessionPagePlugin: JupyterFrontEndPlugin<void> = {
  id: 'dsportal:session-page',
  description:
    'The launcher and the file browser as soon as the layout is restored, not after the workspace is saved.',
  autoStart: true,
  optional: [ILabShell, IDefaultFileBrowser],
  activate: (
    app: JupyterFrontEnd,
    labShell: ILabShell | null,
    browser: IDefaultFileBrowser | null
  ) => {
    if (!labShell || opensAPath(PageConfig.getOption('treePath'))) {
      return;
    }
    void app.restored.then(async () => {
      if (browser) {
        // its saved folder (JupyterLab's own restore, done once: the router's later call returns at once), then
        // its listing, as the router's handler does
        void browser.model
          .restore(browser.id)
          .then(() => browser.model.refresh());
      }
      if (
        labShell.isEmpty('main') &&
        app.commands.hasCommand(CREATE_LAUNCHER)
      ) {
        await app.commands.execute(CREATE_LAUNCHER);
      }
    });
  }
};
