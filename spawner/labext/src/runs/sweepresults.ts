// A sweep's table and plot, apart from the page: its columns, each cell's words and sort value, the sort
// (numbers numerically, missing last), and the scatter's points and axes. The page is runs/sweeptable.ts.
import { ISweepTask, ISweepTasks } from './types';

export type ColumnKind = 'task' | 'parameter' | 'state' | 'elapsed' | 'result';

export interface IColumn {
  key: string; // "task", "parameter:lr", "state", "elapsed", "result:accuracy"
  kind: ColumnKind;
  name: string; // the parameter's or result's name; '' for the others
  label: string;
}

export interface ISort {
  key: string;
  descending: boolean;
}

const MISSING = '—';

// Slurm's state word, as the table says it.
const STATE_WORDS: Record<string, string> = {
  PENDING: 'waiting',
  RUNNING: 'running',
  COMPLETING: 'ending',
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
  TIMEOUT: 'timed out',
  OUT_OF_MEMORY: 'out of memory',
  NODE_FAIL: 'node failed',
  PREEMPTED: 'preempted'
};

// The parameters a line shows: those that vary, else every one the grid sets.
export function shownParameters(table: ISweepTasks): string[] {
  return table.varied.length ? table.varied : table.parameters;
}

export function columnsOf(table: ISweepTasks): IColumn[] {
  return [
    { key: 'task', kind: 'task', name: '', label: 'Task' },
    ...shownParameters(table).map((name): IColumn => ({
      key: `parameter:${name}`,
      kind: 'parameter',
      name,
      label: name
    })),
    { key: 'state', kind: 'state', name: '', label: 'State' },
    { key: 'elapsed', kind: 'elapsed', name: '', label: 'Time' },
    ...table.results.map((name): IColumn => ({
      key: `result:${name}`,
      kind: 'result',
      name,
      label: name
    }))
  ];
}

// Slurm's elapsed time ("1-02:03:04", "02:03:04", "3:04") in seconds; null when there is none.
export function elapsedSeconds(text: string): number | null {
  const match = /^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$/.exec(text.trim());
  if (!match) {
    return null;
  }
  const [days, hours, minutes, seconds] = match
    .slice(1)
    .map(part => Number(part || 0));
  return ((days * 24 + hours) * 60 + minutes) * 60 + seconds;
}

// The value a column sorts by; undefined when the task has none.
export function cellValue(task: ISweepTask, column: IColumn): unknown {
  switch (column.kind) {
    case 'task':
      return task.task;
    case 'parameter':
      return task.parameters[column.name];
    case 'state':
      return stateWord(task.state);
    case 'elapsed':
      return elapsedSeconds(task.elapsed) ?? undefined;
    case 'result':
      return task.results?.[column.name];
  }
}

export function stateWord(state: string): string {
  return STATE_WORDS[state] || state.toLowerCase().replace(/_/g, ' ');
}

