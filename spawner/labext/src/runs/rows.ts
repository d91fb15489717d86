// What the Jobs panel says of a job, apart from the page: its row's words, its buttons, the word when it
// ends, and the e-mail note. The state's sentence itself comes from the hub (spawner/hub/runs/board.py).
// A sweep (one Slurm job array) is one row, with its tasks counted; its table is runs/sweeptable.ts.
import { IJob, INotify, ISweepRow, SweepCount } from './types';

export type Action = 'cancel' | 'again' | 'output' | 'log' | 'table';

// Each button's label and tooltip.
export const BUTTON: Record<Action, [string, string]> = {
  cancel: ['Cancel', 'Stop this job (Slurm cancels it)'],
  again: [
    'Run again',
    'Submit the same file again, with the same resources and parameters'
  ],
  output: ['Output', 'Open what the job wrote'],
  log: ['Log', 'Show the last lines of the job’s log'],
  table: [
    'Table',
    'Open the sweep’s tasks in a tab: their parameters, states and results, and a plot'
  ]
};

// A sweep's buttons where they differ from a single run's.
const SWEEP_BUTTON: Partial<Record<Action, [string, string]>> = {
  cancel: [
    'Cancel the rest',
    'Cancel every task of the sweep that has not ended; those that ended keep their results'
  ],
  again: [
    'Run again',
    'Submit the same sweep again: the same grid, sample and resources'
  ]
};

// A button's label and tooltip for this job.
export function buttonOf(job: IJob, action: Action): [string, string] {
  return (job.sweep && SWEEP_BUTTON[action]) || BUTTON[action];
}

// What a row's badge says of a job the portal did not run (kind "session": a JupyterLab session of the user's).
const ORIGIN: Record<string, string> = {
  session: 'a session',
  '': 'not from the portal'
};
const BADGE_TITLE: Record<string, string> = {
  session: 'A JupyterLab session of yours; stop it from the home page',
  '': 'A Slurm job of yours that the portal did not submit'
};

