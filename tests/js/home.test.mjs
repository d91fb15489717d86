// The home page's rules (templates/static/homerules.js), with node's own test runner: `node --test tests/js`
// (tests/unit/test_home_script.py runs it with the suite).

import assert from "node:assert/strict";
import {describe, test} from "node:test";

import * as rules from "../../templates/static/homerules.js";

const LIMITS = {
  max_per_user: 2,
  name_pattern: "[a-z](?:[a-z0-9-]{0,28}[a-z0-9])?",  // spawner/hub/request/sessionlimits.py's
  name_rule: "1 to 30 lowercase letters",
};

function entry(name, state, more = {}) {
  return {name, session: {state, ...(more.session || {})}, last_end: "", server_url: "", usage: [], ...more.entry};
}

describe("words", () => {
  test("durations as the card says them", () => {
    assert.deepEqual([0, 0.4, 59.6, 60, 61, 3599, 3600, 3660, 7320.5, -3].map(rules.words),
                     ["0 s", "0 s", "60 s", "1 min", "2 min", "60 min", "1 h", "1 h 1 min", "2 h 2 min", "0 s"]);
  });
  test("times to the minute, without the T", () => {
    assert.equal(rules.when("2024-05-01T13:45:59"), "2024-05-01 13:45");
    assert.equal(rules.when(""), "");
    assert.equal(rules.when(undefined), "");
  });
  test("ids and titles of named and unnamed sessions", () => {
    assert.deepEqual([rules.suffix(""), rules.suffix("train")], ["", "--train"]);
    assert.deepEqual([rules.title(""), rules.title("train")], ["Your session", "Session \u201ctrain\u201d"]);
  });
});

describe("the hub's URLs", () => {
  test("a session's server, start and progress, its name and the user's encoded", () => {
    assert.equal(rules.serverPath("a b", ""), "users/a%20b/server");
    assert.equal(rules.serverPath("alice", "x/y"), "users/alice/servers/x%2Fy");
    assert.equal(rules.spawnUrl("/hub/", "alice", ""), "/hub/spawn/alice");
    assert.equal(rules.spawnUrl("/hub/", "alice", "train"), "/hub/spawn/alice/train");
    assert.equal(rules.progressUrl("/hub/", "alice", ""), "/hub/spawn-pending/alice");
    assert.equal(rules.progressUrl("/hub/", "alice", "train"), "/hub/spawn-pending/alice/train");
  });
  test("extend, stop sharing, a job's action, the refresh", () => {
    assert.equal(rules.extendPath(""), "dsportal/session/extend");
    assert.equal(rules.extendPath("train"), "dsportal/session/extend?server=train");
    assert.equal(rules.unsharePath("train", {kind: "group", name: "ml lab"}), "dsportal/shares?server=train&group=ml%20lab");
    assert.equal(rules.jobPath({job_id: "12_3"}, "cancel"), "dsportal/runs/12_3/cancel");
    assert.equal(rules.receiptPath("82+1"), "dsportal/receipts/82%2B1");
    assert.equal(rules.receiptFile("82+1"), "dsportal-receipt-82+1.json");
    assert.equal(rules.receiptFile("../x/7"), "dsportal-receipt-7.json");
    assert.equal(rules.sessionQuery(false), "dsportal/session?jobs=1&shares=1");
    assert.equal(rules.sessionQuery(true), "dsportal/session?jobs=1&shares=1&free=1");
  });
  test("an answer: its JSON, {} when empty or not JSON, an error with the hub's words", () => {
    assert.deepEqual(rules.answer(true, 200, '{"a": 1}'), {a: 1});
    assert.deepEqual(rules.answer(true, 204, ""), {});
    assert.deepEqual(rules.answer(true, 200, "<html>"), {});
    assert.throws(() => rules.answer(false, 409, '{"message": "No address."}'), {message: "No address."});
    assert.throws(() => rules.answer(false, 502, "Bad gateway"), {message: "HTTP 502"});
  });
});

