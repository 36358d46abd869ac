/**
 * The form controls: one row per field the catalog lists (a select, a checkbox, or a slider with a number field
 * beside it; each with its plain label, read-out and error), kept in step with the scenario. Every control has an
 * accessible name and its definition as a tooltip; an error shows under its own control.
 */

import { el } from './dom';
import { formatFieldValue } from './format';
import {
  CONTROLS,
  fromPosition,
  positionCount,
  resolvedValue,
  SliderSpec,
  toPosition,
  visibleFields,
  workloadsFor
} from './model';
import { Phase } from './state';
import { ICatalog, IFieldSpec, Scenario, Value } from './types';

/** A form control and the nodes around it. */
interface IControlRow {
  row: HTMLElement;
  input: HTMLInputElement | HTMLSelectElement;
  /** the number field beside a slider */
  number: HTMLInputElement | null;
  readout: HTMLElement;
  error: HTMLElement;
}

/** A field's plain label ("Loader workers"), or its name from a server that sends none. */
export function fieldLabel(catalog: ICatalog, name: string): string {
  return catalog.fields[name]?.label || name;
}

/** A typed number checked against the field's range: its value, or why it is refused. */
export function checkNumber(field: IFieldSpec, text: string): { value: number } | { error: string } {
  const value = Number(text.trim());
  if (!text.trim() || !Number.isFinite(value)) {
    return { error: `"${text}" is not a number: ${field.accepted}` };
  }
  if (field.type === 'int' && !Number.isInteger(value)) {
    return { error: `${value} is not a whole number: ${field.accepted}` };
  }
  const low = field.lo !== null && (field.lo_open ? value <= field.lo : value < field.lo);
  const high = field.hi !== null && value > field.hi;
  return low || high ? { error: `${value} is out of range: ${field.accepted}` } : { value };
}

export class ControlsView {
  /** `onInput` is called with the value a control was set to. */
  constructor(private readonly _onInput: (name: string, value: Value, phase: Phase) => void) {
    this.node.className = 'jp-hwsim-controls';
  }

  readonly node = document.createElement('div');

  /** One row per field of `CONTROLS` the server knows; then they show the scenario. */
  build(catalog: ICatalog, scenario: Scenario): void {
    this._catalog = catalog;
    this.node.textContent = '';
    this._rows.clear();
    for (const [name, spec] of Object.entries(CONTROLS)) {
      const field = catalog.fields[name];
      if (!field) {
        continue; // a server without this field: no control for it
      }
      const row = el('div', 'jp-hwsim-row');
      row.dataset.row = name;
      row.dataset.control = spec.type;
      const text = fieldLabel(catalog, name);
      const help = `${field.help}. Accepted: ${field.accepted}. (%hwsim field: ${name})`;
      const label = el('label', 'jp-hwsim-label') as HTMLLabelElement;
      label.title = help;
      label.append(el('span', 'jp-hwsim-name', text));
      let input: HTMLInputElement | HTMLSelectElement;
      let number: HTMLInputElement | null = null;
      if (spec.type === 'select') {
        const select = document.createElement('select');
        select.addEventListener('change', () => this._onInput(name, select.value, 'settled'));
        input = select;
      } else if (spec.type === 'checkbox') {
        const box = document.createElement('input');
        box.type = 'checkbox';
        box.addEventListener('change', () => this._onInput(name, box.checked, 'settled'));
        input = box;
      } else {
        const slider = document.createElement('input');
        slider.type = 'range';
        slider.min = '0';
        slider.max = String(positionCount(spec));
        slider.step = '1';
        const value = () => this._sliderValue(name, spec, Number(slider.value));
        slider.addEventListener('input', () => {
          this._showValue(name, value());
          this._onInput(name, value(), 'moving');
        });
        slider.addEventListener('change', () => this._onInput(name, value(), 'settled'));
        input = slider;
        number = this._numberField(name, field, text);
      }
      input.dataset.field = name;
      input.classList.add('jp-hwsim-input');
      input.title = help;
      input.id = `jp-hwsim-${name}`;
      input.setAttribute('aria-label', text);
      label.htmlFor = input.id;
      const readout = el('span', 'jp-hwsim-readout');
      readout.setAttribute('aria-hidden', 'true');
      const error = el('div', 'jp-hwsim-field-error');
      error.dataset.errorFor = name;
      error.id = `jp-hwsim-${name}-error`;
      error.setAttribute('role', 'alert');
      input.setAttribute('aria-describedby', error.id);
      row.append(label, readout, input);
      if (number) {
        number.setAttribute('aria-describedby', error.id);
        row.append(number);
      }
      row.append(error);
      this.node.append(row);
      this._rows.set(name, { row, input, number, readout, error });
    }
    this.sync(scenario);
  }

