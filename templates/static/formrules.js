// The session form's rules (templates/options_form.html): what its lines say and what it asks the hub, as pure
// functions, tested by tests/js/form.test.mjs.  form.js, the DOM side, imports them.

// a session's length in whole minutes, as Slurm counts them: the same words as the hub's
// (spawner/hub/request/resources.py, duration_words), both held to tests/data/durations.json
export function duration(hours) {
  if (typeof hours !== "number" || isNaN(hours)) { return "? h"; }
  const m = Math.max(1, Math.round(hours * 60)), h = Math.floor(m / 60), r = m % 60;
  return [h ? h + " h" : "", r || !h ? r + " min" : ""].join(" ").trim();
}

export function gpuWords(gpus) {
  return gpus === 0 ? "no GPU" : gpus + " GPU" + (gpus > 1 ? "s" : "");
}

// shares of one GPU (Slurm's gres/shard): the hub's words (spawner/hub/request/resources.py, share_words)
export function shareWords(shards, perGpu) {
  const whole = perGpu || shards;
  if (2 * shards === whole) { return "half a GPU"; }
  const names = {3: "third", 4: "quarter", 8: "eighth"};
  const name = names[whole];
  if (name) { return shards === 1 ? ("aeiou".includes(name[0]) ? "an " : "a ") + name + " of a GPU" : shards + " " + name + "s of a GPU"; }
  return shards + "/" + whole + " of a GPU";
}

// the line under the form: '2 GPUs (A100) · 16 cores · 96 GB RAM · 8 h on sxm2, charged to nlp, QOS short';
// `shape` is the hub's one rule for that many GPUs (form.py's limits.shapes)
export function summaryLine(o) {
  const shape = o.shape || {cores: "?", gb: "?"};
  let g = o.shards > 0 ? shareWords(o.shards, o.perGpu) : gpuWords(o.gpus);
  if (o.gpus > 0 && o.typeLabel) { g += " (" + o.typeLabel + ")"; }
  const charged = (o.account ? ", charged to " + o.account : "") + (o.qos ? ", QOS " + o.qos : "");
  return g + " \u00b7 " + shape.cores + " cores \u00b7 " + shape.gb + " GB RAM \u00b7 " + duration(o.hours) +
    " on " + o.partition + charged;
}

// the query of /estimate and /alternatives: an account's or a QOS's limits and priority change when a job may
// start, so each is part of the question
export function estimateQuery(o) {
  const parts = [["partition", o.partition], ["gpus", o.gpus], ["hours", o.hours]];
  if (o.shards && o.shards !== "0") { parts.push(["shards", o.shards]); }
  if (o.gpuType) { parts.push(["gpu_type", o.gpuType]); }
  if (o.account) { parts.push(["account", o.account]); }
  if (o.qos) { parts.push(["qos", o.qos]); }
  return parts.map(([k, v]) => k + "=" + encodeURIComponent(v)).join("&");
}

// a GPU type in its select: 'A100: 3 of 8 free, largest block 2'
export function typeOptionText(t) {
  const memory = t.memory_gb ? " (" + t.memory_gb + " GB GPU memory)" : "";  // the admin's (slurm.gpu_memory)
  return t.label + memory + ": " + t.gpus_free + " of " + t.gpus_total + " free, largest block " + t.largest_block;
}

// the GPU counts a partition offers, and which stays chosen ('1' by default, never above its most)
export function gpuChoices(max, checked) {
  const chosen = Math.min(parseInt(checked || "1", 10), max);
  return {counts: Array.from({length: max + 1}, (_, n) => n), chosen};
}

// an alternative's start, in words
export function startWords(a) {
  if (a.starts_now) { return "can start now"; }
  return a.start ? "Slurm expects " + a.start.replace("T", " ") : "no estimate from Slurm";
}

// the account a session is charged to: the one chosen, else the admin's, else the user's default
export function chargedAccount(chosen, siteAccount, userDefault) {
  return chosen || siteAccount || userDefault;
}

// the accounts' select: the first is the user's default, sent as none so that Slurm charges it
export function accountOptions(accounts) {
  return accounts.map((name, i) => ({value: i === 0 ? "" : name, text: i === 0 ? name + " (your default)" : name}));
}

// what the session may use of the charged account, read from Slurm (sshare)
export function costLine(gpus, hours, account, allocation) {
  const a = allocation || {};
  let words = gpus ? "Up to " + +(gpus * hours).toFixed(2) + " GPU-hours of " + account : "No GPU-hours of " + account;
  if (a.gpu_hours !== null && a.gpu_hours !== undefined) {
    words += "; " + a.gpu_hours_left + " of its " + a.gpu_hours + " GPU-hours left";
    if (gpus && a.gpu_hours_left <= 0) { words += ": used up, choose another account or 0 GPUs"; }
  }
  if (a.fairshare !== null && a.fairshare !== undefined) { words += "; your fairshare there " + a.fairshare.toFixed(2); }
  return words + ".";
}

// a QOS in its select, with its longest session; one the charged account does not allow is disabled
export function qosOption(label, q, account) {
  const allowed = q.accounts.indexOf(account) >= 0;
  return {
    text: label + (q.max_hours ? " (at most " + q.max_hours + " h)" : "") +
      (allowed ? "" : ": not allowed for the account " + account),
    disabled: !allowed,
  };
}

// The form's element a refusal is about, by the field its words begin with (the hub's refusals say
// "gpus: ..." after JupyterHub's "Error: "): its id, "" when the words name no field of the form.
export const FIELD_IDS = {
  partition: "dsportal-partition", gpu_type: "dsportal-gpu-type", gpus: "dsportal-gpus", shards: "dsportal-shards",
  account: "dsportal-account", qos: "dsportal-qos", hours: "dsportal-hours",
};
export function errorField(message) {
  const found = /^\s*(?:Error:\s*)?([a-z_]+):/.exec(message || "");
  return found && Object.hasOwn(FIELD_IDS, found[1]) ? FIELD_IDS[found[1]] : "";
}

// --- what a refused start keeps (the form's answers, put back where the hub refused them) ---

export const KEPT_KEY = "dsportal-form-answers";  // sessionStorage: this tab's last submitted answers
export const KEPT_MS = 60000;  // how long they are the answers of the page that follows their submission
const KEPT_FIELDS = ["partition", "gpu_type", "gpus", "shards", "account", "qos", "hours"];

// The answers of a form submitted to the page `where` at `at` (ms), as kept until the page after it (pure):
// each field's value as text.
export function keptAnswers(values, where, at) {
  const answers = {};
  for (const name of KEPT_FIELDS) {
    if (values[name] !== undefined && values[name] !== null) { answers[name] = String(values[name]); }
  }
  return JSON.stringify({where, at, answers});
}

// The answers to put back (pure): those kept, where this page (`where`, at `now`) shows a refusal of that very
// submission (JupyterHub's form again, with its defaults); null where it shows none, or what is kept is older,
// of another page's form (a home page's preset posts without this script) or not this form's.
export function answersToRestore(kept, refused, where, now) {
  if (!refused || !kept) { return null; }
  let found;
  try { found = JSON.parse(kept); } catch (e) { return null; }
  if (!found || typeof found !== "object" || found.where !== where || typeof found.at !== "number" ||
      !(now - found.at >= 0 && now - found.at <= KEPT_MS) || !found.answers || typeof found.answers !== "object") {
    return null;
  }
  const answers = {};
  for (const name of KEPT_FIELDS) {
    const value = found.answers[name];
    if (typeof value === "string" && value.length <= 100) { answers[name] = value; }
  }
  return Object.keys(answers).length ? answers : null;
}
