// A sweep's tab (runs/sweeptable.ts) in jsdom, with the runs API, JupyterLab's notifications and its
// MainAreaWidget swapped for fakes: its header, its lines, the sort, the best task, a task's log, the
// plot, Make best defaults; one tab per sweep, whose reads stop when it closes.
import './lumino-jsdom';

import { Widget } from '@lumino/widgets';

import {
  SweepAction,
  SweepTable,
  SweepTabs,
  SweepView,
  sweepTabTitle
} from '../runs/sweeptable';
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
jest.mock('@jupyterlab/apputils', () => {
  const { Panel } = jest.requireActual('@lumino/widgets');
  // JupyterLab's MainAreaWidget, as far as a tab needs it: its content inside, disposed with it
  class MainAreaWidget extends Panel {
    constructor(options: { content: Widget }) {
      super();
      this.content = options.content;
      this.addWidget(options.content);
    }
    readonly content: Widget;
  }
  return {
    MainAreaWidget,
    Notification: {
      success: (message: string) => mockNotices.push(['success', message]),
      error: (message: string) => mockNotices.push(['error', message])
    },
    Dialog: {},
    showDialog: jest.fn()
  };
});

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

// The sweep's row in the panel's list.
const JOB = {
  job_id: '123',
  name: 'train.ipynb',
  path: 'work/train.ipynb',
  active: false,
  state: 'COMPLETED',
  words: '3 tasks: 1 running, 2 completed.',
  summary: 'Best accuracy 0.95 (task 1).',
  can_cancel: true,
  can_again: true,
  sweep: {
    tasks: 3,
    at_once: 2,
    varied: ['learning_rate', 'batch_size'],
    counts: {
      waiting: 0,
      running: 1,
      completed: 2,
      failed: 0,
      cancelled: 0,
      other: 0
    },
    objective: 'accuracy',
    best: 'max'
  }
} as IJob;

const tick = () => new Promise(resolve => setTimeout(resolve, 0));

function options(changes: Partial<SweepTable.IOptions> = {}): {
  options: SweepTable.IOptions;
  opened: string[];
  acted: [SweepAction, string][];
  refreshed: number[];
} {
  const opened: string[] = [];
  const acted: [SweepAction, string][] = [];
  const refreshed: number[] = [];
  const commands = {
    execute: async (_id: string, args: { path: string }) => {
      opened.push(args.path);
    }
  };
  return {
    options: {
      commands: commands as never,
      isVisible: () => true,
      onSubmitted: () => undefined,
      refreshList: async () => {
        refreshed.push(1);
      },
      act: async (action, job) => {
        acted.push([action, job.job_id]);
      },
      ...changes
    },
    opened,
    acted,
    refreshed
  };
}

async function anOpenTable(job: IJob = JOB): Promise<{
  table: SweepTable;
  opened: string[];
  acted: [SweepAction, string][];
  refreshed: number[];
}> {
  mockApi.tasks.mockResolvedValue({ ok: true, status: 200, body: TABLE });
  const made = options();
  const table = new SweepTable(job, made.options);
  document.body.append(table.node);
  table.open();
  await tick();
  return { table, ...made };
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
    jest.clearAllMocks();
  });

  it('says in its header the sweep’s counts, best result and summary', async () => {
    const { table } = await anOpenTable();
    const text = (selector: string) =>
      table.node.querySelector(selector)?.textContent;
    expect(text('.dsportal-sweep-title')).toBe('Sweep 123: train.ipynb');
    expect(text('.dsportal-sweep-words')).toBe(
      '3 tasks: 1 running, 2 completed.'
    );
    expect(text('.dsportal-sweep-best-words')).toBe(
      'Best accuracy (highest): 0.95, task 1: learning_rate=0.01, batch_size=32.'
    );
    expect(text('.dsportal-sweep-summary')).toBe(
      'Best accuracy 0.95 (task 1).'
    );
    table.update({
      ...JOB,
      words: '',
      summary: '',
      sweep: {
        ...JOB.sweep!,
        counts: { ...JOB.sweep!.counts, running: 0, completed: 3 }
      }
    });
    expect(text('.dsportal-sweep-words')).toBe('3 tasks: 3 completed.');
    expect(
      table.node.querySelector<HTMLElement>('.dsportal-sweep-summary')!.hidden
    ).toBe(true);
    table.close();
  });

  it('has the sweep’s Cancel the rest and Run again, as its row has', async () => {
    const { table, acted } = await anOpenTable();
    const cancel = table.node.querySelector<HTMLButtonElement>(
      'button[aria-label="Cancel the rest of sweep 123"]'
    )!;
    expect(cancel.textContent).toBe('Cancel the rest');
    cancel.click();
    await tick();
    table.node
      .querySelector<HTMLButtonElement>(
        'button[aria-label="Run sweep 123 again"]'
      )!
      .click();
    await tick();
    expect(acted).toEqual([
      ['cancel', '123'],
      ['again', '123']
    ]);
    table.update({ ...JOB, can_cancel: false });
    expect(cancel.hidden).toBe(true);
    table.close();
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
    expect([svg.getAttribute('width'), svg.getAttribute('height')]).toEqual([
      '480',
      '300'
    ]);
    expect(
      Array.from(
        table.node.querySelectorAll('.dsportal-sweep-plot-pick > span')
      ).map(label => label.textContent)
    ).toEqual(['Result to plot', 'Parameter to plot against']);
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
    const table = new SweepTable(JOB, options().options);
    table.open();
    await tick();
    const alert = table.node.querySelector<HTMLElement>('[role="alert"]')!;
    expect(alert.hidden).toBe(false);
    expect(alert.textContent).toBe('Slurm did not answer.');
    table.close();
  });
  it('shows a task’s log below the table, and hides it again', async () => {
    const { table } = await anOpenTable();
    mockApi.log.mockResolvedValue({
      ok: true,
      status: 200,
      body: { log: 'epoch 1/1\n' }
    });
    table.node
      .querySelector<HTMLButtonElement>('button[aria-label="Log of task 2"]')!
      .click();
    await tick();
    expect(mockApi.log).toHaveBeenCalledWith('123_2', 200);
    const box = table.node.querySelector<HTMLElement>(
      '.dsportal-sweep-logbox'
    )!;
    expect(box.hidden).toBe(false);
    expect(box.previousElementSibling?.className).toBe('dsportal-sweep-scroll');
    expect(box.querySelector('pre')?.textContent).toBe('epoch 1/1\n');
    const hide = table.node.querySelector<HTMLButtonElement>(
      'button[aria-label="Log of task 2"]'
    )!;
    expect(hide.textContent).toBe('Hide log');
    hide.click();
    expect(box.hidden).toBe(true);
    table.close();
  });

  it('reads the panel’s list again when a task’s state changed', async () => {
    const { table, refreshed } = await anOpenTable({ ...JOB, active: true });
    table.refresh(); // the same states
    await tick();
    expect(refreshed).toEqual([]);
    mockApi.tasks.mockResolvedValue({
      ok: true,
      status: 200,
      body: {
        ...TABLE,
        tasks: [TABLE.tasks[0], TABLE.tasks[1], aTask(2, 0.001, 64, 0.8)]
      }
    });
    table.refresh();
    await tick();
    expect(refreshed).toEqual([1]);
    table.close();
  });
});

