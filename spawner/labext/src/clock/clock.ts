// DS Portal: the session's time left in the status bar, warnings before the end, saving every open
// document before Slurm ends the job, and "extend" where the admin allows it. The rules and the words
// are clock/rules.ts; this class holds the server's last answer and acts on the page.
import { JupyterFrontEnd } from '@jupyterlab/application';
import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { PageConfig } from '@jupyterlab/coreutils';
import { IDocumentManager } from '@jupyterlab/docmanager';
import { DocumentRegistry } from '@jupyterlab/docregistry';
import { Widget } from '@lumino/widgets';

import { isGuest } from '../sharing/guest';
import { sessionCall } from './api';
import {
  IClockAnswer,
  TICK_MS,
  USE_REPORT_MS,
  asSeenBy,
  canExtend,
  clockTime,
  dueWarnings,
  endMoved,
  endWarning,
  hubHome,
  idleSeconds,
  idleWarning,
  idleWarningDue,
  refreshEvery,
  saveDue,
  secondsLeft,
  statusWords,
  useReportDue
} from './rules';

const USE_EVENTS = [
  'pointerdown',
  'pointermove',
  'keydown',
  'wheel',
  'touchstart'
];

export class SessionClock {
  constructor(
    private readonly app: JupyterFrontEnd,
    private readonly docManager: IDocumentManager
  ) {
    this.node = document.createElement('span');
    this.node.className = 'dsportal-time-left';
    this.widget = new Widget({ node: this.node });
    this.widget.addClass('jp-StatusBar-TextItem');
    this.node.addEventListener('click', () => this.offerExtension());
    const used = () => {
      this.usedAt = performance.now();
    };
    for (const name of USE_EVENTS) {
      document.addEventListener(name, used, { passive: true, capture: true });
    }
  }

  readonly widget: Widget;

  get canExtend(): boolean {
    return canExtend(this.answer);
  }

  // The user's own use of the page counts; the page's background polling does not
  // (spawner/jupyter/session/activity.py). Reported at most every 30 s.
  async reportUse(): Promise<void> {
    const now = performance.now();
    if (!useReportDue(this.usedAt, this.reportedAt, now)) {
      return;
    }
    this.reportedAt = now;
    await sessionCall('activity', { method: 'POST', body: '{}' });
    if (this.answer) {
      this.answer.idle_seconds = 0;
      this.idleFetchedAt = now;
    }
    this.dismissIdleNotice();
  }

  idle(): number | null {
    return idleSeconds(
      this.answer,
      (performance.now() - this.idleFetchedAt) / 1000
    );
  }

  left(): number | null {
    return secondsLeft(
      this.answer,
      (performance.now() - this.fetchedAt) / 1000
    );
  }

  warnIdle(answer: IClockAnswer): void {
    const idle = this.idle();
    if (idle === null || !idleWarningDue(answer, idle)) {
      this.dismissIdleNotice(); // used again (a kernel, the GPUs, a terminal)
      return;
    }
    if (this.idleNotice) {
      return;
    }
    this.idleNotice = Notification.warning(idleWarning(answer, idle), {
      autoClose: false
    });
  }

  async refresh(fresh: boolean): Promise<void> {
    const { ok, body } = await sessionCall<IClockAnswer>(
      fresh ? 'clock?fresh=1' : 'clock'
    );
    if (!ok) {
      return;
    }
    if (endMoved(this.answer, body)) {
      this.warned.clear(); // extended: the warnings come again before the new end
    }
    this.answer = asSeenBy(body, isGuest());
    this.fetchedAt = this.idleFetchedAt = performance.now();
    this.show();
  }

  show(): void {
    const answer = this.answer;
    if (!answer || !answer.job_id) {
      this.widget.hide();
      return;
    }
    this.widget.show();
    const { text, title, ending } = statusWords(answer, this.left());
    this.node.textContent = text;
    this.node.title = title;
    this.node.classList.toggle('dsportal-ending', ending);
  }

