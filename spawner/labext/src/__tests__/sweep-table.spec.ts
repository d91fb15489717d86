// A sweep's table in the Jobs panel (runs/sweeptable.ts) in jsdom, with the runs API and JupyterLab's
// notifications swapped for fakes: its lines, the sort, the best task, the plot, Make best defaults.
import { SweepTable } from '../runs/sweeptable';
import { IJob, ISweepTask, ISweepTasks } from '../runs/types';

const mockApi = {
  tasks: jest.fn(),
  makeDefaults: jest.fn(),
  again: jest.fn(),
  cancel: jest.fn(),
  log: jest.fn()
};
jest.mock('../runs/api', () => ({
  get runsApi() {
    return mockApi;
  }
}));
const mockNotices: [string, string][] = [];
jest.mock('@jupyterlab/apputils', () => ({
  Notification: {
    success: (message: string) => mockNotices.push(['success', message]),
    error: (message: string) => mockNotices.push(['error', message])
  },
  Dialog: {},
  showDialog: jest.fn()
}));

function aTask(
  task: number,
  lr: number,
  batch: number,
  accuracy?: number
): ISweepTask {
  return {
    task,
    job_id: `123_${task}`,
    parameters: { learning_rate: lr, batch_size: batch, epochs: 1 },
    state: accuracy === undefined ? 'RUNNING' : 'COMPLETED',
    active: accuracy === undefined,
    words: '',
    why: '',
    elapsed: '0:42',
    results: accuracy === undefined ? {} : { accuracy },
    results_error: '',
    output: `jobs/train-123/task-${task}.ipynb`,
    log: `.dsportal-job-123_${task}.log`,
    can_cancel: accuracy === undefined
  };
}

const TABLE: ISweepTasks = {
  job_id: '123',
  path: 'work/train.ipynb',
  varied: ['learning_rate', 'batch_size'],
  parameters: ['learning_rate', 'batch_size', 'epochs'],
  results: ['accuracy'],
  objective: 'accuracy',
  best: 'max',
  best_task: 1,
  tasks: [
    aTask(0, 0.001, 32, 0.9),
    aTask(1, 0.01, 32, 0.95),
    aTask(2, 0.001, 64)
  ],
  error: ''
};

const JOB = { job_id: '123', active: false } as IJob;

async function anOpenTable(): Promise<{
  table: SweepTable;
  opened: string[];
}> {
  mockApi.tasks.mockResolvedValue({ ok: true, status: 200, body: TABLE });
  const opened: string[] = [];
  const commands = {
    execute: async (_id: string, args: { path: string }) => {
      opened.push(args.path);
    }
  };
  const table = new SweepTable(JOB, {
    commands: commands as never,
    isVisible: () => true,
    onSubmitted: () => undefined,
    refreshList: async () => undefined
  });
  document.body.append(table.node);
  table.open();
  await new Promise(resolve => setTimeout(resolve, 0));
  return { table, opened };
}

function column(table: SweepTable, key: string): string[] {
  return Array.from(
    table.node.querySelectorAll(`tbody td[data-column="${key}"]`)
  ).map(cell => cell.textContent || '');
}

