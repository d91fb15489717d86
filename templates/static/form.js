// The session form's script (templates/options_form.html, inside JupyterHub's spawn page): the DOM side.  A module
// the form loads with its version as ?v= (spawner/hub/base/pagescripts.py); what its lines say and what it asks
// the hub are formrules.js's pure functions (tests/js/form.test.mjs).  The form's limits (what each GPU count
// brings, each partition's most GPUs, the admin's account) are the fieldset's data-limits, computed by the hub.

const {
  KEPT_KEY, accountOptions, answersToRestore, chargedAccount, costLine, errorField, estimateQuery, gpuChoices,
  keptAnswers, qosOption, startWords, summaryLine, typeOptionText,
} = await import(new URL("formrules.js" + new URL(import.meta.url).search, import.meta.url).href);

const fieldset = document.getElementById("dsportal-options");
const limits = JSON.parse(fieldset.dataset.limits);
const form = document.getElementById("dsportal-partition").form;
const byId = (id) => document.getElementById(id);

function checkedGpus() { return (form.querySelector('input[name="gpus"]:checked') || {}).value || "0"; }
function checkedShards() {  // "0" where the partition has no shares of a GPU (the box hidden, its inputs disabled)
  const box = byId("dsportal-shards");
  return (box && !box.hidden && (form.querySelector('input[name="shards"]:checked') || {}).value) || "0";
}

function rebuildGpus() {
  const box = byId("dsportal-gpus");
  const {counts, chosen} = gpuChoices(limits.max_gpus[form.partition.value],
                                      (form.querySelector('input[name="gpus"]:checked') || {}).value);
  box.querySelectorAll(".form-check").forEach((el) => el.remove());
  for (const n of counts) {
    const wrap = document.createElement("div");
    wrap.className = "form-check form-check-inline";
    const input = document.createElement("input");
    input.className = "form-check-input"; input.type = "radio"; input.name = "gpus";
    input.id = "dsportal-gpus-" + n; input.value = String(n); input.checked = n === chosen;
    const label = document.createElement("label");
    label.className = "form-check-label"; label.htmlFor = input.id; label.textContent = String(n);
    wrap.appendChild(input); wrap.appendChild(label); box.appendChild(wrap);
  }
}

function summary() {
  const gpus = parseInt(checkedGpus(), 10), shards = parseInt(checkedShards(), 10);
  const typed = form.gpu_type.selectedOptions[0];
  byId("dsportal-summary").textContent = summaryLine({
    gpus, shards, perGpu: limits.per_gpu, hours: parseFloat(form.hours.value), partition: form.partition.value,
    shape: shards ? limits.shard_shapes[String(shards)] : limits.shapes[String(gpus)],
    typeLabel: form.gpu_type.value && typed ? typed.dataset.label || "" : "",
    account: form.account.value, qos: form.qos ? form.qos.value : "",
  });
}

// What is free and when this shape would start: the hub's shared, cached answers
// (GET /hub/api/dsportal/partitions and /estimate), asked at most once per pause in typing.
const api = ((window.jhdata && window.jhdata.base_url) || "/hub/") + "api/dsportal/";
const free = {};
function getJSON(path) {
  // JupyterHub refuses a cookie-authenticated API call without its XSRF token, GET included
  const xsrf = (window.jhdata && window.jhdata.xsrf_token) || "";
  return fetch(api + path, {credentials: "same-origin", headers: {"Accept": "application/json", "X-XSRFToken": xsrf}})
    .then((r) => r.json().then((body) => (r.ok ? body : Promise.reject(body))));
}

function showFree() {
  const p = free[form.partition.value];
  byId("dsportal-free").textContent = p ? p.summary : "";
  showTypes(p ? p.types : []);
  showShares(p);
}

function showShares(p) {  // shares of a GPU only where the partition's nodes have Slurm's gres/shard
  const box = byId("dsportal-shards");
  if (!box) { return; }
  const offered = Boolean(p && p.shards_total);
  box.hidden = !offered;
  box.querySelectorAll("input").forEach((input) => { input.disabled = !offered; });
  if (!offered) { byId("dsportal-shards-0").checked = true; return; }
  byId("dsportal-shards-gpu").textContent = "(" + (p.shard_label || "its GPU") + ": " + p.shards_free + " of " +
    p.shards_total + " shares free" + (p.largest_shards ? "" : ", none to start now") + ")";
}

