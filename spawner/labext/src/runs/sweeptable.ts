// DS Portal: a sweep in a main-area tab of its own ("Sweep 123: train.ipynb"), opened by its row's
// "Table" button in the Jobs panel — its counts, best result and summary; one line per task (every
// varied parameter, state, time and result), sortable by any column, live while the sweep runs and the
// tab is open; per task Open output / Log (shown in the tab) / Run again / Cancel; "Cancel the rest" and
// "Run again" for the whole sweep; a scatter of a result against a parameter; and "Make best the
// notebook's defaults". One tab per sweep: the button again shows the one open; closing it stops its
// reads. What the cells and the plot say is runs/sweepresults.ts.
import {
  Dialog,
  MainAreaWidget,
  Notification,
  showDialog
} from '@jupyterlab/apputils';
import { LabIcon } from '@jupyterlab/ui-components';
import { CommandRegistry } from '@lumino/commands';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { element } from '../common/dom';
import { Repeat } from '../common/repeat';
import { runsApi } from './api';
import {
  IColumn,
  ISort,
  bestTask,
  cellText,
  columnsOf,
  formatValue,
  nextSort,
  parametersWords,
  plotChoices,
  IPlotBox,
  plotOf,
  shownParameters,
  sortTasks
} from './sweepresults';
import { buttonOf, sweepCounts } from './rows';
import { IJob, ISweepTask, ISweepTasks } from './types';

const TABLE_EVERY_MS = 3000;
const LOG_EVERY_MS = 3000;
const LOG_LINES = 200;
const SVG = 'http://www.w3.org/2000/svg';

// The plot in the tab: room for the ticks and the axes' names.
export const TAB_PLOT_BOX: IPlotBox = {
  width: 480,
  height: 300,
  left: 60,
  right: 16,
  top: 12,
  bottom: 36
};

// The sweep's own buttons, as on its row in the panel.
export type SweepAction = 'cancel' | 'again';

export namespace SweepTable {
  export interface IOptions {
    commands: CommandRegistry; // docmanager:open
    isVisible: () => boolean; // the tab is shown: no reads behind another tab
    onSubmitted: (job: IJob) => void; // a task's "Run again" submitted a job
    refreshList: () => Promise<void>; // the panel's list, after an action or when a task's state changed
    act: (action: SweepAction, job: IJob) => Promise<void>; // the panel's "Cancel the rest" / "Run again"
  }
}

// The tab's title: "Sweep 123: train.ipynb".
export function sweepTabTitle(job: IJob): string {
  const file = job.path ? job.path.split('/').pop() || job.path : job.name;
  return `Sweep ${job.job_id}: ${file || job.name || job.job_id}`;
}

// What the tab's header says of the sweep: its counts, in the row's words.
export function sweepWords(job: IJob): string {
  return job.words || (job.sweep ? sweepCounts(job.sweep) : job.state);
}

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number>,
  className = ''
): SVGElementTagNameMap[K] {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) {
    node.setAttribute(name, String(value));
  }
  if (className) {
    node.setAttribute('class', className);
  }
  return node;
}

function button(
  text: string,
  label: string,
  onClick: (node: HTMLButtonElement) => Promise<void> | void
): HTMLButtonElement {
  const node = element('button', 'dsportal-job-button', text);
  node.setAttribute('aria-label', label);
  node.title = label;
  node.addEventListener('click', async () => {
    node.disabled = true;
    try {
      await onClick(node);
    } finally {
      node.disabled = false;
    }
  });
  return node;
}