describe('a sweep’s table', () => {
  afterEach(() => {
    document.body.replaceChildren();
    mockNotices.length = 0;
  });

  it('has a line per task, the best one marked', async () => {
    const { table } = await anOpenTable();
    expect(column(table, 'task')).toEqual(['0', '1 ★', '2']);
    expect(column(table, 'result:accuracy')).toEqual(['0.9', '0.95', '—']);
    expect(
      table.node
        .querySelector('.dsportal-sweep-best')
        ?.getAttribute('data-task')
    ).toBe('1');
    expect(
      table.node.querySelector('.dsportal-sweep-best-words')?.textContent
    ).toBe(
      'Best accuracy (highest): 0.95, task 1: learning_rate=0.01, batch_size=32.'
    );
    const buttons = Array.from(
      table.node.querySelectorAll('tr[data-task="2"] button')
    ).map(b => b.getAttribute('aria-label'));
    expect(buttons).toEqual([
      'Open output of task 2',
      'Log of task 2',
      'Cancel task 2'
    ]);
    table.close();
  });

  it('sorts by a clicked header, numbers numerically, missing last', async () => {
    const { table } = await anOpenTable();
    const sort = table.node.querySelector<HTMLButtonElement>(
      'button[aria-label="Sort by accuracy"]'
    )!;
    sort.click();
    expect(column(table, 'task')).toEqual(['0', '1 ★', '2']);
    table.node
      .querySelector<HTMLButtonElement>(
        'button[aria-label="Sort by accuracy"]'
      )!
      .click();
    expect(column(table, 'task')).toEqual(['1 ★', '0', '2']);
    expect(
      table.node
        .querySelector('th[data-column="result:accuracy"]')
        ?.getAttribute('aria-sort')
    ).toBe('descending');
    table.close();
  });

  it('plots the result against the parameter, each point titled', async () => {
    const { table } = await anOpenTable();
    const svg = table.node.querySelector('svg.dsportal-sweep-svg')!;
    expect(svg.getAttribute('aria-label')).toBe(
      'accuracy against learning_rate'
    );
    const points = Array.from(svg.querySelectorAll('circle')).map(c =>
      c.getAttribute('aria-label')
    );
    expect(points).toEqual([
      'task 0: learning_rate=0.001, batch_size=32 → accuracy 0.9',
      'task 1: learning_rate=0.01, batch_size=32 → accuracy 0.95'
    ]);
    const pick = table.node.querySelector<HTMLSelectElement>(
      'select[aria-label="Parameter to plot against"]'
    )!;
    pick.value = 'batch_size';
    pick.dispatchEvent(new Event('change'));
    expect(svg.getAttribute('aria-label')).toBe('accuracy against batch_size');
    table.close();
  });

  it('makes the best task’s parameters the defaults of a copy, and opens it', async () => {
    const { table, opened } = await anOpenTable();
    mockApi.makeDefaults.mockResolvedValue({
      ok: true,
      status: 201,
      body: { path: 'work/train-best.ipynb' }
    });
    table.node
      .querySelector<HTMLButtonElement>('.dsportal-sweep-defaults')!
      .click();
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(mockApi.makeDefaults).toHaveBeenCalledWith('work/train.ipynb', {
      learning_rate: 0.01,
      batch_size: 32,
      epochs: 1
    });
    expect(opened).toEqual(['work/train-best.ipynb']);
    expect(mockNotices).toEqual([
      [
        'success',
        'work/train-best.ipynb is a copy of work/train.ipynb with task 1’s parameters as its defaults: ' +
          'learning_rate=0.01, batch_size=32, epochs=1.'
      ]
    ]);
    table.close();
  });

  it('says why when the copy is refused', async () => {
    const { table, opened } = await anOpenTable();
    mockApi.makeDefaults.mockResolvedValue({
      ok: false,
      status: 400,
      body: { message: 'work/train.ipynb has no parameters cell.' }
    });
    table.node
      .querySelector<HTMLButtonElement>('.dsportal-sweep-defaults')!
      .click();
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(opened).toEqual([]);
    expect(mockNotices).toEqual([
      [
        'error',
        'The best parameters could not be made the defaults: work/train.ipynb has no parameters cell.'
      ]
    ]);
    table.close();
  });

  it('shows the hub’s words when Slurm did not answer', async () => {
    mockApi.tasks.mockResolvedValue({
      ok: false,
      status: 502,
      body: { message: 'Slurm did not answer.' }
    });
    const table = new SweepTable(JOB, {
      commands: {} as never,
      isVisible: () => true,
      onSubmitted: () => undefined,
      refreshList: async () => undefined
    });
    table.open();
    await new Promise(resolve => setTimeout(resolve, 0));
    const alert = table.node.querySelector<HTMLElement>('[role="alert"]')!;
    expect(alert.hidden).toBe(false);
    expect(alert.textContent).toBe('Slurm did not answer.');
    table.close();
  });
});
