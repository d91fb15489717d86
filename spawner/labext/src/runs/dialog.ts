// DS Portal: "Run as a job…" — the dialog that submits a notebook or script as a Slurm batch job.
// Its fields' values, bounds and hints are runs/parameters.ts; this file builds them on the page and
// keeps what the user typed when the server refuses. A sweep's controls are runs/sweepform.ts.
import { Dialog, showDialog, showErrorMessage } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { element } from '../common/dom';
import { runsApi } from './api';
import {
  accountChoices,
  buildRequest,
  clampToPartition,
  firstPartition,
  hoursField,
  initialValues,
  parameterField,
  parameterHint,
  partitionFields,
  partitionLabel,
  qosChoices,
  shareChoices,
  typeChoices
} from './parameters';
import { buildSweepRequest, sweepsOffered } from './sweep';
import { SweepSection } from './sweepform';
import {
  FieldValue,
  IChoice,
  IJob,
  IParameter,
  IPartition,
  IRunForm,
  IRunRequest,
  IRunValues
} from './types';

const INTRO: Record<string, string> = {
  notebook:
    'The notebook runs top to bottom in a Slurm batch job of its own, apart from this session. ' +
    "The values below replace those of its cell tagged 'parameters'.",
  python:
    'The script runs with Python in a Slurm batch job of its own, apart from this session.',
  shell:
    'The script runs with bash in a Slurm batch job of its own, apart from this session.'
};

function fillSelect(
  select: HTMLSelectElement,
  choices: IChoice[],
  value: string
): void {
  select.replaceChildren();
  for (const choice of choices) {
    const option = element('option', '', choice.label);
    option.value = choice.name;
    select.append(option);
  }
  select.value = choices.some(c => c.name === value) ? value : '';
}

function input(
  name: string,
  type: string,
  value: FieldValue
): HTMLInputElement {
  const node = element('input', type === 'checkbox' ? '' : 'jp-mod-styled');
  node.name = name;
  node.type = type;
  if (type === 'checkbox') {
    node.checked = Boolean(value);
  } else {
    node.value = String(value);
  }
  return node;
}

class RunForm extends Widget implements Dialog.IBodyWidget<IRunValues> {
  constructor(
    private readonly form: IRunForm,
    values: IRunValues,
    error: string
  ) {
    super();
    this.addClass('dsportal-run');
    if (error) {
      const alert = element('div', 'dsportal-run-error', error);
      alert.setAttribute('role', 'alert');
      this.node.append(alert);
    }
    this.node.append(
      element('p', 'dsportal-run-intro', INTRO[form.kind] || INTRO.python)
    );
    this.partition = element('select', 'jp-mod-styled');
    this.nodes = input('nodes', 'number', values.nodes);
    this.gpus = input('gpus', 'number', values.gpus);
    this.hours = input('hours', 'number', values.hours);
    this.gpuType = element('select', 'jp-mod-styled');
    this.shards = element('select', 'jp-mod-styled');
    this.account = element('select', 'jp-mod-styled');
    this.qos = element('select', 'jp-mod-styled');
    this.chosenType = values.gpu_type;
    this.chosenShards = values.shards ?? '';
    this.sweep = sweepsOffered(form)
      ? new SweepSection(form, values.sweep)
      : null;
    this.addResources(values);
    this.addParameters(values.parameters);
    this.partitionChanged(false);
    // JupyterLab's dialog disables Submit while a field is out of its bounds; say which and why.
    this.node.addEventListener('input', () => {
      this.sweep?.refresh(this.getValue()); // first: it marks the lists it cannot read
      this.showValidity();
      this.gpuType.disabled = Number(this.gpus.value) === 0; // no type without a GPU
    });
    this.gpuType.disabled = Number(this.gpus.value) === 0;
    this.sharesChanged();
    this.sweep?.refresh(this.getValue());
  }

  getValue(): IRunValues {
    const parameters: Record<string, FieldValue> = {};
    for (const [name, control] of this.parameterInputs) {
      parameters[name] =
        control.type === 'checkbox' ? control.checked : control.value;
    }
    return {
      partition: this.partition.value,
      nodes: this.nodes.value,
      gpus: this.gpus.value,
      hours: this.hours.value,
      gpu_type: this.gpuType.value,
      shards: this.shards.value,
      account: this.account.value,
      qos: this.qos.value,
      parameters,
      sweep: this.sweep ? this.sweep.getValue() : null
    };
  }

