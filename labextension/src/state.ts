/**
 * The sidebar's state: the catalog, the scenario the user edits and its revision, and the requests that compute
 * it (the estimate while a slider moves, the simulation once it rests). At most one request is in flight; while it
 * runs, changes only mark what the newest scenario still needs (latest wins), so a fast slider never queues work
 * and never freezes the page. No DOM and no JupyterLab at runtime, so jest tests it in plain node; the panel shows
 * what it reports through `IStateListener`.
 */

import { errorText, HwsimApiError, isTransient, shouldRetry, toServerError } from './errors';
import { applySuggestion, setField } from './model';
import { Debouncer, ITicket, Sequencer } from './requests';
import { ICatalog, IResult, IServerError, Method, Scenario, Value } from './types';

/** How long a slider must rest before the simulation replaces the estimate. */
export const SETTLE_MS = 350;
export const SEED = 0;
const RETRY_MS = 1000;

/** A slider moving (estimate now, simulate once it rests) or a value settled (simulate now). */
export type Phase = 'moving' | 'settled';

/**
 * The requests for one scenario, in order: the estimate (numbers at once), the simulation (the settled numbers),
 * then the simulation with the suggestions (each candidate change re-simulated: seconds, so it comes last).
 */
export type Step = Method | 'suggest';

/** What the state asks of the REST client (`HwsimApi`). */
export interface IComputeApi {
  catalog(): Promise<ICatalog>;
  /** `suggest`: also search what would help (slower: every change is re-simulated) */
  compute(method: Method, scenario: Scenario, seed?: number, suggest?: boolean, signal?: AbortSignal): Promise<IResult>;
}

/** Where the scenario is kept between sessions; `load` resolves to {} when nothing (valid) is kept. */
export interface IScenarioStore {
  load(): Promise<Scenario>;
  save(scenario: Scenario): void;
}

/** How the state reports to the panel. */
export interface IStateListener {
  /** The catalog is loaded: the controls can be built. */
  catalogLoaded(catalog: ICatalog): void;
  /** The catalog could not be loaded. */
  startFailed(error: IServerError): void;
  /** A new scenario revision: the controls show it, the numbers shown are now those of an older one. */
  scenarioChanged(): void;
  /** The newest answer; `suggested`: it carries the suggestions (else they follow in a later answer). */
  result(result: IResult, ticket: ITicket, suggested: boolean): void;
  /** The newest answer is an error; `transient`: it may pass by itself (offer to retry). */
  error(error: IServerError, ticket: ITicket, transient: boolean): void;
  status(text: string, method: string): void;
  /** Requests started or ended: `busy` and `running` may have changed. */
  activity(): void;
}

/** The scenario kept in a store, if it is one: only its string, number and boolean fields. */
export function savedScenario(saved: unknown): Scenario {
  if (!saved || typeof saved !== 'object' || Array.isArray(saved)) {
    return {};
  }
  const out: Scenario = {};
  for (const [k, v] of Object.entries(saved)) {
    if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
      out[k] = v;
    }
  }
  return out;
}

export class HwsimState {
  constructor(
    private readonly _api: IComputeApi,
    private readonly _store: IScenarioStore | null,
    private readonly _listener: IStateListener
  ) {
    this._settle = new Debouncer(() => {
      this._want.simulate = true;
      this._want.suggest = true;
      this._pump();
    }, SETTLE_MS);
  }

  /** The catalog, once loaded. */
  get catalog(): ICatalog | null {
    return this._catalog;
  }

  /** The scenario shown (the fields the user set). */
  get scenario(): Scenario {
    return this._scenario;
  }

  /** The revision of the scenario; every change makes a new one. */
  get revision(): number {
    return this._revision;
  }

  /** Whether a request is in flight or one is still wanted (a simulation waits for a slider to rest). */
  get busy(): boolean {
    const want = this._want;
    return this._inFlight !== null || this._settle.pending || want.estimate || want.simulate || want.suggest;
  }

  /** The request in flight, or null. */
  get running(): Step | null {
    return this._inFlight;
  }

  dispose(): void {
    this._settle.cancel();
  }

  /** Load the catalog and the saved scenario (once; again only after a failure). */
  async start(): Promise<void> {
    if (this._starting) {
      return;
    }
    this._starting = true;
    this._listener.status('loading the catalog…', 'loading');
    let catalog: ICatalog;
    let saved: Scenario;
    try {
      [catalog, saved] = await Promise.all([this._api.catalog(), this._load()]);
    } catch (reason) {
      this._starting = false;
      this._listener.startFailed(toServerError(reason));
      return;
    }
    this._catalog = catalog;
    // keep only fields the server still knows, so an old saved scenario does not fail as a whole
    this._scenario = Object.fromEntries(Object.entries(saved).filter(([k]) => k in catalog.fields));
    this._listener.catalogLoaded(catalog);
    this._changed('settled');
  }