// A value in a cell: numbers to 4 significant digits, Python's words for booleans and None.
export function formatValue(value: unknown): string {
  if (value === undefined || value === '') {
    return MISSING;
  }
  if (value === null) {
    return 'None';
  }
  if (typeof value === 'number') {
    return Number.isInteger(value)
      ? String(value)
      : String(Number(value.toPrecision(4)));
  }
  if (typeof value === 'boolean') {
    return value ? 'True' : 'False';
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function cellText(task: ISweepTask, column: IColumn): string {
  if (column.kind === 'elapsed') {
    return task.elapsed || MISSING;
  }
  return formatValue(cellValue(task, column));
}

// "learning_rate=0.01, batch_size=64"
export function parametersWords(
  parameters: Record<string, unknown>,
  names: string[]
): string {
  return names
    .filter(name => name in parameters)
    .map(name => `${name}=${formatValue(parameters[name])}`)
    .join(', ');
}

function isMissing(value: unknown): boolean {
  return (
    value === undefined ||
    value === '' ||
    (typeof value === 'number' && !Number.isFinite(value))
  );
}

function compareValues(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') {
    return a - b;
  }
  if (typeof a === 'number') {
    return -1; // numbers before words
  }
  if (typeof b === 'number') {
    return 1;
  }
  return formatValue(a).localeCompare(formatValue(b), undefined, {
    numeric: true
  });
}

// The tasks in a column's order; those without a value come last either way, ties in task order.
export function sortTasks(
  tasks: ISweepTask[],
  column: IColumn,
  descending: boolean
): ISweepTask[] {
  return [...tasks].sort((a, b) => {
    const x = cellValue(a, column);
    const y = cellValue(b, column);
    if (isMissing(x) || isMissing(y)) {
      return Number(isMissing(x)) - Number(isMissing(y)) || a.task - b.task;
    }
    const order = compareValues(x, y);
    return (descending ? -order : order) || a.task - b.task;
  });
}

// A click on a column's header: sort by it, or turn its order round.
export function nextSort(sort: ISort, key: string): ISort {
  return sort.key === key
    ? { key, descending: !sort.descending }
    : { key, descending: false };
}

// --- the plot ---------------------------------------------------------------------------------------

export interface IPlotChoices {
  results: string[];
  parameters: string[];
  result: string; // the first shown: the objective, else the first result
  parameter: string;
}

export function plotChoices(table: ISweepTasks): IPlotChoices {
  const parameters = shownParameters(table);
  return {
    results: table.results,
    parameters,
    result: table.results.includes(table.objective)
      ? table.objective
      : table.results[0] || '',
    parameter: parameters[0] || ''
  };
}

export interface IPlotPoint {
  task: number;
  x: number;
  y: number;
  title: string; // "task 3: lr=0.01, batch_size=64 → accuracy 0.95"
  best: boolean;
}

export interface ITick {
  at: number;
  label: string;
}

export interface IPlot {
  points: IPlotPoint[];
  xTicks: ITick[];
  yTicks: ITick[];
  logX: boolean;
  empty: string; // why there is nothing to draw; '' when there are points
}

export interface IPlotBox {
  width: number;
  height: number;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

export const PLOT_BOX: IPlotBox = {
  width: 320,
  height: 200,
  left: 44,
  right: 12,
  top: 10,
  bottom: 28
};

// A log axis where the values are all above 0 and span more than 2 decades.
export function logAxis(values: number[]): boolean {
  if (!values.length || values.some(v => v <= 0)) {
    return false;
  }
  return Math.max(...values) / Math.min(...values) > 100;
}

function place(
  value: number,
  min: number,
  max: number,
  from: number,
  to: number,
  log: boolean
): number {
  const [v, a, b] = log
    ? [Math.log10(value), Math.log10(min), Math.log10(max)]
    : [value, min, max];
  const t = b === a ? 0.5 : (v - a) / (b - a);
  return Math.round((from + (to - from) * t) * 10) / 10;
}

function tickValues(min: number, max: number, log: boolean): number[] {
  if (min === max) {
    return [min];
  }
  if (log) {
    const decades: number[] = [];
    for (
      let p = Math.ceil(Math.log10(min));
      p <= Math.floor(Math.log10(max));
      p++
    ) {
      decades.push(Math.pow(10, p));
    }
    return decades.length >= 2 ? decades : [min, max];
  }
  return [0, 1, 2, 3, 4].map(i => min + ((max - min) * i) / 4);
}

// The scatter of a result against a parameter: the tasks with a number for that result; the parameter's
// values on x (numbers, or its words in order, evenly spaced), the result's on y.
export function plotOf(
  table: ISweepTasks,
  result: string,
  parameter: string,
  box: IPlotBox = PLOT_BOX
): IPlot {
  const tasks = table.tasks.filter(
    t => typeof t.results?.[result] === 'number' && parameter in t.parameters
  );
  const none = { points: [], xTicks: [], yTicks: [], logX: false };
  if (!result || !parameter) {
    return { ...none, empty: 'No results yet to plot.' };
  }
  if (!tasks.length) {
    return { ...none, empty: `No task has a number for ${result} yet.` };
  }
  const raw = tasks.map(t => t.parameters[parameter]);
  const numeric = raw.every(v => typeof v === 'number');
  const words = numeric
    ? []
    : Array.from(new Set(raw.map(formatValue))).sort((a, b) =>
        a.localeCompare(b, undefined, { numeric: true })
      );
  const xs = numeric
    ? (raw as number[])
    : raw.map(v => words.indexOf(formatValue(v)));
  const ys = tasks.map(t => t.results[result] as number);
  const logX = numeric && logAxis(xs);
  const [x0, x1] = [box.left, box.width - box.right];
  const [y0, y1] = [box.height - box.bottom, box.top];
  const [xMin, xMax] = [Math.min(...xs), Math.max(...xs)];
  const [yMin, yMax] = [Math.min(...ys), Math.max(...ys)];
  const names = shownParameters(table);
  return {
    points: tasks.map((t, i) => ({
      task: t.task,
      x: place(xs[i], xMin, xMax, x0, x1, logX),
      y: place(ys[i], yMin, yMax, y0, y1, false),
      title:
        `task ${t.task}: ${parametersWords(t.parameters, names)} → ` +
        `${result} ${formatValue(ys[i])}`,
      best: t.task === table.best_task
    })),
    xTicks: numeric
      ? tickValues(xMin, xMax, logX).map(v => ({
          at: place(v, xMin, xMax, x0, x1, logX),
          label: formatValue(v)
        }))
      : words.map((w, i) => ({
          at: place(i, 0, words.length - 1, x0, x1, false),
          label: w
        })),
    yTicks: tickValues(yMin, yMax, false).map(v => ({
      at: place(v, yMin, yMax, y0, y1, false),
      label: formatValue(v)
    })),
    logX,
    empty: ''
  };
}

// The best task, whose parameters "Make best the notebook's defaults" writes; null until one has the
// objective.
export function bestTask(table: ISweepTasks): ISweepTask | null {
  return table.best_task === null
    ? null
    : table.tasks.find(t => t.task === table.best_task) || null;
}
