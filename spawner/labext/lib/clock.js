// DS Portal: the session's time left in the status bar, warnings before the end, saving every open
// document before Slurm ends the job, and "extend" where the admin allows it.
// The server side is spawner/jupyter/sessionapi.py: the time left comes from the job's end time as
// Slurm holds it, asked again every minute; this page only counts down between two answers.
import { Dialog, ICommandPalette, Notification, showDialog } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { ServerConnection } from '@jupyterlab/services';
import { IStatusBar } from '@jupyterlab/statusbar';
import { Widget } from '@lumino/widgets';

import { isGuest } from './guest';

const EXTEND = 'dsportal:extend-session';
const TICK_MS = 5000;
const SAVE_EVERY_MS = 20000;
const USE_REPORT_MS = 30000; // the user's mouse and keys reach the server at most this often

export function words(seconds) {
  if (seconds >= 3600) {
    const hours = Math.floor(seconds / 3600);
    const minutes = Math.floor((seconds % 3600) / 60);
    return minutes ? `${hours} h ${minutes} min` : `${hours} h`;
  }
  if (seconds >= 60) {
    return `${Math.ceil(seconds / 60)} min`;
  }
  return `${Math.max(0, Math.round(seconds))} s`;
}

function clockTime(iso) {
  return iso ? iso.replace('T', ' ').slice(11, 16) : '';
}

async function call(path, init) {
  const settings = ServerConnection.makeSettings();
  const response = await ServerConnection.makeRequest(
    URLExt.join(settings.baseUrl, 'dsportal/session', path),
    init || {},
    settings
  );
  const text = await response.text();
  let body = {};
  try {
    body = text ? JSON.parse(text) : {};
  } catch (e) {
    body = {};
  }
  return { ok: response.ok, body };
}

class SessionClock {
  constructor(app, docManager) {
    this.app = app;
    this.docManager = docManager;
    this.answer = null; // the server's last answer
    this.fetchedAt = 0; // performance.now() of that answer
    this.warned = new Set(); // warning thresholds (minutes) already shown for this end time
    this.savedAt = 0;
    this.node = document.createElement('span');
    this.node.className = 'dsportal-time-left';
    this.widget = new Widget({ node: this.node });
    this.widget.addClass('jp-StatusBar-TextItem');
    this.node.addEventListener('click', () => this.offerExtension());
    this.usedAt = -Infinity; // the user's last mouse, key or scroll event here (performance.now())
    this.reportedAt = -USE_REPORT_MS;
    this.idleNotice = null;
    const used = () => {
      this.usedAt = performance.now();
    };
    for (const name of ['pointerdown', 'pointermove', 'keydown', 'wheel', 'touchstart']) {
      document.addEventListener(name, used, { passive: true, capture: true });
    }
  }

  // The user's own use of the page counts; the page's background polling does not
  // (spawner/jupyter/activity.py).  Reported at most every 30 s.
  async reportUse() {
    const now = performance.now();
    if (this.usedAt <= this.reportedAt || now - this.reportedAt < USE_REPORT_MS) {
      return;
    }
    this.reportedAt = now;
    await call('activity', { method: 'POST', body: '{}' });
    if (this.answer) {
      this.answer.idle_seconds = 0;
      this.idleFetchedAt = now;
    }
    if (this.idleNotice) {
      Notification.dismiss(this.idleNotice);
      this.idleNotice = null;
    }
  }

  idle() {
    if (!this.answer || !this.answer.idle_timeout) {
      return null;
    }
    return this.answer.idle_seconds + (performance.now() - this.idleFetchedAt) / 1000;
  }

  warnIdle() {
    const idle = this.idle();
    const left = idle === null ? null : this.answer.idle_timeout - idle;
    if (left === null || left > this.answer.idle_warning) {
      if (this.idleNotice) {
        Notification.dismiss(this.idleNotice); // used again (a kernel, the GPUs, a terminal)
        this.idleNotice = null;
      }
      return;
    }
    if (this.idleNotice) {
      return;
    }
    this.idleNotice = Notification.warning(
      `Idle for ${words(idle)}; this session will stop in ${words(Math.max(0, left))} to free its ` +
        'GPUs — move the mouse or run something to keep it.',
      { autoClose: false }
    );
  }

