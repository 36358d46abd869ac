/**
 * The panel's pure logic: no JupyterLab imports, so jest tests it in plain node.
 *
 * - the catalog and result shapes of the server's REST API (jupyter_hwsim/server.py)
 * - which controls a kind shows and how each one maps its slider position to a value
 * - the scenario <-> `%hwsim run key=value ...` line conversion (values as jupyter_hwsim.cli.parse_value reads them)
 * - server errors mapped to the control they name
 * - request sequencing, so a stale answer never replaces a newer one
 */

export type Value = string | number | boolean;

/** The fields the user set; every other field takes its default on the server. */
export type Scenario = { [field: string]: Value };

export type FieldType = 'int' | 'float' | 'str' | 'bool';

export interface IFieldSpec {
  type: FieldType;
  unit: string;
  help: string;
  default: Value | null;
  lo: number | null;
  hi: number | null;
  lo_open: boolean;
  choices: string[] | null;
  accepted: string;
}

export interface ICatalogEntry {
  id: string;
  name: string;
  [key: string]: unknown;
}

export interface IWorkloadEntry extends ICatalogEntry {
  arch?: string;
  language_model?: boolean;
  default_batch_size?: number;
}

export interface IGpuEntry extends ICatalogEntry {
  memory_gb?: number;
  host_link?: string;
}

export interface IStorageEntry extends ICatalogEntry {
  bandwidth_gbs?: number;
  latency_ms?: number;
}

export interface ICatalog {
  kinds: string[];
  precisions: string[];
  fusions: string[];
  batching: string[];
  gpus: { [id: string]: IGpuEntry };
  storage: { [id: string]: IStorageEntry };
  links: { [id: string]: ICatalogEntry & { bandwidth_gbs?: number } };
  workloads: { [id: string]: IWorkloadEntry };
  fields: { [name: string]: IFieldSpec };
  common_fields: string[];
  kind_fields: { [kind: string]: string[] };
}

export interface ISuggestion {
  change: string;
  fields: { [name: string]: Value | null };
  speedup?: number | null;
  why?: string;
  metric?: string;
  fits?: boolean;
}

export interface IResult {
  throughput: number;
  throughput_unit: string;
  latency_ms: { p50: number; p95: number; p99: number; mean: number };
  utilization: { [name: string]: number };
  gpu_time: { [name: string]: number };
  bottleneck: string;
  explanation: string;
  suggestions: ISuggestion[];
  memory: { total_gb: number; capacity_gb: number; oom: boolean; [name: string]: number | boolean };
  sim: { [name: string]: unknown };
  method: string;
  warnings: string[];
  scenario: { [name: string]: Value | null };
  goodput?: number | null;
  ttft_ms?: { [name: string]: number } | null;
  tokens_per_s_per_stream?: number | null;
  max_concurrency?: number | null;
  charts: { [name: string]: { [key: string]: unknown } };
}

/** The `error` object of a 4xx/5xx answer. */
export interface IServerError {
  field?: string;
  value?: string;
  accepted?: string;
  hint?: string;
  message: string;
}

export type Method = 'estimate' | 'simulate';

// ---------------------------------------------------------------------------------------------------------------
// Controls
// ---------------------------------------------------------------------------------------------------------------

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
  fusion: { type: 'select' },
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

/** Three significant digits: the values a log slider gives are short in a `%hwsim` line. */
export function roundSignificant(x: number, digits = 3): number {
  return x === 0 ? 0 : Number(x.toPrecision(digits));
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
  return options.includes(preferred) ? preferred : options[0] ?? '';
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

// ---------------------------------------------------------------------------------------------------------------
// %hwsim line
// ---------------------------------------------------------------------------------------------------------------

/** One value as the magic's parse_value reads it back (shlex-quoted when it is not a plain word). */
export function formatValue(value: Value): string {
  if (typeof value === 'boolean') {
    return value ? 'true' : 'false';
  }
  if (typeof value === 'number') {
    // String() gives the shortest text that reads back as the same double in Python
    return String(value);
  }
  return /^[A-Za-z0-9_.+\-/:@]+$/.test(value) ? value : `'${value.replace(/'/g, `'"'"'`)}'`;
}

/** `%hwsim run key=value ...` for the fields the user set (those equal to the defaults left out). */
export function scenarioToLine(catalog: ICatalog, scenario: Scenario, command = 'run'): string {
  const pairs = Object.entries(nonDefaultFields(catalog, scenario)).map(([k, v]) => `${k}=${formatValue(v)}`);
  return ['%hwsim', command, ...pairs].join(' ');
}

/** A value as jupyter_hwsim.cli.parse_value reads it: true/false, an int, a float, else the text. */
export function parseValue(text: string): Value {
  const low = text.trim().toLowerCase();
  if (low === 'true' || low === 'false') {
    return low === 'true';
  }
  if (/^\s*[+-]?\d+\s*$/.test(text)) {
    return parseInt(text, 10);
  }
  if (/^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?\s*$/i.test(text)) {
    return parseFloat(text);
  }
  return text;
}

/** Split a line the way Python's shlex.split does for the quoting formatValue writes ('...' and "..."). */
export function splitWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: string | null = null;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) {
        quote = null;
      } else {
        word += ch;
      }
    } else if (ch === "'" || ch === '"') {
      quote = ch;
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) {
        words.push(word);
      }
      word = '';
      inWord = false;
    } else {
      word += ch;
      inWord = true;
    }
  }
  if (quote) {
    throw new Error(`unclosed quotation in ${line}`);
  }
  if (inWord) {
    words.push(word);
  }
  return words;
}

