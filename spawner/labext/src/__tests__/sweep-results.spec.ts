// A sweep's table and plot (runs/sweepresults.ts): columns, cells, the sort and the scatter.
import {
  IColumn,
  bestTask,
  cellText,
  columnsOf,
  elapsedSeconds,
  formatValue,
  logAxis,
  nextSort,
  plotChoices,
  plotOf,
  sortTasks
} from '../runs/sweepresults';
import { ISweepTask, ISweepTasks } from '../runs/types';

function aTask(
  task: number,
  lr: number,
  batch: number,
  results: Record<string, unknown>,
  changes: Partial<ISweepTask> = {}
): ISweepTask {
  return {
    task,
    job_id: `123_${task}`,
    parameters: { learning_rate: lr, batch_size: batch, epochs: 1 },
    state: 'COMPLETED',
    active: false,
    words: '',
    why: 'Completed.',
    elapsed: '0:42',
    results,
    results_error: '',
    output: `jobs/train-123/task-${task}.ipynb`,
    log: `.dsportal-job-123_${task}.log`,
    can_cancel: false,
    ...changes
  };
}

// GET dsportal/runs/123/tasks of a 2 × 2 grid: one task still running, one whose results are not JSON.
function aTable(changes: Partial<ISweepTasks> = {}): ISweepTasks {
  return {
    job_id: '123',
    path: 'work/train.ipynb',
    varied: ['learning_rate', 'batch_size'],
    parameters: ['learning_rate', 'batch_size', 'epochs'],
    results: ['accuracy', 'loss'],
    objective: 'accuracy',
    best: 'max',
    best_task: 1,
    tasks: [
      aTask(0, 0.001, 32, { accuracy: 0.9, loss: 0.3 }),
      aTask(1, 0.01, 32, { accuracy: 0.95, loss: 0.2 }, { elapsed: '1:02:03' }),
      aTask(
        2,
        0.001,
        64,
        {},
        {
          state: 'RUNNING',
          active: true,
          elapsed: '0:10',
          can_cancel: true
        }
      ),
      aTask(
        3,
        0.01,
        64,
        {},
        { results_error: 'results is not JSON-able: a set' }
      )
    ],
    error: '',
    ...changes
  };
}

function column(key: string): IColumn {
  return columnsOf(aTable()).find(c => c.key === key)!;
}

describe('the table', () => {
  it('has the task, the varied parameters, state, time and each result', () => {
    expect(columnsOf(aTable()).map(c => [c.key, c.label])).toEqual([
      ['task', 'Task'],
      ['parameter:learning_rate', 'learning_rate'],
      ['parameter:batch_size', 'batch_size'],
      ['state', 'State'],
      ['elapsed', 'Time'],
      ['result:accuracy', 'accuracy'],
      ['result:loss', 'loss']
    ]);
  });

  it('shows every set parameter where none varies', () => {
    expect(
      columnsOf(aTable({ varied: [], results: [] })).map(c => c.key)
    ).toEqual([
      'task',
      'parameter:learning_rate',
      'parameter:batch_size',
      'parameter:epochs',
      'state',
      'elapsed'
    ]);
  });

  it('says each cell in words, a dash where there is nothing', () => {
    const [, , running] = aTable().tasks;
    expect(columnsOf(aTable()).map(c => cellText(running, c))).toEqual([
      '2',
      '0.001',
      '64',
      'running',
      '0:10',
      '—',
      '—'
    ]);
  });

  it('writes values as Python does, numbers to 4 digits', () => {
    expect(
      [0.123456, 3, 1e-7, true, null, 'adam', [1, 2], undefined].map(
        formatValue
      )
    ).toEqual(['0.1235', '3', '1e-7', 'True', 'None', 'adam', '[1,2]', '—']);
  });

  it('reads Slurm’s elapsed times', () => {
    expect(
      ['0:42', '1:02:03', '2-00:00:01', '', 'x'].map(elapsedSeconds)
    ).toEqual([42, 3723, 172801, null, null]);
  });
});