function oneOrTheOther(changed) {  // whole GPUs or a share of one, never both
  if (changed.name === "shards" && changed.value !== "0") { byId("dsportal-gpus-0").checked = true; }
  if (changed.name === "gpus" && changed.value !== "0" && byId("dsportal-shards-0")) {
    byId("dsportal-shards-0").checked = true;
  }
}

function showTypes(types) {  // a choice only where the partition has GPUs of several types (Slurm's gres.conf)
  const select = form.gpu_type, kept = select.value;
  select.querySelectorAll("option[value]:not([value=''])").forEach((el) => el.remove());
  for (const t of types) {
    const option = document.createElement("option");
    option.value = t.gpu_type; option.dataset.label = t.label;
    option.textContent = typeOptionText(t);
    option.selected = t.gpu_type === kept;
    select.appendChild(option);
  }
  if (types.length < 2) { select.value = ""; }
  byId("dsportal-type-box").hidden = types.length < 2;
  typeForGpus();
}

function typeForGpus() {  // no type with 0 GPUs: a disabled select is not sent
  form.gpu_type.disabled = checkedGpus() === "0";
}

let timer = null, asked = 0;  // asked: the newest question; an answer to an older one is dropped
function estimate() {
  clearTimeout(timer);
  timer = setTimeout(() => {
    const line = byId("dsportal-when"), seq = ++asked;
    // hours the field itself refuses (above its max, say) are the browser's to explain: no question to the hub
    if (!form.hours.validity.valid) { line.textContent = form.hours.validationMessage; showAlternatives([]); return; }
    const query = estimateQuery({
      partition: form.partition.value, gpus: checkedGpus(), shards: checkedShards(), hours: form.hours.value,
      gpuType: form.gpu_type.disabled ? "" : form.gpu_type.value,
      account: form.account.value, qos: form.qos ? form.qos.value : "",
    });
    getJSON("estimate?" + query).then((a) => {
      if (seq !== asked) { return; }
      line.textContent = a.message;
      if (a.starts_now) { showAlternatives([]); return; }
      getJSON("alternatives?" + query)
        .then((d) => { if (seq === asked) { showAlternatives(d.alternatives); } })
        .catch(() => { if (seq === asked) { showAlternatives([]); } });
    }).catch((e) => { if (seq === asked) { line.textContent = (e && e.message) || ""; showAlternatives([]); } });
  }, 500);
}

function showAlternatives(found) {  // each with a button that puts it in the form; DOM text only, no HTML
  const box = byId("dsportal-alternatives"), list = box.querySelector("ul");
  list.replaceChildren();
  for (const a of found.filter((f) => !f.asked)) {
    const item = document.createElement("li"), use = document.createElement("button");
    item.className = "d-flex align-items-center gap-2 mb-1";
    use.type = "button"; use.className = "btn btn-sm btn-outline-secondary"; use.textContent = "Use this";
    use.addEventListener("click", () => useOptions(a.options));
    const words = document.createElement("span");
    words.textContent = a.difference + ": " + startWords(a);
    item.appendChild(use); item.appendChild(words); list.appendChild(item);
  }
  box.hidden = list.children.length === 0;
}

function useOptions(o) {
  form.partition.value = o.partition; rebuildGpus(); showFree();
  const radio = form.querySelector('input[name="gpus"][value="' + (parseInt(o.gpus, 10) || 0) + '"]');
  if (radio) { radio.checked = true; }
  const share = byId("dsportal-shards-" + (parseInt(o.shards, 10) || 0));
  if (share) { share.checked = true; }
  typeForGpus();
  form.gpu_type.value = o.gpu_type || "";
  form.hours.value = o.hours;
  summary(); cost(); estimate();
}

let qos = null, allocations = null;  // the user's QOS offered and accounts' allocations (GET accounts)

function account() { return chargedAccount(form.account.value, limits.site_account, qos["default"]); }