export class SweepTable {
  constructor(
    private job: IJob,
    private readonly options: SweepTable.IOptions
  ) {
    this.node = element('div', 'dsportal-sweep');
    this.node.setAttribute('aria-label', `Tasks of sweep ${job.job_id}`);
    this.node.setAttribute('role', 'region');
    this.error.setAttribute('role', 'alert');
    this.error.hidden = true;
    this.table.setAttribute('aria-label', `Tasks of sweep ${job.job_id}`);
    this.table.append(this.head, this.body);
    const scroll = element('div', 'dsportal-sweep-scroll');
    scroll.append(this.table);
    this.makeDefaults = button(
      'Make best the notebook’s defaults',
      'Make best the notebook’s defaults',
      () => this.makeBestDefaults()
    );
    this.makeDefaults.classList.add('dsportal-sweep-defaults');
    this.makeDefaults.title =
      'Write the best task’s parameters into a copy of the notebook, and open it';
    this.makeDefaults.hidden = true;
    this.logBox.hidden = true;
    this.log.setAttribute('aria-label', 'Log of a task');
    this.logBox.append(this.logTitle, this.log);
    this.node.append(
      this.buildHeader(),
      this.error,
      scroll,
      this.logBox,
      this.buildPlot()
    );
    this.showJob();
    this.repeat = new Repeat(
      () => this.load(),
      () => TABLE_EVERY_MS
    );
    this.logRepeat = new Repeat(
      () => this.loadLog(),
      () => LOG_EVERY_MS
    );
  }

  readonly node: HTMLDivElement;

  open(): void {
    this.isOpen = true;
    void this.repeat.start();
  }

  close(): void {
    this.isOpen = false;
    this.repeat.stop();
    this.logRepeat.stop();
  }

  // Reads now (the tab shown again), where the table still follows the sweep.
  refresh(): void {
    if (this.isOpen && this.following) {
      void this.repeat.now();
    }
  }

  // The panel's new row: the header's words, and a sweep that has just ended is read once more for its
  // last states and results.
  update(job: IJob): void {
    const ended = this.job.active && !job.active;
    this.job = job;
    this.showJob();
    if (ended && this.isOpen) {
      void this.repeat.now();
    }
  }

  // --- the header: the sweep's counts, best result, summary and buttons ------------------------------

  private buildHeader(): HTMLElement {
    const header = element('div', 'dsportal-sweep-header');
    this.title.title = this.job.path;
    this.words.setAttribute('role', 'status');
    this.summary.hidden = true;
    this.cancelRest = button('Cancel the rest', '', () => this.act('cancel'));
    this.cancelRest.dataset.action = 'cancel';
    this.runAgain = button('Run again', '', () => this.act('again'));
    this.runAgain.dataset.action = 'again';
    const buttons = element('div', 'dsportal-sweep-buttons');
    buttons.append(this.cancelRest, this.runAgain, this.makeDefaults);
    const line = element('div', 'dsportal-sweep-header-line');
    line.append(this.words, this.bestWords, this.summary);
    header.append(this.title, line, buttons);
    return header;
  }

  private showJob(): void {
    const job = this.job;
    const id = job.job_id;
    this.title.textContent = sweepTabTitle(job);
    this.title.title = job.path;
    const words = sweepWords(job);
    if (this.words.textContent !== words) {
      // a status line: a screen reader says it when it changes, not at every refresh
      this.words.textContent = words;
    }
    this.summary.textContent = job.summary || '';
    this.summary.hidden = !job.summary;
    const [cancelLabel, cancelTitle] = buttonOf(job, 'cancel');
    this.cancelRest.textContent = cancelLabel;
    this.cancelRest.title = cancelTitle;
    this.cancelRest.setAttribute(
      'aria-label',
      `Cancel the rest of sweep ${id}`
    );
    this.cancelRest.hidden = !job.can_cancel;
    const [againLabel, againTitle] = buttonOf(job, 'again');
    this.runAgain.textContent = againLabel;
    this.runAgain.title = againTitle;
    this.runAgain.setAttribute('aria-label', `Run sweep ${id} again`);
    this.runAgain.hidden = !job.can_again;
  }

  private async act(action: SweepAction): Promise<void> {
    await this.options.act(action, this.job);
    if (this.isOpen) {
      void this.repeat.start(); // a cancel shows at once; a sweep run again is a row of its own
    }
  }

  private async load(): Promise<void> {
    if (!this.options.isVisible() && this.loaded) {
      return;
    }
    const answer = await runsApi.tasks(this.job.job_id);
    const problem = answer.ok ? answer.body.error || '' : answer.body.message;
    this.error.textContent = problem;
    this.error.hidden = !problem;
    if (!answer.ok) {
      return;
    }
    // a task that changed its state changes the row's counts too: the panel's list is read again
    const states = answer.body.tasks.map(t => `${t.task}:${t.state}`).join();
    if (this.states && states !== this.states) {
      void this.options.refreshList();
    }
    this.states = states;
    this.loaded = answer.body;
    this.show(answer.body);
    this.following = this.job.active || answer.body.tasks.some(t => t.active);
    if (!this.following) {
      this.repeat.stop(); // an ended sweep's table does not change
    }
  }

