// The session clock's rules and words, apart from the page: what the status bar says, when a warning is
// due, when to ask the server again, when to save. The server side is spawner/jupyter/clock/: the time
// left comes from the job's end time as Slurm holds it; the page only counts down between two answers.

// GET dsportal/session/clock
export interface IClockAnswer {
  job_id: string; // '' outside a Slurm job: no clock
  end: string | null; // ISO time; null when Slurm gives no end time
  seconds_left: number | null;
  warn_minutes: number[]; // the warnings' thresholds, largest first
  save_minutes: number; // open documents are saved from this many minutes before the end
  save_now: boolean;
  extend_hours: number | null; // what "extend" adds; null or 0: no extending
  idle_seconds: number;
  idle_timeout: number; // 0: an idle session is never stopped
  idle_warning: number; // seconds before the idle stop that the warning comes
  continuable?: boolean; // the hub's home page can continue the session in a new job
}

export const TICK_MS = 5000;
export const SAVE_EVERY_MS = 20000;
export const USE_REPORT_MS = 30000; // the user's mouse and keys reach the server at most this often

export function words(seconds: number): string {
  if (seconds >= 3600) {
    const hours = Math.floor(seconds / 3600);
    const minutes = Math.floor((seconds % 3600) / 60);
    return minutes ? `${hours} h ${minutes} min` : `${hours} h`;
  }
  if (seconds >= 60) {
    return `${Math.ceil(seconds / 60)} min`;
  }
  return `${Math.max(0, Math.round(seconds))} s`;
}

// '2024-05-01T17:30:00' -> '17:30'
export function clockTime(iso: string | null): string {
  return iso ? iso.replace('T', ' ').slice(11, 16) : '';
}

// Only the owner extends a shared session: a guest's page sees no extension offered.
export function asSeenBy(answer: IClockAnswer, guest: boolean): IClockAnswer {
  return guest ? { ...answer, extend_hours: 0, continuable: false } : answer;
}

// The hub's home page, where the owner continues the session in a new job ("Continue in a new job").
export function hubHome(hubHost: string, hubPrefix: string): string {
  return `${hubHost}${hubPrefix.endsWith('/') ? hubPrefix : hubPrefix + '/'}home`;
}

export function canExtend(answer: IClockAnswer | null): boolean {
  return Boolean(answer && answer.extend_hours);
}

// The time left `since` seconds after the answer came; null when Slurm gives no end time.
export function secondsLeft(
  answer: IClockAnswer | null,
  since: number
): number | null {
  if (!answer || answer.seconds_left === null) {
    return null;
  }
  return Math.max(0, answer.seconds_left - since);
}

// How long the session has been idle `since` seconds after the answer came; null when it is never stopped.
export function idleSeconds(
  answer: IClockAnswer | null,
  since: number
): number | null {
  if (!answer || !answer.idle_timeout) {
    return null;
  }
  return answer.idle_seconds + since;
}

// The status bar item: its text, its tooltip, and whether the end is near (a warning colour).
export function statusWords(
  answer: IClockAnswer,
  left: number | null
): { text: string; title: string; ending: boolean } {
  const title =
    (left === null
      ? 'Slurm gives no end time for this session right now.'
      : `Session job ${answer.job_id} ends at ${clockTime(answer.end)} (its Slurm time limit). ` +
        'Open documents are saved before it ends.') +
    (answer.extend_hours ? ` Click to add ${answer.extend_hours} h.` : '');
  return {
    text: left === null ? 'Time left: unknown' : `Time left: ${words(left)}`,
    title,
    ending: left !== null && left <= answer.save_minutes * 60
  };
}

// The thresholds (minutes) reached and not warned of yet; one warning says all of them.
export function dueWarnings(
  warnMinutes: number[],
  left: number,
  warned: ReadonlySet<number>
): number[] {
  return warnMinutes.filter(m => left <= m * 60 && !warned.has(m));
}

export function endWarning(answer: IClockAnswer, left: number): string {
  return (
    `Your session ends in ${words(left)}, at ${clockTime(answer.end)} (its time limit). ` +
    'Open documents are saved before then; running kernels stop at the end.'
  );
}

// A new end time (the session was extended): the warnings come again before it.
export function endMoved(
  before: IClockAnswer | null,
  after: IClockAnswer
): boolean {
  return before !== null && after.end !== before.end;
}

// The idle warning is due once the idle stop is `idle_warning` seconds away or less.
export function idleWarningDue(
  answer: IClockAnswer,
  idle: number | null
): boolean {
  return idle !== null && answer.idle_timeout - idle <= answer.idle_warning;
}

export function idleWarning(answer: IClockAnswer, idle: number): string {
  const left = answer.idle_timeout - idle;
  return (
    `Idle for ${words(idle)}; this session will stop in ${words(Math.max(0, left))} to free its ` +
    'GPUs — move the mouse or run something to keep it.'
  );
}

// Ticks (of TICK_MS) between two questions to the server: every minute, every 15 s near the end
// or near the idle stop.
export function refreshEvery(
  answer: IClockAnswer | null,
  left: number | null,
  idle: number | null
): number {
  if (!answer) {
    return 12;
  }
  const closeToEnd = left !== null && left <= (answer.save_minutes + 1) * 60;
  const closeToIdleStop =
    idle !== null && answer.idle_timeout - idle <= answer.idle_warning + 60;
  return closeToEnd || closeToIdleStop ? 3 : 12;
}

// Every open document is saved again every SAVE_EVERY_MS once the server says the end is near.
export function saveDue(
  answer: IClockAnswer,
  now: number,
  savedAt: number
): boolean {
  return answer.save_now && now - savedAt >= SAVE_EVERY_MS;
}

// The user's own use of the page counts (spawner/jupyter/session/activity.py); the page's background
// polling does not. Reported when there was use since the last report, at most every USE_REPORT_MS.
export function useReportDue(
  usedAt: number,
  reportedAt: number,
  now: number
): boolean {
  return usedAt > reportedAt && now - reportedAt >= USE_REPORT_MS;
}
