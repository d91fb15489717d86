// The job's GPUs in the status bar (NVML readings from the session's server, every 10 s);
// CPU and memory come from jupyter-resource-usage's own item.
import { Widget } from '@lumino/widgets';

import { sessionCall } from './api';
import { IGpuAnswer, gpuWords } from './gpuwords';

const EVERY_MS = 10000;

export class GpuUsage {
  constructor() {
    this.node = document.createElement('span');
    this.node.className = 'dsportal-gpu-usage';
    this.widget = new Widget({ node: this.node });
    this.widget.addClass('jp-StatusBar-TextItem');
    this.widget.hide();
  }

  readonly widget: Widget;

  async refresh(): Promise<void> {
    const { ok, body } = await sessionCall<IGpuAnswer>('gpus');
    if (!ok) {
      return;
    }
    const { text, title, shown } = gpuWords(body);
    this.node.textContent = text;
    this.node.title = title;
    if (shown) {
      this.widget.show();
    } else {
      this.widget.hide();
    }
  }

  start(): void {
    const loop = async () => {
      try {
        await this.refresh();
      } catch (e) {
        console.warn('DS Portal GPU usage:', e);
      }
      window.setTimeout(loop, EVERY_MS);
    };
    void loop();
  }

  private readonly node: HTMLSpanElement;
}
