// The home page's rules, pure: what a session's card says and offers, the new session's name, the lines of
// shares, jobs and recent sessions, and when the page asks the hub again.  No DOM and no fetch:
// templates/static/home.js draws what these return; tests/js/home.test.mjs tests them (node --test).
// The data they read is the hub's (spawner/hub/home/page.py, GET /hub/api/dsportal/session).

export const LABELS = {none: "not running", queued: "queued", starting: "starting", running: "running",
                       stopping: "stopping"};
export const OPTIONS = ["partition", "gpus", "shards", "hours", "gpu_type", "account", "qos"];  // of the last session, for "start again"
export const JOBS_SHOWN = 5;  // the newest finished jobs listed (JupyterLab's Jobs panel lists them all)

// --- words ---

export function words(seconds) {
  if (seconds >= 3600) {
    const h = Math.floor(seconds / 3600), m = Math.floor((seconds % 3600) / 60);
    return m ? h + " h " + m + " min" : h + " h";
  }
  return seconds >= 60 ? Math.ceil(seconds / 60) + " min" : Math.max(0, Math.round(seconds)) + " s";
}

export function when(iso) { return iso ? iso.replace("T", " ").slice(0, 16) : ""; }

export function suffix(name) { return name ? "--" + name : ""; }  // names never hold "--": ids stay apart

export function title(name) { return name ? "Session \u201c" + name + "\u201d" : "Your session"; }

// --- the hub's URLs, relative to its base URL (`base`, e.g. "/hub/") or to its API ---

export function serverPath(user, name) {
  return "users/" + encodeURIComponent(user) + (name ? "/servers/" + encodeURIComponent(name) : "/server");
}

export function spawnUrl(base, user, name) {
  return base + "spawn/" + encodeURIComponent(user) + (name ? "/" + encodeURIComponent(name) : "");
}

export function progressUrl(base, user, name) {
  return base + "spawn-pending/" + encodeURIComponent(user) + (name ? "/" + encodeURIComponent(name) : "");
}

export function extendPath(name) {
  return "dsportal/session/extend" + (name ? "?server=" + encodeURIComponent(name) : "");
}

export function unsharePath(name, share) {
  return "dsportal/shares?server=" + encodeURIComponent(name) + "&" + share.kind + "=" + encodeURIComponent(share.name);
}

export function jobPath(job, action) { return "dsportal/runs/" + encodeURIComponent(job.job_id) + "/" + action; }

// a session's or run's receipt (GET /hub/api/dsportal/receipts/ID) and the file it is saved as
export function receiptPath(jobId) { return "dsportal/receipts/" + encodeURIComponent(jobId); }
export function receiptFile(jobId) { return "dsportal-receipt-" + String(jobId).replace(/[^0-9_+]/g, "") + ".json"; }

// what is free comes with every few answers, in the same request: each request costs the hub a login check
export function sessionQuery(free) { return "dsportal/session?jobs=1&shares=1" + (free ? "&free=1" : ""); }

// The hub's answer to `call`: its JSON (or {}), else an Error with the hub's words.
export function answer(ok, status, text) {
  let body = {};
  try { body = text ? JSON.parse(text) : {}; } catch (e) { body = {}; }
  if (!ok) { throw new Error(body.message || ("HTTP " + status)); }
  return body;
}

// --- a session's card ---

export function active(entry) { return entry.session.state !== "none"; }

// The seconds left now: the hub's count less the seconds since it answered; null when it has none.
export function secondsLeft(session, elapsedSeconds) {
  return session.seconds_left === null || session.seconds_left === undefined ? null
    : Math.max(0, session.seconds_left - elapsedSeconds);
}

export function badgeClass(state) {
  return "badge " + (state === "running" ? "text-bg-success" : state === "none" ? "text-bg-secondary"
    : "text-bg-warning");
}

export function cardLine(entry, left) {
  const s = entry.session;
  if (s.state === "none") {
    return entry.name ? (entry.last_end || "Not running. Start it again with its own settings, or remove it.")
      : "No session is running here. Start one below or with a preset.";
  }
  if (s.state === "running") {
    return left === null ? "Running." : "Running: " + words(left) + " left (until " + when(s.end).slice(11) + ").";
  }
  return s.message;
}

// The card's facts as [label, text], those with a value only.
export function cardFacts(s, left) {
  // a share of a GPU in the hub's words ('a quarter of a GPU'), else the GPU count
  return [["Job", s.job_id], ["Node", s.node], ["Partition", s.partition], ["GPUs", s.share || s.gpus],
          ["GPU type", s.gpu_type],
          ["Cores", s.cores], ["Memory", s.memory_gb !== undefined ? s.memory_gb + " GB" : ""],
          ["Time limit", s.limit], ["Time left", left === null ? "" : words(left)]]
    .filter((f) => !(f[1] === "" || f[1] === undefined || f[1] === null))
    .map((f) => [f[0], String(f[1])]);
}