describe("a session's card", () => {
  test("time left counts down from the hub's answer and stops at 0; none without one", () => {
    assert.equal(rules.secondsLeft({seconds_left: 600}, 30), 570);
    assert.equal(rules.secondsLeft({seconds_left: 10}, 30), 0);
    assert.equal(rules.secondsLeft({seconds_left: null}, 30), null);
    assert.equal(rules.secondsLeft({}, 30), null);
  });
  test("the badge's colour by state", () => {
    assert.deepEqual(["running", "none", "queued", "stopping"].map(rules.badgeClass),
                     ["badge text-bg-success", "badge text-bg-secondary", "badge text-bg-warning", "badge text-bg-warning"]);
    assert.equal(rules.LABELS.none, "not running");
  });
  test("its line in each state", () => {
    assert.equal(rules.cardLine(entry("", "none"), null), "No session is running here. Start one below or with a preset.");
    assert.equal(rules.cardLine(entry("train", "none"), null),
                 "Not running. Start it again with its own settings, or remove it.");
    assert.equal(rules.cardLine(entry("train", "none", {entry: {last_end: "Ended: time limit."}}), null), "Ended: time limit.");
    assert.equal(rules.cardLine(entry("", "running"), null), "Running.");
    assert.equal(rules.cardLine(entry("", "running", {session: {end: "2024-05-01T18:30:00"}}), 5400),
                 "Running: 1 h 30 min left (until 18:30).");
    assert.equal(rules.cardLine(entry("", "queued", {session: {message: "Waiting for a GPU."}}), null), "Waiting for a GPU.");
  });
  test("its facts: those with a value, as text, zero GPUs too", () => {
    const s = {job_id: "42", node: "", partition: "sxm2", gpus: 0, cores: 8, memory_gb: 48, limit: "8 h"};
    assert.deepEqual(rules.cardFacts(s, 125), [["Job", "42"], ["Partition", "sxm2"], ["GPUs", "0"], ["Cores", "8"],
                                               ["Memory", "48 GB"], ["Time limit", "8 h"], ["Time left", "3 min"]]);
    assert.deepEqual(rules.cardFacts({state: "none"}, null), []);
    // the GPU type it asked for, or the one Slurm gave an "any type" session
    assert.deepEqual(rules.cardFacts({job_id: "7", gpus: 2, gpu_type: "A100 80 GB (whichever was free first)"}, null),
                     [["Job", "7"], ["GPUs", "2"], ["GPU type", "A100 80 GB (whichever was free first)"]]);
    // a share of a GPU, in the hub's words
    assert.deepEqual(rules.cardFacts({job_id: "8", gpus: 0, shards: 1, share: "a quarter of a GPU"}, null),
                     [["Job", "8"], ["GPUs", "a quarter of a GPU"]]);
  });
  test("what it used so far, while it runs", () => {
    assert.equal(rules.cardUsage(entry("", "running", {entry: {usage: ["GPU 0: 5%", "1 GB"]}})), "So far: GPU 0: 5% \u00b7 1 GB");
    assert.equal(rules.cardUsage(entry("", "running")), null);
    assert.equal(rules.cardUsage(entry("", "stopping", {entry: {usage: ["GPU 0: 5%"]}})), null);
  });
  test("its buttons in each state", () => {
    const extend = {session: {extend: {allowed: true, step: "1 h"}}};
    assert.deepEqual(rules.cardActions(entry("", "none"), true), []);
    assert.deepEqual(rules.cardActions(entry("train", "none"), true), ["start", "remove"]);
    assert.deepEqual(rules.cardActions(entry("", "queued", extend), true), ["progress", "cancel"]);
    assert.deepEqual(rules.cardActions(entry("", "starting"), false), ["progress", "cancel"]);
    assert.deepEqual(rules.cardActions(entry("", "stopping"), true), []);
    assert.deepEqual(rules.cardActions(entry("", "running", {...extend, entry: {server_url: "/user/a/"}}), true),
                     ["open", "stop", "extend", "share"]);
    assert.deepEqual(rules.cardActions(entry("", "running"), false), ["stop"]);  // not answering yet: no Open
    const continuable = {session: {continuable: true}};
    assert.deepEqual(rules.cardActions(entry("", "running", continuable), false), ["stop", "continue"]);
    const chained = {session: {continuable: true, auto_continue: false}};  // long enough to continue on its own
    assert.deepEqual(rules.cardActions(entry("", "running", chained), false), ["stop", "continue", "automatically"]);
    assert.deepEqual(rules.cardActions(entry("", "queued", continuable), false), ["progress", "cancel"]);
  });
  test("a continued session's new JupyterLab, once it answers", () => {
    const starting = entry("", "starting"), running = entry("", "running", {entry: {server_url: "/user/a/"}});
    assert.equal(rules.followTo([starting], ""), "");
    assert.equal(rules.followTo([running], ""), "/user/a/");
    assert.equal(rules.followTo([running], null), "");  // nothing continued from this page
    assert.equal(rules.followTo([running], "train"), "");
    assert.equal(rules.followTo(undefined, ""), "");
  });
});

