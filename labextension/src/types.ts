/**
 * The shapes of the server's REST API (jupyter_hwsim/server.py): the catalog, a result, an error.
 */

export type Value = string | number | boolean;

/** The fields the user set; every other field takes its default on the server. */
export type Scenario = { [field: string]: Value };

export type FieldType = 'int' | 'float' | 'str' | 'bool';

export interface IFieldSpec {
  type: FieldType;
  /** a plain label with its unit ("Storage read speed (GB/s)"); older servers send none */
  label?: string;
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
  engines: { [id: string]: ICatalogEntry & { fusion?: string; trains?: boolean } };
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
  /** false: a change that does not help enough to list (shown under "show all"); missing: shown */
  shown?: boolean;
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
  power_w?: number | null;
  energy_j_per_unit?: number | null;
  cost_usd_per_million?: number | null;
  accuracy?: IAccuracy | null;
  charts: { [name: string]: { [key: string]: unknown } };
}

/** How far to trust the throughput: the published error band of its class (Result.accuracy). */
export interface IAccuracy {
  status: string;
  n: number;
  class: string;
  low?: number;
  high?: number;
  median_abs_error?: number;
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
