import { errorFromResponse, errorTarget, errorText, isTransient, shouldRetry } from '../errors';
import { busyMfuGap, formatFieldValue, formatNumber, formatSignificant } from '../format';
import { fitWidth } from '../vlspec';
import { cellSource, formatValue, lineToScenario, parseValue, scenarioToLine, splitWords } from '../magic';
import {
  applySuggestion,
  CONTROLS,
  fromPosition,
  nonDefaultFields,
  positionCount,
  resolvedValue,
  setField,
  SliderSpec,
  toPosition,
  visibleFields,
  workloadsFor
} from '../model';
import { Coalescer, Debouncer, Sequencer } from '../requests';
import { ICatalog, IFieldSpec } from '../types';

function field(type: IFieldSpec['type'], unit: string, dflt: IFieldSpec['default'], choices?: string[]): IFieldSpec {
  return {
    type,
    unit,
    help: '',
    default: dflt,
    lo: 0,
    hi: 1e7,
    lo_open: false,
    choices: choices ?? null,
    accepted: ''
  };
}

// The shape of GET hwsim/api/catalog (jupyter_hwsim/server.py), cut down; field order as in scenario.FIELDS.
const CATALOG: ICatalog = {
  kinds: ['training', 'inference', 'serving', 'llm'],
  precisions: ['fp32', 'bf16', 'int8'],
  fusions: ['eager', 'compiled', 'tensorrt'],
  engines: {
    'pytorch-eager': { id: 'pytorch-eager', name: 'PyTorch eager', fusion: 'eager', trains: true },
    'torch-compile': { id: 'torch-compile', name: 'torch.compile (Inductor)', fusion: 'compiled', trains: true }
  },
  batching: ['static', 'continuous'],
  gpus: {
    'a100-sxm-80gb': { id: 'a100-sxm-80gb', name: 'NVIDIA A100 SXM 80GB', memory_gb: 80, host_link: 'pcie4' },
    t4: { id: 't4', name: 'NVIDIA T4', memory_gb: 16, host_link: 'pcie3' }
  },
  storage: {
    'nvme-gen4': { id: 'nvme-gen4', name: 'NVMe SSD, PCIe Gen4', bandwidth_gbs: 7.0, latency_ms: 0.011 },
    hdd: { id: 'hdd', name: '7200 rpm hard disk', bandwidth_gbs: 0.27, latency_ms: 4.17 }
  },
  links: {
    pcie4: { id: 'pcie4', name: 'PCIe Gen4 x16', bandwidth_gbs: 25.13 },
    pcie5: { id: 'pcie5', name: 'PCIe Gen5 x16', bandwidth_gbs: 35.2 }
  },
  workloads: {
    resnet50: { id: 'resnet50', name: 'ResNet-50', arch: 'resnet', default_batch_size: 256, language_model: false },
    gpt2: { id: 'gpt2', name: 'GPT-2 (124M)', arch: 'transformer', default_batch_size: 16, language_model: true },
    'llama-2-7b': {
      id: 'llama-2-7b',
      name: 'Llama 2 7B',
      arch: 'transformer',
      default_batch_size: 1,
      language_model: true
    }
  },
  fields: {
    kind: field('str', '', 'training', ['training', 'inference', 'serving', 'llm']),
    workload: field('str', '', null),
    gpu: field('str', '', 'a100-sxm-80gb'),
    precision: field('str', '', 'bf16', ['fp32', 'bf16', 'int8']),
    batch_size: field('int', 'samples', null),
    loader_workers: field('int', 'processes', 8),
    cpu_cores: field('int', 'cores', 16),
    storage: field('str', '', 'nvme-gen4'),
    storage_bandwidth_gbs: field('float', 'GB/s', null),
    host_link: field('str', '', null),
    pin_memory: field('bool', '', true),
    engine: field('str', '', null),
    fusion: field('str', '', null, ['eager', 'compiled', 'tensorrt']),
    steps: field('int', 'steps', 200),
    arrival_rate_rps: field('float', 'req/s', null),
    concurrency: field('int', 'clients', null),
    max_batch_size: field('int', 'requests', null),
    max_queue_delay_ms: field('float', 'ms', 1.0),
    latency_slo_ms: field('float', 'ms', 100.0),
    replicas: field('int', 'GPUs', 1),
    prompt_tokens: field('int', 'tokens', 512),
    output_tokens: field('int', 'tokens', 128),
    batching: field('str', '', 'continuous', ['static', 'continuous'])
  },
  common_fields: ['kind', 'workload', 'gpu', 'precision', 'engine'],
  kind_fields: {
    training: [
      'batch_size',
      'loader_workers',
      'cpu_cores',
      'storage',
      'storage_bandwidth_gbs',
      'host_link',
      'pin_memory'
    ],
    inference: [
      'batch_size',
      'loader_workers',
      'cpu_cores',
      'storage',
      'storage_bandwidth_gbs',
      'host_link',
      'pin_memory'
    ],
    serving: [
      'arrival_rate_rps',
      'max_batch_size',
      'max_queue_delay_ms',
      'latency_slo_ms',
      'replicas',
      'loader_workers',
      'cpu_cores',
      'host_link',
      'pin_memory'
    ],
    llm: ['prompt_tokens', 'output_tokens', 'concurrency', 'batching', 'latency_slo_ms']
  }
};