  private showValidity(): void {
    for (const [control, hint] of this.hints) {
      const invalid = !control.validity.valid;
      hint.node.textContent = invalid ? control.validationMessage : hint.text;
      hint.node.classList.toggle('dsportal-run-invalid', invalid);
    }
  }

  // A labelled row: the label, the control, and a hint under it.
  private row(
    label: string,
    control: HTMLInputElement | HTMLSelectElement,
    hint = ''
  ): HTMLLabelElement {
    const node = element('label', 'dsportal-run-field');
    const small = element('small', 'dsportal-run-hint');
    node.append(element('span', 'dsportal-run-label', label), control, small);
    this.hints.set(control, { node: small, text: '' });
    this.setHint(control, hint);
    return node;
  }

  private setHint(
    control: HTMLInputElement | HTMLSelectElement,
    text: string
  ): void {
    const hint = this.hints.get(control);
    if (hint) {
      hint.text = text;
      hint.node.textContent = text;
    }
  }

  private addResources(values: IRunValues): void {
    const partitions = this.form.partitions || [];
    this.partition.name = 'partition';
    for (const p of partitions) {
      const option = element('option', '', partitionLabel(p));
      option.value = p.name;
      this.partition.append(option);
    }
    if (!partitions.length) {
      this.partition.append(
        element('option', '', 'No partition is open to you')
      );
      this.partition.disabled = true;
    }
    this.partition.value = firstPartition(this.form, values);
    this.partition.addEventListener('change', () =>
      this.partitionChanged(true)
    );
    // bounds and "required" let JupyterLab's dialog hold Submit back until the values fit
    Object.assign(this.nodes, { min: '1', step: '1', required: true });
    Object.assign(this.gpus, { min: '0', step: '1', required: true });
    Object.assign(this.hours, { min: '0.25', step: '0.25', required: true });
    const hours = hoursField(this.form);
    if (hours.max) {
      this.hours.max = hours.max;
    }
    const fields = element('div', 'dsportal-run-resources');
    fields.append(
      this.row('Partition', this.partition),
      this.row('Nodes', this.nodes)
    );
    fields.append(
      this.row('GPUs per node', this.gpus),
      this.row('Hours', this.hours, hours.hint)
    );
    // GPU type, account and QOS: shown only where there is a choice (the partition's types from Slurm, the
    // user's accounts from Slurm's associations, the QOS the admin offers)
    this.gpuType.name = 'gpu_type';
    this.gpuType.addEventListener('change', () => {
      this.chosenType = this.gpuType.value;
    });
    this.typeRow = this.row('GPU type', this.gpuType);
    fields.append(this.typeRow);
    // a share of one GPU instead of whole GPUs, where the partition's GPUs are shared (Slurm's gres/shard)
    this.shards.name = 'shards';
    this.shards.addEventListener('change', () => {
      this.chosenShards = this.shards.value;
      this.sharesChanged();
    });
    this.sharesRow = this.row(
      'Share of a GPU',
      this.shards,
      "one node; shares divide neither the GPU's memory nor its compute"
    );
    fields.append(this.sharesRow);
    this.account.name = 'account';
    const accounts = accountChoices(this.form);
    fillSelect(this.account, accounts, values.account);
    if (accounts.length) {
      fields.append(
        this.row('Slurm account', this.account, 'the project charged')
      );
    }
    this.qos.name = 'qos';
    const qos = qosChoices(this.form);
    fillSelect(this.qos, qos, values.qos);
    if (qos.length) {
      fields.append(this.row('QOS', this.qos));
    }
    this.node.append(fields);
  }

  private addParameters(values: Record<string, FieldValue>): void {
    const parameters = this.form.parameters || [];
    if (this.form.kind !== 'notebook' || !parameters.length) {
      return;
    }
    const box = element('fieldset', 'dsportal-run-parameters');
    box.append(element('legend', '', 'Parameters'));
    if (this.sweep) {
      box.append(this.sweep.switchLabel);
    }
    for (const parameter of parameters) {
      const control = this.parameterInput(parameter, values[parameter.name]);
      const hint = parameterHint(parameter);
      control.title = hint;
      const row = this.row(parameter.name, control, hint);
      box.append(row);
      if (this.sweep) {
        box.append(this.sweep.controlsFor(parameter, row, control));
      }
      this.parameterInputs.set(parameter.name, control);
    }
    this.node.append(box);
    if (this.sweep) {
      this.node.append(this.sweep.options);
    }
  }

