/**
 * The form controls: one row per field the catalog lists (a select, a checkbox or a slider, with its label,
 * read-out and error), kept in step with the scenario.
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
import { ICatalog, Scenario, Value } from './types';

/** A form control and the nodes around it. */
interface IControlRow {
  row: HTMLElement;
  input: HTMLInputElement | HTMLSelectElement;
  readout: HTMLElement;
  error: HTMLElement;
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
      const label = el('label', 'jp-hwsim-label') as HTMLLabelElement;
      label.title = field.help;
      label.append(el('span', 'jp-hwsim-name', name));
      if (field.unit && field.unit !== 'x') {
        label.append(el('span', 'jp-hwsim-unit', field.unit));
      }
      let input: HTMLInputElement | HTMLSelectElement;
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
        slider.addEventListener('input', () => this._onInput(name, value(), 'moving'));
        slider.addEventListener('change', () => this._onInput(name, value(), 'settled'));
        input = slider;
      }
      input.dataset.field = name;
      input.classList.add('jp-hwsim-input');
      input.title = `${field.help}; ${field.accepted}`;
      input.id = `jp-hwsim-${name}`;
      label.htmlFor = input.id;
      const readout = el('span', 'jp-hwsim-readout');
      const error = el('div', 'jp-hwsim-field-error');
      error.dataset.errorFor = name;
      error.setAttribute('role', 'alert');
      row.append(label, input, readout, error);
      this.node.append(row);
      this._rows.set(name, { row, input, readout, error });
    }
    this.sync(scenario);
  }

  /** Controls show the scenario; those that do not apply to its kind are hidden. */
  sync(scenario: Scenario): void {
    const catalog = this._catalog;
    if (!catalog) {
      return;
    }
    const kind = String(resolvedValue(catalog, scenario, 'kind'));
    const shown = new Set(visibleFields(catalog, kind));
    for (const [name, { row, input, readout }] of this._rows) {
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
      }
      row.classList.toggle('jp-mod-set', name in scenario);
    }
  }

  /** Show an error next to a field's control; false if there is no such control. */
  showError(name: string, text: string): boolean {
    const row = this._rows.get(name);
    if (!row) {
      return false;
    }
    row.error.textContent = text;
    row.row.classList.add('jp-mod-error');
    return true;
  }

  clearErrors(): void {
    for (const { row, error } of this._rows.values()) {
      error.textContent = '';
      row.classList.remove('jp-mod-error');
    }
  }

  private _sliderValue(name: string, spec: SliderSpec, position: number): number {
    const value = fromPosition(spec, position);
    return this._catalog?.fields[name]?.type === 'int' ? Math.round(value) : value;
  }

  private _catalog: ICatalog | null = null;
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
