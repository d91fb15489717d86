// A sweep from the run dialog (runs/sweep.ts): lists parsed by type, ranges, the count of runs and
// GPU-hours, and the POST body.
/// <reference types="node" />  // fs and path: the table the hub is held to too
import { readFileSync } from 'fs';
import { join } from 'path';

import { initialValues } from '../runs/parameters';
import {
  buildSweepRequest,
  gpuHours,
  initialSweep,
  modeChoices,
  parseList,
  rangeValues,
  roundHalfEven,
  splitList,
  sweepEstimate,
  sweepGrid,
  sweepsOffered
} from '../runs/sweep';
import {
  IParameter,
  IRunForm,
  IRunValues,
  ISweepField,
  ISweepValues
} from '../runs/types';

const PARAMETERS: IParameter[] = [
  { name: 'learning_rate', type: 'float', default: '0.002' },
  { name: 'batch_size', type: 'int', default: '32' },
  { name: 'epochs', type: 'int', default: '3' },
  { name: 'optimizer', type: 'str', default: "'adam'" },
  { name: 'shuffle', type: 'bool', default: 'True' }
];

// What GET dsportal/runs/form answers for the MNIST template where the admin allows sweeps.
function aForm(changes: Partial<IRunForm> = {}): IRunForm {
  return {
    path: 'work/train.ipynb',
    kind: 'notebook',
    parameters: PARAMETERS,
    partitions: [{ name: 'gpu', max_gpus: 4, max_nodes: 2 }],
    defaults: { partition: 'gpu', nodes: 1, gpus: 1, hours: 2 },
    max_hours: 24,
    sweeps: {
      enabled: true,
      max_tasks: 100,
      max_gpu_hours: 50,
      max_at_once: 8
    },
    ...changes
  };
}

const FLOAT = PARAMETERS[0];
const INT = PARAMETERS[1];
const STR = PARAMETERS[3];
const BOOL = PARAMETERS[4];

function field(changes: Partial<ISweepField>): ISweepField {
  return {
    mode: 'value',
    list: '',
    from: '',
    to: '',
    steps: '3',
    scale: 'linear',
    ...changes
  };
}

// The sweep of the browser test: learning_rate 0.001, 0.01 × batch_size 32, 64, 128, epochs 1.
function theSweep(
  changes: Partial<ISweepValues> = {}
): [IRunForm, IRunValues, ISweepValues] {
  const form = aForm();
  const values = initialValues(form);
  values.parameters.epochs = '1';
  const sweep = initialSweep(form);
  sweep.fields.learning_rate = field({ mode: 'list', list: '0.001, 0.01' });
  sweep.fields.batch_size = field({ mode: 'list', list: '32,64,128' });
  return [form, values, { ...sweep, ...changes }];
}

describe('the sweep section', () => {
  it('is offered for a notebook with parameters where the admin allows sweeps', () => {
    expect(sweepsOffered(aForm())).toBe(true);
    expect(sweepsOffered(aForm({ sweeps: undefined }))).toBe(false);
    expect(
      sweepsOffered(
        aForm({
          sweeps: {
            enabled: false,
            max_tasks: 1,
            max_gpu_hours: 1,
            max_at_once: 1
          }
        })
      )
    ).toBe(false);
    expect(sweepsOffered(aForm({ kind: 'python' }))).toBe(false);
    expect(sweepsOffered(aForm({ parameters: [] }))).toBe(false);
  });

  it('offers a range for numbers only', () => {
    expect(modeChoices(FLOAT).map(c => c.name)).toEqual([
      'value',
      'list',
      'range'
    ]);
    expect(modeChoices(STR).map(c => c.name)).toEqual(['value', 'list']);
  });

  it('starts with one value each and the admin’s runs at once', () => {
    const sweep = initialSweep(aForm());
    expect(sweep.fields.epochs).toEqual(field({}));
    expect(sweep).toMatchObject({
      sample: '',
      at_once: '8',
      objective: '',
      best: 'max'
    });
  });
});

