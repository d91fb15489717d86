// DS Portal's JupyterLab extension: TensorBoard for a folder (tensorboard/), VS Code, MLflow and the user's
// web apps in their own tabs (apps/), the session's clock (clock/), what a continued session took back
// (continuation/), notebooks and scripts as Slurm jobs with the Jobs panel (runs/), and the launcher and file
// browser as soon as the page is restored (session/). A guest in a shared session (sharing/) gets no extending
// and no jobs. The server side is spawner/jupyter/.
import { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { appsPlugin } from './apps/plugin';
import { clockPlugin } from './clock/plugin';
import { continuationPlugin } from './continuation/plugin';
import { runsPlugin } from './runs/plugin';
import { sessionPagePlugin } from './session/plugin';
import { tensorboardPlugin } from './tensorboard/plugin';

const plugins: JupyterFrontEndPlugin<unknown>[] = [
  tensorboardPlugin,
  appsPlugin,
  clockPlugin,
  continuationPlugin,
  runsPlugin,
  sessionPagePlugin
];

export default plugins;
