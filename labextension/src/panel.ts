import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IStateDB } from '@jupyterlab/statedb';
import { Collapser } from '@jupyterlab/ui-components';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { HwsimApi, HwsimApiError } from './api';
import { ChartSlot } from './charts';
import {
  applySuggestion,
  busyMfuGap,
  cellSource,
  Coalescer,
  CONTROLS,
  Debouncer,
  errorTarget,
  errorText,
  formatFieldValue,
  formatNumber,
  formatPercent,
  fromPosition,
  ICatalog,
  IResult,
  isTransient,
  IServerError,
  ITicket,
  latencyLabel,
  Method,
  positionCount,
  resolvedValue,
  Scenario,
  scenarioToLine,
  Sequencer,
  setField,
  shouldRetry,
  SliderSpec,
  toPosition,
  Value,
  visibleFields,
  workloadsFor
} from './model';

export const STATE_KEY = 'jupyter-hwsim:scenario';

/** How long a slider must rest before the simulation replaces the estimate. */
const SETTLE_MS = 350;
const SEED = 0;
const MAX_SUGGESTIONS = 5;
const RETRY_MS = 1000;

// each spec carries its own title
const MAIN_CHARTS = ['utilization', 'gpu_time', 'curve', 'memory'];
const MORE_CHARTS = ['roofline', 'timeline'];

const NO_NOTEBOOK = 'Open a notebook to insert a cell';

export namespace HwsimPanel {
  export interface IOptions {
    rendermime: IRenderMimeRegistry;
    tracker: INotebookTracker | null;
    state: IStateDB | null;
    /** resolves when the workspace (and so the state database) is restored */
    restored: Promise<unknown>;
    api?: HwsimApi;
  }
}

/** A form control and the nodes around it. */
interface IControlRow {
  row: HTMLElement;
  input: HTMLInputElement | HTMLSelectElement;
  readout: HTMLElement;
  error: HTMLElement;
}

/**
 * The "HW what-if" sidebar: controls built from the server's catalog; the estimate while a slider moves, the
 * simulation once it rests; the numbers, bottleneck, suggestions and charts of the newest answer.
 */
export class HwsimPanel extends Panel {
  constructor(options: HwsimPanel.IOptions) {
    super();
    this.addClass('jp-hwsim-panel');
    this._tracker = options.tracker;
    this._state = options.state;
    this._restored = options.restored;
    this._api = options.api ?? new HwsimApi();

    this._view = new Widget();
    this._view.addClass('jp-hwsim-view');
    this._buildView(this._view.node);
    this.addWidget(this._view);

    const charts = new Panel();
    charts.addClass('jp-hwsim-charts');
    const more = new Panel();
    more.addClass('jp-hwsim-charts');
    more.title.label = 'Roofline and timeline';
    for (const [group, specs] of [
      [charts, MAIN_CHARTS],
      [more, MORE_CHARTS]
    ] as const) {
      for (const name of specs) {
        const slot = new ChartSlot(options.rendermime, name);
        group.addWidget(slot);
        this._charts.set(name, slot);
      }
    }
    this.addWidget(charts);
    const collapser = new Collapser({ widget: more });
    collapser.addClass('jp-hwsim-more');
    collapser.collapsed = true;
    this.addWidget(collapser);

    this._estimates = new Coalescer(() => this._request('estimate'));
    this._simulations = new Coalescer(() => this._request('simulate'));
    this._settle = new Debouncer(() => this._simulations.push(undefined), SETTLE_MS);

    this._tracker?.currentChanged.connect(this._updateInsertButton, this);
    this._updateInsertButton();
  }

  /** The scenario shown (the fields the user set). */
  get scenario(): Scenario {
    return { ...this._scenario };
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._settle.cancel();
    this._tracker?.currentChanged.disconnect(this._updateInsertButton, this);
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this._start();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    if (this.isVisible) {
      void this._start();
    }
  }

  // -- start ------------------------------------------------------------------------------------------------

  /** Load the catalog and the saved scenario on first show (a hidden sidebar costs the server nothing). */
  private async _start(): Promise<void> {
    if (this._starting) {
      return;
    }
    this._starting = true;
    this._setStatus('loading the catalog…', 'loading');
    let catalog: ICatalog;
    let saved: Scenario;
    try {
      [catalog, saved] = await Promise.all([this._api.catalog(), this._restore()]);
    } catch (reason) {
      this._starting = false;
      this._showTopError(toServerError(reason).message, true);
      this._setStatus('', 'error');
      return;
    }
    this._catalog = catalog;
    // keep only fields the server still knows, so an old saved scenario does not fail as a whole
    this._scenario = Object.fromEntries(Object.entries(saved).filter(([k]) => k in catalog.fields));
    this._showTopError('');
    this._buildControls(catalog);
    this._changed('settled');
  }