// What a running session used so far (its last report, spawner/usage.py); null when nothing to say.
export function cardUsage(entry) {
  return entry.session.state === "running" && entry.usage && entry.usage.length
    ? "So far: " + entry.usage.join(" \u00b7 ") : null;
}

// The card's buttons, in their order: open, progress, cancel, stop, extend, start, remove, share.
// A session continued in a new job (the card's "Continue in a new job"): where the page takes the user once its
// new job's JupyterLab answers, "" until then (its card has no server address while it starts).
export function followTo(sessions, following) {
  if (following === null || following === undefined) { return ""; }
  const entry = (sessions || []).find((x) => x.name === following);
  return entry && entry.session.state === "running" && entry.server_url ? entry.server_url : "";
}

export function cardActions(entry, sharingEnabled) {
  const s = entry.session, actions = [];
  if (s.state === "running" && entry.server_url) { actions.push("open"); }
  if (s.state === "queued" || s.state === "starting") { actions.push("progress", "cancel"); }
  else if (s.state === "running") { actions.push("stop"); }
  if (s.extend && s.state === "running") { actions.push("extend"); }
  if (entry.name && s.state === "none") { actions.push("start", "remove"); }
  if (s.state === "running" && sharingEnabled) { actions.push("share"); }
  if (s.state === "running" && s.continuable) {
    actions.push("continue");
    if (s.auto_continue !== undefined) { actions.push("automatically"); }  // not for a job too short to chain
  }
  return actions;
}

// --- shares ---

export function sharesOf(mine, name) { return mine.filter((x) => x.server === name); }

export function shareLine(x) {
  return "Shared with " + (x.kind === "group" ? "the group " : "") + x.name + " until " +
    when(x.expires.replace("Z", "")) + " UTC ";
}

export function sharedWithMe(withMe) { return withMe.filter((x) => x.running); }

export function sharedLine(x) {
  return x.owner + " shares " + (x.server ? "the session \u201c" + x.server + "\u201d" : "their session") +
    " with you until " + when(x.expires.replace("Z", "")) + " UTC. Code you run there runs as " + x.owner + ". ";
}

export function shareHours(maxHours) { return Math.min(8, maxHours); }  // what the share form offers first

export function shareRequest(name, kind, who, hours) {
  const request = {server: name, hours: Number(hours)};
  request[kind] = who.trim();
  return request;
}

// --- starting a session ---

// The start section: whether the user runs their most, the button's label, whether the new session needs a
// name (the unnamed one runs), and why the unnamed one last ended.
export function startState(sessions, limits) {
  const unnamed = sessions.filter((e) => !e.name)[0] || {session: {state: "none"}};
  const running = sessions.filter(active).length;
  const full = running >= limits.max_per_user, needName = active(unnamed);
  return {
    full,
    fullNote: full ? "You run " + running + " sessions, the most one user may run at once here; stop " +
      "one to start another." : "",
    startLabel: running ? "Start another session" : "Start My Server",
    needName,
    nameHint: needName ? "(required: your unnamed session is in use; " + limits.name_rule + ")"
      : "(optional: leave empty for your unnamed session; " + limits.name_rule + ")",
    ended: unnamed.session.state === "none" ? (unnamed.last_end || "") : "",
  };
}

// Why the new session cannot start with `name` ("" when it can).
export function nameProblem(name, required, sessions, limits) {
  if (!name && required) { return "Give the new session a name: your unnamed session is in use."; }
  if (name && (!new RegExp("^(?:" + limits.name_pattern + ")$").test(name) || name.indexOf("--") >= 0)) {
    return "A session cannot be called \u201c" + name + "\u201d: use " + limits.name_rule + ".";
  }
  if (name && sessions.some((e) => e.name === name && active(e))) {
    return "The session \u201c" + name + "\u201d is already running: pick another name.";
  }
  return "";
}

// "Start again with the same settings": the last session's options as [name, value]; null without one.
export function againOptions(history) {
  const last = history.length ? history[0].options : null;
  if (!last) { return null; }
  return OPTIONS.filter((name) => last[name] !== undefined && last[name] !== null)
    .map((name) => [name, String(last[name])]);
}

// --- recent sessions ---

export function historyLine(h) {
  return (h.name ? "\u201c" + h.name + "\u201d: " : "") +
    (h.summary ? h.summary + " (job " + h.job_id + "). " : "Job " + h.job_id + ". ") + h.why;
}

