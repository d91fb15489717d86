// The names the portal gives JupyterHub's admin page's expand buttons (templates/static/admin.js), with node's
// own test runner: `node --test tests/js` (tests/unit/test_home_script.py runs it with the suite).

import assert from "node:assert/strict";
import {test} from "node:test";

import {expandName} from "../../templates/static/admin.js";

test("a row's expand button is named after its user, and its server where it is a named one", () => {
  assert.equal(expandName("alice", ""), "Details of alice");
  assert.equal(expandName("alice", "big"), "Details of alice's server big");
});