  private async _restore(): Promise<Scenario> {
    if (!this._state) {
      return {};
    }
    try {
      await this._restored;
      const saved = await this._state.fetch(STATE_KEY);
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
    } catch {
      return {};
    }
  }

  private _save(): void {
    void this._state?.save(STATE_KEY, this._scenario as ReadonlyPartialJSONObject).catch(() => undefined);
  }

  // -- view -------------------------------------------------------------------------------------------------

  private _buildView(root: HTMLElement): void {
    const top = el('div', 'jp-hwsim-top');
    top.append(
      el('div', 'jp-hwsim-heading', 'HW what-if'),
      this._statusNode,
      this._topError
    );
    this._retry.textContent = 'Retry';
    this._retry.className = 'jp-hwsim-button';
    this._retry.hidden = true;
    this._retry.addEventListener('click', () => {
      if (this._catalog) {
        this._changed('settled');
      } else {
        void this._start();
      }
    });
    top.append(this._retry);

    // the headline stays in sight (sticky) while the controls below it scroll
    const headline = el('div', 'jp-hwsim-numbers');
    headline.append(
      labelled('throughput', this._throughput),
      labelled('latency', this._latency),
      labelled('GPU', this._busyMfu)
    );
    this._throughput.className = 'jp-hwsim-throughput';
    this._latency.className = 'jp-hwsim-latency';
    this._busyMfu.className = 'jp-hwsim-busy-mfu';
    this._results.className = 'jp-hwsim-results';
    this._results.append(top, headline);

    this._gap.className = 'jp-hwsim-gap';
    this._memory.className = 'jp-hwsim-memory';
    this._extra.className = 'jp-hwsim-extra';
    this._bottleneck.className = 'jp-hwsim-bottleneck';
    this._warnings.className = 'jp-hwsim-warnings';
    this._details.className = 'jp-hwsim-details';
    this._details.append(this._gap, labelled('memory', this._memory), this._extra, this._bottleneck, this._warnings);

    this._suggestions.className = 'jp-hwsim-suggestions';

    const actions = el('div', 'jp-hwsim-actions');
    this._insert.className = 'jp-hwsim-button jp-mod-accept';
    this._insert.textContent = 'Insert as %hwsim cell';
    this._insert.addEventListener('click', () => this._insertCell());
    const reset = el('button', 'jp-hwsim-button', 'Reset') as HTMLButtonElement;
    reset.title = 'Back to the default scenario';
    reset.addEventListener('click', () => {
      if (this._catalog) {
        this._scenario = {};
        this._changed('settled');
      }
    });
    actions.append(this._insert, reset);
    this._line.className = 'jp-hwsim-line';
    this._line.title = 'The cell "Insert as %hwsim cell" writes';

    this._controls.className = 'jp-hwsim-controls';
    root.append(this._results, this._details, this._suggestions, actions, this._line, this._controls);
  }