  private show(table: ISweepTasks): void {
    this.columns = columnsOf(table);
    if (!this.columns.some(c => c.key === this.sort.key)) {
      this.sort = { key: 'task', descending: false };
    }
    this.showHead();
    this.showBody(table);
    const best = bestTask(table);
    const objective = table.objective || table.results[0] || 'the objective';
    this.bestWords.textContent = best
      ? `Best ${objective} (${table.best === 'min' ? 'lowest' : 'highest'}): ` +
        `${formatValue(best.results[objective])}, task ${best.task}: ` +
        parametersWords(best.parameters, shownParameters(table)) +
        '.'
      : `No task has a result for ${objective} yet.`;
    this.makeDefaults.hidden = !best;
    this.showPlot();
  }

  private showHead(): void {
    const row = element('tr');
    for (const column of this.columns) {
      const th = element('th', `dsportal-sweep-col-${column.kind}`);
      th.scope = 'col';
      th.dataset.column = column.key;
      const sorted = this.sort.key === column.key;
      th.setAttribute(
        'aria-sort',
        sorted ? (this.sort.descending ? 'descending' : 'ascending') : 'none'
      );
      const sort = element(
        'button',
        'dsportal-sweep-sort',
        column.label + (sorted ? (this.sort.descending ? ' ▼' : ' ▲') : '')
      );
      sort.setAttribute('aria-label', `Sort by ${column.label}`);
      sort.title = `Sort by ${column.label}; again to turn the order round`;
      sort.addEventListener('click', () => {
        this.sort = nextSort(this.sort, column.key);
        if (this.loaded) {
          this.show(this.loaded);
        }
      });
      th.append(sort);
      row.append(th);
    }
    const actions = element('th', 'dsportal-sweep-col-actions', 'Actions');
    actions.scope = 'col';
    row.append(actions);
    this.head.replaceChildren(row);
  }

  private showBody(table: ISweepTasks): void {
    const column = this.columns.find(c => c.key === this.sort.key)!;
    const rows = sortTasks(table.tasks, column, this.sort.descending).map(
      task => this.taskRow(table, task)
    );
    this.body.replaceChildren(...rows);
  }

  private taskRow(table: ISweepTasks, task: ISweepTask): HTMLTableRowElement {
    const row = element('tr', 'dsportal-sweep-task');
    row.dataset.task = String(task.task);
    row.dataset.state = task.state;
    const best = task.task === table.best_task;
    row.classList.toggle('dsportal-sweep-best', best);
    for (const column of this.columns) {
      const cell = element('td', `dsportal-sweep-col-${column.kind}`);
      cell.dataset.column = column.key;
      cell.textContent = cellText(task, column);
      if (column.kind === 'task' && best) {
        const mark = element('span', 'dsportal-sweep-best-mark', ' ★');
        mark.setAttribute('aria-label', 'best');
        mark.title = 'The best task';
        cell.append(mark);
      } else if (column.kind === 'state') {
        cell.title = task.why || task.words;
      } else if (column.kind === 'result' && task.results_error) {
        cell.title = task.results_error;
      }
      row.append(cell);
    }
    if (task.results_error) {
      row.title = task.results_error;
    }
    const actions = element('td', 'dsportal-sweep-actions');
    const n = task.task;
    if (task.output) {
      actions.append(
        button('Open output', `Open output of task ${n}`, async () => {
          await this.options.commands.execute('docmanager:open', {
            path: task.output
          });
        })
      );
    }
    if (task.log) {
      const log = button(
        this.logTask === task.job_id ? 'Hide log' : 'Log',
        `Log of task ${n}`,
        () => this.toggleLog(task)
      );
      log.setAttribute('aria-expanded', String(this.logTask === task.job_id));
      actions.append(log);
    }
    if (!task.active) {
      actions.append(
        button('Run again', `Run task ${n} again`, () => this.again(task))
      );
    }
    if (task.can_cancel) {
      const cancel = button('Cancel', `Cancel task ${n}`, () =>
        this.cancel(task)
      );
      cancel.dataset.action = 'cancel';
      actions.append(cancel);
    }
    row.append(actions);
    return row;
  }

