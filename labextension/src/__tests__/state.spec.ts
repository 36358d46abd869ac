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
  method: Method | 'suggest';
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
    compute: (method, scenario, _seed, suggest, signal) =>
      new Promise<IResult>((resolve, reject) => {
        calls.push({ method: suggest ? 'suggest' : method, scenario, resolve, reject });
        signal?.addEventListener('abort', () => reject(new Error('aborted')));
      })
  };
  const listener: IStateListener = {
    catalogLoaded: () => events.push('catalog'),
    startFailed: (e: IServerError) => events.push(`failed: ${e.message}`),
    scenarioChanged: () => events.push('changed'),
    result: (_r: IResult, t: ITicket, suggested: boolean) =>
      events.push(`result ${t.method}${suggested ? '+suggest' : ''} ${t.revision}`),
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
/** Settle pending promise callbacks without timers (they may be faked). */
const microflush = async () => {
  for (let i = 0; i < 20; i++) {
    await Promise.resolve();
  }
};

describe('the sidebar state', () => {
  it('loads the catalog and the saved scenario, then estimates and, after the estimate, simulates it', async () => {
    const { state, calls, events, stored } = setup({ loader_workers: 2, gone: 'x' });
    await state.start();
    expect(state.scenario).toEqual({ loader_workers: 2 });
    expect(events).toEqual(['status loading the catalog…', 'catalog', 'changed']);
    // one request at a time: the estimate first (numbers at once), the simulation once it is in
    expect(calls.map(c => c.method)).toEqual(['estimate']);
    expect(stored).toEqual([{ loader_workers: 2 }]);
    expect(state.busy).toBe(true);
    expect(state.running).toBe('estimate');
    calls[0].resolve(RESULT);
    await flush();
    expect(calls.map(c => c.method)).toEqual(['estimate', 'simulate']);
    expect(state.running).toBe('simulate');
    calls[1].resolve(RESULT);
    await flush();
    // then the suggestions, which re-simulate every candidate change: last
    expect(calls.map(c => c.method)).toEqual(['estimate', 'simulate', 'suggest']);
    expect(state.running).toBe('suggest');
    calls[2].resolve(RESULT);
    await flush();
    expect(events.slice(3)).toEqual(['result estimate 1', 'result simulate 1', 'result simulate+suggest 1']);
    expect(state.busy).toBe(false);
    state.dispose();
  });

  it('estimates while a slider moves and simulates once it rests, one request at a time', async () => {
    const { state, calls, events } = setup();
    await state.start();
    for (let i = 0; i < 3; i++) {
      calls[i].resolve(RESULT);
      await flush();
    }
    calls.splice(0);
    jest.useFakeTimers();
    try {
      state.set('batch_size', 64, 'moving');
      state.set('batch_size', 128, 'moving');
      expect(state.revision).toBe(3);
      expect(calls.map(c => `${c.method} ${c.scenario.batch_size}`)).toEqual(['estimate 64']);
      expect(state.busy).toBe(true);
      jest.advanceTimersByTime(SETTLE_MS);
      // the slider rests, but a request is in flight: nothing more is sent yet
      expect(calls.map(c => c.method)).toEqual(['estimate']);
    } finally {
      jest.useRealTimers();
    }
    // the first estimate (of batch_size=64) is shown, stale; then the newest value is estimated, then simulated
    calls[0].resolve(RESULT);
    await flush();
    expect(events.slice(-1)).toEqual(['result estimate 2']);
    expect(calls.map(c => `${c.method} ${c.scenario.batch_size}`)).toEqual(['estimate 64', 'estimate 128']);
    calls[1].resolve(RESULT);
    await flush();
    expect(calls.map(c => `${c.method} ${c.scenario.batch_size}`)).toEqual([
      'estimate 64',
      'estimate 128',
      'simulate 128'
    ]);
    calls[2].resolve(RESULT);
    await flush();
    calls[3].resolve(RESULT);
    await flush();
    expect(calls.map(c => c.method).slice(-1)).toEqual(['suggest']);
    expect(events.slice(-3)).toEqual(['result estimate 3', 'result simulate 3', 'result simulate+suggest 3']);
    expect(state.busy).toBe(false);
    state.dispose();
  });

  it('coalesces fifty changes: never more than one request in flight, the last value simulated', async () => {
    const { state, calls, events } = setup();
    await state.start();
    let inFlight = 0;
    let most = 0;
    const answer = async () => {
      // answer whatever is pending, as a server would, one at a time
      while (calls.length) {
        const c = calls.shift()!;
        inFlight = 1;
        c.resolve({ throughput: Number(c.scenario.batch_size ?? 0) } as IResult);
        await microflush();
        inFlight = 0;
      }
    };
    jest.useFakeTimers();
    try {
      for (let i = 1; i <= 50; i++) {
        state.set('batch_size', i, 'moving');
        most = Math.max(most, calls.length + inFlight);
        if (i % 7 === 0) {
          await answer();
        }
      }
      expect(most).toBeLessThanOrEqual(1);
      jest.advanceTimersByTime(SETTLE_MS);
    } finally {
      jest.useRealTimers();
    }
    await answer();
    await answer();
    expect(state.busy).toBe(false);
    expect(events.slice(-2)).toEqual([
      `result simulate ${state.revision}`,
      `result simulate+suggest ${state.revision}`
    ]);
    state.dispose();
  });

  it('drops a search for suggestions of an older scenario as soon as a slider moves', async () => {
    const { state, calls, events } = setup();
    await state.start();
    calls[0].resolve(RESULT);
    await flush();
    calls[1].resolve(RESULT);
    await flush();
    expect(state.running).toBe('suggest');
    state.set('batch_size', 64, 'moving');
    await flush();
    // the search was aborted, and the preview of the new value is on its way
    expect(calls.map(c => `${c.method} ${c.scenario.batch_size}`).slice(-1)).toEqual(['estimate 64']);
    expect(state.running).toBe('estimate');
    expect(events.some(e => e.startsWith('error'))).toBe(false);
    state.dispose();
  });

  it('asks again after a busy answer, then shows the error', async () => {
    const { state, calls, events } = setup();
    await state.start();
    for (let i = 0; i < 3; i++) {
      calls.shift()!.resolve(RESULT);
      await flush();
    }
    jest.useFakeTimers();
    try {
      state.set('loader_workers', 4, 'settled');
      calls.shift()!.resolve(RESULT); // its estimate
      await microflush();
      calls.shift()!.resolve(RESULT); // its simulation
      await microflush();
      const busy = new HwsimApiError(503, { message: 'busy' });
      for (let attempt = 0; attempt < 3; attempt++) {
        const simulation = calls.shift()!;
        expect(simulation.method).toBe('suggest');
        simulation.reject(busy);
        await microflush();
        await jest.advanceTimersByTimeAsync(1000);
      }
    } finally {
      jest.useRealTimers();
    }
    expect(events.filter(e => e.startsWith('status busy'))).toHaveLength(2);
    expect(events[events.length - 1]).toBe('error simulate 2 busy true');
    expect(events).toContain('result simulate 2'); // the numbers stay: only the suggestions failed
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
    expect(api.compute).toHaveBeenCalledTimes(1); // the estimate; the simulation waits for it
    state.dispose();
  });

  it('keeps only the string, number and boolean fields of a saved scenario', () => {
    expect(savedScenario({ a: 1, b: 'x', c: true, d: null, e: [1], f: { g: 1 } })).toEqual({ a: 1, b: 'x', c: true });
    expect(savedScenario([1])).toEqual({});
    expect(savedScenario(undefined)).toEqual({});
  });
});
