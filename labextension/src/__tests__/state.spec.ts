import { HwsimApiError } from '../errors';
import { ITicket } from '../requests';
import { HwsimState, IComputeApi, IStateListener, savedScenario, SETTLE_MS } from '../state';
import { ICatalog, IFieldSpec, IResult, IServerError, Method, Scenario } from '../types';

function field(type: IFieldSpec['type'], dflt: IFieldSpec['default']): IFieldSpec {
  return { type, unit: '', help: '', default: dflt, lo: 0, hi: 1e7, lo_open: false, choices: null, accepted: '' };
}

const CATALOG: ICatalog = {
  kinds: ['training'],
  precisions: ['bf16'],
  fusions: ['eager'],
  engines: {},
  batching: ['static'],
  gpus: {},
  storage: {},
  links: {},
  workloads: { resnet50: { id: 'resnet50', name: 'ResNet-50', default_batch_size: 256 } },
  fields: {
    kind: field('str', 'training'),
    workload: field('str', null),
    batch_size: field('int', null),
    loader_workers: field('int', 8)
  },
  common_fields: ['kind', 'workload'],
  kind_fields: { training: ['batch_size', 'loader_workers'] }
};

const RESULT = { throughput: 1 } as IResult;

/** A request the test answers by hand. */
interface ICall {
  method: Method;
  scenario: Scenario;
  resolve: (r: IResult) => void;
  reject: (e: unknown) => void;
}

function setup(saved: Scenario = {}) {
  const calls: ICall[] = [];
  const events: string[] = [];
  const stored: Scenario[] = [];
  const api: IComputeApi = {
    catalog: () => Promise.resolve(CATALOG),
    compute: (method, scenario) =>
      new Promise<IResult>((resolve, reject) => calls.push({ method, scenario, resolve, reject }))
  };
  const listener: IStateListener = {
    catalogLoaded: () => events.push('catalog'),
    startFailed: (e: IServerError) => events.push(`failed: ${e.message}`),
    scenarioChanged: () => events.push('changed'),
    result: (_r: IResult, t: ITicket) => events.push(`result ${t.method} ${t.revision}`),
    error: (e: IServerError, t: ITicket, transient: boolean) =>
      events.push(`error ${t.method} ${t.revision} ${e.message} ${transient}`),
    status: (text: string) => events.push(`status ${text}`),
    activity: () => undefined
  };
  const store = { load: () => Promise.resolve(saved), save: (s: Scenario) => stored.push(s) };
  const state = new HwsimState(api, store, listener);
  return { state, calls, events, stored };
}

const flush = () => new Promise(r => setTimeout(r, 0));

describe('the sidebar state', () => {
  it('loads the catalog and the saved scenario, then estimates and simulates it', async () => {
    const { state, calls, events, stored } = setup({ loader_workers: 2, gone: 'x' });
    await state.start();
    expect(state.scenario).toEqual({ loader_workers: 2 });
    expect(events).toEqual(['status loading the catalog…', 'catalog', 'changed']);
    expect(calls.map(c => c.method)).toEqual(['estimate', 'simulate']);
    expect(stored).toEqual([{ loader_workers: 2 }]);
    expect(state.busy).toBe(true);
    expect(state.running).toBe('simulate');
    calls[1].resolve(RESULT);
    await flush();
    calls[0].resolve(RESULT); // the estimate arrives after the simulation: dropped
    await flush();
    expect(events.slice(3)).toEqual(['result simulate 1']);
    expect(state.busy).toBe(false);
    state.dispose();
  });

  it('estimates while a slider moves and simulates once it rests', async () => {
    const { state, calls, events } = setup();
    await state.start();
    calls.splice(0).forEach(c => c.resolve(RESULT));
    await flush();
    jest.useFakeTimers();
    try {
      state.set('batch_size', 64, 'moving');
      state.set('batch_size', 128, 'moving');
      expect(state.revision).toBe(3);
      expect(calls.map(c => `${c.method} ${c.scenario.batch_size}`)).toEqual(['estimate 64']);
      expect(state.busy).toBe(true);
      jest.advanceTimersByTime(SETTLE_MS);
      expect(calls.map(c => c.method)).toEqual(['estimate', 'simulate']);
      expect(calls[1].scenario).toEqual({ batch_size: 128 });
    } finally {
      jest.useRealTimers();
    }
    // the first estimate (of batch_size=64) is shown, stale; the one waiting meanwhile is for the newest value
    calls[0].resolve(RESULT);
    await flush();
    expect(events.slice(-1)).toEqual(['result estimate 2']);
    expect(calls.map(c => `${c.method} ${c.scenario.batch_size}`)).toEqual([
      'estimate 64',
      'simulate 128',
      'estimate 128'
    ]);
    calls[1].resolve(RESULT);
    await flush();
    calls[2].resolve(RESULT); // the estimate of the scenario already simulated: dropped
    await flush();
    expect(events.slice(-1)).toEqual(['result simulate 3']);
    state.dispose();
  });

  it('asks again after a busy answer, then shows the error', async () => {
    const { state, calls, events } = setup();
    await state.start();
    calls.splice(0).forEach(c => c.resolve(RESULT));
    await flush();
    jest.useFakeTimers();
    try {
      state.set('loader_workers', 4, 'settled');
      const busy = new HwsimApiError(503, { message: 'busy' });
      for (let attempt = 0; attempt < 3; attempt++) {
        const simulation = calls.find(c => c.method === 'simulate')!;
        calls.splice(0).forEach(c => (c === simulation ? c.reject(busy) : c.resolve(RESULT)));
        await jest.advanceTimersByTimeAsync(1000);
      }
    } finally {
      jest.useRealTimers();
    }
    expect(events.filter(e => e.startsWith('status busy'))).toHaveLength(2);
    expect(events[events.length - 1]).toBe('error simulate 2 busy true');
    state.dispose();
  });

  it('reports a catalog that cannot be loaded, and loads it on retry', async () => {
    const events: string[] = [];
    const api = { catalog: jest.fn(), compute: jest.fn(() => new Promise<IResult>(() => undefined)) };
    api.catalog.mockRejectedValueOnce(new HwsimApiError(404, { message: 'no server extension' }));
    api.catalog.mockResolvedValueOnce(CATALOG);
    const state = new HwsimState(api, null, {
      catalogLoaded: () => events.push('catalog'),
      startFailed: e => events.push(`failed: ${e.message}`),
      scenarioChanged: () => undefined,
      result: () => undefined,
      error: () => undefined,
      status: () => undefined,
      activity: () => undefined
    });
    await state.start();
    expect(state.catalog).toBeNull();
    state.retry();
    await flush();
    expect(events).toEqual(['failed: no server extension', 'catalog']);
    expect(state.catalog).toBe(CATALOG);
    expect(api.compute).toHaveBeenCalledTimes(2);
    state.dispose();
  });

  it('keeps only the string, number and boolean fields of a saved scenario', () => {
    expect(savedScenario({ a: 1, b: 'x', c: true, d: null, e: [1], f: { g: 1 } })).toEqual({ a: 1, b: 'x', c: true });
    expect(savedScenario([1])).toEqual({});
    expect(savedScenario(undefined)).toEqual({});
  });
});