export interface IRowWords {
  name: string;
  nameTitle: string;
  badge: string;
  badgeTitle: string;
  state: string;
  facts: string;
  factsTitle: string;
  why: string;
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

function shortTime(iso: string): string {
  return iso ? iso.replace('T', ' ').slice(0, 16) : '';
}

export function resources(job: IJob): string {
  const nodes = plural(job.nodes || 1, 'node');
  return job.gpus
    ? `${nodes} × ${plural(job.gpus, 'GPU')}`
    : `${nodes}, no GPU`;
}

export function times(job: IJob): string {
  if (job.active) {
    if (job.state === 'PENDING') {
      return job.submitted ? `submitted ${shortTime(job.submitted)}` : '';
    }
    return [
      job.elapsed && `${job.elapsed} run`,
      job.time_left && `${job.time_left} left`
    ]
      .filter(Boolean)
      .join(' / ');
  }
  return [
    job.elapsed && `ran ${job.elapsed}`,
    job.ended && `ended ${shortTime(job.ended)}`
  ]
    .filter(Boolean)
    .join(', ');
}

export function actionsOf(job: IJob): Action[] {
  if (job.sweep) {
    const sweep: [Action, unknown][] = [
      ['cancel', job.can_cancel],
      ['again', job.can_again],
      ['table', true]
    ];
    return sweep
      .filter(([, offer]) => Boolean(offer))
      .map(([action]) => action);
  }
  const offered: [Action, unknown][] = [
    ['cancel', job.can_cancel],
    ['again', job.can_again],
    ['output', job.output],
    ['log', job.log]
  ];
  return offered
    .filter(([, offer]) => Boolean(offer))
    .map(([action]) => action);
}

// The order in which a sweep's counts are said and drawn.
const COUNTS: SweepCount[] = [
  'running',
  'waiting',
  'completed',
  'failed',
  'cancelled',
  'other'
];

// "6 tasks: 2 running, 1 waiting, 2 completed, 1 failed." (the hub says the same in the row's words)
export function sweepCounts(sweep: ISweepRow): string {
  const counts = COUNTS.filter(k => sweep.counts[k] > 0).map(
    k => `${sweep.counts[k]} ${k}`
  );
  return (
    `${plural(sweep.tasks, 'task')}` +
    (counts.length ? `: ${counts.join(', ')}.` : '.')
  );
}

// A sweep's progress bar: each count's share of the tasks, in percent, those with none left out.
export function sweepProgress(
  sweep: ISweepRow
): { kind: SweepCount; count: number; percent: number }[] {
  const total = Math.max(sweep.tasks, 1);
  return ['completed', 'failed', 'cancelled', 'other', 'running', 'waiting']
    .map(k => k as SweepCount)
    .filter(kind => sweep.counts[kind] > 0)
    .map(kind => ({
      kind,
      count: sweep.counts[kind],
      percent: Math.round((sweep.counts[kind] * 1000) / total) / 10
    }));
}

export function rowWords(job: IJob): IRowWords {
  const sweep = job.sweep;
  return {
    name: job.name || job.path || `job ${job.job_id}`,
    nameTitle: job.path || '',
    badge: sweep
      ? `${job.job_id} · sweep`
      : job.portal
        ? job.job_id
        : `${job.job_id} · ${ORIGIN[job.kind] || ORIGIN['']}`,
    badgeTitle: sweep
      ? 'Slurm job array id: a sweep, one task per point of its grid'
      : job.portal
        ? 'Slurm job id'
        : BADGE_TITLE[job.kind] || BADGE_TITLE[''],
    state: job.words || (sweep ? sweepCounts(sweep) : job.state),
    facts: [
      job.partition,
      sweep
        ? `${plural(sweep.tasks, 'task')} of ${resources(job)}, ${sweep.at_once} at once`
        : resources(job),
      times(job)
    ]
      .filter(Boolean)
      .join(' · '),
    factsTitle: job.node_list ? `Nodes: ${job.node_list}` : '',
    why: job.active ? '' : job.why || ''
  };
}

// seenActive: the job ids this page has seen active (updated here). A job seen active before and
// finished now has ended; a job that is missing from a list is kept, as accounting may not have answered.
export function jobsThatEnded(seenActive: Set<string>, jobs: IJob[]): IJob[] {
  const ended: IJob[] = [];
  for (const job of jobs) {
    if (job.active) {
      seenActive.add(job.job_id);
    } else if (seenActive.delete(job.job_id)) {
      ended.push(job);
    }
  }
  return ended;
}

// The word when a job this page saw running ends: a failure stays until read, a success goes after a
// while (both stay in the notification centre).
export function endedNotice(job: IJob): {
  message: string;
  type: 'success' | 'warning' | 'error';
  autoClose: number | false;
} {
  if (job.sweep) {
    return sweepEndedNotice(job, job.sweep);
  }
  const completed = job.state === 'COMPLETED';
  return {
    message:
      `Job ${job.job_id} (${job.name}) ${completed ? 'completed' : 'ended'}.` +
      (job.why ? ` ${job.why}` : ''),
    type: completed ? 'success' : 'error',
    autoClose: completed ? 10000 : false
  };
}

// The word when "Run as a job…" or "Run again" submitted a job or a sweep.
export function submittedWords(job: IJob): string {
  return job.sweep
    ? `Sweep ${job.job_id} submitted: ${plural(job.sweep.tasks, 'run')}, ${job.sweep.at_once} at once`
    : `Job ${job.job_id} submitted`;
}

// One word for a whole sweep (its row's why carries the best result): a success when every task
// completed, a warning that stays when some did, an error when none did.
function sweepEndedNotice(
  job: IJob,
  sweep: ISweepRow
): ReturnType<typeof endedNotice> {
  const completed = sweep.counts.completed;
  const all = completed === sweep.tasks;
  const words = job.why || sweepCounts(sweep);
  return {
    message: `Sweep ${job.job_id} (${job.name}) ended. ${words}`,
    type: all ? 'success' : completed > 0 ? 'warning' : 'error',
    autoClose: all ? 10000 : false
  };
}

// Under the e-mail checkbox: where the mail goes, or why there is none.
export function mailNote(notify: INotify): string {
  return notify.address
    ? `Mail goes to ${notify.address}.`
    : 'The directory has no e-mail address for you, so the portal cannot write to you. ' +
        'Ask your administrators to add one.';
}
