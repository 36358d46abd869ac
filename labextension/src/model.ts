/**
 * The scenario model, pure logic with no JupyterLab imports (jest tests it in plain node):
 *
 * - which controls a kind shows and how each slider maps its position to a value
 * - the value a control shows when the user did not set it (the server's defaults)
 * - the scenario after an edit or an applied suggestion, and the fields that differ from the defaults
 */

import { roundSignificant } from './format';
import { ICatalog, Scenario, Value } from './types';

/** How a field is edited. Sliders keep an integer position; `fromPosition`/`toPosition` map it to the value. */
export type ControlSpec =
  | { type: 'select' }
  | { type: 'checkbox' }
  | { type: 'linear'; min: number; max: number; step: number }
  | { type: 'log2'; min: number; max: number }
  | { type: 'log'; min: number; max: number; stepsPerDecade: number };

export type SliderSpec = Extract<ControlSpec, { min: number }>;

export const CONTROLS: { [field: string]: ControlSpec } = {
  kind: { type: 'select' },
  workload: { type: 'select' },
  gpu: { type: 'select' },
  precision: { type: 'select' },
  engine: { type: 'select' },
  batch_size: { type: 'log2', min: 1, max: 4096 },
  max_batch_size: { type: 'log2', min: 1, max: 4096 },
  concurrency: { type: 'log2', min: 1, max: 4096 },
  prompt_tokens: { type: 'log2', min: 1, max: 32768 },
  output_tokens: { type: 'log2', min: 1, max: 32768 },
  loader_workers: { type: 'linear', min: 0, max: 64, step: 1 },
  cpu_cores: { type: 'linear', min: 1, max: 128, step: 1 },
  storage: { type: 'select' },
  storage_bandwidth_gbs: { type: 'log', min: 0.01, max: 1000, stepsPerDecade: 20 },
  host_link: { type: 'select' },
  pin_memory: { type: 'checkbox' },
  arrival_rate_rps: { type: 'log', min: 1, max: 1e5, stepsPerDecade: 20 },
  max_queue_delay_ms: { type: 'linear', min: 0, max: 50, step: 0.5 },
  latency_slo_ms: { type: 'log', min: 1, max: 1e4, stepsPerDecade: 20 },
  replicas: { type: 'linear', min: 1, max: 8, step: 1 },
  batching: { type: 'select' }
};

/** The fields a kind shows, in the catalog's order (common first), limited to those with a control. */
export function visibleFields(catalog: ICatalog, kind: string): string[] {
  const names = [...catalog.common_fields, ...(catalog.kind_fields[kind] ?? [])];
  return names.filter((name, i) => CONTROLS[name] !== undefined && names.indexOf(name) === i);
}

/** The number of positions of a slider (positions run 0..count). */
export function positionCount(spec: SliderSpec): number {
  switch (spec.type) {
    case 'linear':
      return Math.round((spec.max - spec.min) / spec.step);
    case 'log2':
      return Math.round(Math.log2(spec.max / spec.min));
    case 'log':
      return Math.round(Math.log10(spec.max / spec.min) * spec.stepsPerDecade);
  }
}

/** The value at a slider position. */
export function fromPosition(spec: SliderSpec, position: number): number {
  const p = Math.min(positionCount(spec), Math.max(0, Math.round(position)));
  switch (spec.type) {
    case 'linear':
      // round away binary noise of min + p * step (0.5 steps are exact, 0.1 would not be)
      return Number((spec.min + p * spec.step).toFixed(6));
    case 'log2':
      return spec.min * 2 ** p;
    case 'log':
      return roundSignificant(spec.min * 10 ** (p / spec.stepsPerDecade));
  }
}

/** The slider position nearest to a value (clamped to the slider's range). */
export function toPosition(spec: SliderSpec, value: number): number {
  const n = positionCount(spec);
  let p: number;
  switch (spec.type) {
    case 'linear':
      p = (value - spec.min) / spec.step;
      break;
    case 'log2':
      p = value > 0 ? Math.log2(value / spec.min) : 0;
      break;
    case 'log':
      p = value > 0 ? Math.log10(value / spec.min) * spec.stepsPerDecade : 0;
      break;
  }
  return Math.min(n, Math.max(0, Math.round(p)));
}

