// DS Portal: apps in their own browser tab: VS Code and MLflow for a folder (the launcher, a folder's menu),
// the user's Streamlit or Dash app from its file ("Open as app"), and the page of running apps. Each app
// serves on a private Unix socket of the session; the server side is spawner/jupyter/apps/ (dsportal/apps).
import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { URLExt } from '@jupyterlab/coreutils';
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { ServerConnection } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';

import { NO_ARGUMENTS, pathArgument, pathArguments } from '../common/commands';
import { openInNewTab } from '../common/request';

const OPEN_AS_APP = 'dsportal:open-as-app';
const LIST = 'dsportal:list-apps';

export interface IAppKind {
  name: string;
  title: string;
  target: 'file' | 'folder';
}

const icon = new LabIcon({
  name: 'dsportal:app',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M3 4h18v16H3zm2 4v10h14V8z"/></g></svg>'
});

function api(path: string): [string, ServerConnection.ISettings] {
  const settings = ServerConnection.makeSettings();
  return [URLExt.join(settings.baseUrl, 'dsportal/apps', path), settings];
}

// Start (or find) an app and show it in a new browser tab.
export async function openApp(kind: string, target: string): Promise<void> {
  const [url, settings] = api('api/instances');
  await openInNewTab(
    () =>
      ServerConnection.makeRequest(
        url,
        { method: 'POST', body: JSON.stringify({ kind, target }) },
        settings
      ),
    'The app could not be started.'
  );
}

async function offeredKinds(): Promise<IAppKind[]> {
  const [url, settings] = api('api/kinds');
  try {
    const response = await ServerConnection.makeRequest(url, {}, settings);
    return response.ok ? ((await response.json()) as IAppKind[]) : [];
  } catch {
    return []; // no apps offered: no tiles
  }
}

// The one item selected in the file browser, if it is of `type`, or null.
function selected(
  factory: IFileBrowserFactory,
  type: 'file' | 'directory'
): string | null {
  const browser = factory.tracker.currentWidget;
  if (!browser) {
    return null;
  }
  const items = Array.from(browser.selectedItems());
  return items.length === 1 && items[0].type === type ? items[0].path : null;
}

function shownFolder(factory: IFileBrowserFactory): string {
  const browser = factory.tracker.currentWidget;
  return browser ? browser.model.path || '.' : '.';
}

export const appsPlugin: JupyterFrontEndPlugin<void> = {
  id: 'dsportal:apps',
  description: 'VS Code, MLflow and your own web apps, each in its own tab.',
  autoStart: true,
  requires: [IFileBrowserFactory],
  optional: [ILauncher],
  activate: (
    app: JupyterFrontEnd,
    factory: IFileBrowserFactory,
    launcher: ILauncher | null
  ) => {
    // the kinds come from the server: asked without holding JupyterLab's start, as an awaited activate would
    void offeredKinds()
      .then(kinds => addApps(app, factory, launcher, kinds))
      .catch(reason =>
        console.error('DS Portal: the apps were not added', reason)
      );
  }
};

/** The commands, menu items and launcher tiles of the apps this session offers. */
function addApps(
  app: JupyterFrontEnd,
  factory: IFileBrowserFactory,
  launcher: ILauncher | null,
  kinds: IAppKind[]
): void {
  if (kinds.length === 0) {
    return;
  }
  const fileApps = kinds.filter(k => k.target === 'file');
  let rank = 10;
  for (const kind of kinds.filter(k => k.target === 'folder')) {
    const here = `dsportal:open-${kind.name}`;
    const onFolder = `dsportal:open-${kind.name}-on-folder`;
    app.commands.addCommand(here, {
      label: kind.title,
      caption: `${kind.title} for the folder shown in the file browser, in a new tab`,
      icon,
      describedBy: NO_ARGUMENTS,
      execute: () => openApp(kind.name, shownFolder(factory))
    });
    app.commands.addCommand(onFolder, {
      label: `Open ${kind.title}`,
      caption: `${kind.title} for this folder, in a new tab`,
      icon,
      describedBy: pathArguments(
        'The folder (else the one selected in the file browser)'
      ),
      isVisible: () => selected(factory, 'directory') !== null,
      execute: args =>
        openApp(
          kind.name,
          pathArgument(args) || selected(factory, 'directory') || '.'
        )
    });
    app.contextMenu.addItem({
      command: onFolder,
      selector: '.jp-DirListing-item[data-isdir="true"]',
      rank: rank
    });
    if (launcher) {
      launcher.add({ command: here, category: 'Other', rank: rank });
    }
    rank += 1;
  }
  if (fileApps.length > 0) {
    app.commands.addCommand(OPEN_AS_APP, {
      label: 'Open as app',
      caption: `Run this ${fileApps
        .map(k => k.title)
        .join(' or ')} and show it in a new tab`,
      icon,
      describedBy: pathArguments(
        'The Python file of the app (else the one selected in the file browser)'
      ),
      isVisible: () => selected(factory, 'file') !== null,
      execute: args =>
        openApp('auto', pathArgument(args) || selected(factory, 'file') || '')
    });
    app.contextMenu.addItem({
      command: OPEN_AS_APP,
      selector: '.jp-DirListing-item[data-file-type="python"]',
      rank: 1
    });
  }
  app.commands.addCommand(LIST, {
    label: 'Running apps',
    caption: 'See and stop the apps of this session',
    icon,
    describedBy: NO_ARGUMENTS,
    execute: () => window.open(api('')[0] + '/', '_blank')
  });
  if (launcher) {
    launcher.add({ command: LIST, category: 'Other', rank: rank });
  }
}