describe('a list', () => {
  it('splits on commas outside brackets and quotes', () => {
    expect(splitList("a, [1, 2], 'x, y' ,{'k': 1}")).toEqual([
      'a',
      '[1, 2]',
      "'x, y'",
      "{'k': 1}"
    ]);
  });

  it('is typed by its parameter', () => {
    expect(parseList(FLOAT, '0.001, 0.01,1e-4')).toEqual([0.001, 0.01, 1e-4]);
    expect(parseList(INT, '32,64, 128')).toEqual([32, 64, 128]);
    expect(parseList(STR, 'adam, \'sgd\', "rms, prop"')).toEqual([
      'adam',
      'sgd',
      'rms, prop'
    ]);
    expect(parseList(BOOL, 'True, false')).toEqual([true, false]);
    expect(
      parseList({ name: 'layers', type: 'list' }, '[64, 32], [128]')
    ).toEqual([[64, 32], [128]]);
  });

  it('says which value is wrong', () => {
    expect(() => parseList(INT, '32, 6.5')).toThrow(
      'batch_size: “6.5” is not a whole number.'
    );
    expect(() => parseList(FLOAT, '0.1, fast')).toThrow(
      'learning_rate: “fast” is not a number.'
    );
    expect(() => parseList(BOOL, 'yes')).toThrow(
      'shuffle: “yes” is not True or False.'
    );
    expect(() => parseList(INT, '')).toThrow(
      'batch_size: give at least one value, separated by commas.'
    );
    expect(() => parseList(INT, '1,,2')).toThrow(
      'batch_size: a value between two commas is empty.'
    );
  });
});

describe('a range', () => {
  it('is evenly spaced, or by ratio on a log scale', () => {
    expect(
      rangeValues(FLOAT, field({ from: '0', to: '1', steps: '5' }))
    ).toEqual([0, 0.25, 0.5, 0.75, 1]);
    expect(
      rangeValues(
        FLOAT,
        field({ from: '0.001', to: '0.1', steps: '3', scale: 'log' })
      ).map(v => Number(v.toPrecision(6)))
    ).toEqual([0.001, 0.01, 0.1]);
  });

  it('of whole numbers is rounded and has no repeats', () => {
    expect(
      rangeValues(
        INT,
        field({ from: '32', to: '128', steps: '3', scale: 'log' })
      )
    ).toEqual([32, 64, 128]);
    expect(rangeValues(INT, field({ from: '1', to: '2', steps: '5' }))).toEqual(
      [1, 2]
    );
  });

  it('is what the hub runs: the values and GPU-hours of tests/data/sweepgrid.json', () => {
    // the same table holds spawner/hub/runs/grid.py (tests/unit/test_sweeps.py): the dialog shows what runs
    const table = JSON.parse(
      readFileSync(
        join(
          __dirname,
          '..',
          '..',
          '..',
          '..',
          'tests',
          'data',
          'sweepgrid.json'
        ),
        'utf8'
      )
    );
    for (const c of table.ranges) {
      const parameter: IParameter = { name: 'x', type: c.type, default: '1' };
      const range = field({
        from: String(c.from),
        to: String(c.to),
        steps: String(c.steps),
        scale: c.scale
      });
      expect([c, rangeValues(parameter, range)]).toEqual([c, c.values]);
    }
    for (const [tasks, nodes, gpus, hours, total] of table.gpu_hours) {
      expect(gpuHours(tasks, nodes, gpus, hours)).toEqual(total);
    }
    expect([2.5, 3.5, -2.5, -3.5, 2.4].map(roundHalfEven)).toEqual([
      2, 4, -2, -4, 2
    ]);
  });

  it('says what is wrong', () => {
    expect(() =>
      rangeValues(FLOAT, field({ from: '1', to: '2', steps: '1' }))
    ).toThrow('learning_rate: a range needs 2 steps or more.');
    expect(() =>
      rangeValues(
        FLOAT,
        field({ from: '0', to: '1', steps: '3', scale: 'log' })
      )
    ).toThrow('learning_rate: a log range needs a start and an end above 0.');
    expect(() =>
      rangeValues(FLOAT, field({ from: '', to: '1', steps: '3' }))
    ).toThrow('learning_rate: the range’s start must be a number.');
    expect(() =>
      rangeValues(STR, field({ from: '1', to: '2', steps: '3' }))
    ).toThrow('optimizer: a range is for numbers only; give a list.');
  });
});