/** The scenario of a `%hwsim [run|estimate] key=value ...` line. */
export function lineToScenario(line: string): Scenario {
  const words = splitWords(line.trim());
  if (words[0] === '%hwsim') {
    words.shift();
  }
  if (['run', 'estimate'].includes(words[0])) {
    words.shift();
  }
  const out: Scenario = {};
  for (const word of words) {
    const eq = word.indexOf('=');
    if (eq < 0) {
      throw new Error(`${word} is not key=value`);
    }
    out[word.slice(0, eq).trim()] = parseValue(word.slice(eq + 1));
  }
  return out;
}

const LOAD_EXT = /^\s*%load_ext\s+jupyter_hwsim\s*$/m;

/** The cell to insert: the line, preceded by `%load_ext jupyter_hwsim` when no cell of the notebook loads it. */
export function cellSource(line: string, notebookSources: string[]): string {
  const loaded = notebookSources.some(src => LOAD_EXT.test(src));
  return loaded ? line : `%load_ext jupyter_hwsim\n${line}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------------------------

/** The control an error belongs next to, or null to show it at the top (body, seed, steps, hidden fields). */
export function errorTarget(error: IServerError, shown: string[]): string | null {
  return error.field && shown.includes(error.field) ? error.field : null;
}

/** The error in words, as the server put it; a bare field/value/accepted triple is worded here. */
export function errorText(error: IServerError): string {
  if (error.message) {
    return error.message;
  }
  const what = error.field ? `${error.field}=${error.value ?? '?'} is not accepted` : 'the request was refused';
  return error.accepted ? `${what}: ${error.accepted}` : what;
}

/** The error of a failed answer, whatever its body holds. */
export function errorFromResponse(status: number, body: string): IServerError {
  try {
    const parsed = JSON.parse(body);
    const error = parsed?.error;
    if (error && typeof error === 'object') {
      return { ...error, message: errorText(error) };
    }
    if (typeof parsed?.message === 'string' && parsed.message) {
      return { message: `the server answered ${status}: ${parsed.message}` };
    }
  } catch {
    // not JSON: fall through to the status
  }
  if (status === 404) {
    return {
      message:
        'the jupyter_hwsim server extension is not answering (404): enable it with ' +
        '`jupyter server extension enable jupyter_hwsim` and restart JupyterLab'
    };
  }
  if (status === 403) {
    return { message: 'the server refused the request (403): reload the page to log in again' };
  }
  return { message: `the server answered ${status}${body ? ': ' + body.slice(0, 200) : ''}` };
}

/** A failure that may pass by itself: no answer (0), the server busy (503) or too slow (504). */
export function isTransient(status: number): boolean {
  return status === 0 || status === 503 || status === 504;
}

/** Ask again after a busy (503) or timed-out (504) answer, at most `max` times for one scenario. */
export function shouldRetry(status: number, attempts: number, max = 2): boolean {
  return (status === 503 || status === 504) && attempts < max;
}

// ---------------------------------------------------------------------------------------------------------------
// Request sequencing
// ---------------------------------------------------------------------------------------------------------------

export interface ITicket {
  seq: number;
  method: Method;
  /** the scenario revision the request was made for */
  revision: number;
}

/**
 * Numbers every request and decides whether an answer may be shown. An answer is dropped when a newer one has been
 * shown: one for a later scenario revision, or, for the same revision, a later request of the same method or a
 * simulation (an estimate never replaces the simulation of the same scenario).
 */
export class Sequencer {
  issue(method: Method, revision: number): ITicket {
    return { seq: ++this._seq, method, revision };
  }

  /** Whether the answer to this ticket may be shown; if so it becomes the newest shown. */
  accept(ticket: ITicket): boolean {
    if (!this.wanted(ticket)) {
      return false;
    }
    this._shown = ticket;
    return true;
  }

  /** Whether an answer to this ticket would still be shown (false: do not bother sending it). */
  wanted(ticket: ITicket): boolean {
    const shown = this._shown;
    if (!shown) {
      return true;
    }
    if (ticket.revision !== shown.revision) {
      return ticket.revision > shown.revision;
    }
    if (ticket.method === shown.method) {
      return ticket.seq > shown.seq;
    }
    return ticket.method === 'simulate';
  }

  get shown(): ITicket | null {
    return this._shown;
  }

  private _seq = 0;
  private _shown: ITicket | null = null;
}

/**
 * At most one request of a kind in flight; while one runs, only the newest of the requests made meanwhile waits,
 * and it is sent as soon as the running one ends (so a fast slider sends a bounded stream, always the latest).
 */
export class Coalescer<T> {
  constructor(private readonly _run: (item: T) => Promise<void>) {}

  push(item: T): void {
    if (this._busy) {
      this._pending = { item };
      return;
    }
    void this._start(item);
  }

  get busy(): boolean {
    return this._busy;
  }

  private async _start(item: T): Promise<void> {
    this._busy = true;
    try {
      await this._run(item);
    } catch {
      // the runner reports its own errors; the queue must go on
    } finally {
      this._busy = false;
      const next = this._pending;
      this._pending = null;
      if (next) {
        void this._start(next.item);
      }
    }
  }

  private _busy = false;
  private _pending: { item: T } | null = null;
}

/** Calls `fn` once `delayMs` after the last `schedule()`; `flush()` calls it now instead. */
export class Debouncer {
  constructor(
    private readonly _fn: () => void,
    private readonly _delayMs: number
  ) {}

  schedule(): void {
    this.cancel();
    this._timer = setTimeout(() => {
      this._timer = null;
      this._fn();
    }, this._delayMs);
  }

  flush(): void {
    this.cancel();
    this._fn();
  }

  cancel(): void {
    if (this._timer !== null) {
      clearTimeout(this._timer);
      this._timer = null;
    }
  }

  get pending(): boolean {
    return this._timer !== null;
  }

  private _timer: ReturnType<typeof setTimeout> | null = null;
}

// ---------------------------------------------------------------------------------------------------------------
// Charts
// ---------------------------------------------------------------------------------------------------------------

const COMPOSED = ['hconcat', 'vconcat', 'concat', 'facet', 'repeat'];

/**
 * A Vega-Lite spec sized to `width` pixels in all (axes and legends included), so it fits a sidebar however wide.
 * Vega-Lite fits single and layered views only: a composed spec, or no known width, keeps its own size.
 */
export function fitWidth(spec: { [key: string]: unknown }, width: number): { [key: string]: unknown } {
  if (!(width > 0) || COMPOSED.some(key => key in spec)) {
    return spec;
  }
  return { ...spec, width: Math.floor(width), autosize: { type: 'fit-x', contains: 'padding' } };
}

// ---------------------------------------------------------------------------------------------------------------
// Read-outs
// ---------------------------------------------------------------------------------------------------------------

/** 1234.56 -> "1,234.6" (Python's f"{x:,.1f}", as the `%hwsim run` report prints it). */
export function formatNumber(x: number, digits = 1): string {
  return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function formatPercent(x: number, digits = 0): string {
  return `${(x * 100).toFixed(digits)}%`;
}

/** What the latency is measured over, per throughput unit. */
export function latencyLabel(unit: string): string {
  return { 'requests/s': 'per request', 'tokens/s': 'per output token' }[unit] ?? 'per step';
}

/** The sentence under "GPU busy | MFU" when the two are far apart (more than 20 points), else ''. */
export function busyMfuGap(busy: number, mfu: number): string {
  if (busy - mfu <= 0.2) {
    return '';
  }
  return (
    `The GPU is busy ${formatPercent(busy)} of the time but does useful math at ${formatPercent(mfu)} of its ` +
    'peak: busy counts any kernel running, however little of the chip it uses or however long it waits on memory.'
  );
}

/** A control's value as text with the field's unit. */
export function formatFieldValue(value: Value, unit: string): string {
  let text: string;
  if (typeof value === 'number') {
    text = Number.isInteger(value) ? value.toLocaleString('en-US') : String(roundSignificant(value));
  } else {
    text = String(value);
  }
  return unit && unit !== 'x' ? `${text} ${unit}` : text;
}
