// The run dialog's fields, apart from the page: their first values, their bounds and hints, and the
// POST body made of what the user typed. The server (dsportal/runs) checks every value against the
// cluster's limits; the dialog only offers those limits as field bounds.
import {
  FieldValue,
  IChoice,
  IParameter,
  IPartition,
  IRunForm,
  IRunRequest,
  IRunValues
} from './types';

const PLAIN_TYPES = ['str', 'int', 'float', 'bool'];

// papermill gives each default as the source text of its assignment ("'x'", "True", "[1, 2]"),
// so a str loses its quotes and a bool becomes a checkbox state; the rest is shown as written.
export function initialValue(parameter: IParameter): FieldValue {
  const text =
    parameter.default === null || parameter.default === undefined
      ? ''
      : String(parameter.default);
  if (parameter.type === 'bool') {
    return text === 'True' || text === 'true';
  }
  if (
    parameter.type === 'str' &&
    text.length >= 2 &&
    /^(["']).*\1$/s.test(text)
  ) {
    return text.slice(1, -1);
  }
  return text;
}

export function initialValues(form: IRunForm): IRunValues {
  const parameters: Record<string, FieldValue> = {};
  for (const parameter of form.parameters || []) {
    parameters[parameter.name] = initialValue(parameter);
  }
  const defaults = form.defaults || {};
  return {
    partition: defaults.partition || '',
    nodes: String(defaults.nodes ?? 1),
    gpus: String(defaults.gpus ?? 0),
    hours: String(defaults.hours ?? 1),
    gpu_type: '',
    shards: '',
    account: '',
    qos: '',
    parameters
  };
}

function number(raw: FieldValue, label: string, whole: boolean): number {
  const text = String(raw).trim();
  const value = Number(text);
  if (
    text === '' ||
    !Number.isFinite(value) ||
    (whole && !Number.isInteger(value))
  ) {
    throw new Error(
      `${label} must be ${whole ? 'a whole number' : 'a number'}.`
    );
  }
  return value;
}

// A parameter's field -> its typed JSON value; anything but int/float/bool/str is JSON if it parses.
// An int or float that is not one throws an Error whose message the dialog shows.
export function parameterValue(
  parameter: IParameter,
  raw: FieldValue
): unknown {
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
        return JSON.parse(String(raw));
      } catch {
        return String(raw);
      }
  }
}

// Only the parameters the user changed are sent: the others keep the notebook's own values, which
// papermill's source text ("{'a': 1}", "None") could not always carry over as JSON.
export function buildRequest(form: IRunForm, values: IRunValues): IRunRequest {
  const parameters: Record<string, unknown> = {};
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
    // the defaults ('') are left out: the server then charges the default account, any type, the default QOS
    ...(values.gpu_type && Number(values.gpus) > 0
      ? { gpu_type: values.gpu_type }
      : {}),
    ...(values.shards
      ? { shards: number(values.shards, 'Share of a GPU', true) }
      : {}),
    ...(values.account ? { account: values.account } : {}),
    ...(values.qos ? { qos: values.qos } : {}),
    parameters
  };
}

// The GPU type choices of a partition: "any type" first; none to choose where it has fewer than two types.
export function typeChoices(partition: IPartition | undefined): IChoice[] {
  const types = partition?.gpu_types || [];
  return types.length < 2
    ? []
    : [{ name: '', label: 'Any type: whichever is free first' }, ...types];
}

// The share choices of a partition: whole GPUs ('') first; none where its GPUs are not shared.
export function shareChoices(partition: IPartition | undefined): IChoice[] {
  const shares = partition?.shares || [];
  return shares.length
    ? [{ name: '', label: 'None: whole GPUs' }, ...shares]
    : [];
}

// The account choices: the default first, as '' (the server charges the user's default); none where the
// user has one account.
export function accountChoices(form: IRunForm): IChoice[] {
  const accounts = form.accounts || [];
  return accounts.length < 2
    ? []
    : accounts.map((a, i) =>
        i === 0 ? { name: '', label: `${a.label} (your default)` } : a
      );
}

// The QOS choices: the default first; none where the admin offers no choice.
export function qosChoices(form: IRunForm): IChoice[] {
  const offered = form.qos || [];
  return offered.length ? [{ name: '', label: 'Default' }, ...offered] : [];
}

// --- the fields' bounds and hints ------------------------------------------------------------------

export function partitionLabel(partition: IPartition): string {
  return partition.display_name || partition.name;
}

// The partition shown first: the default one, or the first offered when the default is not among them.
export function firstPartition(form: IRunForm, values: IRunValues): string {
  const partitions = form.partitions || [];
  if (partitions.some(p => p.name === values.partition)) {
    return values.partition;
  }
  return partitions.length ? partitions[0].name : '';
}

// The Hours field's upper bound ('' for none) and hint.
export function hoursField(form: IRunForm): { max: string; hint: string } {
  let hint = 'the time limit, in steps of 0.25';
  if (form.max_hours) {
    hint += `; at most ${form.max_hours} h`;
    return { max: String(form.max_hours), hint };
  }
  return { max: '', hint };
}

// The chosen partition bounds the Nodes and GPUs fields.
export function partitionFields(partition: IPartition): {
  nodesMax: string;
  gpusMax: string;
  gpusDisabled: boolean;
  nodesHint: string;
  gpusHint: string;
} {
  const name = partitionLabel(partition);
  return {
    nodesMax: String(partition.max_nodes),
    gpusMax: String(partition.max_gpus),
    gpusDisabled: partition.max_gpus === 0,
    nodesHint: `at most ${partition.max_nodes} on ${name}`,
    gpusHint: partition.max_gpus
      ? `at most ${partition.max_gpus} on ${name}`
      : `${name} has no GPUs`
  };
}

// A change of partition brings the Nodes and GPUs values within its bounds.
export function clampToPartition(
  nodes: string,
  gpus: string,
  partition: IPartition
): { nodes: string; gpus: string } {
  return {
    nodes: String(Math.min(Number(nodes) || 1, partition.max_nodes)),
    gpus: String(Math.min(Number(gpus) || 0, partition.max_gpus))
  };
}

// The hint under a parameter's field (and its tooltip): its help and its type.
export function parameterHint(parameter: IParameter): string {
  const type = parameter.type || 'unknown type';
  return parameter.help ? `${parameter.help} (${type})` : type;
}

// The input a parameter gets: a checkbox for a bool, a number field for an int or a float (required,
// so the dialog holds Submit back while it is empty), a text field for the rest: JSON or plain text
// where the type is neither.
export type ParameterField =
  | { type: 'checkbox' }
  | { type: 'number'; step: '1' | 'any'; required: true }
  | { type: 'text'; placeholder?: string };

export function parameterField(parameter: IParameter): ParameterField {
  if (parameter.type === 'bool') {
    return { type: 'checkbox' };
  }
  if (parameter.type === 'int' || parameter.type === 'float') {
    return {
      type: 'number',
      step: parameter.type === 'int' ? '1' : 'any',
      required: true
    };
  }
  if (PLAIN_TYPES.includes(parameter.type || '')) {
    return { type: 'text' };
  }
  return { type: 'text', placeholder: 'JSON, or plain text' };
}