  private async again(task: ISweepTask): Promise<void> {
    const answer = await runsApi.again(task.job_id);
    if (!answer.ok) {
      Notification.error(answer.body.message, { autoClose: 10000 });
      return;
    }
    this.options.onSubmitted(answer.body.job);
    await this.options.refreshList();
  }

  private async cancel(task: ISweepTask): Promise<void> {
    const result = await showDialog({
      title: `Cancel task ${task.task} of sweep ${this.job.job_id}?`,
      body: 'This task stops now; the other tasks go on.',
      buttons: [
        Dialog.cancelButton({ label: 'Keep it running' }),
        Dialog.warnButton({ label: 'Cancel task' })
      ]
    });
    if (!result.button.accept) {
      return;
    }
    const answer = await runsApi.cancel(task.job_id);
    if (!answer.ok) {
      Notification.error(answer.body.message, { autoClose: 10000 });
      return;
    }
    await this.repeat.now();
  }

  private async makeBestDefaults(): Promise<void> {
    const table = this.loaded;
    const best = table && bestTask(table);
    if (!table || !best) {
      return;
    }
    const answer = await runsApi.makeDefaults(table.path, best.parameters);
    if (!answer.ok) {
      Notification.error(
        `The best parameters could not be made the defaults: ${answer.body.message}`,
        { autoClose: false }
      );
      return;
    }
    const path = answer.body.path;
    await this.options.commands.execute('docmanager:open', { path });
    Notification.success(
      `${path} is a copy of ${table.path} with task ${best.task}’s parameters as its defaults: ` +
        `${parametersWords(best.parameters, table.parameters)}.`,
      { autoClose: 10000 }
    );
  }

  // --- a task's log --------------------------------------------------------------------------------

  private toggleLog(task: ISweepTask): void {
    if (this.logTask === task.job_id) {
      this.logTask = '';
      this.logBox.hidden = true;
      this.logRepeat.stop();
    } else {
      this.logTask = task.job_id;
      this.logTitle.textContent = `Log of task ${task.task} (${task.job_id})`;
      this.log.textContent = 'Reading the log…';
      this.logBox.hidden = false;
      void this.logRepeat.start();
    }
    if (this.loaded) {
      this.showBody(this.loaded); // the buttons' words
    }
  }

  private async loadLog(): Promise<void> {
    const jobId = this.logTask;
    if (!jobId || !this.options.isVisible()) {
      return;
    }
    const answer = await runsApi.log(jobId, LOG_LINES);
    if (jobId !== this.logTask) {
      return;
    }
    this.log.textContent = answer.ok
      ? answer.body.log || '(the log is empty so far)'
      : answer.body.message;
    this.log.classList.toggle('dsportal-job-log-error', !answer.ok);
    const task = this.loaded?.tasks.find(t => t.job_id === jobId);
    if (answer.ok && task && !task.active) {
      this.logRepeat.stop(); // an ended task's log does not grow
    }
  }

  // --- the plot ------------------------------------------------------------------------------------

  private buildPlot(): HTMLElement {
    const box = element('div', 'dsportal-sweep-plot');
    this.plotResult.setAttribute('aria-label', 'Result to plot');
    this.plotResult.title = 'The result on the vertical axis';
    this.plotParameter.setAttribute('aria-label', 'Parameter to plot against');
    this.plotParameter.title = 'The parameter on the horizontal axis';
    for (const select of [this.plotResult, this.plotParameter]) {
      select.addEventListener('change', () => this.drawPlot());
    }
    const result = element('label', 'dsportal-sweep-plot-pick');
    result.append(element('span', '', 'Result to plot'), this.plotResult);
    const parameter = element('label', 'dsportal-sweep-plot-pick');
    parameter.append(
      element('span', '', 'Parameter to plot against'),
      this.plotParameter
    );
    const pickers = element('div', 'dsportal-sweep-plot-pickers');
    pickers.append(result, parameter);
    const { width, height } = TAB_PLOT_BOX;
    this.plot.setAttribute('role', 'img');
    this.plot.setAttribute('viewBox', `0 0 ${width} ${height}`);
    this.plot.setAttribute('width', String(width));
    this.plot.setAttribute('height', String(height));
    this.plotEmpty.hidden = true;
    box.append(
      element('h3', 'dsportal-sweep-plot-title', 'Plot'),
      pickers,
      this.plot,
      this.plotEmpty
    );
    return box;
  }

