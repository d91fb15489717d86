// DS Portal: "Open TensorBoard" for a folder, from the file browser and the launcher,
// the session's clock (lib/clock.js), and notebooks and scripts as Slurm jobs (lib/jobsplugin.js).
// The server side is spawner/jupyter/handlers.py; TensorBoard opens in a new browser tab.
import { IFileBrowserFactory } from '@jupyterlab/filebrowser';
import { ILauncher } from '@jupyterlab/launcher';
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';

import { clockPlugin } from './clock';
import { jobsPlugin } from './jobsplugin';

const OPEN = 'dsportal:open-tensorboard';
const OPEN_HERE = 'dsportal:open-tensorboard-here';
const LIST = 'dsportal:list-tensorboards';

const icon = new LabIcon({
  name: 'dsportal:tensorboard',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M3 20h18v2H3zM5 10h3v8H5zm5-4h3v12h-3zm5 6h3v6h-3z"/></g></svg>'
});

function api(path) {
  const settings = ServerConnection.makeSettings();
  return [URLExt.join(settings.baseUrl, 'dsportal/tensorboard', path), settings];
}

async function openTensorBoard(logdir) {
  // Open the tab at once (inside the click), so pop-up blockers allow it.
  const tab = window.open('', '_blank');
  const [url, settings] = api('api/instances');
  const response = await ServerConnection.makeRequest(
    url,
    { method: 'POST', body: JSON.stringify({ logdir }) },
    settings
  );
  const body = await response.json();
  if (!response.ok) {
    if (tab) {
      tab.close();
    }
    window.alert(body.message || 'TensorBoard could not be started.');
    return;
  }
  if (tab) {
    tab.location.href = body.url;
  } else {
    window.location.assign(body.url);
  }
}

function selectedFolder(factory) {
  const browser = factory.tracker.currentWidget;
  if (!browser) {
    return null;
  }
  const items = Array.from(browser.selectedItems());
  return items.length === 1 && items[0].type === 'directory' ? items[0].path : null;
}

const plugin = {
  id: 'dsportal-tensorboard:plugin',
  description: 'Open TensorBoard for a folder in its own tab.',
  autoStart: true,
  requires: [IFileBrowserFactory],
  optional: [ILauncher],
  activate: (app, factory, launcher) => {
    app.commands.addCommand(OPEN, {
      label: 'Open TensorBoard',
      caption: 'Show the logs in this folder in TensorBoard, in a new tab',
      icon,
      isVisible: () => selectedFolder(factory) !== null,
      execute: args => openTensorBoard(args.path || selectedFolder(factory))
    });
    app.commands.addCommand(OPEN_HERE, {
      label: 'TensorBoard',
      caption: 'TensorBoard for the folder shown in the file browser',
      icon,
      execute: () => {
        const browser = factory.tracker.currentWidget || factory.defaultBrowser;
        return openTensorBoard(browser ? browser.model.path || '.' : '.');
      }
    });
    app.commands.addCommand(LIST, {
      label: 'Running TensorBoards',
      caption: 'See and stop the TensorBoards of this session',
      icon,
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

export default [plugin, clockPlugin, jobsPlugin];