const slider = (name: string) => CONTROLS[name] as SliderSpec;

describe('which controls a kind shows', () => {
  it('shows the common fields first, then the kind fields', () => {
    expect(visibleFields(CATALOG, 'training')).toEqual([
      'kind',
      'workload',
      'gpu',
      'precision',
      'engine',
      'batch_size',
      'loader_workers',
      'cpu_cores',
      'storage',
      'storage_bandwidth_gbs',
      'host_link',
      'pin_memory'
    ]);
  });

  it('shows only the fields of the kind', () => {
    const llm = visibleFields(CATALOG, 'llm');
    expect(llm).toEqual(expect.arrayContaining(['prompt_tokens', 'output_tokens', 'concurrency', 'batching']));
    expect(llm).not.toContain('loader_workers');
    const serving = visibleFields(CATALOG, 'serving');
    expect(serving).toContain('replicas');
    expect(serving).not.toContain('batch_size');
    expect(visibleFields(CATALOG, 'nonsense')).toEqual(CATALOG.common_fields);
  });

  it('has a control for every field the server lists for a kind', () => {
    for (const names of Object.values(CATALOG.kind_fields)) {
      for (const name of names) {
        expect(CONTROLS[name]).toBeDefined();
      }
    }
  });

  it('offers only language models for kind=llm', () => {
    expect(workloadsFor(CATALOG, 'llm')).toEqual(['gpt2', 'llama-2-7b']);
    expect(workloadsFor(CATALOG, 'training')).toHaveLength(3);
  });
});

describe('slider value mapping', () => {
  it('maps a log2 slider to powers of two', () => {
    const s = slider('batch_size');
    expect(positionCount(s)).toBe(12);
    expect(fromPosition(s, 0)).toBe(1);
    expect(fromPosition(s, 8)).toBe(256);
    expect(fromPosition(s, 12)).toBe(4096);
    expect(toPosition(s, 256)).toBe(8);
    expect(toPosition(s, 300)).toBe(8);
    expect(toPosition(s, 100000)).toBe(12);
    expect(toPosition(s, 0)).toBe(0);
    expect(fromPosition(slider('prompt_tokens'), positionCount(slider('prompt_tokens')))).toBe(32768);
  });

  it('maps a log slider over its decades with 3 significant digits, and back', () => {
    const s = slider('arrival_rate_rps');
    const n = positionCount(s);
    expect(n).toBe(100);
    expect(fromPosition(s, 0)).toBe(1);
    expect(fromPosition(s, n)).toBe(1e5);
    expect(fromPosition(s, 20)).toBe(10);
    expect(fromPosition(s, 1)).toBe(1.12);
    for (let p = 0; p <= n; p++) {
      const v = fromPosition(s, p);
      expect(Number(v.toPrecision(3))).toBe(v);
      expect(toPosition(s, v)).toBe(p);
    }
    expect(fromPosition(slider('latency_slo_ms'), positionCount(slider('latency_slo_ms')))).toBe(10000);
    // a value from elsewhere (the catalog's 7 GB/s) lands on the nearest position
    const bw = slider('storage_bandwidth_gbs');
    expect(fromPosition(bw, toPosition(bw, 7))).toBeCloseTo(7, 0);
  });

  it('maps a linear slider in steps and clamps out-of-range values', () => {
    const delay = slider('max_queue_delay_ms');
    expect(positionCount(delay)).toBe(100);
    expect(fromPosition(delay, 3)).toBe(1.5);
    expect(toPosition(delay, 1)).toBe(2);
    const workers = slider('loader_workers');
    expect(fromPosition(workers, 0)).toBe(0);
    expect(fromPosition(workers, 64)).toBe(64);
    expect(fromPosition(workers, 99)).toBe(64);
    expect(toPosition(workers, 1000)).toBe(64);
    expect(toPosition(slider('replicas'), 0)).toBe(0);
  });
});

