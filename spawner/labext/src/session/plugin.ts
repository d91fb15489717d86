// The session's page, usable sooner: the launcher and the file browser as soon as JupyterLab has restored its
// layout, not half a second later.
//
// Why a plugin of ours: JupyterLab (4.x) opens its first launcher and lists the file browser's folder only once
// its router has run every route of the URL (filebrowser-extension, on IRouter.routed), and the state plugin's
// route (apputils-extension:state, loadState) ends by awaiting a save of the workspace that a Debouncer holds for
// its default 500 ms, then its PUT, and the handler lists the folder before it opens the launcher.  The layout
// was restored before all that: on the dev cluster the launcher now comes about a second sooner, 0.9 s after
// JupyterLab's scripts have run instead of 1.9 s (docs/developers/benchmarks.md).  This opens
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
// JupyterLab hides the file browser's listing while this class is on; its own handler takes it off after routing
const RESTORING = 'jp-mod-restoring';

/** The file browser's saved folder and its listing, shown: what JupyterLab's handler does after routing (its
 * restore is done once: the handler's later call returns at once).  Should that call come first (a home folder
 * slower to answer than the workspace's save), its listing of the root shows until the saved folder's does. */
async function showFiles(browser: IDefaultFileBrowser): Promise<void> {
  try {
    await browser.model.restore(browser.id);
    await browser.model.refresh();
    browser.removeClass(RESTORING);
  } catch (reason) {
    console.error('DS Portal: could not list the files early', reason);
  }
}

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
    // ?file-browser-path=: JupyterLab opens that folder itself once the browser is restored (and restores it
    // without listing the saved one): the files are left to it
    const namedFolder = new URLSearchParams(window.location.search).has(
      'file-browser-path'
    );
    void app.restored
      .then(async () => {
        if (browser && !namedFolder) {
          void showFiles(browser);
        }
        if (
          labShell.isEmpty('main') &&
          app.commands.hasCommand(CREATE_LAUNCHER)
        ) {
          await app.commands.execute(CREATE_LAUNCHER);
        }
      })
      .catch(reason =>
        console.error('DS Portal: could not open the launcher early', reason)
      );
  }
};