  /** Controls show the scenario; those that do not apply to its kind are hidden. */
  sync(scenario: Scenario): void {
    const catalog = this._catalog;
    if (!catalog) {
      return;
    }
    this._scenario = scenario;
    const kind = String(resolvedValue(catalog, scenario, 'kind'));
    const shown = new Set(visibleFields(catalog, kind));
    for (const [name, { row, input, number, readout }] of this._rows) {
      row.hidden = !shown.has(name);
      const value = resolvedValue(catalog, scenario, name);
      const spec = CONTROLS[name];
      const unit = catalog.fields[name]?.unit ?? '';
      if (input instanceof HTMLSelectElement) {
        setOptions(input, selectOptions(catalog, scenario, name, value), String(value));
        readout.textContent = '';
      } else if (input.type === 'checkbox') {
        input.checked = Boolean(value);
        readout.textContent = value ? 'on' : 'off';
      } else if ('min' in spec) {
        input.value = String(toPosition(spec, Number(value)));
        readout.textContent = formatFieldValue(value, unit);
        input.setAttribute('aria-valuetext', readout.textContent);
        if (number && document.activeElement !== number) {
          number.value = String(value);
        }
      }
      row.classList.toggle('jp-mod-set', name in scenario);
    }
  }

  /** Show an error next to a field's control; false if there is no such control (or it is hidden). */
  showError(name: string, text: string): boolean {
    const row = this._rows.get(name);
    if (!row || row.row.hidden) {
      return false;
    }
    row.error.textContent = text;
    row.row.classList.add('jp-mod-error');
    row.input.setAttribute('aria-invalid', 'true');
    row.number?.setAttribute('aria-invalid', 'true');
    return true;
  }

  clearErrors(): void {
    for (const { row, input, number, error } of this._rows.values()) {
      error.textContent = '';
      row.classList.remove('jp-mod-error');
      input.removeAttribute('aria-invalid');
      number?.removeAttribute('aria-invalid');
    }
  }

  /** The number field beside a slider: any accepted value, exactly (a slider only has its positions). */
  private _numberField(name: string, field: IFieldSpec, text: string): HTMLInputElement {
    const number = document.createElement('input');
    number.type = 'number';
    number.className = 'jp-hwsim-number';
    number.dataset.number = name;
    number.setAttribute('aria-label', `${text} (number)`);
    number.step = field.type === 'int' ? '1' : 'any';
    if (field.lo !== null) {
      number.min = String(field.lo);
    }
    if (field.hi !== null) {
      number.max = String(field.hi);
    }
    number.addEventListener('change', () => {
      const checked = checkNumber(field, number.value);
      if ('error' in checked) {
        this.clearErrors();
        this.showError(name, checked.error);
        return;
      }
      this._onInput(name, checked.value, 'settled');
    });
    number.addEventListener('keydown', event => {
      if (event.key === 'Escape') {
        number.value = String(this._catalog ? resolvedValue(this._catalog, this._scenario, name) : number.value);
        number.blur();
      }
    });
    return number;
  }

  /** While a slider moves, its read-out and number field follow it before the scenario does. */
  private _showValue(name: string, value: number): void {
    const row = this._rows.get(name);
    if (row) {
      row.readout.textContent = formatFieldValue(value, this._catalog?.fields[name]?.unit ?? '');
      if (row.number) {
        row.number.value = String(value);
      }
    }
  }

  private _sliderValue(name: string, spec: SliderSpec, position: number): number {
    const value = fromPosition(spec, position);
    return this._catalog?.fields[name]?.type === 'int' ? Math.round(value) : value;
  }

  private _catalog: ICatalog | null = null;
  private _scenario: Scenario = {};
  private readonly _rows = new Map<string, IControlRow>();
}

/** The options of a select: [value, label]. */
function selectOptions(c: ICatalog, scenario: Scenario, name: string, current: Value): [string, string][] {
  const named = (entries: { [id: string]: { name: string } }) =>
    Object.entries(entries).map(([id, e]): [string, string] => [id, `${id}: ${e.name}`]);
  const plain = (values: string[]) => values.map((v): [string, string] => [v, v]);
  let options: [string, string][];
  switch (name) {
    case 'kind':
      options = plain(c.kinds);
      break;
    case 'workload': {
      const kind = String(resolvedValue(c, scenario, 'kind'));
      options = workloadsFor(c, kind).map(id => [id, `${id}: ${c.workloads[id].name}`]);
      break;
    }
    case 'gpu':
      options = named(c.gpus);
      break;
    case 'storage':
      options = named(c.storage);
      break;
    case 'host_link': {
      const gpu = c.gpus[String(resolvedValue(c, scenario, 'gpu'))];
      const own = gpu?.host_link ? ` (${gpu.host_link})` : '';
      options = [['', `the GPU's${own}`], ...named(c.links)];
      break;
    }
    case 'precision':
      options = plain(c.precisions);
      break;
    case 'engine':
      options = named(c.engines);
      break;
    case 'batching':
      options = plain(c.batching);
      break;
    default:
      options = plain(c.fields[name]?.choices ?? []);
  }
  // a value the lists do not hold (e.g. a saved custom name) stays selectable, so it is shown as it is
  if (!options.some(([v]) => v === String(current))) {
    options.unshift([String(current), String(current)]);
  }
  return options;
}

/** Replace a select's options only when they changed (rebuilding them while open would close it). */
function setOptions(select: HTMLSelectElement, options: [string, string][], value: string): void {
  const same =
    select.options.length === options.length &&
    options.every(([v, label], i) => select.options[i].value === v && select.options[i].text === label);
  if (!same) {
    select.textContent = '';
    for (const [v, label] of options) {
      select.append(new Option(label, v));
    }
  }
  select.value = value;
}
