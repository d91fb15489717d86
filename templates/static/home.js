// The home page's script (templates/home.html): draws the hub's data and asks the hub again; the DOM side.
// A module the page loads with its version as ?v= (spawner/hub/home/script.py, served by
// spawner/hub/home/handlers.py).  What it shows and when it asks are homerules.js's pure functions
// (tests/js/home.test.mjs).  The page's data is the inline JSON block #dsportal-data; the hub's base URL,
// the user and JupyterHub's XSRF token are that block's data- attributes.

// homerules.js with this module's own ?v= (the hub versions the two files together): a new release's rules
// come with its page script, unchanged ones from the browser's cache.
const {
  LABELS, againOptions, announcements, answer, badgeClass, cardActions, cardFacts, cardLine, cardUsage, endedJobsNote,
  extendPath, followTo, freeDue, historyLine, historyUsage, jobButtons, jobLine, jobOutput, jobPath, jobsView, nameProblem,
  notifyView, olderJobsLine, receiptFile, receiptPath, pause, progressUrl, resumeIn, secondsLeft, serverPath, sessionQuery, shareHours,
  shareLine, shareRequest, sharedLine, sharedWithMe, sharesOf, spawnUrl, startState, suffix, title, unsharePath, when,
} = await import(new URL("homerules.js" + new URL(import.meta.url).search, import.meta.url).href);

const source = document.getElementById("dsportal-data");
const base = source.dataset.baseUrl, user = source.dataset.user, xsrf = source.dataset.xsrf, api = base + "api/";
const page = {
  data: JSON.parse(source.textContent),
  loadedAt: Date.now(),  // when the hub answered: the card's time left counts down from it
  shares: {mine: [], with_me: [], sharing: {enabled: false}},
  openShare: {},  // session name -> its share form is open
  shareForms: {},  // session name -> its open share form, kept as typed across refreshes
  seenActive: {},  // job id -> active in the last answer (a job's end is noted once)
  timer: null, freeAt: 0, askedAt: 0, asking: false,
  following: null,  // a session continued from this page: its new JupyterLab opens once it answers
  seen: null,  // each session's state and warnings at the last answer: what the status line said already
};

function byId(id) { return document.getElementById(id); }

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined) { node.textContent = text; }
  if (cls) { node.className = cls; }
  return node;
}

function link(label, cls, href, id) {
  const a = el("a", label, "btn " + cls);
  a.href = href;
  a.id = id;
  a.setAttribute("role", "button");
  return a;
}

function call(method, path, body) {  // the hub's API with the XSRF token; `body`: sent as JSON
  const headers = {"X-XSRFToken": xsrf}, init = {method: method, headers: headers, credentials: "same-origin"};
  if (body !== undefined) { headers["Content-Type"] = "application/json"; init.body = JSON.stringify(body); }
  return fetch(api + path, init).then((r) => r.text().then((t) => answer(r.ok, r.status, t)));
}

// --- the sessions' cards ---

function renderCard(entry) {
  const name = entry.name, s = entry.session, id = suffix(name);
  const card = el("section", "", "card mb-3 dsportal-session-card");
  card.id = "dsportal-session" + id;
  card.setAttribute("data-session", name);
  card.setAttribute("aria-label", title(name));
  const body = el("div", "", "card-body");
  card.appendChild(body);
  const heading = el("h2", title(name) + " ", "h5 card-title");
  const badge = el("span", LABELS[s.state] || s.state, badgeClass(s.state));
  badge.id = "dsportal-state" + id;
  heading.appendChild(badge);
  body.appendChild(heading);
  const left = secondsLeft(s, (Date.now() - page.loadedAt) / 1000);
  const line = el("p", cardLine(entry, left), "mb-2");
  line.id = "dsportal-session-line" + id;
  body.appendChild(line);
  const facts = el("dl", "", "dsportal-facts");
  facts.id = "dsportal-facts" + id;
  cardFacts(s, left).forEach(([label, text]) => {
    const item = el("div");
    item.appendChild(el("dt", label));
    item.appendChild(el("dd", text));
    facts.appendChild(item);
  });
  body.appendChild(facts);
  if (s.continued) {  // what the continuation that started this session carried (spawner/hub/continuation/)
    const carried = el("p", s.continued, "dsportal-continued text-muted mb-2");
    carried.id = "dsportal-continued" + id;
    body.appendChild(carried);
  }
  const usage = cardUsage(entry);
  if (usage !== null) {
    const used = el("p", usage, "dsportal-usage text-muted mb-2");
    used.id = "dsportal-usage" + id;
    body.appendChild(used);
  }
  const error = el("p", "", "text-danger mt-2 mb-0");
  error.id = "dsportal-action-error" + id;
  error.setAttribute("role", "alert");
  body.appendChild(cardButtons(entry, id, error));
  body.appendChild(error);
  if (s.state === "running") { renderShares(body, name, id, error); }
  return card;
}

