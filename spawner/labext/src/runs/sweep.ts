// A sweep from the run dialog, apart from the page: each parameter's list parsed by its type, a range's
// values, the number of runs and the GPU-hours they may cost, and the POST body. The hub counts and checks
// the same grid again (spawner/hub/runs/); the dialog only says beforehand what the hub will say.
import { buildRequest, initialValue, parameterValue } from './parameters';
import {
  GridEntry,
  IChoice,
  IParameter,
  IRunForm,
  IRunRequest,
  IRunValues,
  ISweepField,
  ISweepRequest,
  ISweepValues,
  SweepMode
} from './types';

const NUMBER_TYPES = ['int', 'float'];

const MODE_LABELS: Record<SweepMode, string> = {
  value: 'One value',
  list: 'A list',
  range: 'A range'
};

// Whether the dialog offers a sweep: a notebook with parameters, where the admin allows sweeps.
export function sweepsOffered(form: IRunForm): boolean {
  return (
    form.kind === 'notebook' &&
    Boolean(form.sweeps?.enabled) &&
    (form.parameters || []).length > 0
  );
}

// A range is for numbers only.
export function modeChoices(parameter: IParameter): IChoice[] {
  const modes: SweepMode[] = NUMBER_TYPES.includes(parameter.type || '')
    ? ['value', 'list', 'range']
    : ['value', 'list'];
  return modes.map(name => ({ name, label: MODE_LABELS[name] }));
}

export function initialSweep(form: IRunForm): ISweepValues {
  const fields: Record<string, ISweepField> = {};
  for (const parameter of form.parameters || []) {
    fields[parameter.name] = {
      mode: 'value',
      list: '',
      from: '',
      to: '',
      steps: '3',
      scale: 'linear'
    };
  }
  return {
    fields,
    sample: '',
    at_once: String(form.sweeps?.max_at_once ?? 1),
    objective: '',
    best: 'max'
  };
}