describe('scenario editing', () => {
  it('shows the catalog value of a field the user did not set', () => {
    expect(resolvedValue(CATALOG, {}, 'batch_size')).toBe(256);
    expect(resolvedValue(CATALOG, { workload: 'gpt2' }, 'batch_size')).toBe(16);
    expect(resolvedValue(CATALOG, { batch_size: 64 }, 'batch_size')).toBe(64);
    expect(resolvedValue(CATALOG, {}, 'storage_bandwidth_gbs')).toBe(7);
    expect(resolvedValue(CATALOG, { storage: 'hdd' }, 'storage_bandwidth_gbs')).toBe(0.27);
    expect(resolvedValue(CATALOG, {}, 'loader_workers')).toBe(8);
    expect(resolvedValue(CATALOG, {}, 'host_link')).toBe('');
    expect(resolvedValue(CATALOG, { kind: 'llm' }, 'workload')).toBe('llama-2-7b');
    expect(resolvedValue(CATALOG, {}, 'arrival_rate_rps')).toBe(100);
    expect(resolvedValue(CATALOG, {}, 'concurrency')).toBe(16);
  });

  it('keeps the scenario valid when a field changes', () => {
    expect(setField(CATALOG, { workload: 'resnet50' }, 'kind', 'llm')).toEqual({ kind: 'llm', workload: 'llama-2-7b' });
    expect(setField(CATALOG, { workload: 'gpt2' }, 'kind', 'llm')).toEqual({ kind: 'llm', workload: 'gpt2' });
    expect(setField(CATALOG, { storage_bandwidth_gbs: 2 }, 'storage', 'hdd')).toEqual({ storage: 'hdd' });
    expect(setField(CATALOG, { host_link: 'pcie5' }, 'host_link', '')).toEqual({});
  });

  it('applies a suggestion, null meaning back to the catalog', () => {
    const next = applySuggestion(
      { storage_bandwidth_gbs: 1, loader_workers: 2 },
      { storage: 'nvme-gen4', storage_bandwidth_gbs: null, loader_workers: 4 }
    );
    expect(next).toEqual({ storage: 'nvme-gen4', loader_workers: 4 });
  });
});

describe('the %hwsim line', () => {
  it('is bare for the default scenario', () => {
    expect(scenarioToLine(CATALOG, {})).toBe('%hwsim run');
    expect(scenarioToLine(CATALOG, { kind: 'training', loader_workers: 8, pin_memory: true })).toBe('%hwsim run');
  });

  it('holds the fields that differ from the defaults, in the catalog order', () => {
    const line = scenarioToLine(CATALOG, {
      pin_memory: false,
      loader_workers: 2,
      batch_size: 128,
      storage_bandwidth_gbs: 3.16,
      gpu: 'a100-sxm-80gb',
      workload: 'resnet50'
    });
    expect(line).toBe(
      '%hwsim run workload=resnet50 batch_size=128 loader_workers=2 storage_bandwidth_gbs=3.16 pin_memory=false'
    );
    expect(nonDefaultFields(CATALOG, { precision: 'BF16', engine: 'torch-compile' })).toEqual({
      engine: 'torch-compile'
    });
  });

  it('reads back as the same scenario (as the magic parses values)', () => {
    const scenario = { kind: 'serving', arrival_rate_rps: 1.12, max_batch_size: 32, pin_memory: false, gpu: 't4' };
    expect(lineToScenario(scenarioToLine(CATALOG, scenario))).toEqual(scenario);
    expect(lineToScenario('%hwsim estimate batch_size=64')).toEqual({ batch_size: 64 });
    expect(() => lineToScenario('%hwsim run batch_size')).toThrow(/key=value/);
  });

  it('writes values that jupyter_hwsim.cli.parse_value reads back', () => {
    expect(parseValue('256')).toBe(256);
    expect(parseValue('0.5')).toBe(0.5);
    expect(parseValue('1e5')).toBe(100000);
    expect(parseValue('true')).toBe(true);
    expect(parseValue('False')).toBe(false);
    expect(parseValue('nvme-gen4')).toBe('nvme-gen4');
    expect(formatValue(true)).toBe('true');
    expect(formatValue(0.1 + 0.2)).toBe('0.30000000000000004');
    expect(formatValue('my disk')).toBe("'my disk'");
    expect(splitWords(`a='my disk' b="it's"`)).toEqual(['a=my disk', "b=it's"]);
    expect(splitWords(formatValue("it's"))).toEqual(["it's"]);
  });

  it('loads the extension first when the notebook does not', () => {
    const line = '%hwsim run loader_workers=4';
    expect(cellSource(line, ['import x'])).toBe(`%load_ext jupyter_hwsim\n${line}`);
    expect(cellSource(line, [])).toBe(`%load_ext jupyter_hwsim\n${line}`);
    expect(cellSource(line, ['x = 1\n%load_ext jupyter_hwsim\n'])).toBe(line);
    expect(cellSource(line, ['# %load_ext jupyter_hwsim_other'])).toBe(`%load_ext jupyter_hwsim\n${line}`);
  });
});