  private showPlot(): void {
    const table = this.loaded;
    if (!table) {
      return;
    }
    const choices = plotChoices(table);
    fillNames(this.plotResult, choices.results, choices.result);
    fillNames(this.plotParameter, choices.parameters, choices.parameter);
    this.drawPlot();
  }

  private drawPlot(): void {
    const table = this.loaded;
    if (!table) {
      return;
    }
    const result = this.plotResult.value;
    const parameter = this.plotParameter.value;
    const plot = plotOf(table, result, parameter, TAB_PLOT_BOX);
    this.plot.setAttribute('aria-label', `${result} against ${parameter}`);
    this.plot.dataset.logX = String(plot.logX);
    this.plotEmpty.textContent = plot.empty;
    this.plotEmpty.hidden = !plot.empty;
    const { width, height, left, right, top, bottom } = TAB_PLOT_BOX;
    const parts: SVGElement[] = [
      svg('line', {
        x1: left,
        y1: height - bottom,
        x2: width - right,
        y2: height - bottom
      }),
      svg('line', { x1: left, y1: top, x2: left, y2: height - bottom })
    ];
    for (const tick of plot.xTicks) {
      const label = svg(
        'text',
        { x: tick.at, y: height - bottom + 14, 'text-anchor': 'middle' },
        'dsportal-sweep-tick'
      );
      label.textContent = tick.label;
      parts.push(label);
    }
    for (const tick of plot.yTicks) {
      const label = svg(
        'text',
        { x: left - 6, y: tick.at + 4, 'text-anchor': 'end' },
        'dsportal-sweep-tick'
      );
      label.textContent = tick.label;
      parts.push(label);
    }
    const xName = svg(
      'text',
      {
        x: (left + width - right) / 2,
        y: height - 4,
        'text-anchor': 'middle'
      },
      'dsportal-sweep-axis-name'
    );
    xName.textContent = plot.logX ? `${parameter} (log scale)` : parameter;
    const yMiddle = (top + height - bottom) / 2;
    const yName = svg(
      'text',
      {
        x: 12,
        y: yMiddle,
        'text-anchor': 'middle',
        transform: `rotate(-90 12 ${yMiddle})`
      },
      'dsportal-sweep-axis-name'
    );
    yName.textContent = result;
    parts.push(xName, yName);
    for (const point of plot.points) {
      const dot = svg(
        'circle',
        { cx: point.x, cy: point.y, r: point.best ? 5 : 4, tabindex: 0 },
        point.best
          ? 'dsportal-sweep-point dsportal-sweep-point-best'
          : 'dsportal-sweep-point'
      );
      dot.setAttribute('data-task', String(point.task));
      dot.setAttribute('aria-label', point.title);
      const title = svg('title', {});
      title.textContent = point.title;
      dot.append(title);
      parts.push(dot);
    }
    this.plot.replaceChildren(...parts);
  }

