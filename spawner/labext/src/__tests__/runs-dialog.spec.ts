// The run dialog's fields (runs/parameters.ts): their first values, their bounds and hints, and the
// POST body made of what the user typed.
import {
  buildRequest,
  clampToPartition,
  firstPartition,
  hoursField,
  initialValue,
  initialValues,
  parameterField,
  parameterHint,
  parameterValue,
  partitionFields,
  accountChoices,
  qosChoices,
  shareChoices,
  typeChoices
} from '../runs/parameters';
import { IParameter, IRunForm, IRunValues } from '../runs/types';

const GPU = {
  name: 'gpu',
  display_name: 'GPU nodes',
  max_gpus: 4,
  max_nodes: 2
};
const CPU = { name: 'cpu', max_gpus: 0, max_nodes: 8 };

// What GET dsportal/runs/form answers for a notebook with a cell tagged "parameters".
function aForm(parameters: IParameter[] = []): IRunForm {
  return {
    path: 'work/train.ipynb',
    kind: 'notebook',
    parameters,
    partitions: [GPU, CPU],
    defaults: { partition: 'gpu', nodes: 1, gpus: 0, hours: 2 },
    max_hours: 24
  };
}

const PARAMETERS: IParameter[] = [
  { name: 'lr', type: 'float', default: '0.01', help: 'learning rate' },
  { name: 'epochs', type: 'int', default: '10' },
  { name: 'name', type: 'str', default: "'run-1'" },
  { name: 'shuffle', type: 'bool', default: 'True' },
  { name: 'layers', type: 'list', default: '[64, 32]' },
  { name: 'config', type: 'dict', default: "{'a': 1}" },
  { name: 'seed', type: 'None', default: 'None' }
];

describe("a parameter's first value", () => {
  it('is the notebook’s default as written', () => {
    expect(initialValue({ name: 'lr', type: 'float', default: '0.01' })).toBe(
      '0.01'
    );
    expect(
      initialValue({ name: 'layers', type: 'list', default: '[64, 32]' })
    ).toBe('[64, 32]');
    expect(initialValue({ name: 'seed', type: 'None', default: 'None' })).toBe(
      'None'
    );
  });

  it('is a str without its quotes', () => {
    expect(initialValue({ name: 'a', type: 'str', default: "'run-1'" })).toBe(
      'run-1'
    );
    expect(
      initialValue({ name: 'a', type: 'str', default: '"two\nlines"' })
    ).toBe('two\nlines');
    expect(initialValue({ name: 'a', type: 'str', default: '\'mixed"' })).toBe(
      '\'mixed"'
    );
    expect(initialValue({ name: 'a', type: 'str', default: "''" })).toBe('');
  });

  it('is a checkbox state for a bool', () => {
    expect(initialValue({ name: 'a', type: 'bool', default: 'True' })).toBe(
      true
    );
    expect(initialValue({ name: 'a', type: 'bool', default: 'true' })).toBe(
      true
    );
    expect(initialValue({ name: 'a', type: 'bool', default: 'False' })).toBe(
      false
    );
  });

  it('is empty without a default', () => {
    expect(initialValue({ name: 'a', type: 'int', default: null })).toBe('');
    expect(initialValue({ name: 'a' })).toBe('');
    expect(initialValue({ name: 'a', type: 'bool' })).toBe(false);
  });
});

describe('the first values of the whole dialog', () => {
  it('are the form’s defaults and the parameters’ first values', () => {
    expect(initialValues(aForm(PARAMETERS))).toEqual({
      partition: 'gpu',
      nodes: '1',
      gpus: '0',
      hours: '2',
      gpu_type: '',
      shards: '',
      account: '',
      qos: '',
      parameters: {
        lr: '0.01',
        epochs: '10',
        name: 'run-1',
        shuffle: true,
        layers: '[64, 32]',
        config: "{'a': 1}",
        seed: 'None'
      }
    });
  });

  it('fall back to one node, no GPU and one hour', () => {
    expect(initialValues({ path: 'a.py', kind: 'python' })).toEqual({
      partition: '',
      nodes: '1',
      gpus: '0',
      hours: '1',
      gpu_type: '',
      shards: '',
      account: '',
      qos: '',
      parameters: {}
    });
  });
});

