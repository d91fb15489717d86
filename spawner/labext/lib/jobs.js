// DS Portal: the "Jobs" panel in the left sidebar — the user's Slurm jobs (those the portal submitted
// and their others), what each is doing in words, and Cancel / Run again / Output / Log.
// The list comes from dsportal/jobs (active jobs first, then the history); the panel keeps one row
// element per job and updates it in place, so an open log and the buttons survive each refresh.
import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { LabIcon } from '@jupyterlab/ui-components';
import { Widget } from '@lumino/widgets';

import { element } from './dom';
import { jobsApi } from './jobsapi';
import { Repeat } from './repeat';

export const JOBS_PANEL_ID = 'dsportal-jobs';
// What a row's badge says of a job the portal did not run (kind "session": a JupyterLab session of the user's).
const ORIGIN = { session: 'a session', '': 'not from the portal' };
const BADGE_TITLE = {
  session: 'A JupyterLab session of yours; stop it from the home page',
  '': 'A Slurm job of yours that the portal did not submit'
};
const VISIBLE_EVERY_MS = 10000;
const HIDDEN_EVERY_MS = 30000;
const LOG_EVERY_MS = 3000;
const LOG_LINES = 200;

export const jobsIcon = new LabIcon({
  name: 'dsportal:jobs',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<path d="M4 4h16v3H4zm0 6.5h16v3H4zM4 17h10v3H4zm12 0 4 1.5-4 1.5z"/></g></svg>'
});

function plural(count, word) {
  return `${count} ${word}${count === 1 ? '' : 's'}`;
}

function shortTime(iso) {
  return iso ? iso.replace('T', ' ').slice(0, 16) : '';
}

// --- pure: what a row says -------------------------------------------------------------------------

export function resources(job) {
  const nodes = plural(job.nodes || 1, 'node');
  return job.gpus ? `${nodes} × ${plural(job.gpus, 'GPU')}` : `${nodes}, no GPU`;
}

export function times(job) {
  if (job.active) {
    if (job.state === 'PENDING') {
      return job.submitted ? `submitted ${shortTime(job.submitted)}` : '';
    }
    return [job.elapsed && `${job.elapsed} run`, job.time_left && `${job.time_left} left`]
      .filter(Boolean)
      .join(' / ');
  }
  return [job.elapsed && `ran ${job.elapsed}`, job.ended && `ended ${shortTime(job.ended)}`]
    .filter(Boolean)
    .join(', ');
}

export function actionsOf(job) {
  return [
    job.can_cancel && 'cancel',
    job.can_again && 'again',
    job.output && 'output',
    job.log && 'log'
  ].filter(Boolean);
}

const BUTTON = {
  cancel: ['Cancel', 'Stop this job (Slurm cancels it)'],
  again: ['Run again', 'Submit the same file again, with the same resources and parameters'],
  output: ['Output', 'Open what the job wrote'],
  log: ['Log', 'Show the last lines of the job’s log']
};

// --- one job ---------------------------------------------------------------------------------------

class JobRow {
  constructor(panel, job) {
    this.panel = panel;
    this.job = job;
    this.node = element('div', 'dsportal-job');
    this.node.dataset.jobId = job.job_id;
    this.name = element('span', 'dsportal-job-name');
    this.badge = element('span', 'dsportal-job-id');
    const head = element('div', 'dsportal-job-head');
    head.append(this.name, this.badge);
    this.state = element('div', 'dsportal-job-state');
    this.facts = element('div', 'dsportal-job-facts');
    this.why = element('div', 'dsportal-job-why');
    this.actions = element('div', 'dsportal-job-actions');
    this.log = element('pre', 'dsportal-job-log');
    this.log.hidden = true;
    this.actionsShown = '';
    this.logRepeat = new Repeat(() => this.loadLog(), () => LOG_EVERY_MS);
    this.node.append(head, this.state, this.facts, this.why, this.actions, this.log);
    this.update(job);
  }

  update(job) {
    this.job = job;
    this.node.dataset.state = job.state;
    this.node.classList.toggle('dsportal-job-active', job.active);
    this.name.textContent = job.name || job.path || `job ${job.job_id}`;
    this.name.title = job.path || '';
    this.badge.textContent = job.portal ? job.job_id : `${job.job_id} · ${ORIGIN[job.kind] || ORIGIN['']}`;
    this.badge.title = job.portal ? 'Slurm job id' : BADGE_TITLE[job.kind] || BADGE_TITLE[''];
    this.state.textContent = job.words || job.state;
    this.facts.textContent = [job.partition, resources(job), times(job)].filter(Boolean).join(' · ');
    this.facts.title = job.node_list ? `Nodes: ${job.node_list}` : '';
    this.why.textContent = job.active ? '' : job.why || '';
    this.why.hidden = !this.why.textContent;
    this.showActions(actionsOf(job));
    if (!job.log && !this.log.hidden) {
      this.toggleLog();
    }
  }