describe('a sweep’s tab', () => {
  beforeEach(() => {
    jest.useFakeTimers();
    mockApi.tasks.mockResolvedValue({ ok: true, status: 200, body: TABLE });
  });
  afterEach(() => {
    jest.useRealTimers();
    jest.clearAllMocks();
    document.body.replaceChildren();
  });

  function tabs(): {
    tabs: SweepTabs;
    added: Widget[];
    activated: string[];
  } {
    const added: Widget[] = [];
    const activated: string[] = [];
    const made = new SweepTabs({
      ...options().options,
      mainArea: {
        add: widget => {
          added.push(widget);
          Widget.attach(widget, document.body);
        },
        activate: widget => activated.push(widget.id)
      }
    });
    return { tabs: made, added, activated };
  }

  it('is titled by the sweep and its file', () => {
    expect(sweepTabTitle(JOB)).toBe('Sweep 123: train.ipynb');
    expect(sweepTabTitle({ ...JOB, path: 'a/b/c.ipynb' })).toBe(
      'Sweep 123: c.ipynb'
    );
  });

  it('opens once per sweep; the button again shows the open one', async () => {
    const { tabs: sweeps, added, activated } = tabs();
    const tab = sweeps.open(JOB);
    await jest.advanceTimersByTimeAsync(0);
    expect(tab.title.label).toBe('Sweep 123: train.ipynb');
    expect(tab.title.closable).toBe(true);
    expect(tab.id).toBe('dsportal-sweep-123');
    expect(
      tab.node.querySelector('table[aria-label="Tasks of sweep 123"]')
    ).not.toBeNull();
    expect(tab.node.querySelectorAll('tr.dsportal-sweep-task')).toHaveLength(3);
    expect(sweeps.open(JOB)).toBe(tab);
    expect(added).toEqual([tab]);
    expect(activated).toEqual(['dsportal-sweep-123', 'dsportal-sweep-123']);
    sweeps.dispose();
  });

  it('reads every 3 s while the sweep is active, and no more once closed', async () => {
    const { tabs: sweeps } = tabs();
    const tab = sweeps.open({ ...JOB, active: true });
    await jest.advanceTimersByTimeAsync(0);
    expect(mockApi.tasks).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(3000);
    expect(mockApi.tasks).toHaveBeenCalledTimes(2);
    tab.close();
    tab.dispose(); // JupyterLab's MainAreaWidget disposes itself when its tab closes
    expect(sweeps.has('123')).toBe(false);
    await jest.advanceTimersByTimeAsync(9000);
    expect(mockApi.tasks).toHaveBeenCalledTimes(2);
    expect(sweeps.open(JOB)).not.toBe(tab); // a new tab
    sweeps.dispose();
  });

  it('stops reading when the sweep has ended', async () => {
    const ended: ISweepTasks = {
      ...TABLE,
      tasks: [TABLE.tasks[0], TABLE.tasks[1], aTask(2, 0.001, 64, 0.8)]
    };
    mockApi.tasks.mockResolvedValue({ ok: true, status: 200, body: ended });
    const { tabs: sweeps } = tabs();
    sweeps.open(JOB);
    await jest.advanceTimersByTimeAsync(9000);
    expect(mockApi.tasks).toHaveBeenCalledTimes(1);
    sweeps.dispose();
  });

  it('does not read behind another tab, and reads at once when shown', async () => {
    const { tabs: sweeps } = tabs();
    const tab = sweeps.open({ ...JOB, active: true });
    await jest.advanceTimersByTimeAsync(0);
    tab.hide();
    const view = (tab as unknown as { content: SweepView }).content;
    expect(view.isVisible).toBe(false);
    await jest.advanceTimersByTimeAsync(6000);
    expect(mockApi.tasks).toHaveBeenCalledTimes(1);
    tab.show();
    await jest.advanceTimersByTimeAsync(0);
    expect(mockApi.tasks).toHaveBeenCalledTimes(2);
    sweeps.dispose();
  });
});