function cost() {  // what the session may use of the charged account, read from Slurm (sshare)
  if (!allocations || !qos) { return; }
  const charged = account();
  const gpus = parseInt(checkedGpus(), 10) + parseInt(checkedShards(), 10) / (limits.per_gpu || 1);
  byId("dsportal-cost").textContent =
    costLine(gpus, parseFloat(form.hours.value) || 0, charged, allocations[charged]);
}

function showQos() {  // each QOS with its longest session; one the charged account does not allow, disabled
  if (!form.qos || !qos) { return; }
  const charged = account();
  for (const q of qos.offered) {
    const option = Array.prototype.find.call(form.qos.options, (o) => o.value === q.name);
    if (!option) { continue; }
    const shown = qosOption(option.dataset.label, q, charged);
    option.textContent = shown.text;
    option.disabled = shown.disabled;
  }
  if (form.qos.selectedOptions[0] && form.qos.selectedOptions[0].disabled) { form.qos.value = ""; }
}

getJSON("partitions").then((d) => {
  d.partitions.forEach((p) => { free[p.partition] = p; });
  showFree();
  if (restored && restored.gpu_type) {  // its options come with the partitions' answer
    form.gpu_type.value = restored.gpu_type;
    typeForGpus(); estimate();
  }
  summary();
}).catch((e) => { byId("dsportal-free").textContent = (e && e.message) || ""; });

// A refused start shows JupyterHub's form again, with its defaults: the answers submitted are put back (kept in
// this tab until the next page), so nothing the user chose is lost; the field the refusal is about has the focus.
function storage() { try { return window.sessionStorage; } catch (e) { return null; } }  // blocked: nothing kept
const refused = document.querySelector(".spawn-error-msg") !== null;
const restored = answersToRestore(storage() && storage().getItem(KEPT_KEY), refused, location.pathname, Date.now());
if (storage()) { storage().removeItem(KEPT_KEY); }
form.addEventListener("submit", () => {
  const values = Object.fromEntries(new FormData(form).entries());
  const where = new URL(form.action || location.href, location.href).pathname;
  if (storage()) {
    try { storage().setItem(KEPT_KEY, keptAnswers(values, where, Date.now())); } catch (e) { /* full: not kept */ }
  }
});
if (restored) {
  useOptions({
    partition: restored.partition || form.partition.value, gpus: restored.gpus || checkedGpus(),
    shards: restored.shards || "0", gpu_type: restored.gpu_type || "", hours: restored.hours || form.hours.value,
  });
  if (form.qos && restored.qos !== undefined) { form.qos.value = restored.qos; }
}

getJSON("accounts").then((d) => {  // a choice only for a user in several Slurm accounts
  for (const {value, text} of accountOptions(d.accounts)) {
    const option = document.createElement("option");
    option.value = value; option.textContent = text;
    form.account.appendChild(option);
  }
  if (restored && restored.account !== undefined) { form.account.value = restored.account; }
  byId("dsportal-account-box").hidden = d.accounts.length < 2;
  qos = {default: d["default"], offered: d.qos || []};
  allocations = d.allocations || {};
  showQos();
  cost();
}).catch(() => { /* no choice shown: the session charges the default account */ });

// A refused start (JupyterHub's error line above the form): tied to the field it is about, which takes the focus,
// so that a screen reader reads the refusal with the field and the keyboard is where the change is to be made.
function tieError() {
  const error = document.querySelector(".spawn-error-msg");
  if (!error) { return; }
  error.id = "dsportal-form-error";
  error.setAttribute("role", "alert");
  const target = byId(errorField(error.textContent));
  if (!target || target.hidden || target.closest("[hidden]")) { return; }
  const inputs = target.matches("fieldset") ? Array.from(target.querySelectorAll("input")) : [target];
  for (const input of inputs) {
    input.setAttribute("aria-invalid", "true");
    const described = (input.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
    input.setAttribute("aria-describedby", ["dsportal-form-error", ...described].join(" "));
  }
  (inputs.find((i) => i.checked) || inputs[0]).focus();
}

form.partition.addEventListener("change", () => { rebuildGpus(); summary(); showFree(); });
form.addEventListener("change", (e) => {
  oneOrTheOther(e.target); typeForGpus(); showQos(); summary(); cost(); estimate();
});
form.hours.addEventListener("input", () => { summary(); cost(); estimate(); });
summary();
estimate();
tieError();
