// The dialog's sweep controls (runs/sweepform.ts) in jsdom: the switch, a parameter's modes, the live count.
import { initialValues } from '../runs/parameters';
import { SweepSection } from '../runs/sweepform';
import { IRunForm, IRunValues } from '../runs/types';

const FORM: IRunForm = {
  path: 'work/train.ipynb',
  kind: 'notebook',
  parameters: [
    { name: 'learning_rate', type: 'float', default: '0.002' },
    { name: 'batch_size', type: 'int', default: '32' }
  ],
  partitions: [{ name: 'gpu', max_gpus: 4, max_nodes: 2 }],
  defaults: { partition: 'gpu', nodes: 1, gpus: 2, hours: 1 },
  sweeps: { enabled: true, max_tasks: 4, max_gpu_hours: 100, max_at_once: 3 }
};

// The section as the dialog places it: each parameter's own field, then its sweep controls.
function aSection(): {
  section: SweepSection;
  node: HTMLElement;
  values: IRunValues;
} {
  const section = new SweepSection(FORM, null);
  const node = document.createElement('div');
  node.append(section.switchLabel);
  for (const parameter of FORM.parameters!) {
    const row = document.createElement('label');
    const input = document.createElement('input');
    input.name = `param-${parameter.name}`;
    row.append(input);
    node.append(row, section.controlsFor(parameter, row, input));
  }
  node.append(section.options);
  return { section, node, values: initialValues(FORM) };
}

function control<T extends HTMLElement>(node: HTMLElement, name: string): T {
  return node.querySelector(`[name="${name}"]`) as T;
}

describe('the sweep controls', () => {
  it('are hidden and off until the switch is on', () => {
    const { section, node, values } = aSection();
    section.refresh(values);
    expect(section.getValue()).toBeNull();
    expect(section.options.hidden).toBe(true);
    expect(control(node, 'mode-learning_rate').hidden).toBe(true);
    expect(control(node, 'sweep').getAttribute('role')).toBe('switch');
  });

  it('count the runs and say when a limit is passed', () => {
    const { section, node, values } = aSection();
    control<HTMLInputElement>(node, 'sweep').checked = true;
    control<HTMLSelectElement>(node, 'mode-learning_rate').value = 'list';
    control<HTMLInputElement>(node, 'list-learning_rate').value = '0.1, 0.01';
    section.refresh(values);
    const count = section.options.querySelector('.dsportal-sweep-count')!;
    expect(count.textContent).toBe('2 runs, at most 4 GPU-hours');
    expect(count.getAttribute('data-tasks')).toBe('2');
    expect(
      control<HTMLInputElement>(node, 'param-learning_rate').disabled
    ).toBe(true);
    expect(control(node, 'list-learning_rate').hidden).toBe(false);
    control<HTMLSelectElement>(node, 'mode-batch_size').value = 'range';
    control<HTMLInputElement>(node, 'from-batch_size').value = '16';
    control<HTMLInputElement>(node, 'to-batch_size').value = '64';
    section.refresh(values);
    expect(count.textContent).toBe('6 runs, at most 12 GPU-hours');
    const over = section.options.querySelector<HTMLElement>(
      '.dsportal-sweep-over'
    )!;
    expect(over.hidden).toBe(false);
    expect(over.textContent).toContain('more than the 4 runs a sweep may have');
  });

  it('mark a list that cannot be read, so that Submit waits', () => {
    const { section, node, values } = aSection();
    control<HTMLInputElement>(node, 'sweep').checked = true;
    control<HTMLSelectElement>(node, 'mode-batch_size').value = 'list';
    const list = control<HTMLInputElement>(node, 'list-batch_size');
    list.value = '32, big';
    section.refresh(values);
    expect(list.validationMessage).toBe(
      'batch_size: “big” is not a whole number.'
    );
    list.value = '32, 64';
    section.refresh(values);
    expect(list.validity.valid).toBe(true);
    expect(section.getValue()?.fields.batch_size).toEqual({
      mode: 'list',
      list: '32, 64',
      from: '',
      to: '',
      steps: '3',
      scale: 'linear'
    });
  });
});