  // Buttons are rebuilt only when the set changes, so a click is never lost to a refresh.
  showActions(actions) {
    const key = actions.join(' ');
    if (key === this.actionsShown) {
      return;
    }
    this.actionsShown = key;
    this.actions.replaceChildren(
      ...actions.map(action => {
        const button = element('button', 'dsportal-job-button', BUTTON[action][0]);
        button.dataset.action = action;
        button.title = BUTTON[action][1];
        button.addEventListener('click', () => this.act(action, button));
        return button;
      })
    );
    this.markLogButton();
  }

  async act(action, button) {
    if (action === 'log') {
      this.toggleLog();
      return;
    }
    button.disabled = true;
    try {
      await this.panel.act(action, this.job);
    } finally {
      button.disabled = false;
    }
  }

  toggleLog() {
    this.log.hidden = !this.log.hidden;
    this.markLogButton();
    if (this.log.hidden) {
      this.logRepeat.stop();
    } else {
      this.log.textContent = 'Reading the log…';
      this.logRepeat.start();
    }
  }

  markLogButton() {
    const button = this.actions.querySelector('[data-action="log"]');
    if (button) {
      button.textContent = this.log.hidden ? 'Log' : 'Hide log';
      button.setAttribute('aria-expanded', String(!this.log.hidden));
    }
  }

  // The tail of the log, every 3 s while it is shown (and the job runs); it follows the end unless the
  // user scrolled up.
  async loadLog() {
    if (!this.panel.isVisible) {
      return;
    }
    const { ok, body } = await jobsApi.log(this.job.job_id, LOG_LINES);
    if (this.log.hidden) {
      return;
    }
    const atEnd = this.log.scrollHeight - this.log.scrollTop - this.log.clientHeight < 8;
    const first = this.log.textContent === 'Reading the log…';
    this.log.textContent = ok ? body.log || '(the log is empty so far)' : body.message;
    this.log.classList.toggle('dsportal-job-log-error', !ok);
    if (atEnd || first) {
      this.logToEnd();
    }
    if (ok && !this.job.active) {
      this.logRepeat.stop(); // a finished job's log does not grow
    }
  }

  logToEnd() {
    if (!this.log.hidden) {
      this.log.scrollTop = this.log.scrollHeight;
    }
  }

  dispose() {
    this.logRepeat.stop();
    this.node.remove();
  }
}

// --- the panel -------------------------------------------------------------------------------------

export class JobsPanel extends Widget {
  // commands: the application's command registry (docmanager:open);
  // onList(jobs): called with each list the server sends (the plugin's word when a job ends);
  // onSubmitted(job): called when "Run again" submitted a job.
  constructor({ commands, onList, onSubmitted }) {
    super();
    this.commands = commands;
    this.onList = onList;
    this.onSubmitted = onSubmitted;
    this.id = JOBS_PANEL_ID;
    this.addClass('dsportal-jobs');
    this.title.icon = jobsIcon;
    this.title.caption = 'Jobs: notebooks and scripts running as Slurm jobs';
    this.rows = new Map(); // job_id -> JobRow
    this.cancelledHere = new Set(); // job ids cancelled with this panel's button: no word on their end
    this.notifyLoaded = false;
    this.build();
    this.repeat = new Repeat(() => this.refresh(), () => this.pace());
  }

  build() {
    const heading = element('h2', 'dsportal-jobs-title', 'Jobs');
    this.mail = element('input');
    this.mail.type = 'checkbox';
    this.mail.name = 'mail';
    this.mail.disabled = true;
    this.mail.addEventListener('change', () => this.setMail());
    const label = element('label', 'dsportal-jobs-notify');
    label.append(this.mail, document.createTextNode(' E-mail me when a job ends or a session starts'));
    this.mailNote = element('div', 'dsportal-jobs-notify-note');
    this.error = element('div', 'dsportal-jobs-error');
    this.error.setAttribute('role', 'alert');
    this.error.hidden = true;
    this.empty = element(
      'p',
      'dsportal-jobs-empty',
      'No jobs yet. To start one, right-click a notebook, a .py or a .sh file in the file browser and ' +
        'choose “Run as a job…”, or use the button in a notebook’s toolbar.'
    );
    this.empty.hidden = true;
    this.active = element('div', 'dsportal-jobs-list dsportal-jobs-active');
    this.historyHeading = element('h3', 'dsportal-jobs-history', 'History');
    this.history = element('div', 'dsportal-jobs-list dsportal-jobs-finished');
    this.node.append(heading, label, this.mailNote, this.error, this.empty, this.active);
    this.node.append(this.historyHeading, this.history);
  }