describe("a parameter's typed value", () => {
  it('is a number for an int or a float', () => {
    expect(parameterValue({ name: 'epochs', type: 'int' }, ' 20 ')).toBe(20);
    expect(parameterValue({ name: 'lr', type: 'float' }, '1e-3')).toBe(0.001);
    expect(parameterValue({ name: 'lr', type: 'float' }, '2')).toBe(2);
  });

  it('refuses what is not one, naming the parameter', () => {
    expect(() =>
      parameterValue({ name: 'epochs', type: 'int' }, '2.5')
    ).toThrow('epochs must be a whole number.');
    expect(() => parameterValue({ name: 'epochs', type: 'int' }, '')).toThrow(
      'epochs must be a whole number.'
    );
    expect(() => parameterValue({ name: 'lr', type: 'float' }, 'fast')).toThrow(
      'lr must be a number.'
    );
    expect(() =>
      parameterValue({ name: 'lr', type: 'float' }, 'Infinity')
    ).toThrow('lr must be a number.');
  });

  it('is the text for a str and the state for a bool', () => {
    expect(parameterValue({ name: 'a', type: 'str' }, '[1, 2]')).toBe('[1, 2]');
    expect(parameterValue({ name: 'a', type: 'bool' }, true)).toBe(true);
    expect(parameterValue({ name: 'a', type: 'bool' }, false)).toBe(false);
  });

  it('is JSON for the other types where it parses, else the text', () => {
    expect(parameterValue({ name: 'a', type: 'list' }, '[1, 2]')).toEqual([
      1, 2
    ]);
    expect(parameterValue({ name: 'a', type: 'dict' }, '{"a": null}')).toEqual({
      a: null
    });
    expect(parameterValue({ name: 'a', type: 'dict' }, "{'a': 1}")).toBe(
      "{'a': 1}"
    );
    expect(parameterValue({ name: 'a', type: 'expression' }, 'np.pi')).toBe(
      'np.pi'
    );
    expect(parameterValue({ name: 'a' }, '3')).toBe(3);
  });
});

describe('the request the dialog submits', () => {
  function changed(
    parameters: Partial<IRunValues['parameters']>,
    fields: Partial<IRunValues> = {}
  ): IRunValues {
    const values = initialValues(aForm(PARAMETERS));
    return {
      ...values,
      ...fields,
      parameters: {
        ...values.parameters,
        ...parameters
      } as IRunValues['parameters']
    };
  }

  it('sends the resources as numbers and no parameter the user left alone', () => {
    expect(
      buildRequest(
        aForm(PARAMETERS),
        changed({}, { nodes: '2', gpus: '4', hours: '1.5' })
      )
    ).toEqual({
      path: 'work/train.ipynb',
      partition: 'gpu',
      nodes: 2,
      gpus: 4,
      hours: 1.5,
      parameters: {}
    });
  });

  it('sends a GPU type, an account and a QOS only when chosen', () => {
    expect(
      buildRequest(
        aForm(),
        changed(
          {},
          { gpus: '2', gpu_type: 'a100', account: 'nlp', qos: 'short' }
        )
      )
    ).toEqual({
      path: 'work/train.ipynb',
      partition: 'gpu',
      nodes: 1,
      gpus: 2,
      hours: 2,
      gpu_type: 'a100',
      account: 'nlp',
      qos: 'short',
      parameters: {}
    });
    // no type with no GPU; the defaults ('') are not sent
    expect(
      buildRequest(aForm(), changed({}, { gpus: '0', gpu_type: 'a100' }))
    ).toEqual({
      path: 'work/train.ipynb',
      partition: 'gpu',
      nodes: 1,
      gpus: 0,
      hours: 2,
      parameters: {}
    });
  });

  it('sends the parameters the user changed, typed', () => {
    const values = changed({
      lr: '0.1',
      name: 'run-2',
      shuffle: false,
      layers: '[128]',
      seed: '42'
    });
    expect(buildRequest(aForm(PARAMETERS), values).parameters).toEqual({
      lr: 0.1,
      name: 'run-2',
      shuffle: false,
      layers: [128],
      seed: 42
    });
  });

  it('refuses resources that are not numbers, in the field’s words', () => {
    expect(() => buildRequest(aForm(), changed({}, { nodes: '1.5' }))).toThrow(
      'Nodes must be a whole number.'
    );
    expect(() => buildRequest(aForm(), changed({}, { gpus: '' }))).toThrow(
      'GPUs per node must be a whole number.'
    );
    expect(() => buildRequest(aForm(), changed({}, { hours: 'two' }))).toThrow(
      'Hours must be a number.'
    );
  });

  it('refuses a changed int parameter that is not a whole number', () => {
    expect(() =>
      buildRequest(aForm(PARAMETERS), changed({ epochs: '1e400' }))
    ).toThrow('epochs must be a whole number.');
  });
});

describe('the resource fields', () => {
  it('start on the default partition, or the first one offered', () => {
    const values = initialValues(aForm());
    expect(firstPartition(aForm(), { ...values, partition: 'cpu' })).toBe(
      'cpu'
    );
    expect(firstPartition(aForm(), { ...values, partition: 'gone' })).toBe(
      'gpu'
    );
    expect(firstPartition(aForm(), { ...values, partition: '' })).toBe('gpu');
    expect(firstPartition({ ...aForm(), partitions: [] }, values)).toBe('');
  });

  it('bound the nodes and GPUs by the chosen partition', () => {
    expect(partitionFields(GPU)).toEqual({
      nodesMax: '2',
      gpusMax: '4',
      gpusDisabled: false,
      nodesHint: 'at most 2 on GPU nodes',
      gpusHint: 'at most 4 on GPU nodes'
    });
    expect(partitionFields(CPU)).toEqual({
      nodesMax: '8',
      gpusMax: '0',
      gpusDisabled: true,
      nodesHint: 'at most 8 on cpu',
      gpusHint: 'cpu has no GPUs'
    });
  });

  it('bring the values within a newly chosen partition', () => {
    expect(clampToPartition('6', '4', CPU)).toEqual({ nodes: '6', gpus: '0' });
    expect(clampToPartition('6', '3', GPU)).toEqual({ nodes: '2', gpus: '3' });
    expect(clampToPartition('', 'x', GPU)).toEqual({ nodes: '1', gpus: '0' });
  });

  it('bound the hours by the cluster’s limit where there is one', () => {
    expect(hoursField(aForm())).toEqual({
      max: '24',
      hint: 'the time limit, in steps of 0.25; at most 24 h'
    });
    expect(hoursField({ ...aForm(), max_hours: undefined })).toEqual({
      max: '',
      hint: 'the time limit, in steps of 0.25'
    });
  });
});