  /** Ask again: the catalog if it failed, else the current scenario. */
  retry(): void {
    if (this._catalog) {
      this._changed('settled');
    } else {
      void this.start();
    }
  }

  /** The user set a field. */
  set(name: string, value: Value, phase: Phase): void {
    if (!this._catalog) {
      return;
    }
    if (this._scenario[name] === value) {
      // the change event that ends a drag repeats the value of the last input event: just simulate now
      if (phase === 'settled' && this._settle.pending) {
        this._settle.flush();
        this._save();
      }
      return;
    }
    this._scenario = setField(this._catalog, this._scenario, name, value);
    this._changed(phase);
  }

  /** Back to the default scenario. */
  reset(): void {
    if (this._catalog) {
      this._scenario = {};
      this._changed('settled');
    }
  }

  /** Apply a suggestion's fields. */
  apply(fields: { [name: string]: Value | null }): void {
    this._scenario = applySuggestion(this._scenario, fields);
    this._changed('settled');
  }

  private async _load(): Promise<Scenario> {
    try {
      return this._store ? await this._store.load() : {};
    } catch {
      return {};
    }
  }

  private _save(): void {
    this._store?.save(this._scenario);
  }

  /** The scenario changed: estimate it first; simulate it next (settled) or once the slider rests (moving). */
  private _changed(phase: Phase): void {
    this._revision++;
    this._retries = { estimate: 0, simulate: 0, suggest: 0 };
    this._listener.scenarioChanged();
    // what an older revision still wanted is dropped: only the newest scenario is computed
    this._want = { estimate: true, simulate: false, suggest: false };
    // a search for suggestions (seconds) of an older scenario must not hold back the preview of this one
    if (this._inFlight === 'suggest') {
      this._abort?.abort();
    }
    if (phase === 'settled') {
      this._settle.cancel();
      this._want.simulate = true;
      this._want.suggest = true;
      this._save();
    } else {
      this._settle.schedule();
    }
    this._pump();
    this._listener.activity();
  }

  /** Send the next request the newest scenario wants, unless one is in flight (it calls again when it ends). */
  private _pump(): void {
    if (this._inFlight !== null) {
      return;
    }
    const want = this._want;
    const step: Step | null = want.estimate ? 'estimate' : want.simulate ? 'simulate' : want.suggest ? 'suggest' : null;
    if (step === null) {
      return;
    }
    this._want[step] = false;
    void this._request(step);
  }

  /** One request for the current scenario; its answer is shown unless a newer one already is. */
  private async _request(step: Step): Promise<void> {
    const method: Method = step === 'estimate' ? 'estimate' : 'simulate';
    const ticket = this._sequencer.issue(method, this._revision);
    if (!this._sequencer.wanted(ticket)) {
      this._pump();
      return; // a simulation of this scenario is already shown: its estimate adds nothing
    }
    this._inFlight = step;
    this._listener.activity();
    try {
      const abort = new AbortController();
      this._abort = abort;
      const result = await this._api.compute(method, { ...this._scenario }, SEED, step === 'suggest', abort.signal);
      if (this._sequencer.accept(ticket)) {
        this._listener.result(result, ticket, step === 'suggest');
      }
    } catch (reason) {
      if (this._abort?.signal.aborted) {
        return; // dropped for a newer scenario (finally sends its request)
      }
      const status = reason instanceof HwsimApiError ? reason.status : 0;
      const error = toServerError(reason);
      if (ticket.revision === this._revision && shouldRetry(status, this._retries[step])) {
        // a busy or warming-up server (its worker processes start on first use): ask again shortly
        this._retries[step]++;
        this._listener.status(`${errorText(error)}; trying again…`, 'retry');
        setTimeout(() => {
          if (ticket.revision === this._revision) {
            this._want[step] = true;
            this._pump();
            this._listener.activity();
          }
        }, RETRY_MS);
      } else if (this._sequencer.accept(ticket)) {
        this._listener.error(error, ticket, isTransient(status));
      }
    } finally {
      this._abort = null;
      this._inFlight = null;
      this._pump();
      this._listener.activity();
    }
  }

  private readonly _sequencer = new Sequencer();
  private readonly _settle: Debouncer;
  private _inFlight: Step | null = null;
  private _abort: AbortController | null = null;
  /** What the newest revision still needs. */
  private _want: { [m in Step]: boolean } = { estimate: false, simulate: false, suggest: false };
  private _retries: { [m in Step]: number } = { estimate: 0, simulate: 0, suggest: 0 };
  private _catalog: ICatalog | null = null;
  private _scenario: Scenario = {};
  private _revision = 0;
  private _starting = false;
}