  private parameterInput(
    parameter: IParameter,
    value: FieldValue
  ): HTMLInputElement {
    const name = `param-${parameter.name}`;
    const field = parameterField(parameter);
    const control = input(name, field.type, value);
    if (field.type === 'number') {
      control.step = field.step;
      control.required = field.required;
    } else if (field.type === 'text' && field.placeholder) {
      control.placeholder = field.placeholder;
    }
    return control;
  }

  private chosenPartition(): IPartition | undefined {
    return (this.form.partitions || []).find(
      p => p.name === this.partition.value
    );
  }

  // The chosen partition bounds nodes and GPUs; a change of partition brings the values within them.
  private partitionChanged(clamp: boolean): void {
    const p = this.chosenPartition();
    if (!p) {
      return;
    }
    const fields = partitionFields(p);
    this.nodes.max = fields.nodesMax;
    this.gpus.max = fields.gpusMax;
    this.gpus.disabled = fields.gpusDisabled;
    this.setHint(this.nodes, fields.nodesHint);
    this.setHint(this.gpus, fields.gpusHint);
    const types = typeChoices(p);
    fillSelect(this.gpuType, types, this.chosenType);
    this.typeRow.hidden = !types.length;
    const shares = shareChoices(p);
    fillSelect(this.shards, shares, this.chosenShards);
    this.sharesRow.hidden = !shares.length;
    this.sharesChanged();
    if (clamp) {
      const clamped = clampToPartition(this.nodes.value, this.gpus.value, p);
      this.nodes.value = clamped.nodes;
      this.gpus.value = clamped.gpus;
      // the dialog checked the fields against the old bounds (the select's input event came first)
      this.nodes.dispatchEvent(new Event('input', { bubbles: true }));
    }
  }

  // A share asks for one node and no whole GPU: those fields are set so, and held, while a share is chosen.
  private sharesChanged(): void {
    const sharing = this.shards.value !== '' && !this.sharesRow.hidden;
    if (sharing) {
      this.gpus.value = '0';
      this.nodes.value = '1';
    }
    const p = this.chosenPartition();
    this.gpus.disabled =
      sharing || (p ? partitionFields(p).gpusDisabled : false);
    this.nodes.disabled = sharing;
    this.gpuType.disabled = sharing || Number(this.gpus.value) === 0;
  }

  private readonly partition: HTMLSelectElement;
  private readonly nodes: HTMLInputElement;
  private readonly gpus: HTMLInputElement;
  private readonly hours: HTMLInputElement;
  private readonly gpuType: HTMLSelectElement;
  private readonly account: HTMLSelectElement;
  private readonly qos: HTMLSelectElement;
  private readonly shards: HTMLSelectElement;
  private typeRow!: HTMLLabelElement;
  private sharesRow!: HTMLLabelElement;
  private chosenShards: string; // kept across partitions that offer shares
  private readonly sweep: SweepSection | null; // null where the form offers no sweep
  private chosenType: string; // kept across partitions that have it
  private readonly parameterInputs = new Map<string, HTMLInputElement>();
  // control -> the hint under it and the text it shows while the value is valid
  private readonly hints = new Map<
    HTMLInputElement | HTMLSelectElement,
    { node: HTMLElement; text: string }
  >();
}

function basename(path: string): string {
  return path.split('/').pop() || '';
}

// Shows the dialog until the job is submitted or the user cancels; a refusal (the server's, or a
// field that is not a number) re-opens it with the sentence on top and every value kept.
// Resolves to the submitted job, or null.
export async function runAsJob(path: string): Promise<IJob | null> {
  const { ok, body: form } = await runsApi.form(path);
  if (!ok) {
    await showErrorMessage(
      `${basename(path)} cannot run as a job`,
      form.message
    );
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
    if (!result.button.accept || result.value === null) {
      return null;
    }
    values = result.value;
    let request: IRunRequest;
    try {
      request = values.sweep
        ? buildSweepRequest(form, values, values.sweep)
        : buildRequest(form, values);
    } catch (e) {
      error = (e as Error).message;
      continue;
    }
    const answer = await runsApi.submit(request);
    if (answer.ok) {
      return answer.body.job;
    }
    error = answer.body.message;
  }
}