// "a, [1, 2], 'x, y'" -> ["a", "[1, 2]", "'x, y'"]: commas inside brackets or quotes do not split.
export function splitList(text: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let quote = '';
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      quote = c === quote ? '' : quote;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if ('[{('.includes(c)) {
      depth++;
    } else if (')}]'.includes(c)) {
      depth--;
    } else if (c === ',' && depth <= 0) {
      items.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  items.push(text.slice(start).trim());
  return items;
}

function unquote(text: string): string {
  return text.length >= 2 && /^(["']).*\1$/s.test(text)
    ? text.slice(1, -1)
    : text;
}

function listItem(parameter: IParameter, item: string): unknown {
  const name = parameter.name;
  switch (parameter.type) {
    case 'int':
    case 'float': {
      const value = Number(item);
      if (
        !Number.isFinite(value) ||
        (parameter.type === 'int' && !Number.isInteger(value))
      ) {
        const kind = parameter.type === 'int' ? 'a whole number' : 'a number';
        throw new Error(`${name}: “${item}” is not ${kind}.`);
      }
      return value;
    }
    case 'bool':
      if (!/^(true|false)$/i.test(item)) {
        throw new Error(`${name}: “${item}” is not True or False.`);
      }
      return item.toLowerCase() === 'true';
    case 'str':
      return unquote(item);
    default:
      return parameterValue(parameter, item);
  }
}

// A parameter's comma-separated list -> its typed values. Throws an Error in words.
export function parseList(parameter: IParameter, text: string): unknown[] {
  if (!text.trim()) {
    throw new Error(
      `${parameter.name}: give at least one value, separated by commas.`
    );
  }
  const items = splitList(text);
  if (items.some(item => item === '')) {
    throw new Error(`${parameter.name}: a value between two commas is empty.`);
  }
  return items.map(item => listItem(parameter, item));
}

function rangeNumber(parameter: IParameter, raw: string, what: string): number {
  const value = Number(raw.trim());
  if (raw.trim() === '' || !Number.isFinite(value)) {
    throw new Error(`${parameter.name}: the range’s ${what} must be a number.`);
  }
  return value;
}

// Python's round(): halves to the even neighbour (2.5 -> 2), as the hub rounds an int parameter's range.
export function roundHalfEven(value: number): number {
  const rounded = Math.round(value);
  return Math.abs(value % 1) === 0.5 && rounded % 2 !== 0
    ? rounded - 1
    : rounded;
}

// A range's numbers as the hub makes them (spawner/hub/runs/grid.py, range_values; both are held to
// tests/data/sweepgrid.json): evenly spaced (on a log scale, evenly by ratio) by the same formulas; a float
// parameter's to 12 significant digits (0.1 + 0.2 shows as 0.3), an int parameter's rounded as Python rounds,
// repeats dropped. Throws an Error in words.
export function rangeValues(
  parameter: IParameter,
  field: ISweepField
): number[] {
  const name = parameter.name;
  if (!NUMBER_TYPES.includes(parameter.type || '')) {
    throw new Error(`${name}: a range is for numbers only; give a list.`);
  }
  const from = rangeNumber(parameter, field.from, 'start');
  const to = rangeNumber(parameter, field.to, 'end');
  const steps = Number(field.steps.trim());
  if (!Number.isInteger(steps) || steps < 2) {
    throw new Error(`${name}: a range needs 2 steps or more.`);
  }
  if (field.scale === 'log' && (from <= 0 || to <= 0)) {
    throw new Error(`${name}: a log range needs a start and an end above 0.`);
  }
  const values: number[] = [];
  for (let i = 0; i < steps; i++) {
    const value =
      field.scale === 'log'
        ? Math.exp(
            Math.log(from) + (i * (Math.log(to) - Math.log(from))) / (steps - 1)
          )
        : from + (i * (to - from)) / (steps - 1);
    if (parameter.type !== 'int') {
      values.push(Number(value.toPrecision(12)));
    } else if (!values.includes(roundHalfEven(value))) {
      values.push(roundHalfEven(value));
    }
  }
  return values;
}

// A parameter's grid entry; null when it keeps the notebook's own value (a value left as it was).
export function gridEntry(
  parameter: IParameter,
  field: ISweepField,
  raw: IRunValues['parameters'][string]
): GridEntry | null {
  if (field.mode === 'list') {
    return { values: parseList(parameter, field.list) };
  }
  if (field.mode === 'range') {
    rangeValues(parameter, field); // its words when it is wrong
    return {
      range: {
        from: Number(field.from),
        to: Number(field.to),
        steps: Number(field.steps),
        scale: field.scale
      }
    };
  }
  return raw === initialValue(parameter)
    ? null
    : { value: parameterValue(parameter, raw) };
}

export function entryCount(parameter: IParameter, entry: GridEntry): number {
  if ('values' in entry) {
    return entry.values.length;
  }
  if ('range' in entry) {
    return rangeValues(parameter, {
      mode: 'range',
      list: '',
      from: String(entry.range.from),
      to: String(entry.range.to),
      steps: String(entry.range.steps),
      scale: entry.range.scale
    }).length;
  }
  return 1;
}

function wholeNumber(raw: string, words: string, min: number): number {
  const text = raw.trim();
  const value = Number(text);
  if (text === '' || !Number.isInteger(value) || value < min) {
    throw new Error(words);
  }
  return value;
}

// The sample's size: 0 (the whole grid) when left empty.
export function sampleSize(raw: string): number {
  return raw.trim() === ''
    ? 0
    : wholeNumber(
        raw,
        'The random sample must be a whole number of runs (empty for the whole grid).',
        0
      );
}

// The grid of the dialog's values and the number of runs: the product of each entry's count, or the
// sample when it is smaller.
export function sweepGrid(
  form: IRunForm,
  values: IRunValues,
  sweep: ISweepValues
): { grid: Record<string, GridEntry>; tasks: number } {
  const grid: Record<string, GridEntry> = {};
  let product = 1;
  for (const parameter of form.parameters || []) {
    const entry = gridEntry(
      parameter,
      sweep.fields[parameter.name],
      values.parameters[parameter.name]
    );
    if (entry) {
      grid[parameter.name] = entry;
      product *= entryCount(parameter, entry);
    }
  }
  const sample = sampleSize(sweep.sample);
  return { grid, tasks: sample > 0 ? Math.min(sample, product) : product };
}

// The most a sweep can cost: every run for its whole time limit.
export function gpuHours(
  tasks: number,
  nodes: number,
  gpus: number,
  hours: number
): number {
  return tasks * nodes * gpus * hours;
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

function shortNumber(value: number): string {
  return String(Math.round(value * 100) / 100);
}

export interface ISweepEstimate {
  tasks: number | null; // null while a field cannot be read
  words: string; // "6 runs, at most 12 GPU-hours"
  over: string; // '' within the admin's limits, else why the hub will refuse it
}

// What the dialog shows live under the sweep: the runs, their GPU-hours, and a limit passed.
export function sweepEstimate(
  form: IRunForm,
  values: IRunValues,
  sweep: ISweepValues
): ISweepEstimate {
  let tasks: number;
  try {
    tasks = sweepGrid(form, values, sweep).tasks;
  } catch (e) {
    return {
      tasks: null,
      words: `The number of runs is not known yet: ${(e as Error).message}`,
      over: ''
    };
  }
  const limits = form.sweeps;
  const cost = gpuHours(
    tasks,
    Number(values.nodes) || 1,
    Number(values.gpus) || 0,
    Number(values.hours) || 0
  );
  const words =
    `${plural(tasks, 'run')}, ` +
    (cost > 0 ? `at most ${shortNumber(cost)} GPU-hours` : 'no GPU');
  const over: string[] = [];
  if (limits && tasks > limits.max_tasks) {
    over.push(
      `more than the ${plural(limits.max_tasks, 'run')} a sweep may have`
    );
  }
  if (limits && cost > limits.max_gpu_hours) {
    over.push(
      `more than the ${shortNumber(limits.max_gpu_hours)} GPU-hours a sweep may cost`
    );
  }
  return {
    tasks,
    words,
    over: over.length
      ? `That is ${over.join(' and ')}: the portal will refuse it. Take fewer values, a random sample, fewer GPUs or fewer hours.`
      : ''
  };
}

// The POST body of a sweep: the run's resources, and the grid instead of parameters. Throws an Error in
// words when a field cannot be read.
export function buildSweepRequest(
  form: IRunForm,
  values: IRunValues,
  sweep: ISweepValues
): IRunRequest {
  // the resources only: the parameters go in the grid
  const run = buildRequest({ ...form, parameters: [] }, values);
  delete run.parameters;
  const { grid } = sweepGrid(form, values, sweep);
  if (!Object.keys(grid).length) {
    throw new Error(
      'Give at least one parameter a list or a range (or a value of its own) to sweep.'
    );
  }
  const maxAtOnce = form.sweeps?.max_at_once ?? 1;
  const atOnce = wholeNumber(
    sweep.at_once,
    `Runs at once must be a whole number from 1 to ${maxAtOnce}.`,
    1
  );
  if (atOnce > maxAtOnce) {
    throw new Error(
      `Runs at once must be a whole number from 1 to ${maxAtOnce}.`
    );
  }
  const request: ISweepRequest = { grid, at_once: atOnce, best: sweep.best };
  const sample = sampleSize(sweep.sample);
  if (sample > 0) {
    request.sample = sample;
  }
  if (sweep.objective.trim()) {
    request.objective = sweep.objective.trim();
  }
  return { ...run, sweep: request };
}