function cardButtons(entry, id, error) {
  const name = entry.name, s = entry.session, actions = el("div", "", "dsportal-actions");
  function act(label, cls, action, bid) {
    const b = el("button", label, "btn " + cls);
    b.type = "button";
    b.id = bid + id;
    b.addEventListener("click", () => {
      b.disabled = true;
      error.textContent = "";
      action().then(refresh, (e) => { error.textContent = e.message; b.disabled = false; });
    });
    return b;
  }
  const stop = () => call("DELETE", serverPath(user, name));
  const made = {
    open: () => link("Open JupyterLab", "btn-primary", entry.server_url, "dsportal-open" + id),
    progress: () => link("Show progress", "btn-outline-primary", progressUrl(base, user, name),
                         "dsportal-progress" + id),
    cancel: () => act("Cancel", "btn-outline-danger", stop, "dsportal-cancel"),
    stop: () => act("Stop", "btn-outline-danger", stop, "dsportal-stop"),
    extend: () => {
      const more = act("Add " + s.extend.step, "btn-outline-secondary", () => call("POST", extendPath(name)),
                       "dsportal-extend");
      more.disabled = !s.extend.allowed;
      more.title = s.extend.why_not || "";
      return more;
    },
    start: () => link("Start", "btn-outline-primary", spawnUrl(base, user, name), "dsportal-start" + id),
    remove: () => act("Remove", "btn-outline-secondary", () => call("DELETE", serverPath(user, name), {remove: true}),
                      "dsportal-remove"),
    continue: () => act("Continue in a new job", "btn-outline-secondary", () => continueSession(name),
                        "dsportal-continue"),
    automatically: () => automaticChoice(name, id, Boolean(s.auto_continue), s.auto_lead_minutes, error),
    share: () => {
      const toggle = el("button", "Share", "btn btn-outline-secondary");
      toggle.type = "button";
      toggle.id = "dsportal-share-toggle" + id;
      toggle.addEventListener("click", () => { page.openShare[name] = !page.openShare[name]; render(); });
      return toggle;
    },
  };
  cardActions(entry, page.shares.sharing.enabled).forEach((action) => actions.appendChild(made[action]()));
  return actions;
}

// A running session continued in a new Slurm job of the same shape: its notebooks' variables carried over
// (spawner/hub/continuation/); the card then shows the new job starting, and what was carried.
function continueSession(name) {
  const asked = "Continue " + title(name) + " in a new Slurm job? Save your notebooks first. Each notebook's " +
    "variables are carried into its new kernel; what cannot be carried is named.";
  if (!window.confirm(asked)) { return Promise.resolve(); }
  return call("POST", "dsportal/continue", {server: name}).then(() => { page.following = name; });
}

// "Continue automatically before the end": kept on the user's record per session; the hub continues it then
function automaticChoice(name, id, on, lead, error) {
  const label = el("label", "", "form-check form-check-inline ms-2 mb-0 align-middle dsportal-automatically");
  const box = el("input", "", "form-check-input");
  box.type = "checkbox";
  box.id = "dsportal-automatically" + id;
  box.checked = on;
  box.addEventListener("change", () => {
    box.disabled = true;
    error.textContent = "";
    call("POST", "dsportal/continue/automatically", {server: name, on: box.checked}).then(refresh, (e) => {
      error.textContent = e.message; box.checked = !box.checked; box.disabled = false;
    });
  });
  label.appendChild(box);
  label.appendChild(el("span", " Continue automatically " + lead + " min before the end", "form-check-label"));
  return label;
}

// --- a running session's shares ---