  left() {
    if (!this.answer || this.answer.seconds_left === null) {
      return null;
    }
    return Math.max(0, this.answer.seconds_left - (performance.now() - this.fetchedAt) / 1000);
  }

  async refresh(fresh) {
    const { ok, body } = await call(fresh ? 'clock?fresh=1' : 'clock');
    if (!ok) {
      return;
    }
    if (this.answer && body.end !== this.answer.end) {
      this.warned.clear(); // extended: the warnings come again before the new end
    }
    this.answer = isGuest() ? { ...body, extend_hours: 0 } : body; // only the owner extends a shared session
    this.fetchedAt = this.idleFetchedAt = performance.now();
    this.show();
  }

  show() {
    const left = this.left();
    const answer = this.answer;
    if (!answer || !answer.job_id) {
      this.widget.hide();
      return;
    }
    this.widget.show();
    this.node.textContent = left === null ? 'Time left: unknown' : `Time left: ${words(left)}`;
    this.node.title =
      (left === null
        ? 'Slurm gives no end time for this session right now.'
        : `Session job ${answer.job_id} ends at ${clockTime(answer.end)} (its Slurm time limit). ` +
          'Open documents are saved before it ends.') +
      (answer.extend_hours ? ` Click to add ${answer.extend_hours} h.` : '');
    this.node.classList.toggle('dsportal-ending', left !== null && left <= answer.save_minutes * 60);
  }

  warn() {
    const left = this.left();
    if (left === null) {
      return;
    }
    const due = this.answer.warn_minutes.filter(m => left <= m * 60 && !this.warned.has(m));
    if (!due.length) {
      return;
    }
    this.answer.warn_minutes.filter(m => left <= m * 60).forEach(m => this.warned.add(m));
    const actions = this.answer.extend_hours
      ? [{ label: `Add ${this.answer.extend_hours} h`, callback: () => this.extend() }]
      : [];
    actions.push({ label: 'What it used', callback: () => this.showUsage() });
    Notification.warning(
      `Your session ends in ${words(left)}, at ${clockTime(this.answer.end)} (its time limit). ` +
        'Open documents are saved before then; running kernels stop at the end.',
      { autoClose: false, actions }
    );
  }

  // What the session used so far (the server's own tally, spawner/usage.py), with the advice for next time:
  // in a dialog, as a notification holds 140 characters only.
  async showUsage() {
    const { ok, body } = await call('usage');
    const node = document.createElement('ul');
    node.className = 'dsportal-usage-so-far';
    const lines = ok && body.lines ? body.lines : ['The session cannot say what it used now; try again in a minute.'];
    lines.forEach(line => {
      const item = document.createElement('li');
      item.textContent = line;
      node.appendChild(item);
    });
    await showDialog({
      title: 'What this session used so far',
      body: new Widget({ node }),
      buttons: [Dialog.okButton()]
    });
  }

  async saveAll() {
    const contexts = new Set();
    for (const widget of Array.from(this.app.shell.widgets('main'))) {
      const context = this.docManager.contextForWidget(widget);
      if (context) {
        contexts.add(context);
      }
    }
    const saved = [];
    const failed = [];
    for (const context of contexts) {
      if (!context.model.dirty || context.model.readOnly) {
        continue;
      }
      try {
        await context.save();
        saved.push(context.path);
      } catch (e) {
        failed.push(context.path);
      }
    }
    if (saved.length || failed.length) {
      await call('saved', { method: 'POST', body: JSON.stringify({ saved, failed }) });
    }
    return saved;
  }

  async tick(count) {
    const left = this.left();
    const closeToEnd = left !== null && left <= (this.answer.save_minutes + 1) * 60;
    const idle = this.idle();
    const closeToIdleStop =
      idle !== null && this.answer.idle_timeout - idle <= this.answer.idle_warning + 60;
    if (count % (closeToEnd || closeToIdleStop ? 3 : 12) === 0) {
      await this.refresh(false); // every minute; every 15 s near the end
    }
    this.show();
    if (!this.answer) {
      return;
    }
    this.warn();
    await this.reportUse();
    this.warnIdle();
    const now = performance.now();
    if (this.answer.save_now && now - this.savedAt >= SAVE_EVERY_MS) {
      this.savedAt = now;
      await this.saveAll();
    }
  }

