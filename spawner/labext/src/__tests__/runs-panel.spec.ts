// What the Jobs panel says of a job (runs/rows.ts): its row's words, its buttons, the word when it ends.
import {
  actionsOf,
  buttonOf,
  endedNotice,
  jobsThatEnded,
  mailNote,
  resources,
  rowWords,
  sweepCounts,
  submittedWords,
  sweepProgress,
  times
} from '../runs/rows';
import { IJob, ISweepRow } from '../runs/types';

// A row of GET dsportal/runs: a notebook the portal runs on two GPUs.
function aJob(changes: Partial<IJob> = {}): IJob {
  return {
    job_id: '812',
    name: 'train.ipynb',
    portal: true,
    kind: 'notebook',
    path: 'work/train.ipynb',
    state: 'RUNNING',
    words: 'Running on node001 for 00:12:09; 01:47:51 left.',
    active: true,
    partition: 'gpu',
    nodes: 1,
    node_list: 'node001',
    gpus: 2,
    elapsed: '00:12:09',
    time_left: '01:47:51',
    submitted: '2024-05-01T15:30:12',
    ended: '',
    why: '',
    summary: '',
    output: 'work/train.out.ipynb',
    log: 'work/.dsportal/812.log',
    can_cancel: true,
    can_again: true,
    ...changes
  };
}

const PENDING = {
  state: 'PENDING',
  words:
    'Waiting in the queue on gpu: the GPUs are in use (Resources); 2nd in line.',
  elapsed: '',
  time_left: '',
  node_list: ''
};
const COMPLETED = {
  state: 'COMPLETED',
  words: 'Completed.',
  active: false,
  elapsed: '00:40:00',
  time_left: '',
  ended: '2024-05-01T16:10:12',
  can_cancel: false
};
const FAILED = {
  state: 'FAILED',
  words: 'Failed',
  active: false,
  elapsed: '00:00:31',
  ended: '2024-05-01T15:31:00',
  why: 'Failed: cell [3] raised ValueError.',
  can_cancel: false
};

describe('a row', () => {
  it('says what a running job is doing', () => {
    expect(rowWords(aJob())).toEqual({
      name: 'train.ipynb',
      nameTitle: 'work/train.ipynb',
      badge: '812',
      badgeTitle: 'Slurm job id',
      state: 'Running on node001 for 00:12:09; 01:47:51 left.',
      facts: 'gpu · 1 node × 2 GPUs · 00:12:09 run / 01:47:51 left',
      factsTitle: 'Nodes: node001',
      why: ''
    });
  });

  it('says where a waiting job is in the queue and when it was submitted', () => {
    const words = rowWords(aJob(PENDING));
    expect(words.state).toBe(
      'Waiting in the queue on gpu: the GPUs are in use (Resources); 2nd in line.'
    );
    expect(words.facts).toBe(
      'gpu · 1 node × 2 GPUs · submitted 2024-05-01 15:30'
    );
    expect(words.factsTitle).toBe('');
  });

  it('says how a finished job ended and why', () => {
    const words = rowWords(aJob(FAILED));
    expect(words.state).toBe('Failed');
    expect(words.facts).toBe(
      'gpu · 1 node × 2 GPUs · ran 00:00:31, ended 2024-05-01 15:31'
    );
    expect(words.why).toBe('Failed: cell [3] raised ValueError.');
  });

  it('keeps the why of an active job to itself', () => {
    expect(rowWords(aJob({ why: 'left over' })).why).toBe('');
  });

  it('shows Slurm’s state word where the hub gave no sentence', () => {
    expect(rowWords(aJob({ words: '', state: 'COMPLETING' })).state).toBe(
      'COMPLETING'
    );
  });

  it('names a job by its name, else its path, else its id', () => {
    expect(rowWords(aJob({ name: '' })).name).toBe('work/train.ipynb');
    expect(rowWords(aJob({ name: '', path: '' })).name).toBe('job 812');
    expect(rowWords(aJob({ path: '' })).nameTitle).toBe('');
  });

  it('marks the jobs the portal did not run', () => {
    expect(rowWords(aJob({ portal: false, kind: 'session' }))).toMatchObject({
      badge: '812 · a session',
      badgeTitle: 'A JupyterLab session of yours; stop it from the home page'
    });
    expect(rowWords(aJob({ portal: false, kind: '' }))).toMatchObject({
      badge: '812 · not from the portal',
      badgeTitle: 'A Slurm job of yours that the portal did not submit'
    });
  });
});