function renderShares(body, name, id, error) {
  const mine = sharesOf(page.shares.mine, name);
  if (mine.length) {
    const list = el("ul", "", "list-unstyled mt-2 mb-0 dsportal-shares");
    list.id = "dsportal-shares" + id;
    mine.forEach((x) => {
      const item = el("li", shareLine(x), "dsportal-share");
      item.setAttribute("data-share", x.kind + ":" + x.name);
      const revoke = el("button", "Stop sharing", "btn btn-sm btn-outline-danger");
      revoke.type = "button";
      revoke.addEventListener("click", () => {
        revoke.disabled = true;
        call("DELETE", unsharePath(name, x))
          .then(refresh, (e) => { error.textContent = e.message; revoke.disabled = false; });
      });
      item.appendChild(revoke);
      list.appendChild(item);
    });
    body.appendChild(list);
  }
  if (!page.openShare[name]) { delete page.shareForms[name]; return; }
  if (!page.shareForms[name]) { page.shareForms[name] = shareForm(name, id); }
  body.appendChild(page.shareForms[name]);
}

function shareForm(name, id) {
  const sharing = page.shares.sharing, form = el("form", "", "mt-2 dsportal-share-form");
  form.id = "dsportal-share-form" + id;
  form.appendChild(el("p", sharing.warning, "alert alert-warning mb-2"));
  const kind = el("select", "", "form-select form-select-sm d-inline-block w-auto me-1");
  [["user", "with the user"], ["group", "with the group"]].forEach(([value, label]) => {
    const opt = el("option", label);
    opt.value = value;
    kind.appendChild(opt);
  });
  kind.setAttribute("aria-label", "Share with a user or a group");
  const who = el("input", "", "form-control form-control-sm d-inline-block w-auto me-1");
  who.placeholder = "username or group";
  who.setAttribute("aria-label", "Who");
  who.required = true;
  const hours = el("input", "", "form-control form-control-sm d-inline-block me-1");
  hours.type = "number"; hours.min = "0.25"; hours.step = "0.25"; hours.max = String(sharing.max_hours);
  hours.value = String(shareHours(sharing.max_hours));
  hours.style.width = "6em";
  hours.setAttribute("aria-label", "Hours");
  const go = el("button", "Share", "btn btn-sm btn-primary");
  go.type = "submit";
  [kind, who, el("span", " for ", "me-1"), hours, el("span", "hours ", "me-1"), go].forEach((n) => form.appendChild(n));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    byId("dsportal-action-error" + id).textContent = "";  // the card's, found anew: refreshes redraw it
    go.disabled = true;
    call("POST", "dsportal/shares", shareRequest(name, kind.value, who.value, hours.value)).then(() => {
      page.openShare[name] = false;
      delete page.shareForms[name];
      return refresh();
    }, (e) => { byId("dsportal-action-error" + id).textContent = e.message; go.disabled = false; });
  });
  return form;
}

// --- the rest of the page: starting, shared with the user, start again, recent sessions ---

function renderSessions() {
  const box = byId("dsportal-sessions");
  // the cards are drawn anew: the keyboard's place among them is kept (the same element where it is kept, as an
  // open share form is, else the one of the same id), so a refresh never sends it back to the page's top
  const focused = box.contains(document.activeElement) ? document.activeElement : null;
  box.replaceChildren();
  page.data.sessions.forEach((entry) => { box.appendChild(renderCard(entry)); });
  const again = focused && (box.contains(focused) ? focused : focused.id && byId(focused.id));
  if (again && again !== document.activeElement) { again.focus({preventScroll: true}); }
  const start = startState(page.data.sessions, page.data.limits);
  byId("dsportal-start").hidden = start.full;
  const note = byId("dsportal-full");
  note.hidden = !start.full;
  note.textContent = start.fullNote;
  byId("dsportal-start-server").textContent = start.startLabel;
  byId("dsportal-name-hint").textContent = start.nameHint;
  byId("dsportal-new-name").required = start.needName;
  const ended = byId("dsportal-ended");
  ended.textContent = start.ended;
  ended.hidden = !ended.textContent;
}

function renderShared() {
  const list = byId("dsportal-shared-list"), open = sharedWithMe(page.shares.with_me);
  byId("dsportal-shared").hidden = !open.length;
  list.replaceChildren();
  open.forEach((x) => {
    const item = el("li", "", "mb-1 dsportal-shared-session");
    item.setAttribute("data-owner", x.owner);
    item.appendChild(el("span", sharedLine(x)));
    const a = el("a", "Open", "btn btn-sm btn-outline-primary");
    a.href = x.url;
    a.setAttribute("role", "button");
    item.appendChild(a);
    list.appendChild(item);
  });
}

function renderAgain() {
  const options = againOptions(page.data.history);
  byId("dsportal-again-form").hidden = !options;
  setAgainOptions(options);
}