  private _buildControls(catalog: ICatalog): void {
    this._controls.textContent = '';
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
        input = document.createElement('select');
        input.addEventListener('change', () => this._onInput(name, input.value, 'settled'));
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
      this._controls.append(row);
      this._rows.set(name, { row, input, readout, error });
    }
    this._syncControls();
  }

  private _sliderValue(name: string, spec: SliderSpec, position: number): number {
    const value = fromPosition(spec, position);
    return this._catalog?.fields[name]?.type === 'int' ? Math.round(value) : value;
  }

  /** Controls show the scenario; those that do not apply to its kind are hidden. */
  private _syncControls(): void {
    const catalog = this._catalog;
    if (!catalog) {
      return;
    }
    const kind = String(resolvedValue(catalog, this._scenario, 'kind'));
    const shown = new Set(visibleFields(catalog, kind));
    for (const [name, { row, input, readout }] of this._rows) {
      row.hidden = !shown.has(name);
      const value = resolvedValue(catalog, this._scenario, name);
      const spec = CONTROLS[name];
      const unit = catalog.fields[name]?.unit ?? '';
      if (input instanceof HTMLSelectElement) {
        setOptions(input, this._options(catalog, name, value), String(value));
        readout.textContent = '';
      } else if (input.type === 'checkbox') {
        input.checked = Boolean(value);
        readout.textContent = value ? 'on' : 'off';
      } else if ('min' in spec) {
        input.value = String(toPosition(spec, Number(value)));
        readout.textContent = formatFieldValue(value, unit);
      }
      row.classList.toggle('jp-mod-set', name in this._scenario);
    }
    this._line.textContent = scenarioToLine(catalog, this._scenario);
  }

  /** The options of a select: [value, label]. */
  private _options(c: ICatalog, name: string, current: Value): [string, string][] {
    const named = (entries: { [id: string]: { name: string } }) =>
      Object.entries(entries).map(([id, e]): [string, string] => [id, `${id}: ${e.name}`]);
    const plain = (values: string[]) => values.map((v): [string, string] => [v, v]);
    let options: [string, string][];
    switch (name) {
      case 'kind':
        options = plain(c.kinds);
        break;
      case 'workload': {
        const kind = String(resolvedValue(c, this._scenario, 'kind'));
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
        const gpu = c.gpus[String(resolvedValue(c, this._scenario, 'gpu'))];
        const own = gpu?.host_link ? ` (${gpu.host_link})` : '';
        options = [['', `the GPU's${own}`], ...named(c.links)];
        break;
      }
      case 'precision':
        options = plain(c.precisions);
        break;
      case 'fusion':
        options = plain(c.fusions);
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

  // -- changes ----------------------------------------------------------------------------------------------

  private _onInput(name: string, value: Value, phase: 'moving' | 'settled'): void {
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

  /** The scenario changed: estimate now; simulate now (settled) or once the slider rests (moving). */
  private _changed(phase: 'moving' | 'settled'): void {
    this._revision++;
    this._retries = { estimate: 0, simulate: 0 };
    this._syncControls();
    this._setStale(true);
    this._estimates.push(undefined);
    if (phase === 'settled') {
      this._settle.flush();
      this._save();
    } else {
      this._settle.schedule();
    }
    this._updateBusy();
  }

  /** One request for the current scenario; its answer is shown unless a newer one already is. */
  private async _request(method: Method): Promise<void> {
    const ticket = this._sequencer.issue(method, this._revision);
    if (!this._sequencer.wanted(ticket)) {
      return; // a simulation of this scenario is already shown: its estimate adds nothing
    }
    this._inFlight[method]++;
    this._updateBusy();
    try {
      const result = await this._api.compute(method, { ...this._scenario }, SEED);
      if (this._sequencer.accept(ticket)) {
        this._showResult(result, ticket);
      }
    } catch (reason) {
      const status = reason instanceof HwsimApiError ? reason.status : 0;
      const error = toServerError(reason);
      if (ticket.revision === this._revision && shouldRetry(status, this._retries[method])) {
        // a busy or warming-up server (its worker processes start on first use): ask again shortly
        this._retries[method]++;
        this._setStatus(`${errorText(error)}; trying again…`, 'retry');
        window.setTimeout(() => {
          if (ticket.revision === this._revision) {
            (method === 'simulate' ? this._simulations : this._estimates).push(undefined);
          }
        }, RETRY_MS);
      } else if (this._sequencer.accept(ticket)) {
        this._showError(error, ticket, isTransient(status));
      }
    } finally {
      this._inFlight[method]--;
      this._updateBusy();
    }
  }

  // -- answers ----------------------------------------------------------------------------------------------

  private _showResult(r: IResult, ticket: ITicket): void {
    this._clearErrors();
    this._setStale(ticket.revision !== this._revision);
    const simulated = ticket.method === 'simulate';

    this._throughput.dataset.value = String(r.throughput);
    this._throughput.dataset.method = ticket.method;
    this._throughput.textContent = '';
    this._throughput.append(el('b', '', formatNumber(r.throughput)), ` ${r.throughput_unit}`);
    this._latency.textContent =
      `${latencyLabel(r.throughput_unit)}: p50 ${formatNumber(r.latency_ms.p50, 2)} ms, ` +
      `p99 ${formatNumber(r.latency_ms.p99, 2)} ms`;
    const busy = r.utilization.gpu_busy ?? 0;
    const mfu = r.utilization.gpu_mfu ?? 0;
    this._busyMfu.textContent = '';
    this._busyMfu.append(
      el('span', 'jp-hwsim-busy', `busy ${formatPercent(busy)}`),
      el('span', 'jp-hwsim-sep', ' | '),
      el('span', 'jp-hwsim-mfu', `MFU ${formatPercent(mfu, 1)}`)
    );
    this._gap.textContent = busyMfuGap(busy, mfu);
    this._gap.hidden = !this._gap.textContent;
    this._showMemory(r);
    this._showExtra(r);

    this._bottleneck.textContent = '';
    const badge = el('span', 'jp-hwsim-badge', r.bottleneck);
    badge.dataset.bottleneck = r.bottleneck;
    this._bottleneck.append(badge, el('span', 'jp-hwsim-explanation', r.explanation));
    this._warnings.textContent = '';
    for (const w of r.warnings ?? []) {
      this._warnings.append(el('div', 'jp-hwsim-warning', `warning: ${w}`));
    }

    const events = Number(r.sim?.events ?? 0);
    const wall = Number(r.sim?.wall_ms ?? 0);
    this._setStatus(
      simulated
        ? `simulated: seed ${SEED}, ${events.toLocaleString('en-US')} events in ${wall.toFixed(0)} ms`
        : 'estimate (closed form): the simulation follows when the value settles',
      simulated ? 'simulate' : 'estimate'
    );
    this._showSuggestions(r, simulated);

    for (const [name, slot] of this._charts) {
      if (name === 'timeline' && !simulated) {
        continue; // the estimate has no timeline: keep the last simulated one
      }
      slot.draw(r.charts?.[name]);
    }
  }

  private _showMemory(r: IResult): void {
    const m = r.memory;
    this._memory.textContent = '';
    this._memory.classList.toggle('jp-mod-oom', m.oom);
    const text = `${formatNumber(m.total_gb)} of ${formatNumber(m.capacity_gb, 0)} GB`;
    this._memory.append(el('span', '', text));
    if (m.oom) {
      this._memory.append(el('b', 'jp-hwsim-oom', ' out of memory'));
    }
    const bar = el('div', 'jp-hwsim-bar');
    const fill = el('div', 'jp-hwsim-bar-fill');
    fill.style.width = `${Math.min(100, m.capacity_gb ? (100 * m.total_gb) / m.capacity_gb : 0)}%`;
    bar.append(fill);
    this._memory.append(bar);
  }

  private _showExtra(r: IResult): void {
    this._extra.textContent = '';
    if (r.ttft_ms) {
      this._extra.append(labelled('first token', el('span', '', `p50 ${formatNumber(r.ttft_ms.p50)} ms`)));
      this._extra.append(
        labelled(
          'per stream',
          el(
            'span',
            '',
            `${formatNumber(r.tokens_per_s_per_stream ?? 0)} tokens/s (fits ${r.max_concurrency ?? '?'} sequences)`
          )
        )
      );
    }
    if (r.goodput !== undefined && r.goodput !== null) {
      const slo = r.scenario?.latency_slo_ms;
      this._extra.append(
        labelled('goodput', el('span', '', `${formatNumber(r.goodput)} requests/s within ${slo} ms`))
      );
    }
  }

  private _showSuggestions(r: IResult, simulated: boolean): void {
    this._suggestions.textContent = '';
    const list = (r.suggestions ?? []).slice(0, MAX_SUGGESTIONS);
    if (!list.length) {
      if (!simulated) {
        this._suggestions.append(el('div', 'jp-hwsim-muted', 'What would help: after the simulation…'));
      }
      return;
    }
    const metric = list[0].metric ?? 'throughput';
    this._suggestions.append(
      el('div', 'jp-hwsim-subheading', `What would help (each re-simulated; speed-up of ${metric}; click to apply)`)
    );
    for (const s of list) {
      const speed = s.speedup !== undefined && s.speedup !== null ? `${s.speedup.toFixed(2)}x` : s.fits ? 'fits' : '-';
      const button = el('button', 'jp-hwsim-button jp-hwsim-suggestion') as HTMLButtonElement;
      button.append(el('code', '', s.change), '  ', el('span', 'jp-hwsim-speedup', speed));
      button.title = s.why ?? '';
      button.addEventListener('click', () => {
        this._scenario = applySuggestion(this._scenario, s.fields);
        this._changed('settled');
      });
      this._suggestions.append(button);
    }
  }

  private _showError(error: IServerError, ticket: ITicket, retry: boolean): void {
    this._clearErrors();
    const catalog = this._catalog;
    const kind = catalog ? String(resolvedValue(catalog, this._scenario, 'kind')) : '';
    const shown = catalog ? visibleFields(catalog, kind) : [];
    const target = errorTarget(error, shown);
    const row = target ? this._rows.get(target) : undefined;
    if (row) {
      row.error.textContent = errorText(error);
      row.row.classList.add('jp-mod-error');
    } else {
      this._showTopError(errorText(error), retry);
    }
    this._setStale(true);
    this._setStatus(`the ${ticket.method === 'simulate' ? 'simulation' : 'estimate'} was refused`, 'error');
  }

  /** Dim the numbers while they belong to an older scenario than the controls show. */
  private _setStale(stale: boolean): void {
    this._results.classList.toggle('jp-mod-stale', stale);
    this._details.classList.toggle('jp-mod-stale', stale);
    // for scripts and tests: whether the numbers shown are those of the scenario the controls show
    this._throughput.dataset.current = String(!stale);
  }

  private _clearErrors(): void {
    this._showTopError('');
    for (const { row, error } of this._rows.values()) {
      error.textContent = '';
      row.classList.remove('jp-mod-error');
    }
  }

  private _showTopError(text: string, retry = false): void {
    this._topError.textContent = text;
    this._topError.hidden = !text;
    this._retry.hidden = !retry;
  }

  private _setStatus(text: string, method: string): void {
    this._statusText = text;
    this._statusNode.dataset.method = method;
    this._updateBusy();
  }

  private _updateBusy(): void {
    const busy = this._inFlight.estimate + this._inFlight.simulate > 0 || this._settle.pending;
    this._statusNode.dataset.busy = String(busy);
    const doing = this._inFlight.simulate ? ' · simulating…' : this._inFlight.estimate ? ' · estimating…' : '';
    this._statusNode.textContent = this._statusText + doing;
  }

  // -- notebook ---------------------------------------------------------------------------------------------

  private _updateInsertButton(): void {
    const notebook = this._tracker?.currentWidget ?? null;
    this._insert.disabled = !notebook;
    this._insert.title = notebook ? `Insert below the active cell of ${notebook.title.label}` : NO_NOTEBOOK;
  }

  /** A `%hwsim run ...` code cell below the active cell (with %load_ext first if the notebook lacks it). */
  private _insertCell(): void {
    const panel = this._tracker?.currentWidget;
    const model = panel?.content.model;
    if (!panel || !model || !this._catalog) {
      return;
    }
    const notebook = panel.content;
    const sources = Array.from(model.sharedModel.cells, cell => cell.getSource());
    const source = cellSource(scenarioToLine(this._catalog, this._scenario), sources);
    const index = Math.min(notebook.activeCellIndex + 1, model.sharedModel.cells.length);
    model.sharedModel.insertCell(index, { cell_type: 'code', source, metadata: {} });
    notebook.activeCellIndex = index;
    void notebook.scrollToItem(index);
  }

  private readonly _api: HwsimApi;
  private readonly _tracker: INotebookTracker | null;
  private readonly _state: IStateDB | null;
  private readonly _restored: Promise<unknown>;
  private readonly _view: Widget;
  private readonly _charts = new Map<string, ChartSlot>();
  private readonly _rows = new Map<string, IControlRow>();
  private readonly _sequencer = new Sequencer();
  private readonly _estimates: Coalescer<undefined>;
  private readonly _simulations: Coalescer<undefined>;
  private readonly _settle: Debouncer;
  private readonly _inFlight: { [m in Method]: number } = { estimate: 0, simulate: 0 };
  private _retries: { [m in Method]: number } = { estimate: 0, simulate: 0 };

  private _catalog: ICatalog | null = null;
  private _scenario: Scenario = {};
  private _revision = 0;
  private _starting = false;
  private _statusText = '';

  private readonly _results = document.createElement('div');
  private readonly _details = document.createElement('div');
  private readonly _statusNode = el('div', 'jp-hwsim-status');
  private readonly _topError = el('div', 'jp-hwsim-top-error');
  private readonly _retry = document.createElement('button');
  private readonly _throughput = document.createElement('span');
  private readonly _latency = document.createElement('span');
  private readonly _busyMfu = document.createElement('span');
  private readonly _gap = document.createElement('div');
  private readonly _memory = document.createElement('span');
  private readonly _extra = document.createElement('div');
  private readonly _bottleneck = document.createElement('div');
  private readonly _warnings = document.createElement('div');
  private readonly _suggestions = document.createElement('div');
  private readonly _insert = document.createElement('button');
  private readonly _line = document.createElement('code');
  private readonly _controls = document.createElement('div');
}

function el(tag: string, className: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  if (className) {
    node.className = className;
  }
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function labelled(label: string, value: HTMLElement): HTMLElement {
  const row = el('div', 'jp-hwsim-readrow');
  row.append(el('span', 'jp-hwsim-readlabel', label), value);
  return row;
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

function toServerError(reason: unknown): IServerError {
  if (reason instanceof HwsimApiError) {
    return reason.error;
  }
  return { message: String(reason instanceof Error ? reason.message : reason) };
}