describe("a row's resources and times", () => {
  it('count nodes and GPUs in words', () => {
    expect(resources(aJob({ nodes: 1, gpus: 1 }))).toBe('1 node × 1 GPU');
    expect(resources(aJob({ nodes: 2, gpus: 4 }))).toBe('2 nodes × 4 GPUs');
    expect(resources(aJob({ nodes: 3, gpus: 0 }))).toBe('3 nodes, no GPU');
    expect(resources(aJob({ nodes: 0, gpus: 0 }))).toBe('1 node, no GPU'); // not known yet
  });

  it('leave out what Slurm does not say', () => {
    expect(times(aJob({ time_left: '' }))).toBe('00:12:09 run');
    expect(times(aJob({ elapsed: '' }))).toBe('01:47:51 left');
    expect(times(aJob({ ...PENDING, submitted: '' }))).toBe('');
    expect(times(aJob({ ...COMPLETED, elapsed: '' }))).toBe(
      'ended 2024-05-01 16:10'
    );
    expect(times(aJob({ ...COMPLETED, ended: '' }))).toBe('ran 00:40:00');
  });
});

describe("a row's buttons", () => {
  it('are those the job allows, in a fixed order', () => {
    expect(actionsOf(aJob())).toEqual(['cancel', 'again', 'output', 'log']);
    expect(actionsOf(aJob(COMPLETED))).toEqual(['again', 'output', 'log']);
    expect(
      actionsOf(aJob({ portal: false, can_again: false, output: '', log: '' }))
    ).toEqual(['cancel']);
    expect(
      actionsOf(
        aJob({ can_cancel: false, can_again: false, output: '', log: '' })
      )
    ).toEqual([]);
  });
});

describe('the word when a job ends', () => {
  it('comes for a job seen running that is finished now', () => {
    const seen = new Set<string>();
    expect(jobsThatEnded(seen, [aJob()])).toEqual([]);
    expect(jobsThatEnded(seen, [aJob(COMPLETED)])).toEqual([aJob(COMPLETED)]);
    expect(jobsThatEnded(seen, [aJob(COMPLETED)])).toEqual([]); // once
  });

  it('does not come for a job first seen finished', () => {
    expect(jobsThatEnded(new Set(), [aJob(COMPLETED)])).toEqual([]);
  });

  it('waits for a job missing from a list (accounting did not answer)', () => {
    const seen = new Set<string>();
    jobsThatEnded(seen, [aJob()]);
    expect(jobsThatEnded(seen, [])).toEqual([]);
    expect(jobsThatEnded(seen, [aJob(FAILED)])).toEqual([aJob(FAILED)]);
  });

  it('is a success that goes after 10 s for a completed job', () => {
    expect(endedNotice(aJob(COMPLETED))).toEqual({
      message: 'Job 812 (train.ipynb) completed.',
      type: 'success',
      autoClose: 10000
    });
  });

  it('is an error that stays, with the reason, for a job that failed', () => {
    expect(endedNotice(aJob(FAILED))).toEqual({
      message:
        'Job 812 (train.ipynb) ended. Failed: cell [3] raised ValueError.',
      type: 'error',
      autoClose: false
    });
  });
});

describe('the e-mail note', () => {
  it('says where the mail goes', () => {
    expect(mailNote({ mail: true, address: 'alice@example.org' })).toBe(
      'Mail goes to alice@example.org.'
    );
  });

  it('says why there is none', () => {
    expect(mailNote({ mail: false, address: '' })).toBe(
      'The directory has no e-mail address for you, so the portal cannot write to you. ' +
        'Ask your administrators to add one.'
    );
  });
});