  pace() {
    return this.isVisible && !document.hidden ? VISIBLE_EVERY_MS : HIDDEN_EVERY_MS;
  }

  start() {
    this.repeat.start();
    // back to the visible pace at once when the browser tab is seen again
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden && this.isVisible) {
        this.refreshSoon();
      }
    });
  }

  // Asks for the list now (after an action, or when the panel is shown), or right after the
  // request in flight.
  refreshSoon() {
    return this.repeat.now();
  }

  onAfterShow() {
    if (!this.notifyLoaded) {
      this.loadMail();
    }
    this.refreshSoon();
  }

  async refresh() {
    const { ok, body } = await jobsApi.list();
    // Slurm or its accounting may not answer: say so, and keep the last list.
    const problem = ok ? body.error || '' : body.message;
    this.error.textContent = problem;
    this.error.hidden = !problem;
    if (ok) {
      this.showJobs(body.jobs || []);
      this.onList(body.jobs || []);
    }
  }

  showJobs(jobs) {
    const listed = new Set(jobs.map(job => job.job_id));
    for (const [id, row] of this.rows) {
      if (!listed.has(id)) {
        row.dispose();
        this.rows.delete(id);
      }
    }
    const place = { active: 0, history: 0 }; // the next position in each list
    for (const job of jobs) {
      let row = this.rows.get(job.job_id);
      if (row) {
        row.update(job);
      } else {
        row = new JobRow(this, job);
        this.rows.set(job.job_id, row);
      }
      const list = job.active ? 'active' : 'history';
      placeRow(this[list], row, place[list]++);
    }
    this.historyHeading.hidden = !jobs.some(job => !job.active);
    this.empty.hidden = jobs.length > 0;
  }

  async act(action, job) {
    if (action === 'output') {
      await this.commands.execute('docmanager:open', { path: job.output });
      return;
    }
    if (action === 'cancel' && !(await confirmCancel(job))) {
      return;
    }
    const { ok, body } = action === 'cancel' ? await jobsApi.cancel(job.job_id) : await jobsApi.again(job.job_id);
    if (!ok) {
      Notification.error(body.message, { autoClose: 10000 });
      return;
    }
    if (action === 'again') {
      this.onSubmitted(body.job);
    } else {
      this.cancelledHere.add(job.job_id);
    }
    await this.refreshSoon();
  }

  async loadMail() {
    const { ok, body } = await jobsApi.notify();
    if (ok) {
      this.notifyLoaded = true;
    }
    this.showMail(ok, body);
  }

  async setMail() {
    const wanted = this.mail.checked;
    this.mail.disabled = true;
    const { ok, body } = await jobsApi.setNotify(wanted);
    if (!ok) {
      this.mail.checked = !wanted; // the server kept the old choice
    }
    this.showMail(ok, body);
  }

  showMail(ok, body) {
    this.mailNote.classList.toggle('dsportal-jobs-notify-error', !ok);
    if (!ok) {
      this.mail.disabled = !this.notifyLoaded;
      this.mailNote.textContent = body.message;
      return;
    }
    this.mail.checked = Boolean(body.mail);
    this.mail.disabled = !body.address;
    this.mailNote.textContent = body.address
      ? `Mail goes to ${body.address}.`
      : 'The directory has no e-mail address for you, so the portal cannot write to you. ' +
        'Ask your administrators to add one.';
  }

  dispose() {
    this.repeat.stop();
    for (const row of this.rows.values()) {
      row.dispose();
    }
    super.dispose();
  }
}

// Puts the row at its place in the server's order; a row already there is left alone, as moving an
// element resets the scroll position of its open log.
function placeRow(list, row, index) {
  const there = list.children[index] || null;
  if (there !== row.node) {
    list.insertBefore(row.node, there);
    row.logToEnd();
  }
}

async function confirmCancel(job) {
  const result = await showDialog({
    title: `Cancel job ${job.job_id}?`,
    body:
      `${job.name || job.path} stops now, and Slurm gives its nodes to others.`,
    buttons: [Dialog.cancelButton({ label: 'Keep it running' }), Dialog.warnButton({ label: 'Cancel job' })]
  });
  return result.button.accept;
}

// --- pure: which jobs ended since the last list ----------------------------------------------------

// seenActive: the job ids this page has seen active (updated here). A job seen active before and
// finished now has ended; a job that is missing from a list is kept, as accounting may not have answered.
export function jobsThatEnded(seenActive, jobs) {
  const ended = [];
  for (const job of jobs) {
    if (job.active) {
      seenActive.add(job.job_id);
    } else if (seenActive.delete(job.job_id)) {
      ended.push(job);
    }
  }
  return ended;
}