describe('the sort', () => {
  const order = (key: string, descending = false) =>
    sortTasks(aTable().tasks, column(key), descending).map(t => t.task);

  it('puts numbers in numeric order, missing results last either way', () => {
    expect(order('result:accuracy')).toEqual([0, 1, 2, 3]);
    expect(order('result:accuracy', true)).toEqual([1, 0, 2, 3]);
    expect(order('result:loss')).toEqual([1, 0, 2, 3]);
  });

  it('sorts times as durations and states as words', () => {
    expect(order('elapsed')).toEqual([2, 0, 3, 1]);
    expect(order('state')).toEqual([0, 1, 3, 2]);
  });

  it('keeps task order among equals', () => {
    expect(order('parameter:learning_rate', true)).toEqual([1, 3, 0, 2]);
  });

  it('turns round on a second click', () => {
    expect(nextSort({ key: 'task', descending: false }, 'task')).toEqual({
      key: 'task',
      descending: true
    });
    expect(nextSort({ key: 'task', descending: true }, 'state')).toEqual({
      key: 'state',
      descending: false
    });
  });

  it('finds the best task', () => {
    expect(bestTask(aTable())?.task).toBe(1);
    expect(bestTask(aTable({ best_task: null }))).toBeNull();
  });
});

describe('the plot', () => {
  it('first shows the objective against the first varied parameter', () => {
    expect(plotChoices(aTable())).toEqual({
      results: ['accuracy', 'loss'],
      parameters: ['learning_rate', 'batch_size'],
      result: 'accuracy',
      parameter: 'learning_rate'
    });
  });

  it('has a log x axis where the values span more than 2 decades', () => {
    expect(logAxis([0.001, 0.01, 0.1])).toBe(false);
    expect(logAxis([0.0001, 0.01, 0.1])).toBe(true);
    expect(logAxis([-1, 1000])).toBe(false);
  });

  it('draws the tasks with a number for the result, the best one marked', () => {
    const box = {
      width: 110,
      height: 110,
      left: 10,
      right: 0,
      top: 0,
      bottom: 10
    };
    expect(plotOf(aTable(), 'accuracy', 'learning_rate', box)).toEqual({
      points: [
        {
          task: 0,
          x: 10,
          y: 100,
          title: 'task 0: learning_rate=0.001, batch_size=32 → accuracy 0.9',
          best: false
        },
        {
          task: 1,
          x: 110,
          y: 0,
          title: 'task 1: learning_rate=0.01, batch_size=32 → accuracy 0.95',
          best: true
        }
      ],
      xTicks: [
        { at: 10, label: '0.001' },
        { at: 35, label: '0.00325' },
        { at: 60, label: '0.0055' },
        { at: 85, label: '0.00775' },
        { at: 110, label: '0.01' }
      ],
      yTicks: [
        { at: 100, label: '0.9' },
        { at: 75, label: '0.9125' },
        { at: 50, label: '0.925' },
        { at: 25, label: '0.9375' },
        { at: 0, label: '0.95' }
      ],
      logX: false,
      empty: ''
    });
  });

  it('places decades on a log axis', () => {
    const table = aTable({
      tasks: [
        aTask(0, 0.0001, 32, { accuracy: 0.5 }),
        aTask(1, 0.1, 32, { accuracy: 0.9 })
      ]
    });
    const plot = plotOf(table, 'accuracy', 'learning_rate');
    expect(plot.logX).toBe(true);
    expect(plot.xTicks.map(t => t.label)).toEqual([
      '0.0001',
      '0.001',
      '0.01',
      '0.1'
    ]);
  });

  it('spaces words evenly', () => {
    const table = aTable({
      varied: ['optimizer'],
      tasks: [
        aTask(
          0,
          0.1,
          32,
          { accuracy: 0.5 },
          { parameters: { optimizer: 'sgd' } }
        ),
        aTask(
          1,
          0.1,
          32,
          { accuracy: 0.9 },
          { parameters: { optimizer: 'adam' } }
        )
      ]
    });
    const box = {
      width: 110,
      height: 110,
      left: 10,
      right: 0,
      top: 0,
      bottom: 10
    };
    const plot = plotOf(table, 'accuracy', 'optimizer', box);
    expect(plot.xTicks).toEqual([
      { at: 10, label: 'adam' },
      { at: 110, label: 'sgd' }
    ]);
    expect(plot.points.map(p => [p.task, p.x])).toEqual([
      [0, 110],
      [1, 10]
    ]);
  });

  it('says why there is nothing to draw', () => {
    expect(plotOf(aTable(), 'loss', 'batch_size').empty).toBe('');
    expect(
      plotOf(aTable({ tasks: [aTable().tasks[2]] }), 'accuracy', 'batch_size')
        .empty
    ).toBe('No task has a number for accuracy yet.');
    expect(plotOf(aTable({ results: [] }), '', 'batch_size').empty).toBe(
      'No results yet to plot.'
    );
  });
});