describe('server errors', () => {
  const shown = visibleFields(CATALOG, 'llm');

  it('goes next to the control it names, else to the top', () => {
    expect(errorTarget({ field: 'prompt_tokens', message: 'x' }, shown)).toBe('prompt_tokens');
    expect(errorTarget({ field: 'steps', message: 'x' }, shown)).toBeNull();
    expect(errorTarget({ field: 'body', message: 'x' }, shown)).toBeNull();
    expect(errorTarget({ field: 'loader_workers', message: 'x' }, shown)).toBeNull(); // hidden for llm
    expect(errorTarget({ message: 'busy' }, shown)).toBeNull();
  });

  it('is put in words', () => {
    const body = JSON.stringify({
      error: {
        field: 'prompt_tokens',
        value: '4096',
        accepted: 'fewer than the 4096-token context of llama-2-7b',
        hint: '',
        message: 'prompt_tokens=4096 is not accepted: fewer than the 4096-token context of llama-2-7b'
      }
    });
    const e = errorFromResponse(400, body);
    expect(e.field).toBe('prompt_tokens');
    expect(errorText(e)).toMatch(/prompt_tokens=4096 is not accepted/);
    expect(errorText({ field: 'seed', value: "'x'", accepted: 'a non-negative integer', message: '' })).toBe(
      "seed='x' is not accepted: a non-negative integer"
    );
    expect(errorFromResponse(404, '<html>Not found</html>').message).toMatch(/server extension/);
    expect(
      errorFromResponse(503, JSON.stringify({ error: { message: '32 simulations are already waiting' } }))
    ).toEqual({ message: '32 simulations are already waiting' });
    expect(errorFromResponse(500, 'oops').message).toBe('the server answered 500: oops');
  });

  it('asks again, a bounded number of times, only when the server was busy or slow', () => {
    expect(shouldRetry(504, 0)).toBe(true);
    expect(shouldRetry(503, 1)).toBe(true);
    expect(shouldRetry(504, 2)).toBe(false);
    expect(shouldRetry(400, 0)).toBe(false);
    expect(shouldRetry(0, 0)).toBe(false);
    expect(isTransient(0)).toBe(true);
    expect(isTransient(413)).toBe(false);
  });
});