  warn(answer: IClockAnswer): void {
    const left = this.left();
    if (left === null) {
      return;
    }
    const due = dueWarnings(answer.warn_minutes, left, this.warned);
    if (!due.length) {
      return;
    }
    due.forEach(m => this.warned.add(m));
    const actions: Notification.IAction[] = answer.extend_hours
      ? [
          {
            label: `Add ${answer.extend_hours} h`,
            callback: () => void this.extend()
          }
        ]
      : [];
    if (answer.continuable) {
      actions.push({
        label: 'Continue in a new job…',
        callback: () =>
          window.location.assign(
            hubHome(
              PageConfig.getOption('hubHost'),
              PageConfig.getOption('hubPrefix') || '/hub/'
            )
          )
      });
    }
    actions.push({
      label: 'What it used',
      callback: () => void this.showUsage()
    });
    Notification.warning(endWarning(answer, left), {
      autoClose: false,
      actions
    });
  }

  // What the session used so far (the server's own tally, spawner/usage.py), with the advice for next
  // time: in a dialog, as a notification holds 140 characters only.
  async showUsage(): Promise<void> {
    const { ok, body } = await sessionCall<{ lines?: string[] }>('usage');
    const node = document.createElement('ul');
    node.className = 'dsportal-usage-so-far';
    const lines =
      ok && body.lines
        ? body.lines
        : ['The session cannot say what it used now; try again in a minute.'];
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

  async saveAll(): Promise<string[]> {
    const contexts = new Set<DocumentRegistry.Context>();
    for (const widget of Array.from(this.app.shell.widgets('main'))) {
      const context = this.docManager.contextForWidget(widget);
      if (context) {
        contexts.add(context);
      }
    }
    const saved: string[] = [];
    const failed: string[] = [];
    for (const context of contexts) {
      if (!context.model.dirty || context.model.readOnly) {
        continue;
      }
      try {
        await context.save();
        saved.push(context.path);
      } catch {
        failed.push(context.path);
      }
    }
    if (saved.length || failed.length) {
      await sessionCall('saved', {
        method: 'POST',
        body: JSON.stringify({ saved, failed })
      });
    }
    return saved;
  }

  async tick(count: number): Promise<void> {
    if (count % refreshEvery(this.answer, this.left(), this.idle()) === 0) {
      await this.refresh(false);
    }
    this.show();
    const answer = this.answer;
    if (!answer) {
      return;
    }
    this.warn(answer);
    await this.reportUse();
    this.warnIdle(answer);
    const now = performance.now();
    if (saveDue(answer, now, this.savedAt)) {
      this.savedAt = now;
      await this.saveAll();
    }
  }

  start(): void {
    let count = 0;
    const loop = async () => {
      try {
        await this.tick(count++);
      } catch (e) {
        console.warn('DS Portal session clock:', e);
      }
      window.setTimeout(loop, TICK_MS);
    };
    void loop();
  }

  async offerExtension(): Promise<void> {
    const answer = this.answer;
    if (!answer || !answer.extend_hours) {
      return;
    }
    const result = await showDialog({
      title: 'More time for this session?',
      body: `Add ${answer.extend_hours} h to this session (it now ends at ${clockTime(answer.end)}).`,
      buttons: [
        Dialog.cancelButton(),
        Dialog.okButton({ label: `Add ${answer.extend_hours} h` })
      ]
    });
    if (result.button.accept) {
      await this.extend();
    }
  }

  async extend(): Promise<void> {
    const { ok, body } = await sessionCall('extend', {
      method: 'POST',
      body: '{}'
    });
    if (!ok) {
      Notification.error(body.message || 'The session could not be extended.', {
        autoClose: 10000
      });
      return;
    }
    await this.refresh(true);
    Notification.success(
      `Session extended: it now ends at ${clockTime(this.answer ? this.answer.end : null)}.`,
      {
        autoClose: 5000
      }
    );
  }

  private dismissIdleNotice(): void {
    if (this.idleNotice) {
      Notification.dismiss(this.idleNotice);
      this.idleNotice = null;
    }
  }

  private readonly node: HTMLSpanElement;
  private answer: IClockAnswer | null = null; // the server's last answer
  private fetchedAt = 0; // performance.now() of that answer
  private idleFetchedAt = 0;
  private warned = new Set<number>(); // warning thresholds (minutes) already shown for this end time
  private savedAt = 0;
  private usedAt = -Infinity; // the user's last mouse, key or scroll event here (performance.now())
  private reportedAt = -USE_REPORT_MS;
  private idleNotice: string | null = null;
}