describe('the grid and its count', () => {
  it('is the product of each parameter’s count', () => {
    const [form, values, sweep] = theSweep();
    expect(sweepGrid(form, values, sweep)).toEqual({
      grid: {
        learning_rate: { values: [0.001, 0.01] },
        batch_size: { values: [32, 64, 128] },
        epochs: { value: 1 }
      },
      tasks: 6
    });
  });

  it('counts a range’s values as the hub makes them', () => {
    const [form, values, sweep] = theSweep();
    sweep.fields.batch_size = field({
      mode: 'range',
      from: '1',
      to: '2',
      steps: '4'
    });
    expect(sweepGrid(form, values, sweep).tasks).toBe(4); // 1, 2 for each of 2 rates
  });

  it('is the sample where it is smaller', () => {
    const [form, values] = theSweep();
    expect(sweepGrid(form, values, theSweep({ sample: '4' })[2]).tasks).toBe(4);
    expect(sweepGrid(form, values, theSweep({ sample: '10' })[2]).tasks).toBe(
      6
    );
  });

  it('costs tasks × nodes × GPUs × hours', () => {
    expect(gpuHours(6, 2, 4, 1.5)).toBe(72);
  });
});

describe('what the dialog says live', () => {
  it('is the runs and their GPU-hours', () => {
    const [form, values, sweep] = theSweep();
    expect(sweepEstimate(form, values, sweep)).toEqual({
      tasks: 6,
      words: '6 runs, at most 12 GPU-hours',
      over: ''
    });
    values.gpus = '0';
    expect(sweepEstimate(form, values, sweep).words).toBe('6 runs, no GPU');
  });

  it('says when a limit is passed', () => {
    const [form, values, sweep] = theSweep();
    values.hours = '10';
    expect(sweepEstimate(form, values, sweep).over).toBe(
      'That is more than the 50 GPU-hours a sweep may cost: the portal will refuse it. ' +
        'Take fewer values, a random sample, fewer GPUs or fewer hours.'
    );
    sweep.fields.epochs = field({
      mode: 'range',
      from: '1',
      to: '100',
      steps: '100'
    });
    expect(sweepEstimate(form, values, sweep).over).toContain(
      'more than the 100 runs a sweep may have and more than the 50 GPU-hours'
    );
  });

  it('says why the count is not known', () => {
    const [form, values, sweep] = theSweep();
    sweep.fields.batch_size.list = '32, x';
    expect(sweepEstimate(form, values, sweep)).toEqual({
      tasks: null,
      words:
        'The number of runs is not known yet: batch_size: “x” is not a whole number.',
      over: ''
    });
  });
});

describe('the request of a sweep', () => {
  it('carries the grid instead of parameters', () => {
    const [form, values, sweep] = theSweep({
      sample: '4',
      at_once: '2',
      objective: ' accuracy ',
      best: 'max'
    });
    expect(buildSweepRequest(form, values, sweep)).toEqual({
      path: 'work/train.ipynb',
      partition: 'gpu',
      nodes: 1,
      gpus: 1,
      hours: 2,
      sweep: {
        grid: {
          learning_rate: { values: [0.001, 0.01] },
          batch_size: { values: [32, 64, 128] },
          epochs: { value: 1 }
        },
        sample: 4,
        at_once: 2,
        objective: 'accuracy',
        best: 'max'
      }
    });
  });

  it('sends a range as a range', () => {
    const [form, values, sweep] = theSweep();
    sweep.fields.learning_rate = field({
      mode: 'range',
      from: '0.001',
      to: '0.1',
      steps: '3',
      scale: 'log'
    });
    expect(buildSweepRequest(form, values, sweep).sweep?.grid).toMatchObject({
      learning_rate: {
        range: { from: 0.001, to: 0.1, steps: 3, scale: 'log' }
      }
    });
  });

  it('leaves out an unread value field of a listed parameter', () => {
    const [form, values, sweep] = theSweep();
    values.parameters.batch_size = ''; // hidden while batch_size is a list
    expect(
      buildSweepRequest(form, values, sweep).sweep?.grid.batch_size
    ).toEqual({ values: [32, 64, 128] });
  });

  it('refuses an empty grid and runs at once past the admin’s', () => {
    const form = aForm();
    expect(() =>
      buildSweepRequest(form, initialValues(form), initialSweep(form))
    ).toThrow(
      'Give at least one parameter a list or a range (or a value of its own) to sweep.'
    );
    const [f, values, sweep] = theSweep({ at_once: '9' });
    expect(() => buildSweepRequest(f, values, sweep)).toThrow(
      'Runs at once must be a whole number from 1 to 8.'
    );
  });
});
