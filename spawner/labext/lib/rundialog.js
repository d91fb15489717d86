// DS Portal: "Run as a job…" — the dialog that submits a notebook or script as a Slurm batch job.
// The server (dsportal/jobs/form, POST dsportal/jobs) checks every value against the cluster's limits;
// this dialog only offers those limits as field bounds, and keeps what the user typed when it refuses.
import { Dialog, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { element } from './dom';
import { jobsApi } from './jobsapi';

const INTRO = {
  notebook:
    'The notebook runs top to bottom in a Slurm batch job of its own, apart from this session. ' +
    "The values below replace those of its cell tagged 'parameters'.",
  python: 'The script runs with Python in a Slurm batch job of its own, apart from this session.',
  shell: 'The script runs with bash in a Slurm batch job of its own, apart from this session.'
};

// --- pure: the form's answer and the fields' raw values -> the POST body ---------------------------

// papermill gives each default as the source text of its assignment ("'x'", "True", "[1, 2]"),
// so a str loses its quotes and a bool becomes a checkbox state; the rest is shown as written.
export function initialValue(parameter) {
  const text = parameter.default === null || parameter.default === undefined ? '' : String(parameter.default);
  if (parameter.type === 'bool') {
    return text === 'True' || text === 'true';
  }
  if (parameter.type === 'str' && text.length >= 2 && /^(["']).*\1$/s.test(text)) {
    return text.slice(1, -1);
  }
  return text;
}

export function initialValues(form) {
  const parameters = {};
  for (const parameter of form.parameters || []) {
    parameters[parameter.name] = initialValue(parameter);
  }
  const defaults = form.defaults || {};
  return {
    partition: defaults.partition || '',
    nodes: String(defaults.nodes ?? 1),
    gpus: String(defaults.gpus ?? 0),
    hours: String(defaults.hours ?? 1),
    parameters
  };
}

function number(raw, label, whole) {
  const text = String(raw).trim();
  const value = Number(text);
  if (text === '' || !Number.isFinite(value) || (whole && !Number.isInteger(value))) {
    throw new Error(`${label} must be ${whole ? 'a whole number' : 'a number'}.`);
  }
  return value;
}

// A parameter's field -> its typed JSON value; anything but int/float/bool/str is JSON if it parses.
export function parameterValue(parameter, raw) {
  switch (parameter.type) {
    case 'bool':
      return Boolean(raw);
    case 'int':
      return number(raw, parameter.name, true);
    case 'float':
      return number(raw, parameter.name, false);
    case 'str':
      return String(raw);
    default:
      try {
        return JSON.parse(raw);
      } catch (e) {
        return String(raw);
      }
  }
}

// Only the parameters the user changed are sent: the others keep the notebook's own values, which
// papermill's source text ("{'a': 1}", "None") could not always carry over as JSON.
export function buildRequest(form, values) {
  const parameters = {};
  for (const parameter of form.parameters || []) {
    const raw = values.parameters[parameter.name];
    if (raw !== initialValue(parameter)) {
      parameters[parameter.name] = parameterValue(parameter, raw);
    }
  }
  return {
    path: form.path,
    partition: values.partition,
    nodes: number(values.nodes, 'Nodes', true),
    gpus: number(values.gpus, 'GPUs per node', true),
    hours: number(values.hours, 'Hours', false),
    parameters
  };
}

// --- the dialog's body -----------------------------------------------------------------------------

function input(name, type, value) {
  const node = element('input', type === 'checkbox' ? '' : 'jp-mod-styled');
  node.name = name;
  node.type = type;
  if (type === 'checkbox') {
    node.checked = Boolean(value);
  } else {
    node.value = value;
  }
  return node;
}

class RunForm extends Widget {
  constructor(form, values, error) {
    super();
    this.addClass('dsportal-run');
    this.form = form;
    this.hints = new Map(); // control -> { node, text }: the hint under each field
    if (error) {
      const alert = element('div', 'dsportal-run-error', error);
      alert.setAttribute('role', 'alert');
      this.node.append(alert);
    }
    this.node.append(element('p', 'dsportal-run-intro', INTRO[form.kind] || INTRO.python));
    this.addResources(values);
    this.addParameters(values.parameters);
    this.partitionChanged(false);
    // JupyterLab's dialog disables Submit while a field is out of its bounds; say which and why.
    this.node.addEventListener('input', () => this.showValidity());
  }

  showValidity() {
    for (const [control, hint] of this.hints) {
      const invalid = !control.validity.valid;
      hint.node.textContent = invalid ? control.validationMessage : hint.text;
      hint.node.classList.toggle('dsportal-run-invalid', invalid);
    }
  }

  // A labelled row: the label, the control, and a hint under it.
  row(label, control, hint) {
    const node = element('label', 'dsportal-run-field');
    const small = element('small', 'dsportal-run-hint');
    node.append(element('span', 'dsportal-run-label', label), control, small);
    this.hints.set(control, { node: small, text: '' });
    this.setHint(control, hint || '');
    return node;
  }

  setHint(control, text) {
    const hint = this.hints.get(control);
    hint.text = text;
    hint.node.textContent = text;
  }

  addResources(values) {
    const partitions = this.form.partitions || [];
    this.partition = element('select', 'jp-mod-styled');
    this.partition.name = 'partition';
    for (const p of partitions) {
      const option = element('option', '', p.display_name || p.name);
      option.value = p.name;
      this.partition.append(option);
    }
    if (!partitions.length) {
      this.partition.append(element('option', '', 'No partition is open to you'));
      this.partition.disabled = true;
    }
    this.partition.value = values.partition;
    if (!this.partition.value && partitions.length) {
      this.partition.value = partitions[0].name; // the default partition is not among those offered
    }
    this.partition.addEventListener('change', () => this.partitionChanged(true));
    // bounds and "required" let JupyterLab's dialog hold Submit back until the values fit
    this.nodes = input('nodes', 'number', values.nodes);
    Object.assign(this.nodes, { min: '1', step: '1', required: true });
    this.gpus = input('gpus', 'number', values.gpus);
    Object.assign(this.gpus, { min: '0', step: '1', required: true });
    this.hours = input('hours', 'number', values.hours);
    Object.assign(this.hours, { min: '0.25', step: '0.25', required: true });
    let hoursHint = 'the time limit, in steps of 0.25';
    if (this.form.max_hours) {
      this.hours.max = String(this.form.max_hours);
      hoursHint += `; at most ${this.form.max_hours} h`;
    }
    const fields = element('div', 'dsportal-run-resources');
    fields.append(this.row('Partition', this.partition), this.row('Nodes', this.nodes));
    fields.append(this.row('GPUs per node', this.gpus), this.row('Hours', this.hours, hoursHint));
    this.node.append(fields);
  }

  addParameters(values) {
    const parameters = this.form.parameters || [];
    if (this.form.kind !== 'notebook' || !parameters.length) {
      return;
    }
    const box = element('fieldset', 'dsportal-run-parameters');
    box.append(element('legend', '', 'Parameters'));
    this.parameterInputs = {};
    for (const parameter of parameters) {
      const control = this.parameterInput(parameter, values[parameter.name]);
      const type = parameter.type || 'unknown type';
      const hint = parameter.help ? `${parameter.help} (${type})` : type;
      control.title = hint;
      box.append(this.row(parameter.name, control, hint));
      this.parameterInputs[parameter.name] = control;
    }
    this.node.append(box);
  }

  parameterInput(parameter, value) {
    const name = `param-${parameter.name}`;
    if (parameter.type === 'bool') {
      return input(name, 'checkbox', value);
    }
    if (parameter.type === 'int' || parameter.type === 'float') {
      const control = input(name, 'number', value);
      control.step = parameter.type === 'int' ? '1' : 'any';
      control.required = true;
      return control;
    }
    const control = input(name, 'text', value);
    if (!['str', 'int', 'float', 'bool'].includes(parameter.type)) {
      control.placeholder = 'JSON, or plain text';
    }
    return control;
  }

  chosenPartition() {
    return (this.form.partitions || []).find(p => p.name === this.partition.value);
  }

  // The chosen partition bounds nodes and GPUs; a change of partition brings the values within them.
  partitionChanged(clamp) {
    const p = this.chosenPartition();
    if (!p) {
      return;
    }
    this.nodes.max = String(p.max_nodes);
    this.gpus.max = String(p.max_gpus);
    this.gpus.disabled = p.max_gpus === 0;
    const name = p.display_name || p.name;
    this.setHint(this.nodes, `at most ${p.max_nodes} on ${name}`);
    this.setHint(this.gpus, p.max_gpus ? `at most ${p.max_gpus} on ${name}` : `${name} has no GPUs`);
    if (clamp) {
      this.nodes.value = String(Math.min(Number(this.nodes.value) || 1, p.max_nodes));
      this.gpus.value = String(Math.min(Number(this.gpus.value) || 0, p.max_gpus));
      // the dialog checked the fields against the old bounds (the select's input event came first)
      this.nodes.dispatchEvent(new Event('input', { bubbles: true }));
    }
  }

  getValue() {
    const parameters = {};
    for (const [name, control] of Object.entries(this.parameterInputs || {})) {
      parameters[name] = control.type === 'checkbox' ? control.checked : control.value;
    }
    return {
      partition: this.partition.value,
      nodes: this.nodes.value,
      gpus: this.gpus.value,
      hours: this.hours.value,
      parameters
    };
  }
}

function basename(path) {
  return path.split('/').pop();
}

// Shows the dialog until the job is submitted or the user cancels; a refusal (the server's, or a
// field that is not a number) re-opens it with the sentence on top and every value kept.
// Resolves to the submitted Job, or null.
export async function runAsJob(path) {
  const { ok, body: form } = await jobsApi.form(path);
  if (!ok) {
    await showErrorMessage(`${basename(path)} cannot run as a job`, form.message);
    return null;
  }
  let values = initialValues(form);
  let error = '';
  for (;;) {
    const result = await showDialog({
      title: `Run ${basename(path)} as a job`,
      body: new RunForm(form, values, error),
      buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Submit' })],
      focusNodeSelector: 'select[name="partition"]'
    });
    if (!result.button.accept) {
      return null;
    }
    values = result.value;
    let request;
    try {
      request = buildRequest(form, values);
    } catch (e) {
      error = e.message;
      continue;
    }
    const answer = await jobsApi.submit(request);
    if (answer.ok) {
      return answer.body.job;
    }
    error = answer.body.message;
  }
}