// A sweep's row: one Slurm job array of 6 tasks, 2 at once.
function aSweep(
  counts: Partial<ISweepRow['counts']>,
  changes: Partial<IJob> = {}
): IJob {
  return aJob({
    job_id: '900',
    gpus: 1,
    words: '',
    sweep: {
      tasks: 6,
      at_once: 2,
      varied: ['learning_rate', 'batch_size'],
      counts: {
        waiting: 0,
        running: 0,
        completed: 0,
        failed: 0,
        cancelled: 0,
        other: 0,
        ...counts
      },
      objective: '',
      best: 'max'
    },
    ...changes
  });
}

describe('a sweep’s row', () => {
  it('counts its tasks in words', () => {
    const sweep = aSweep({ running: 2, waiting: 1, completed: 2, failed: 1 });
    expect(sweepCounts(sweep.sweep!)).toBe(
      '6 tasks: 2 running, 1 waiting, 2 completed, 1 failed.'
    );
    expect(rowWords(sweep)).toMatchObject({
      badge: '900 · sweep',
      badgeTitle: 'Slurm job array id: a sweep, one task per point of its grid',
      state: '6 tasks: 2 running, 1 waiting, 2 completed, 1 failed.',
      facts:
        'gpu · 6 tasks of 1 node × 1 GPU, 2 at once · 00:12:09 run / 01:47:51 left'
    });
    expect(rowWords(aSweep({}, { words: 'the hub’s words' })).state).toBe(
      'the hub’s words'
    );
  });

  it('draws its counts as shares of a bar', () => {
    expect(
      sweepProgress(aSweep({ running: 2, waiting: 1, completed: 3 }).sweep!)
    ).toEqual([
      { kind: 'completed', count: 3, percent: 50 },
      { kind: 'running', count: 2, percent: 33.3 },
      { kind: 'waiting', count: 1, percent: 16.7 }
    ]);
  });

  it('offers Cancel the rest, Run again and its table', () => {
    const sweep = aSweep({ running: 2 });
    expect(actionsOf(sweep)).toEqual(['cancel', 'again', 'table']);
    expect(buttonOf(sweep, 'cancel')[0]).toBe('Cancel the rest');
    expect(buttonOf(aJob(), 'cancel')[0]).toBe('Cancel');
    expect(
      actionsOf(aSweep({ completed: 6 }, { ...COMPLETED, can_again: false }))
    ).toEqual(['table']);
  });

  it('ends with one word for the whole sweep, its best result in it', () => {
    const why =
      '6 tasks: 5 completed, 1 failed; best accuracy 0.95 (task 3: learning_rate=0.01, batch_size=64).';
    expect(
      endedNotice(aSweep({ completed: 5, failed: 1 }, { ...COMPLETED, why }))
    ).toEqual({
      message: `Sweep 900 (train.ipynb) ended. ${why}`,
      type: 'warning',
      autoClose: false
    });
    expect(
      endedNotice(aSweep({ completed: 6 }, { ...COMPLETED, why: '' }))
    ).toEqual({
      message: 'Sweep 900 (train.ipynb) ended. 6 tasks: 6 completed.',
      type: 'success',
      autoClose: 10000
    });
    expect(endedNotice(aSweep({ failed: 6 }, FAILED)).type).toBe('error');
  });

  it('says it was submitted with its runs', () => {
    expect(submittedWords(aSweep({ waiting: 6 }))).toBe(
      'Sweep 900 submitted: 6 runs, 2 at once'
    );
    expect(submittedWords(aJob())).toBe('Job 812 submitted');
  });

  it('is one row, so it ends once', () => {
    const seen = new Set<string>();
    jobsThatEnded(seen, [aSweep({ running: 6 })]);
    expect(
      jobsThatEnded(seen, [aSweep({ completed: 6 }, COMPLETED)])
    ).toHaveLength(1);
  });
});