// The workload a kind starts from when none is named (jupyter_hwsim.scenario.DEFAULT_WORKLOAD).
const DEFAULT_WORKLOAD: { [kind: string]: string } = {
  training: 'resnet50',
  inference: 'resnet50',
  serving: 'resnet50',
  llm: 'llama-2-7b'
};

/** The workloads a kind may use: kind=llm takes language models only. */
export function workloadsFor(catalog: ICatalog, kind: string): string[] {
  const ids = Object.keys(catalog.workloads);
  return kind === 'llm' ? ids.filter(id => catalog.workloads[id].language_model) : ids;
}

export function defaultWorkload(catalog: ICatalog, kind: string): string {
  const options = workloadsFor(catalog, kind);
  const preferred = DEFAULT_WORKLOAD[kind];
  return options.includes(preferred) ? preferred : (options[0] ?? '');
}

/**
 * The value a control shows: the one the user set, else what the server would take. Fields whose default comes
 * from the catalog (None in the Python Field) are resolved the way jupyter_hwsim.costs.resolve does.
 * host_link unset is '' (the GPU's own link).
 */
export function resolvedValue(catalog: ICatalog, scenario: Scenario, name: string): Value {
  const set = scenario[name];
  if (set !== undefined) {
    return set;
  }
  const kind = String(scenario.kind ?? catalog.fields.kind?.default ?? 'training');
  const workload = String(scenario.workload ?? defaultWorkload(catalog, kind));
  switch (name) {
    case 'kind':
      return kind;
    case 'workload':
      return workload;
    case 'batch_size':
      return catalog.workloads[workload]?.default_batch_size ?? 1;
    case 'max_batch_size':
      return scenario.batch_size ?? 8;
    case 'concurrency':
      return 16;
    case 'arrival_rate_rps':
      return 100;
    case 'storage_bandwidth_gbs': {
      const storage = String(resolvedValue(catalog, scenario, 'storage'));
      return catalog.storage[storage]?.bandwidth_gbs ?? 1;
    }
    case 'host_link':
      return '';
  }
  const fallback = catalog.fields[name]?.default;
  return fallback ?? '';
}

/**
 * The scenario after the user set one field: follow-up changes keep it valid (kind=llm needs a language model; a
 * new storage device brings its own bandwidth). Setting a field to null or '' (host_link: "the GPU's") unsets it.
 */
export function setField(catalog: ICatalog, scenario: Scenario, name: string, value: Value | null): Scenario {
  const next: Scenario = { ...scenario };
  if (value === null || value === '') {
    delete next[name];
  } else {
    next[name] = value;
  }
  if (name === 'kind') {
    const kind = String(value);
    const workload = scenario.workload;
    if (kind === 'llm' && workload !== undefined && !workloadsFor(catalog, kind).includes(String(workload))) {
      next.workload = defaultWorkload(catalog, kind);
    }
  }
  if (name === 'storage') {
    delete next.storage_bandwidth_gbs;
  }
  return next;
}

/** A suggestion's `fields` applied: null means "back to the catalog's value". */
export function applySuggestion(scenario: Scenario, fields: { [name: string]: Value | null }): Scenario {
  const next: Scenario = { ...scenario };
  for (const [name, value] of Object.entries(fields)) {
    if (value === null) {
      delete next[name];
    } else {
      next[name] = value;
    }
  }
  return next;
}

/** Only the fields that differ from the catalog defaults (kept in the catalog's field order). */
export function nonDefaultFields(catalog: ICatalog, scenario: Scenario): Scenario {
  const order = Object.keys(catalog.fields);
  const names = Object.keys(scenario).sort((a, b) => rank(order, a) - rank(order, b));
  const out: Scenario = {};
  for (const name of names) {
    const value = scenario[name];
    const spec = catalog.fields[name];
    if (spec && spec.default !== null && sameValue(spec.default, value)) {
      continue;
    }
    out[name] = value;
  }
  return out;
}

function rank(order: string[], name: string): number {
  const i = order.indexOf(name);
  return i < 0 ? order.length : i;
}

function sameValue(a: Value, b: Value): boolean {
  return typeof a === 'string' && typeof b === 'string' ? a.toLowerCase() === b.toLowerCase() : a === b;
}