// the "start again" form's options: the newest session's, or those of the one whose Start again was pressed
function setAgainOptions(options) {
  const form = byId("dsportal-again-form");
  form.querySelectorAll("input[data-option]").forEach((i) => { i.remove(); });
  if (!options) { return; }
  options.forEach(([name, value]) => {
    const input = el("input");
    input.type = "hidden"; input.name = name; input.value = value;
    input.setAttribute("data-option", "");
    form.appendChild(input);
  });
}

function renderHistory() {
  const list = byId("dsportal-history");
  list.replaceChildren();
  if (!page.data.history.length) { list.appendChild(el("li", "None yet.", "text-muted")); }
  page.data.history.forEach((h) => {
    const item = el("li", "", "mb-1");
    item.appendChild(el("strong", when(h.ended) + " "));
    item.appendChild(el("span", historyLine(h)));
    const usage = historyUsage(h);
    if (usage) {  // what it used (spawner/usage.py)
      const used = el("div", "", "dsportal-usage text-muted");
      used.appendChild(el("span", usage.lines));
      if (usage.advice) { used.appendChild(el("div", usage.advice, "fw-semibold text-body")); }
      item.appendChild(used);
    }
    if (h.job_id) { item.appendChild(receiptButton(h.job_id, "dsportal-history-error")); }
    const options = againOptions([h]);
    if (options) { item.appendChild(againButton(h.job_id, options)); }
    list.appendChild(item);
  });
}

// this session's settings again, as the form's "start again" sends them (a POST with the page's XSRF token)
function againButton(jobId, options) {
  const b = el("button", "Start again", "btn btn-sm btn-link dsportal-again-one");
  b.type = "button";
  b.setAttribute("aria-label", "Start again with the settings of job " + jobId);
  b.addEventListener("click", () => {
    setAgainOptions(options);
    byId("dsportal-again-form").requestSubmit();
  });
  return b;
}

// a session's or run's receipt (spawner/hub/receipts/): the hub's answer saved as a file; its failure in words
// under its list (`errorId`)
function receiptButton(jobId, errorId) {
  const b = el("button", "Receipt", "btn btn-sm btn-link dsportal-receipt");
  b.type = "button";
  b.setAttribute("aria-label", "Download the receipt of job " + jobId);
  b.addEventListener("click", () => {
    const init = {headers: {"X-XSRFToken": xsrf}, credentials: "same-origin"};
    fetch(api + receiptPath(jobId), init).then((r) => r.blob().then((file) => {
      if (!r.ok) { return file.text().then((t) => answer(false, r.status, t)); }  // throws the hub's words
      const save = el("a");
      save.href = URL.createObjectURL(file);
      save.download = receiptFile(jobId);
      save.click();
      setTimeout(() => { URL.revokeObjectURL(save.href); }, 60000);  // at once could cancel the download
      byId(errorId).textContent = "";
      return null;
    })).catch((e) => { byId(errorId).textContent = e.message || String(e); });
  });
  return b;
}

function render() { renderSessions(); renderShared(); renderAgain(); renderHistory(); }

// the new session's name: presets, "start again" and the start button go to it
function guardStart(event) {
  const input = byId("dsportal-new-name"), name = input.value.trim();
  const why = nameProblem(name, input.required, page.data.sessions, page.data.limits);
  byId("dsportal-name-error").textContent = why;
  if (why) { event.preventDefault(); return false; }
  if (event.currentTarget.tagName === "FORM") { event.currentTarget.action = spawnUrl(base, user, name); }
  else { event.currentTarget.href = spawnUrl(base, user, name); }
  return true;
}

// --- the user's jobs and their e-mail ---

function jobButton([label, cls, action], job) {
  const b = el("button", label, "btn btn-sm " + cls);
  b.type = "button";
  b.setAttribute("data-action", action);
  b.addEventListener("click", () => {
    if (action === "cancel" && !window.confirm("Cancel job " + job.job_id + "?")) { return; }
    b.disabled = true;
    byId("dsportal-job-error").textContent = "";
    call("POST", jobPath(job, action)).then(refresh, (e) => { byId("dsportal-job-error").textContent = e.message; });
  });
  return b;
}

