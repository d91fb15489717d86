// The run dialog's sweep: its switch, each parameter's choice of one value, a list or a range, the
// sample, the runs at once and the objective, and the live count of runs and GPU-hours. What the fields
// mean is runs/sweep.ts; the dialog (runs/dialog.ts) places these controls beside its own.
import { element } from '../common/dom';
import { gridEntry, initialSweep, modeChoices, sweepEstimate } from './sweep';
import {
  IParameter,
  IRunForm,
  IRunValues,
  ISweepField,
  ISweepValues,
  SweepMode
} from './types';

interface IParameterControls {
  parameter: IParameter;
  valueRow: HTMLElement; // the dialog's own field: one value
  valueInput: HTMLInputElement;
  mode: HTMLSelectElement;
  list: HTMLInputElement;
  range: HTMLElement;
  from: HTMLInputElement;
  to: HTMLInputElement;
  steps: HTMLInputElement;
  scale: HTMLSelectElement;
  hint: HTMLElement;
}

function textInput(
  name: string,
  label: string,
  value: string,
  type = 'text'
): HTMLInputElement {
  const node = element('input', 'jp-mod-styled');
  node.type = type;
  node.name = name;
  node.value = value;
  node.setAttribute('aria-label', label);
  node.title = label;
  return node;
}

function select(
  name: string,
  label: string,
  choices: [string, string][],
  value: string
): HTMLSelectElement {
  const node = element('select', 'jp-mod-styled');
  node.name = name;
  node.setAttribute('aria-label', label);
  node.title = label;
  for (const [choice, text] of choices) {
    const option = element('option', '', text);
    option.value = choice;
    node.append(option);
  }
  node.value = value;
  return node;
}

function labelled(text: string, control: HTMLElement): HTMLLabelElement {
  const node = element('label', 'dsportal-run-field');
  node.append(element('span', 'dsportal-run-label', text), control);
  return node;
}

export class SweepSection {
  constructor(
    private readonly form: IRunForm,
    values: ISweepValues | null | undefined
  ) {
    const start = values || initialSweep(form);
    this.switch.type = 'checkbox';
    this.switch.name = 'sweep';
    this.switch.setAttribute('role', 'switch');
    this.switch.setAttribute('aria-label', 'Sweep');
    this.switch.checked = Boolean(values);
    this.switchLabel.title =
      'Run the notebook once for each point of a grid of parameter values, as one Slurm job array';
    this.switchLabel.append(
      this.switch,
      element('span', 'dsportal-run-label', 'Sweep'),
      element(
        'span',
        'dsportal-run-hint',
        'run a grid of parameter values as one job array'
      )
    );
    const limits = form.sweeps;
    const maxAtOnce = String(limits?.max_at_once ?? 1);
    this.sample = textInput(
      'sweep-sample',
      'Random sample of N runs',
      start.sample,
      'number'
    );
    Object.assign(this.sample, {
      min: '0',
      step: '1',
      placeholder: 'the whole grid'
    });
    this.atOnce = textInput(
      'sweep-at-once',
      'Runs at once',
      start.at_once,
      'number'
    );
    Object.assign(this.atOnce, {
      min: '1',
      max: maxAtOnce,
      step: '1',
      required: true
    });
    this.objective = textInput(
      'sweep-objective',
      'Objective: the result that ranks the runs',
      start.objective
    );
    this.objective.placeholder = 'the first result';
    this.best = select(
      'sweep-best',
      'Which is best',
      [
        ['max', 'Highest is best'],
        ['min', 'Lowest is best']
      ],
      start.best
    );
    this.count.setAttribute('role', 'status');
    this.count.setAttribute('aria-live', 'polite');
    this.count.setAttribute('aria-label', 'Runs in the sweep');
    this.over.setAttribute('role', 'alert');
    const options = element('div', 'dsportal-run-resources');
    options.append(
      labelled('Random sample of N', this.sample),
      labelled(`Runs at once (at most ${maxAtOnce})`, this.atOnce),
      labelled('Objective (a result)', this.objective),
      labelled('Best', this.best)
    );
    this.options.append(options, this.count, this.over);
    this.start = start;
  }

  readonly switchLabel = element('label', 'dsportal-sweep-switch');
  // the sample, runs at once, objective and the count: shown under the parameters while the switch is on
  readonly options = element('div', 'dsportal-sweep-options');