  private readonly title = element('h2', 'dsportal-sweep-title');
  private readonly words = element('span', 'dsportal-sweep-words');
  private readonly summary = element('span', 'dsportal-sweep-summary');
  private cancelRest!: HTMLButtonElement;
  private runAgain!: HTMLButtonElement;
  private readonly error = element('div', 'dsportal-jobs-error');
  private readonly bestWords = element('span', 'dsportal-sweep-best-words');
  private readonly table = element('table', 'dsportal-sweep-table');
  private readonly head = element('thead');
  private readonly body = element('tbody');
  private readonly makeDefaults: HTMLButtonElement;
  private readonly logBox = element('div', 'dsportal-sweep-logbox');
  private readonly logTitle = element('div', 'dsportal-sweep-log-title');
  private readonly log = element('pre', 'dsportal-job-log');
  private readonly plotResult = element('select', 'jp-mod-styled');
  private readonly plotParameter = element('select', 'jp-mod-styled');
  private readonly plot = svg('svg', {}, 'dsportal-sweep-svg');
  private readonly plotEmpty = element('p', 'dsportal-sweep-plot-empty');
  private readonly repeat: Repeat;
  private readonly logRepeat: Repeat;
  private loaded: ISweepTasks | null = null;
  private isOpen = false;
  private following = true; // the sweep or one of its tasks is active: the table is read again
  private states = ''; // each task's state at the last read
  private columns: IColumn[] = [];
  private sort: ISort = { key: 'task', descending: false };
  private logTask = ''; // the job id ("123_4") whose log is shown
}

// A select of names, keeping the user's choice where it is still offered.
function fillNames(
  select: HTMLSelectElement,
  names: string[],
  first: string
): void {
  const kept = names.includes(select.value) ? select.value : first;
  const key = names.join('\n');
  if (select.dataset.names !== key) {
    select.dataset.names = key;
    select.replaceChildren(
      ...names.map(name => {
        const option = element('option', '', name);
        option.value = name;
        return option;
      })
    );
  }
  select.value = kept;
}

// --- the tab ---------------------------------------------------------------------------------------

// A sweep's table as a widget: it reads only while it is shown, at once when shown again, and stops for
// good when disposed (its tab closed).
export class SweepView extends Widget {
  constructor(job: IJob, options: Omit<SweepTable.IOptions, 'isVisible'>) {
    super();
    this.addClass('dsportal-sweep-view');
    this.table = new SweepTable(job, {
      ...options,
      isVisible: () => this.isVisible && !document.hidden
    });
    this.node.append(this.table.node);
  }

  readonly table: SweepTable;

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.table.close();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    this.table.refresh();
  }
}

export namespace SweepTabs {
  // Where the tabs go: JupyterLab's main area (app.shell).
  export interface IMainArea {
    add: (widget: Widget) => void;
    activate: (widget: Widget) => void;
  }

  export interface IOptions extends Omit<SweepTable.IOptions, 'isVisible'> {
    mainArea: IMainArea;
    icon?: LabIcon;
  }
}

// The open sweeps' tabs, one per sweep.
export class SweepTabs {
  constructor(private readonly options: SweepTabs.IOptions) {}

  // Opens the sweep's tab, or shows the one already open.
  open(job: IJob): MainAreaWidget<SweepView> {
    const open = this.tabs.get(job.job_id);
    if (open && !open.isDisposed) {
      open.content.table.update(job);
      this.options.mainArea.activate(open);
      return open;
    }
    const { mainArea, icon, ...tableOptions } = this.options;
    const content = new SweepView(job, tableOptions);
    const tab = new MainAreaWidget({ content });
    tab.id = `dsportal-sweep-${job.job_id}`;
    tab.addClass('dsportal-sweep-tab');
    tab.title.label = sweepTabTitle(job);
    tab.title.caption = `Sweep ${job.job_id} of ${job.path || job.name}: its tasks, results and plot`;
    tab.title.closable = true;
    if (icon) {
      tab.title.icon = icon;
    }
    this.tabs.set(job.job_id, tab);
    tab.disposed.connect(() => {
      if (this.tabs.get(job.job_id) === tab) {
        this.tabs.delete(job.job_id);
      }
    });
    mainArea.add(tab);
    mainArea.activate(tab);
    content.table.open();
    return tab;
  }

  // The panel's new row of a sweep whose tab is open.
  update(job: IJob): void {
    this.tabs.get(job.job_id)?.content.table.update(job);
  }

  has(jobId: string): boolean {
    return this.tabs.has(jobId);
  }

  dispose(): void {
    for (const tab of Array.from(this.tabs.values())) {
      tab.dispose();
    }
    this.tabs.clear();
  }

  private readonly tabs = new Map<string, MainAreaWidget<SweepView>>();
}
