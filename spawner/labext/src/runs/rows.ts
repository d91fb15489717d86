// What the Jobs panel says of a job, apart from the page: its row's words, its buttons, the word when it
// ends, and the e-mail note. The state's sentence itself comes from the hub (spawner/hub/runs/board.py).
import { IJob, INotify } from './types';

export type Action = 'cancel' | 'again' | 'output' | 'log';

// Each button's label and tooltip.
export const BUTTON: Record<Action, [string, string]> = {
  cancel: ['Cancel', 'Stop this job (Slurm cancels it)'],
  again: [
    'Run again',
    'Submit the same file again, with the same resources and parameters'
  ],
  output: ['Output', 'Open what the job wrote'],
  log: ['Log', 'Show the last lines of the job’s log']
};

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

export function rowWords(job: IJob): IRowWords {
  return {
    name: job.name || job.path || `job ${job.job_id}`,
    nameTitle: job.path || '',
    badge: job.portal
      ? job.job_id
      : `${job.job_id} · ${ORIGIN[job.kind] || ORIGIN['']}`,
    badgeTitle: job.portal
      ? 'Slurm job id'
      : BADGE_TITLE[job.kind] || BADGE_TITLE[''],
    state: job.words || job.state,
    facts: [job.partition, resources(job), times(job)]
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
  type: 'success' | 'error';
  autoClose: number | false;
} {
  const completed = job.state === 'COMPLETED';
  return {
    message:
      `Job ${job.job_id} (${job.name}) ${completed ? 'completed' : 'ended'}.` +
      (job.why ? ` ${job.why}` : ''),
    type: completed ? 'success' : 'error',
    autoClose: completed ? 10000 : false
  };
}

// Under the e-mail checkbox: where the mail goes, or why there is none.
export function mailNote(notify: INotify): string {
  return notify.address
    ? `Mail goes to ${notify.address}.`
    : 'The directory has no e-mail address for you, so the portal cannot write to you. ' +
        'Ask your administrators to add one.';
}
