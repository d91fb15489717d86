// DS Portal: "Open TensorBoard" for a folder, from the file browser and the launcher; TensorBoard opens in
// a new browser tab. The server side is spawner/jupyter/tensorboard/ (dsportal/tensorboard).
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

const OPEN = 'dsportal:open-tensorboard';
const OPEN_HERE = 'dsportal:open-tensorboard-here';
const LIST = 'dsportal:list-tensorboards';

const icon = new LabIcon({
  name: 'dsportal:tensorboard',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M3 20h18v2H3zM5 10h3v8H5zm5-4h3v12h-3zm5 6h3v6h-3z"/></g></svg>'
});

function api(path: string): [string, ServerConnection.ISettings] {
  const settings = ServerConnection.makeSettings();
  return [
    URLExt.join(settings.baseUrl, 'dsportal/tensorboard', path),
    settings
  ];
}

async function openTensorBoard(logdir: string | null): Promise<void> {
  const [url, settings] = api('api/instances');
  await openInNewTab(
    () =>
      ServerConnection.makeRequest(
        url,
        { method: 'POST', body: JSON.stringify({ logdir }) },
        settings
      ),
    'TensorBoard could not be started.'
  );
}

// The one folder selected in the file browser, or null.
function selectedFolder(factory: IFileBrowserFactory): string | null {
  const browser = factory.tracker.currentWidget;
  if (!browser) {
    return null;
  }
  const items = Array.from(browser.selectedItems());
  return items.length === 1 && items[0].type === 'directory'
    ? items[0].path
    : null;
}

export const tensorboardPlugin: JupyterFrontEndPlugin<void> = {
  id: 'dsportal:tensorboard',
  description: 'Open TensorBoard for a folder in its own tab.',
  autoStart: true,
  requires: [IFileBrowserFactory],
  optional: [ILauncher],
  activate: (
    app: JupyterFrontEnd,
    factory: IFileBrowserFactory,
    launcher: ILauncher | null
  ) => {
    app.commands.addCommand(OPEN, {
      label: 'Open TensorBoard',
      caption: 'Show the logs in this folder in TensorBoard, in a new tab',
      icon,
      describedBy: pathArguments(
        'The folder of logs (else the one selected in the file browser)'
      ),
      isVisible: () => selectedFolder(factory) !== null,
      execute: args =>
        openTensorBoard(pathArgument(args) || selectedFolder(factory))
    });
    app.commands.addCommand(OPEN_HERE, {
      label: 'TensorBoard',
      caption: 'TensorBoard for the folder shown in the file browser',
      icon,
      describedBy: NO_ARGUMENTS,
      execute: () => {
        const browser = factory.tracker.currentWidget;
        return openTensorBoard(browser ? browser.model.path || '.' : '.');
      }
    });
    app.commands.addCommand(LIST, {
      label: 'Running TensorBoards',
      caption: 'See and stop the TensorBoards of this session',
      icon,
      describedBy: NO_ARGUMENTS,
      execute: () => window.open(api('')[0] + '/', '_blank')
    });
    app.contextMenu.addItem({
      command: OPEN,
      selector: '.jp-DirListing-item[data-isdir="true"]',
      rank: 1
    });
    if (launcher) {
      launcher.add({ command: OPEN_HERE, category: 'Other', rank: 1 });
      launcher.add({ command: LIST, category: 'Other', rank: 2 });
    }
  }
};