  start() {
    let count = 0;
    const loop = async () => {
      try {
        await this.tick(count++);
      } catch (e) {
        console.warn('DS Portal session clock:', e);
      }
      window.setTimeout(loop, TICK_MS);
    };
    loop();
  }

  async offerExtension() {
    if (!this.answer || !this.answer.extend_hours) {
      return;
    }
    const result = await showDialog({
      title: 'More time for this session?',
      body: `Add ${this.answer.extend_hours} h to this session (it now ends at ${clockTime(this.answer.end)}).`,
      buttons: [Dialog.cancelButton(), Dialog.okButton({ label: `Add ${this.answer.extend_hours} h` })]
    });
    if (result.button.accept) {
      await this.extend();
    }
  }

  async extend() {
    const { ok, body } = await call('extend', { method: 'POST', body: '{}' });
    if (!ok) {
      Notification.error(body.message || 'The session could not be extended.', { autoClose: 10000 });
      return;
    }
    await this.refresh(true);
    Notification.success(`Session extended: it now ends at ${clockTime(this.answer.end)}.`, {
      autoClose: 5000
    });
  }
}

// The job's GPUs in the status bar (NVML readings from the session's server, every 10 s);
// CPU and memory come from jupyter-resource-usage's own item.
class GpuUsage {
  constructor() {
    this.node = document.createElement('span');
    this.node.className = 'dsportal-gpu-usage';
    this.widget = new Widget({ node: this.node });
    this.widget.addClass('jp-StatusBar-TextItem');
    this.widget.hide();
  }

  async refresh() {
    const { ok, body } = await call('gpus');
    if (!ok) {
      return;
    }
    if (!body.gpus.length) {
      const noGpu = /has no GPU/.test(body.note);
      this.node.textContent = noGpu ? '' : 'GPU: no readings';
      this.node.title = body.note;
      noGpu ? this.widget.hide() : this.widget.show();
      return;
    }
    this.node.textContent = body.gpus
      .map(g => `GPU${g.index} ${g.utilization}% · ${(g.memory_used_mib / 1024).toFixed(1)}/` +
        `${Math.round(g.memory_total_mib / 1024)} GB`)
      .join('  ');
    this.node.title = body.gpus.map(g => `GPU ${g.index}: ${g.name}, ${g.processes} process(es)`).join('\n');
    this.widget.show();
  }

  start() {
    const loop = async () => {
      try {
        await this.refresh();
      } catch (e) {
        console.warn('DS Portal GPU usage:', e);
      }
      window.setTimeout(loop, 10000);
    };
    loop();
  }
}

export const clockPlugin = {
  id: 'dsportal-tensorboard:session-clock',
  description: "The session's time left, warnings before its end, saving before Slurm ends it.",
  autoStart: true,
  requires: [IDocumentManager],
  optional: [IStatusBar, ICommandPalette],
  activate: (app, docManager, statusBar, palette) => {
    const clock = new SessionClock(app, docManager);
    if (statusBar) {
      statusBar.registerStatusItem('dsportal:time-left', { item: clock.widget, align: 'left', rank: 1000 });
      const gpus = new GpuUsage();
      statusBar.registerStatusItem('dsportal:gpu-usage', { item: gpus.widget, align: 'left', rank: 1001 });
      gpus.start();
    }
    app.commands.addCommand(EXTEND, {
      label: 'Extend this session',
      caption: 'Ask for more time for this session (where the cluster allows it)',
      isEnabled: () => Boolean(clock.answer && clock.answer.extend_hours),
      execute: () => clock.offerExtension()
    });
    if (palette) {
      palette.addItem({ command: EXTEND, category: 'DS Portal' });
    }
    clock.start();
    return clock;
  }
};