describe("shares", () => {
  const share = {server: "train", kind: "group", name: "ml", expires: "2024-05-01T18:30:00Z"};
  test("a session's own, and the line of each", () => {
    assert.deepEqual(rules.sharesOf([share, {...share, server: ""}], "train"), [share]);
    assert.equal(rules.shareLine(share), "Shared with the group ml until 2024-05-01 18:30 UTC ");
    assert.equal(rules.shareLine({...share, kind: "user", name: "bob"}), "Shared with bob until 2024-05-01 18:30 UTC ");
  });
  test("those with the user: the running ones, whose they are and what that means", () => {
    const mine = {owner: "alice", server: "", expires: "2024-05-01T18:30:00Z", running: true};
    assert.deepEqual(rules.sharedWithMe([mine, {...mine, running: false}]), [mine]);
    assert.equal(rules.sharedLine(mine), "alice shares their session with you until 2024-05-01 18:30 UTC. " +
                 "Code you run there runs as alice. ");
    assert.match(rules.sharedLine({...mine, server: "train"}), /^alice shares the session \u201ctrain\u201d with you/);
  });
  test("the form: 8 hours at most to begin with, the request it sends", () => {
    assert.deepEqual([rules.shareHours(24), rules.shareHours(2)], [8, 2]);
    assert.deepEqual(rules.shareRequest("train", "user", " bob ", "1.5"), {server: "train", hours: 1.5, user: "bob"});
    assert.equal(JSON.stringify(rules.shareRequest("", "group", "ml", "2")), '{"server":"","hours":2,"group":"ml"}');
  });
});

describe("starting a session", () => {
  test("nothing running: the stock button, a name optional", () => {
    const start = rules.startState([entry("", "none", {entry: {last_end: "Ended: idle."}})], LIMITS);
    assert.deepEqual(start, {full: false, fullNote: "", startLabel: "Start My Server", needName: false,
                             nameHint: "(optional: leave empty for your unnamed session; 1 to 30 lowercase letters)",
                             ended: "Ended: idle."});
  });
  test("the unnamed session running: another session needs a name; no unnamed card counts as not running", () => {
    const start = rules.startState([entry("", "queued", {entry: {last_end: "old"}})], LIMITS);
    assert.equal(start.startLabel, "Start another session");
    assert.equal(start.needName, true);
    assert.equal(start.nameHint, "(required: your unnamed session is in use; 1 to 30 lowercase letters)");
    assert.equal(start.ended, "");
    assert.equal(rules.startState([entry("train", "running")], LIMITS).needName, false);
  });
  test("the user's most sessions running: no start, a note why", () => {
    const start = rules.startState([entry("", "running"), entry("train", "starting")], LIMITS);
    assert.equal(start.full, true);
    assert.equal(start.fullNote, "You run 2 sessions, the most one user may run at once here; stop one to start another.");
  });
  test("the new session's name", () => {
    const sessions = [entry("", "running"), entry("train", "running"), entry("old", "none")];
    const problem = (name, required) => rules.nameProblem(name, required, sessions, LIMITS);
    assert.equal(problem("", true), "Give the new session a name: your unnamed session is in use.");
    assert.equal(problem("", false), "");
    for (const bad of ["Train!", "2x", "a--b", "x-", "a".repeat(31)]) {
      assert.equal(problem(bad, true), "A session cannot be called \u201c" + bad + "\u201d: use 1 to 30 lowercase letters.");
    }
    assert.equal(problem("train", true), "The session \u201ctrain\u201d is already running: pick another name.");
    assert.equal(problem("old", true), "");  // a stopped one starts again under its name
    assert.equal(problem("a-b2", true), "");
  });
  test("start again: the last session's options that it had", () => {
    assert.equal(rules.againOptions([]), null);
    assert.equal(rules.againOptions([{why: "x"}]), null);
    assert.deepEqual(rules.againOptions([{options: {partition: null, gpus: 2, hours: 8, image: "x"}}, {options: {}}]),
                     [["gpus", "2"], ["hours", "8"]]);
    assert.deepEqual(rules.againOptions([{options: {}}]), []);  // the form shows, with JupyterHub's defaults
    assert.deepEqual(rules.againOptions([{options: {gpus: 2, gpu_type: "a100"}}]),  // the GPU type too
                     [["gpus", "2"], ["gpu_type", "a100"]]);
  });
});