// What an ended session used (spawner/usage.py): its lines less the advice, and the advice; null without.
export function historyUsage(h) {
  if (!(h.usage && h.usage.lines && h.usage.lines.length)) { return null; }
  return {lines: h.usage.lines.filter((l) => l !== h.usage.advice).join(" \u00b7 "), advice: h.usage.advice};
}

// --- jobs ---

// The jobs to list (sessions have their cards and history): the active ones and the newest finished, how many
// older are left out, those that ended since the last answer (`seen`: job id -> active then), and the new `seen`.
export function jobsView(all, seen, shownCount = JOBS_SHOWN) {
  const jobs = all.filter((job) => job.kind !== "session");
  const finished = jobs.filter((job) => !job.active);
  const shown = jobs.filter((job) => job.active).concat(finished.slice(0, shownCount));
  const now = {...seen}, ended = [];
  jobs.forEach((job) => {
    if (now[job.job_id] && !job.active) { ended.push(job); }
    now[job.job_id] = job.active;
  });
  return {none: !jobs.length, shown, older: Math.max(0, finished.length - shownCount), ended, seen: now};
}

// A job's line: its label, its facts in brackets ("" without), its state in words.
export function jobLine(job) {
  const label = job.name || ("job " + job.job_id);
  // a job Slurm names by its id alone (not one of the portal's runs) says its id once
  const facts = [label === "job " + job.job_id ? "" : "job " + job.job_id, job.summary || ""].filter(Boolean);
  return {
    label,
    facts: facts.length ? "(" + facts.join(", ") + ") " : "",
    state: job.active ? job.words : (job.ended ? when(job.ended) + ": " : "") + job.why,
  };
}

// A job's buttons as [label, class, action], and where its output went ("" while it runs or without).
export function jobButtons(job) {
  const buttons = [];
  if (job.can_cancel) { buttons.push(["Cancel", "btn-outline-danger", "cancel"]); }
  if (job.can_again && !job.active) { buttons.push(["Run again", "btn-outline-primary", "again"]); }
  return buttons;
}

export function jobOutput(job) { return job.output && !job.active ? " Output: ~/" + job.output : ""; }

export function olderJobsLine(count) {
  return count + " older finished jobs: JupyterLab's Jobs panel lists them all.";
}

export function endedJobsNote(ended) {
  return ended.map((j) => "Job " + j.job_id + " (" + j.name + ") ended: " + j.why).join(" ");
}

export function notifyView(state) {
  return {checked: !!state.mail, disabled: !state.address,
          note: state.address ? "to " + state.address : "The directory has no e-mail address for you."};
}

// --- when to ask the hub again ---

export function settled(sessions) {
  return sessions.every((e) => e.session.state === "none" || e.session.state === "running");
}

// Every 10 s while the tab is seen, every 2 s while a session changes, every minute in a hidden tab.
export function pause(hidden, sessions) { return hidden ? 60000 : settled(sessions) ? 10000 : 2000; }

export function freeDue(now, freeAt) { return now - freeAt >= 29000; }  // what is free: every 30 s

// A tab seen again: its next refresh within the visible pace, not the hidden tab's minute.
export function resumeIn(pauseMs, now, askedAt) { return Math.max(0, pauseMs - (now - askedAt)); }

// --- what a screen reader is told (the page's status line, templates/home.html #dsportal-announce) ---

export const WARN_LEFT = [900, 300];  // seconds left at which a running session's coming end is said, once each

const STATE_SENTENCES = {
  queued: " is queued: it waits for the cluster.", starting: " is starting.", running: " is ready.",
  stopping: " is stopping.", none: " has stopped.",
};

// What changed since the last answer, as sentences to say once, and what to compare the next answer with.
// `seen`: {name: {state, warned}} from the last answer; null at the page's first, when nothing is said.
export function announcements(seen, sessions, elapsedSeconds) {
  const said = [], now = {};
  sessions.forEach((entry) => {
    const s = entry.session, before = seen ? seen[entry.name] : undefined, left = secondsLeft(s, elapsedSeconds);
    const warned = s.state === "running" && left !== null ? WARN_LEFT.filter((t) => left <= t).length : 0;
    now[entry.name] = {state: s.state, warned};
    if (!seen) { return; }
    const prior = before ? before.state : "none";
    if (prior !== s.state) { said.push(title(entry.name) + (STATE_SENTENCES[s.state] || ": " + s.state + ".")); }
    else if (warned > (before ? before.warned : 0)) { said.push(title(entry.name) + " has " + words(left) + " left."); }
  });
  return {said, seen: now};
}