  // The mode select, list and range of a parameter, beside the dialog's own field (valueRow).
  controlsFor(
    parameter: IParameter,
    valueRow: HTMLElement,
    valueInput: HTMLInputElement
  ): HTMLElement {
    const name = parameter.name;
    const field: ISweepField = this.start.fields[name];
    const box = element('div', 'dsportal-sweep-parameter');
    const mode = select(
      `mode-${name}`,
      `How ${name} varies`,
      modeChoices(parameter).map(c => [c.name, c.label]),
      field.mode
    );
    const list = textInput(`list-${name}`, `Values of ${name}`, field.list);
    list.placeholder = 'values, separated by commas';
    const from = textInput(
      `from-${name}`,
      `${name} from`,
      field.from,
      'number'
    );
    const to = textInput(`to-${name}`, `${name} to`, field.to, 'number');
    const steps = textInput(
      `steps-${name}`,
      `Steps of ${name}`,
      field.steps,
      'number'
    );
    for (const control of [from, to]) {
      control.step = 'any';
      control.placeholder = control === from ? 'from' : 'to';
    }
    Object.assign(steps, { min: '2', step: '1', placeholder: 'steps' });
    const scale = select(
      `scale-${name}`,
      `Scale of ${name}`,
      [
        ['linear', 'linear'],
        ['log', 'log']
      ],
      field.scale
    );
    const range = element('div', 'dsportal-sweep-range');
    range.append(from, to, steps, scale);
    const hint = element('small', 'dsportal-run-hint');
    box.append(mode, list, range, hint);
    this.controls.push({
      parameter,
      valueRow,
      valueInput,
      mode,
      list,
      range,
      from,
      to,
      steps,
      scale,
      hint
    });
    return box;
  }

  get on(): boolean {
    return this.switch.checked;
  }

  getValue(): ISweepValues | null {
    if (!this.on) {
      return null;
    }
    const fields: Record<string, ISweepField> = {};
    for (const c of this.controls) {
      fields[c.parameter.name] = {
        mode: c.mode.value as SweepMode,
        list: c.list.value,
        from: c.from.value,
        to: c.to.value,
        steps: c.steps.value,
        scale: c.scale.value as ISweepField['scale']
      };
    }
    return {
      fields,
      sample: this.sample.value,
      at_once: this.atOnce.value,
      objective: this.objective.value,
      best: this.best.value as ISweepValues['best']
    };
  }

  // Shows the controls of each parameter's mode, marks a list or range that cannot be read (the dialog
  // then holds Submit back) and says how many runs it makes. values: the dialog's values now.
  refresh(values: IRunValues): void {
    const sweep = this.getValue();
    this.options.hidden = !sweep;
    for (const control of [this.sample, this.atOnce, this.objective]) {
      control.disabled = !sweep;
    }
    this.best.disabled = !sweep;
    for (const c of this.controls) {
      this.showParameter(c, sweep, values);
    }
    if (!sweep) {
      return;
    }
    const estimate = sweepEstimate(this.form, values, sweep);
    this.count.textContent = estimate.words;
    this.count.dataset.tasks =
      estimate.tasks === null ? '' : String(estimate.tasks);
    this.over.textContent = estimate.over;
    this.over.hidden = !estimate.over;
  }

  private showParameter(
    c: IParameterControls,
    sweep: ISweepValues | null,
    values: IRunValues
  ): void {
    const mode: SweepMode = sweep ? (c.mode.value as SweepMode) : 'value';
    c.mode.hidden = !sweep;
    c.mode.disabled = !sweep;
    c.valueRow.hidden = mode !== 'value';
    c.valueInput.disabled = mode !== 'value';
    c.list.hidden = c.list.disabled = mode !== 'list';
    c.range.hidden = mode !== 'range';
    for (const control of [c.from, c.to, c.steps, c.scale]) {
      control.disabled = mode !== 'range';
    }
    let problem = '';
    if (sweep && mode !== 'value') {
      try {
        gridEntry(
          c.parameter,
          sweep.fields[c.parameter.name],
          values.parameters[c.parameter.name]
        );
      } catch (e) {
        problem = (e as Error).message;
      }
    }
    const shown = mode === 'list' ? c.list : c.from;
    c.list.setCustomValidity('');
    c.from.setCustomValidity('');
    shown.setCustomValidity(problem);
    c.hint.textContent = problem;
    c.hint.hidden = !problem;
    c.hint.classList.toggle('dsportal-run-invalid', Boolean(problem));
  }

  private readonly switch = element('input');
  private readonly sample: HTMLInputElement;
  private readonly atOnce: HTMLInputElement;
  private readonly objective: HTMLInputElement;
  private readonly best: HTMLSelectElement;
  private readonly count = element('div', 'dsportal-sweep-count');
  private readonly over = element('div', 'dsportal-sweep-over');
  private readonly controls: IParameterControls[] = [];
  private readonly start: ISweepValues;
}