describe('request sequencing', () => {
  it('drops an answer older than the newest shown', () => {
    const seq = new Sequencer();
    const e1 = seq.issue('estimate', 1);
    const e2 = seq.issue('estimate', 2);
    expect(seq.accept(e2)).toBe(true);
    expect(seq.accept(e1)).toBe(false);
    expect(seq.shown).toBe(e2);
  });

  it('never lets an estimate replace the simulation of the same or a newer scenario', () => {
    const seq = new Sequencer();
    const e1 = seq.issue('estimate', 1);
    const s1 = seq.issue('simulate', 1);
    expect(seq.accept(s1)).toBe(true);
    expect(seq.accept(e1)).toBe(false);
    // an estimate of the same scenario sent after the simulation (a coalesced one) is not wanted either
    const late = seq.issue('estimate', 1);
    expect(seq.wanted(late)).toBe(false);
    expect(seq.accept(late)).toBe(false);
    // a newer scenario's estimate replaces it; the simulation of the older scenario then cannot come back
    const e2 = seq.issue('estimate', 2);
    const s1again = seq.issue('simulate', 1);
    expect(seq.accept(e2)).toBe(true);
    expect(seq.accept(s1again)).toBe(false);
    // and the simulation of the newer scenario upgrades its estimate
    const s2 = seq.issue('simulate', 2);
    expect(seq.accept(s2)).toBe(true);
  });

  it('orders answers of the same kind and scenario by request', () => {
    const seq = new Sequencer();
    const a = seq.issue('simulate', 3);
    const b = seq.issue('simulate', 3);
    expect(seq.accept(b)).toBe(true);
    expect(seq.accept(a)).toBe(false);
  });
});

describe('coalescing and debouncing', () => {
  it('keeps one request in flight and sends only the newest waiting one', async () => {
    const started: number[] = [];
    const finish: (() => void)[] = [];
    const c = new Coalescer<number>(n => {
      started.push(n);
      return new Promise<void>(resolve => finish.push(resolve));
    });
    c.push(1);
    c.push(2);
    c.push(3);
    expect(started).toEqual([1]);
    expect(c.busy).toBe(true);
    finish.shift()!();
    await new Promise(r => setTimeout(r, 0));
    expect(started).toEqual([1, 3]);
    finish.shift()!();
    await new Promise(r => setTimeout(r, 0));
    expect(c.busy).toBe(false);
  });

  it('goes on after a failed request', async () => {
    const started: number[] = [];
    const c = new Coalescer<number>(n => {
      started.push(n);
      return Promise.reject(new Error('refused'));
    });
    c.push(1);
    c.push(2);
    await new Promise(r => setTimeout(r, 0));
    await new Promise(r => setTimeout(r, 0));
    expect(started).toEqual([1, 2]);
  });

  it('fires once after the last schedule, or at once on flush', () => {
    jest.useFakeTimers();
    try {
      const fn = jest.fn();
      const d = new Debouncer(fn, 350);
      d.schedule();
      jest.advanceTimersByTime(300);
      d.schedule();
      jest.advanceTimersByTime(300);
      expect(fn).not.toHaveBeenCalled();
      expect(d.pending).toBe(true);
      jest.advanceTimersByTime(60);
      expect(fn).toHaveBeenCalledTimes(1);
      d.schedule();
      d.flush();
      expect(fn).toHaveBeenCalledTimes(2);
      jest.advanceTimersByTime(1000);
      expect(fn).toHaveBeenCalledTimes(2);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('charts', () => {
  it('fit a single or layered spec to the width, and leave composed ones alone', () => {
    const spec = { layer: [], width: 260, datasets: {} };
    expect(fitWidth(spec, 320.7)).toEqual({
      layer: [],
      width: 320,
      datasets: {},
      autosize: { type: 'fit-x', contains: 'padding' }
    });
    expect(spec.width).toBe(260);
    expect(fitWidth(spec, 0)).toBe(spec);
    const concat = { hconcat: [], width: 260 };
    expect(fitWidth(concat, 320)).toBe(concat);
  });
});

describe('read-outs', () => {
  it('formats like the Python report', () => {
    expect(formatNumber(1234.56)).toBe('1,234.6');
    expect(formatNumber(0.5, 2)).toBe('0.50');
    expect(formatSignificant(0.13912)).toBe('0.139');
    expect(formatSignificant(9.0612)).toBe('9.06');
    expect(formatSignificant(2151.9)).toBe('2,150');
    expect(formatFieldValue(256, 'samples')).toBe('256 samples');
    expect(formatFieldValue(3.16227766, 'GB/s')).toBe('3.16 GB/s');
    expect(formatFieldValue(1.5, 'x')).toBe('1.5');
  });

  it('explains a busy GPU that does little math only past 20 points', () => {
    expect(busyMfuGap(0.9, 0.3)).toMatch(/busy 90% of the time but does useful math at 30%/);
    expect(busyMfuGap(0.5, 0.35)).toBe('');
  });
});
