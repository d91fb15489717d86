// The session form's rules (templates/static/formrules.js), with node's own test runner: `node --test tests/js`
// (tests/unit/test_home_script.py runs it with the suite).

import assert from "node:assert/strict";
import {readFileSync} from "node:fs";
import {describe, test} from "node:test";

import * as rules from "../../templates/static/formrules.js";

// the hub's words for a length (spawner/hub/request/resources.py, duration_words) are held to the same table
const DURATIONS = JSON.parse(readFileSync(new URL("../data/durations.json", import.meta.url), "utf8"));
// and its words for shares of a GPU (share_words) to this one
const SHARES = JSON.parse(readFileSync(new URL("../data/shares.json", import.meta.url), "utf8"));

describe("words", () => {
  test("shares of a GPU, in the hub's words", () => {
    for (const [shards, perGpu, words] of SHARES) { assert.equal(rules.shareWords(shards, perGpu), words); }
  });
  test("the summary line of a share: its words and the share's own cores and memory", () => {
    assert.equal(rules.summaryLine({gpus: 0, shards: 1, perGpu: 4, hours: 8, shape: {cores: 2, gb: 12},
                                    partition: "sxm2", typeLabel: "A100", account: "", qos: ""}),
                 "a quarter of a GPU \u00b7 2 cores \u00b7 12 GB RAM \u00b7 8 h on sxm2");
    assert.equal(rules.estimateQuery({partition: "sxm2", gpus: "0", shards: "2", hours: "8"}),
                 "partition=sxm2&gpus=0&hours=8&shards=2");
    assert.equal(rules.estimateQuery({partition: "sxm2", gpus: "1", shards: "0", hours: "8"}),
                 "partition=sxm2&gpus=1&hours=8");
  });
  test("a session's length as Slurm counts it, in the hub's words", () => {
    for (const [minutes, words] of DURATIONS) { assert.equal(rules.duration(minutes / 60), words, String(minutes)); }
    assert.equal(rules.duration(0.001), "1 min");  // Slurm's least
    assert.equal(rules.duration(NaN), "? h");  // the field is empty or not a number
  });
  test("the summary line, with the type, account and QOS where chosen", () => {
    const shape = {cores: 16, gb: 96};
    assert.equal(rules.summaryLine({gpus: 2, hours: 8, shape, partition: "sxm2", typeLabel: "A100", account: "nlp",
                                    qos: "short"}),
                 "2 GPUs (A100) \u00b7 16 cores \u00b7 96 GB RAM \u00b7 8 h on sxm2, charged to nlp, QOS short");
    assert.equal(rules.summaryLine({gpus: 0, hours: 1.5, shape: {cores: 4, gb: 16}, partition: "cpu",
                                    typeLabel: "A100"}),
                 "no GPU \u00b7 4 cores \u00b7 16 GB RAM \u00b7 1 h 30 min on cpu");  // no type without GPUs
    assert.equal(rules.summaryLine({gpus: 9, hours: 1, partition: "x"}),
                 "9 GPUs \u00b7 ? cores \u00b7 ? GB RAM \u00b7 1 h on x");  // a count the hub computed nothing for
  });
  test("a GPU type, an alternative's start", () => {
    assert.equal(rules.typeOptionText({label: "A100", gpus_free: 3, gpus_total: 8, largest_block: 2}),
                 "A100: 3 of 8 free, largest block 2");
    // a MIG slice with its memory from the admin file (slurm.gpu_memory), as the hub's words say it
    assert.equal(rules.typeOptionText({label: "A100 slice", memory_gb: 10, gpus_free: 5, gpus_total: 7, largest_block: 5}),
                 "A100 slice (10 GB GPU memory): 5 of 7 free, largest block 5");
    assert.equal(rules.startWords({starts_now: true}), "can start now");
    assert.equal(rules.startWords({start: "2026-11-29T10:00:00"}), "Slurm expects 2026-11-29 10:00:00");
    assert.equal(rules.startWords({start: null}), "no estimate from Slurm");
  });
});

describe("what the form asks the hub", () => {
  test("the estimate's query, encoded, with what was chosen only", () => {
    assert.equal(rules.estimateQuery({partition: "sxm2", gpus: "1", hours: "8", gpuType: "", account: "", qos: ""}),
                 "partition=sxm2&gpus=1&hours=8");
    assert.equal(rules.estimateQuery({partition: "a&b", gpus: "2", hours: "0.25", gpuType: "a100", account: "n l",
                                      qos: "short"}),
                 "partition=a%26b&gpus=2&hours=0.25&gpu_type=a100&account=n%20l&qos=short");
  });
});