describe("recent sessions", () => {
  test("a line with its name, summary and job, and why it ended", () => {
    assert.equal(rules.historyLine({name: "", summary: "1 GPU \u00b7 8 h", job_id: "7", why: "Time limit."}),
                 "1 GPU \u00b7 8 h (job 7). Time limit.");
    assert.equal(rules.historyLine({name: "train", job_id: "7", why: "Stopped."}), "\u201ctrain\u201d: Job 7. Stopped.");
  });
  test("what it used: its lines less the advice, and the advice apart", () => {
    const usage = {lines: ["GPU 0: 0%", "Ask for 0 GPUs."], advice: "Ask for 0 GPUs."};
    assert.deepEqual(rules.historyUsage({usage}), {lines: "GPU 0: 0%", advice: "Ask for 0 GPUs."});
    assert.deepEqual(rules.historyUsage({usage: {lines: ["a", "b"], advice: ""}}), {lines: "a \u00b7 b", advice: ""});
    assert.equal(rules.historyUsage({usage: {lines: []}}), null);
    assert.equal(rules.historyUsage({}), null);
  });
});

describe("jobs", () => {
  const job = (id, active, more = {}) => ({job_id: id, active, name: "run " + id, why: "Completed.", ...more});
  test("sessions left out; the active ones, then the newest finished; how many older", () => {
    const all = [job("1", true), job("2", false, {kind: "session"}), ...["3", "4", "5", "6", "7", "8", "9"].map((id) => job(id, false))];
    const view = rules.jobsView(all, {}, 5);
    assert.deepEqual(view.shown.map((j) => j.job_id), ["1", "3", "4", "5", "6", "7"]);
    assert.equal(view.older, 2);
    assert.equal(view.none, false);
    assert.deepEqual(view.ended, []);
  });
  test("a job that was active and is not is noted once as ended", () => {
    const first = rules.jobsView([job("1", true), job("2", true)], {});
    assert.deepEqual(first.seen, {1: true, 2: true});
    const second = rules.jobsView([job("1", false), job("2", true)], first.seen);
    assert.deepEqual(second.ended.map((j) => j.job_id), ["1"]);
    assert.deepEqual(rules.jobsView([job("1", false)], second.seen).ended, []);
    assert.deepEqual(first.seen, {1: true, 2: true});  // the earlier view is left as it was
    assert.equal(rules.endedJobsNote(second.ended), "Job 1 (run 1) ended: Completed.");
  });
  test("none at all", () => {
    assert.deepEqual(rules.jobsView([job("2", false, {kind: "session"})], {}),
                     {none: true, shown: [], older: 0, ended: [], seen: {}});
    assert.equal(rules.olderJobsLine(3), "3 older finished jobs: JupyterLab's Jobs panel lists them all.");
  });
  test("a job's line: a Slurm job named by its id says it once", () => {
    assert.deepEqual(rules.jobLine(job("5", true, {summary: "1 GPU", words: "Running on node1."})),
                     {label: "run 5", facts: "(job 5, 1 GPU) ", state: "Running on node1."});
    assert.deepEqual(rules.jobLine({job_id: "65", active: false, name: "", ended: "2024-05-01T10:00:00", why: "Failed."}),
                     {label: "job 65", facts: "", state: "2024-05-01 10:00: Failed."});
  });
  test("a job's buttons and output", () => {
    const done = job("5", false, {can_cancel: false, can_again: true, output: "jobs/x-5.ipynb"});
    assert.deepEqual(rules.jobButtons(done), [["Run again", "btn-outline-primary", "again"]]);
    assert.equal(rules.jobOutput(done), " Output: ~/jobs/x-5.ipynb");
    const running = job("6", true, {can_cancel: true, can_again: true, output: "jobs/x-6.ipynb"});
    assert.deepEqual(rules.jobButtons(running), [["Cancel", "btn-outline-danger", "cancel"]]);
    assert.equal(rules.jobOutput(running), "");
  });
  test("the e-mail opt-in", () => {
    assert.deepEqual(rules.notifyView({mail: true, address: "a@x"}), {checked: true, disabled: false, note: "to a@x"});
    assert.deepEqual(rules.notifyView({mail: false, address: ""}),
                     {checked: false, disabled: true, note: "The directory has no e-mail address for you."});
  });
});