function jobItem(job) {
  const item = el("li", "", "mb-2 dsportal-job"), line = jobLine(job);
  item.setAttribute("data-job-id", job.job_id);
  item.appendChild(el("strong", line.label + " "));
  if (line.facts) { item.appendChild(el("span", line.facts, "text-muted")); }
  item.appendChild(el("span", line.state, "dsportal-job-state"));
  const actions = el("span", "", "ms-2");
  jobButtons(job).forEach((button) => { actions.appendChild(jobButton(button, job)); });
  if (job.portal) { actions.appendChild(receiptButton(job.job_id, "dsportal-job-error")); }  // a run's receipt
  if (jobOutput(job)) { actions.appendChild(el("span", jobOutput(job), "text-muted")); }
  item.appendChild(actions);
  return item;
}

function renderJobs(body) {
  const list = byId("dsportal-jobs"), problem = byId("dsportal-jobs-error");
  problem.hidden = !body.jobs_error;
  problem.textContent = body.jobs_error || "";
  if (!body.jobs) { return; }
  list.replaceChildren();
  const view = jobsView(body.jobs, page.seenActive);
  page.seenActive = view.seen;
  if (view.none) { list.appendChild(el("li", "None in the last days.", "text-muted")); }
  view.shown.forEach((job) => { list.appendChild(jobItem(job)); });
  if (view.older) { list.appendChild(el("li", olderJobsLine(view.older), "text-muted")); }
  if (view.ended.length) {
    const note = byId("dsportal-job-ended");
    note.textContent = endedJobsNote(view.ended);
    note.hidden = false;
  }
}

function renderNotify(state) {
  const view = notifyView(state), box = byId("dsportal-notify-mail");
  box.checked = view.checked;
  box.disabled = view.disabled;
  byId("dsportal-notify-note").textContent = view.note;
}

function changeNotify(event) {
  const box = event.target;
  call("POST", "dsportal/notify", {mail: box.checked}).then(renderNotify, (e) => {
    box.checked = !box.checked;
    byId("dsportal-notify-note").textContent = e.message;
  });
}

// --- asking the hub again ---

function showFree(...items) { byId("dsportal-partitions").replaceChildren(...items); }  // what is free

function schedule(ms) {
  window.clearTimeout(page.timer);
  page.timer = window.setTimeout(() => { refresh().catch(() => {}); }, ms);
}

function refresh() {
  if (page.asking) { return Promise.resolve(); }  // one request at a time: the answer schedules the next
  window.clearTimeout(page.timer);
  page.asking = true;
  page.askedAt = Date.now();
  const free = freeDue(Date.now(), page.freeAt);
  return call("GET", sessionQuery(free)).then((body) => {
    page.data = body;
    if (body.shares) { page.shares = body.shares; }
    page.loadedAt = Date.now();
    render();
    const news = announcements(page.seen, body.sessions, 0);  // said once, not at each redraw
    page.seen = news.seen;
    if (news.said.length) { byId("dsportal-announce").textContent = news.said.join(" "); }
    renderJobs(body);
    const continued = followTo(body.sessions, page.following);  // the new job's JupyterLab, once it answers
    if (continued) { page.following = null; window.location.assign(continued); }
    if (body.partitions) { showFree(...body.partitions.map((p) => el("li", p.summary))); }
    else if (body.partitions_error) { showFree(el("li", body.partitions_error, "text-muted")); }
    if (free) { page.freeAt = Date.now(); }
  }, (e) => {
    if (free) { showFree(el("li", "What is free could not be asked: " + e.message, "text-muted")); }
    throw e;
  }).finally(() => {
    page.asking = false;
    schedule(pause(document.hidden, page.data.sessions));
  });
}

byId("dsportal-start-server").addEventListener("click", guardStart);
document.querySelectorAll("#dsportal-presets form").forEach((f) => { f.addEventListener("submit", guardStart); });
byId("dsportal-new-name").addEventListener("input", () => { byId("dsportal-name-error").textContent = ""; });
byId("dsportal-notify-mail").addEventListener("change", changeNotify);
call("GET", "dsportal/notify").then(renderNotify, () => {});
render();
page.seen = announcements(null, page.data.sessions, 0).seen;  // the page as drawn: nothing to say yet
refresh().catch(() => {});  // what is free, at once
document.addEventListener("visibilitychange", () => {
  // seen again: the next refresh within the visible pace, not the hidden tab's minute
  if (!document.hidden && !page.asking) { schedule(resumeIn(pause(false, page.data.sessions), Date.now(), page.askedAt)); }
});
window.setInterval(() => {  // the countdown between two answers; never under the user's typing
  if (!byId("dsportal-sessions").contains(document.activeElement)) { renderSessions(); }
}, 5000);