describe('the parameter fields', () => {
  it('are a checkbox for a bool, a number for an int or float, text for the rest', () => {
    expect(parameterField({ name: 'a', type: 'bool' })).toEqual({
      type: 'checkbox'
    });
    expect(parameterField({ name: 'a', type: 'int' })).toEqual({
      type: 'number',
      step: '1',
      required: true
    });
    expect(parameterField({ name: 'a', type: 'float' })).toEqual({
      type: 'number',
      step: 'any',
      required: true
    });
    expect(parameterField({ name: 'a', type: 'str' })).toEqual({
      type: 'text'
    });
  });

  it('ask for JSON or plain text where the type is neither', () => {
    const jsonField = { type: 'text', placeholder: 'JSON, or plain text' };
    expect(parameterField({ name: 'a', type: 'list' })).toEqual(jsonField);
    expect(parameterField({ name: 'a', type: 'expression' })).toEqual(
      jsonField
    );
    expect(parameterField({ name: 'a' })).toEqual(jsonField);
  });

  it('carry the help and the type as their hint', () => {
    expect(
      parameterHint({ name: 'lr', type: 'float', help: 'learning rate' })
    ).toBe('learning rate (float)');
    expect(parameterHint({ name: 'lr', type: 'float' })).toBe('float');
    expect(parameterHint({ name: 'x', help: 'anything' })).toBe(
      'anything (unknown type)'
    );
  });
});

describe('the choices of GPU type, account and QOS', () => {
  const TYPED = {
    ...GPU,
    gpu_types: [
      { name: 'a100', label: 'A100 80 GB' },
      { name: 'v100', label: 'V100 32 GB' }
    ]
  };

  it('offer a type only where the partition has several, any type first', () => {
    expect(typeChoices(TYPED)).toEqual([
      { name: '', label: 'Any type: whichever is free first' },
      { name: 'a100', label: 'A100 80 GB' },
      { name: 'v100', label: 'V100 32 GB' }
    ]);
    expect(
      typeChoices({ ...GPU, gpu_types: [{ name: 'a100', label: 'A100' }] })
    ).toEqual([]);
    expect(typeChoices(CPU)).toEqual([]);
    expect(typeChoices(undefined)).toEqual([]);
  });

  it('offer the accounts where the user has several, the default first as the default', () => {
    const form = {
      ...aForm(),
      accounts: [
        { name: 'vision', label: 'vision' },
        { name: 'nlp', label: 'nlp' }
      ]
    };
    expect(accountChoices(form)).toEqual([
      { name: '', label: 'vision (your default)' },
      { name: 'nlp', label: 'nlp' }
    ]);
    expect(
      accountChoices({ ...aForm(), accounts: [{ name: 'v', label: 'v' }] })
    ).toEqual([]);
  });

  it('offer the admin’s QOS after the default, or none', () => {
    expect(
      qosChoices({ ...aForm(), qos: [{ name: 'short', label: 'Short' }] })
    ).toEqual([
      { name: '', label: 'Default' },
      { name: 'short', label: 'Short' }
    ]);
    expect(qosChoices(aForm())).toEqual([]);
  });
});

describe('a share of a GPU', () => {
  const SHARED = {
    ...GPU,
    shares: [
      { name: '1', label: 'a quarter of a GPU' },
      { name: '2', label: 'half a GPU' },
      { name: '3', label: '3 quarters of a GPU' }
    ]
  };

  it('is offered, whole GPUs first, only where the partition shares its GPUs', () => {
    expect(shareChoices(SHARED)).toEqual([
      { name: '', label: 'None: whole GPUs' },
      ...SHARED.shares
    ]);
    expect(shareChoices(GPU)).toEqual([]);
    expect(shareChoices(undefined)).toEqual([]);
  });

  it('is sent as shards, a whole number, and left out for whole GPUs', () => {
    const values = { ...initialValues(aForm()), shards: '2' };
    expect(buildRequest(aForm(), values)).toEqual({
      path: 'work/train.ipynb',
      partition: 'gpu',
      nodes: 1,
      gpus: 0,
      hours: 2,
      shards: 2,
      parameters: {}
    });
    expect(buildRequest(aForm(), initialValues(aForm()))).not.toHaveProperty(
      'shards'
    );
  });
});
