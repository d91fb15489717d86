// DS Portal's JupyterLab extension: TensorBoard for a folder (tensorboard/), the session's clock
// (clock/), and notebooks and scripts as Slurm jobs with the Jobs panel (runs/). A guest in a shared
// session (sharing/) gets no extending and no jobs. The server side is spawner/jupyter/.
import { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { clockPlugin } from './clock/plugin';
import { runsPlugin } from './runs/plugin';
import { tensorboardPlugin } from './tensorboard/plugin';

const plugins: JupyterFrontEndPlugin<unknown>[] = [
  tensorboardPlugin,
  clockPlugin,
  runsPlugin
];

export default plugins;