describe("when the page asks the hub again", () => {
  const settled = [entry("", "running"), entry("x", "none")];
  test("every 10 s while seen, every 2 s while a session changes, every minute hidden", () => {
    assert.equal(rules.pause(false, settled), 10000);
    assert.equal(rules.pause(false, [...settled, entry("y", "starting")]), 2000);
    assert.equal(rules.pause(true, [entry("y", "stopping")]), 60000);
    assert.equal(rules.settled([]), true);
  });
  test("what is free every 30 s, at once on the first", () => {
    assert.equal(rules.freeDue(1_000_000, 0), true);
    assert.equal(rules.freeDue(100_000, 80_000), false);
    assert.equal(rules.freeDue(109_000, 80_000), true);
  });
  test("a tab seen again asks within the visible pace", () => {
    assert.equal(rules.resumeIn(10000, 50_000, 45_000), 5000);
    assert.equal(rules.resumeIn(10000, 90_000, 20_000), 0);
  });
});

describe("what a screen reader is told", () => {
  const running = (left) => entry("", "running", {session: {seconds_left: left}});

  test("nothing at the page's first answer, whatever it shows", () => {
    const first = rules.announcements(null, [entry("x", "queued"), running(200)], 0);
    assert.deepEqual(first.said, []);
    assert.deepEqual(first.seen, {x: {state: "queued", warned: 0}, "": {state: "running", warned: 2}});
  });

  test("each change of a session's state once, by the session's name", () => {
    const queued = rules.announcements(null, [entry("", "none"), entry("big", "queued")], 0).seen;
    const ready = rules.announcements(queued, [entry("", "starting"), entry("big", "running")], 0);
    assert.deepEqual(ready.said, ["Your session is starting.", "Session \u201cbig\u201d is ready."]);
    const again = rules.announcements(ready.seen, [entry("", "starting"), entry("big", "running")], 0);
    assert.deepEqual(again.said, []);  // the next refresh: the same states, nothing said again
  });

  test("a new session is announced from not running", () => {
    const seen = rules.announcements(null, [entry("", "running")], 0).seen;
    assert.deepEqual(rules.announcements(seen, [entry("", "running"), entry("x", "queued")], 0).said,
      ["Session \u201cx\u201d is queued: it waits for the cluster."]);
  });

  test("little time left: said at 15 and at 5 minutes, once each", () => {
    let seen = rules.announcements(null, [running(1000)], 0).seen;
    let next = rules.announcements(seen, [running(890)], 0);
    assert.deepEqual(next.said, ["Your session has 15 min left."]);
    next = rules.announcements(next.seen, [running(700)], 0);
    assert.deepEqual(next.said, []);
    next = rules.announcements(next.seen, [running(299)], 0);
    assert.deepEqual(next.said, ["Your session has 5 min left."]);
    seen = next.seen;
    assert.deepEqual(rules.announcements(seen, [running(100)], 0).said, []);
    assert.deepEqual(rules.announcements(seen, [entry("", "none")], 0).said, ["Your session has stopped."]);
  });
});