describe("choices", () => {
  test("the GPU counts of a partition, the chosen one kept below its most", () => {
    assert.deepEqual(rules.gpuChoices(4, "2"), {counts: [0, 1, 2, 3, 4], chosen: 2});
    assert.deepEqual(rules.gpuChoices(0, "2"), {counts: [0], chosen: 0});
    assert.deepEqual(rules.gpuChoices(2, undefined), {counts: [0, 1, 2], chosen: 1});
  });
  test("accounts: the default first, sent as none", () => {
    assert.deepEqual(rules.accountOptions(["ds", "nlp"]),
                     [{value: "", text: "ds (your default)"}, {value: "nlp", text: "nlp"}]);
    assert.equal(rules.chargedAccount("", "site", "ds"), "site");
    assert.equal(rules.chargedAccount("nlp", "site", "ds"), "nlp");
    assert.equal(rules.chargedAccount("", "", "ds"), "ds");
  });
  test("a QOS with its longest session, disabled where the account may not use it", () => {
    const q = {name: "short", max_hours: 2, accounts: ["ds"]};
    assert.deepEqual(rules.qosOption("Short", q, "ds"), {text: "Short (at most 2 h)", disabled: false});
    assert.deepEqual(rules.qosOption("Short", q, "nlp"),
                     {text: "Short (at most 2 h): not allowed for the account nlp", disabled: true});
  });
  test("the cost line: GPU-hours, what is left, the fairshare", () => {
    assert.equal(rules.costLine(0, 8, "ds", undefined), "No GPU-hours of ds.");
    assert.equal(rules.costLine(2, 1.25, "ds", {gpu_hours: 100, gpu_hours_left: 40, fairshare: 0.5}),
                 "Up to 2.5 GPU-hours of ds; 40 of its 100 GPU-hours left; your fairshare there 0.50.");
    assert.equal(rules.costLine(1, 1, "ds", {gpu_hours: 10, gpu_hours_left: 0, fairshare: null}),
                 "Up to 1 GPU-hours of ds; 0 of its 10 GPU-hours left: used up, choose another account or 0 GPUs.");
  });
});

describe("a refused start tied to its field", () => {
  test("the field the hub's words begin with, after JupyterHub's 'Error: '", () => {
    assert.equal(rules.errorField("Error: gpus: 9 is out of range; ask for 0 to 4."), "dsportal-gpus");
    assert.equal(rules.errorField("Error: hours: 99 is more than 24 h; ask for 24 or fewer."), "dsportal-hours");
    assert.equal(rules.errorField("gpu_type: partition mig has no GPUs of type v100 to ask for."), "dsportal-gpu-type");
    assert.equal(rules.errorField("Error: shards: 3 share(s) of a GPU asked together with 1 whole GPU(s)."),
      "dsportal-shards");
  });

  test("none where the words name no field of the form", () => {
    assert.equal(rules.errorField("Error: Slurm refused the job: QOSMaxGRESPerUser."), "");
    assert.equal(rules.errorField("Error: constructor: x"), "");
    assert.equal(rules.errorField(""), "");
    assert.equal(rules.errorField(undefined), "");
  });
});

describe("a refused start keeps the answers", () => {
  const at = 1_800_000_000_000;
  test("the submitted answers are kept as text, the form's fields only, with where and when they were sent", () => {
    const kept = rules.keptAnswers({partition: "sxm2", gpus: "2", hours: "99", _xsrf: "secret", gpu_type: ""},
                                   "/hub/spawn/bob", at);
    assert.deepEqual(JSON.parse(kept),
                     {where: "/hub/spawn/bob", at, answers: {partition: "sxm2", gpus: "2", hours: "99", gpu_type: ""}});
  });
  test("they are put back where the page that follows shows a refusal, and only there", () => {
    const kept = rules.keptAnswers({partition: "debug", gpus: "1", hours: "99", account: "nlp", qos: "short"},
                                   "/hub/spawn/bob", at);
    assert.deepEqual(rules.answersToRestore(kept, true, "/hub/spawn/bob", at + 2000),
                     {partition: "debug", gpus: "1", hours: "99", account: "nlp", qos: "short"});
    assert.equal(rules.answersToRestore(kept, false, "/hub/spawn/bob", at + 2000), null);  // a form shown afresh
    assert.equal(rules.answersToRestore(null, true, "/hub/spawn/bob", at + 2000), null);
    // a refusal of another page's submission (a preset of the home page, minutes later): not these answers
    assert.equal(rules.answersToRestore(kept, true, "/hub/spawn/bob", at + rules.KEPT_MS + 1), null);
    assert.equal(rules.answersToRestore(kept, true, "/hub/spawn/bob/gpu", at + 2000), null);
  });
  test("what is kept but not the form's answers is put back as nothing", () => {
    const of = (answers) => JSON.stringify({where: "/hub/spawn", at, answers});
    for (const kept of ["{", "[]", "null", "3", of({other: "x"}), of({hours: 99}), of({hours: "9".repeat(101)}),
                        JSON.stringify({where: "/hub/spawn", at: "now", answers: {hours: "2"}})]) {
      assert.equal(rules.answersToRestore(kept, true, "/hub/spawn", at), null, kept);
    }
  });
});
