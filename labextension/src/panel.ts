import { IThemeManager } from '@jupyterlab/apputils';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IStateDB } from '@jupyterlab/statedb';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { HwsimApi } from './api';
import { ChartSet } from './charts';
import { ControlsView } from './controls';
import { el } from './dom';
import { errorTarget, errorText, toServerError } from './errors';
import { download, resultJson, scenarioToToml } from './exports';
import { cellSource, scenarioToLine } from './magic';
import { resolvedValue, visibleFields } from './model';
import { ITicket } from './requests';
import { ResultsView } from './results';
import { HwsimState, IScenarioStore, savedScenario, SEED } from './state';
import { ICatalog, IResult, IServerError, Method, Scenario } from './types';

export const STATE_KEY = 'jupyter-hwsim:scenario';

const NO_NOTEBOOK = 'Open a notebook to insert a cell';

export interface IHwsimPanelOptions {
  tracker: INotebookTracker | null;
  state: IStateDB | null;
  /** resolves when the workspace (and so the state database) is restored */
  restored: Promise<unknown>;
  themes?: IThemeManager | null;
  api?: HwsimApi;
}

/** The pinned baseline: its scenario and the newest answer for it (the simulation once it is in). */
interface IBaseline {
  scenario: Scenario;
  line: string;
  result: IResult;
  method: Method;
  revision: number;
}

/** Timings of the panel, for tests and benchmarks (also on the node as data attributes). */
export interface IPanelTimings {
  /** when the panel was first shown (performance.now(), ms) */
  shownAt: number | null;
  /** ms from first shown to the first numbers (an estimate), and to the first simulation */
  firstNumbersMs: number | null;
  firstSimulationMs: number | null;
}

/**
 * The "HW what-if" sidebar: controls built from the server's catalog; the estimate while a slider moves, the
 * simulation once it rests; the numbers, bottleneck, suggestions and charts of the newest answer, against a pinned
 * baseline; downloads of the scenario, the result, the trace and each chart. It composes the state (`HwsimState`)
 * and the views of the controls, the read-outs and the charts.
 *
 * Layout, top to bottom: the sticky header (status, headline numbers, the toolbar), the utilization chart (both in
 * sight at 1280x720), the controls, then what varies in height (bottleneck, suggestions) below them, so nothing
 * above a control moves while it is dragged; then the other charts.
 */
export class HwsimPanel extends Panel {
  constructor(options: IHwsimPanelOptions) {
    super();
    this.addClass('jp-hwsim-panel');
    this.node.setAttribute('role', 'region');
    this.node.setAttribute('aria-label', 'Hardware what-if');
    this._tracker = options.tracker;
    this._api = options.api ?? new HwsimApi();
    const store = options.state ? scenarioStore(options.state, options.restored) : null;
    this._state = new HwsimState(this._api, store, {
      catalogLoaded: catalog => this._catalogLoaded(catalog),
      startFailed: error => {
        this._results.showTopError(error.message, true);
        this._results.setStatus('', 'error');
      },
      scenarioChanged: () => {
        this._sync();
        this._results.setStale(true);
      },
      result: (result, ticket, suggested) => this._showResult(result, ticket, suggested),
      error: (error, ticket, transient) => this._showError(error, ticket, transient),
      status: (text, method) => this._results.setStatus(text, method),
      activity: () => this._results.updateBusy()
    });
    this._results = new ResultsView({
      onRetry: () => this._state.retry(),
      onApply: fields => this._state.apply(fields),
      activity: () => ({ busy: this._state.busy, running: this._state.running })
    });
    this._controls = new ControlsView((name, value, phase) => this._state.set(name, value, phase));
    this._charts = new ChartSet();

    const header = new Widget();
    header.addClass('jp-hwsim-header');
    header.node.append(this._results.results, this._toolbar(), this._baselineNode);
    this.addWidget(header);
    this.addWidget(this._charts.first);
    const view = new Widget();
    view.addClass('jp-hwsim-view');
    this._buildView(view.node);
    this.addWidget(view);
    this.addWidget(this._charts.main);
    this.addWidget(this._charts.more);

    this._tracker?.currentChanged.connect(this._updateInsertButton, this);
    this._updateInsertButton();
    this._updateButtons();

    // charts follow a theme change without a reload
    if (options.themes) {
      options.themes.themeChanged.connect(this._retheme, this);
      this._themes = options.themes;
    } else {
      this._observer = new MutationObserver(() => this._retheme());
      this._observer.observe(document.body, { attributes: true, attributeFilter: ['data-jp-theme-name'] });
    }
  }

  /** The scenario shown (the fields the user set). */
  get scenario(): Scenario {
    return { ...this._state.scenario };
  }

  get timings(): IPanelTimings {
    return { ...this._timings };
  }

  get charts(): ChartSet {
    return this._charts;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._state.dispose();
    this._tracker?.currentChanged.disconnect(this._updateInsertButton, this);
    this._themes?.themeChanged.disconnect(this._retheme, this);
    this._observer?.disconnect();
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._markShown();
    void this._state.start();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    // load the catalog on first show: a hidden sidebar costs the server nothing
    if (this.isVisible) {
      this._markShown();
      void this._state.start();
    }
  }

  private _markShown(): void {
    if (this._timings.shownAt === null) {
      this._timings.shownAt = performance.now();
    }
  }

  private readonly _retheme = (): void => {
    // the theme's stylesheet is in once the signal fires; a frame later its variables are computed
    requestAnimationFrame(() => this._charts.retheme());
  };

  // -- layout -------------------------------------------------------------------------------------------------

  /** Pin as baseline, and the downloads. */
  private _toolbar(): HTMLElement {
    const bar = el('div', 'jp-hwsim-toolbar');
    bar.setAttribute('role', 'toolbar');
    bar.setAttribute('aria-label', 'Compare and export');
    this._pin.className = 'jp-hwsim-button';
    this._pin.dataset.action = 'pin';
    this._pin.addEventListener('click', () => this._togglePin());
    const exports: [string, string, string, () => void][] = [
      [
        'scenario',
        '↓ TOML',
        'Download the scenario as TOML (a %%hwsim cell body, or a file for the CLI)',
        () => this._downloadScenario()
      ],
      ['result', '↓ JSON', 'Download the result shown as JSON', () => this._downloadResult()],
      [
        'trace',
        '↓ Trace',
        'Download the simulated timeline as a Perfetto / Chrome trace (JSON)',
        () => void this._downloadTrace()
      ]
    ];
    const group = el('span', 'jp-hwsim-exports');
    group.setAttribute('role', 'group');
    group.setAttribute('aria-label', 'Download');
    for (const [what, text, title, action] of exports) {
      const button = el('button', 'jp-hwsim-button', text) as HTMLButtonElement;
      button.dataset.export = what;
      button.title = title;
      button.setAttribute('aria-label', title);
      button.addEventListener('click', action);
      group.append(button);
      this._exportButtons.push(button);
    }
    bar.append(this._pin, group);
    this._baselineNode.className = 'jp-hwsim-baseline';
    this._baselineNode.hidden = true;
    return bar;
  }

  private _buildView(root: HTMLElement): void {
    const actions = el('div', 'jp-hwsim-actions');
    this._insert.className = 'jp-hwsim-button jp-mod-accept';
    this._insert.textContent = 'Insert as %hwsim cell';
    this._insert.addEventListener('click', () => this._insertCell());
    const copy = el('button', 'jp-hwsim-button', 'Copy') as HTMLButtonElement;
    copy.title = 'Copy the %hwsim line to the clipboard';
    copy.dataset.action = 'copy';
    copy.addEventListener('click', () => void this._copyLine(copy));
    const reset = el('button', 'jp-hwsim-button', 'Reset') as HTMLButtonElement;
    reset.title = 'Back to the default scenario';
    reset.addEventListener('click', () => this._state.reset());
    actions.append(this._insert, copy, reset);
    this._line.className = 'jp-hwsim-line';
    this._line.title = 'The cell "Insert as %hwsim cell" writes';

    const results = this._results;
    const controlsHeading = el('h3', 'jp-hwsim-subheading', 'Scenario');
    root.append(
      results.summary,
      controlsHeading,
      this._controls.node,
      actions,
      this._line,
      results.details,
      results.suggestions
    );
  }

  private _catalogLoaded(catalog: ICatalog): void {
    this._results.showTopError('');
    this._controls.build(catalog, this._state.scenario);
    this._line.textContent = scenarioToLine(catalog, this._state.scenario);
  }

  /** The controls and the `%hwsim` line show the scenario. */
  private _sync(): void {
    const catalog = this._state.catalog;
    if (!catalog) {
      return;
    }
    this._controls.sync(this._state.scenario);
    this._line.textContent = scenarioToLine(catalog, this._state.scenario);
  }

  private _showResult(r: IResult, ticket: ITicket, suggested: boolean): void {
    this._clearErrors();
    const current = ticket.revision === this._state.revision;
    this._shown = { result: r, method: ticket.method, revision: ticket.revision, suggested };
    const base = this._baseline;
    if (base && ticket.revision === base.revision && (ticket.method === 'simulate' || base.method !== 'simulate')) {
      // the baseline was pinned from an estimate: its simulation replaces it
      base.result = r;
      base.method = ticket.method;
    }
    this._results.setStale(!current);
    this._results.show(r, ticket.method, base ? base.result : null, current, suggested);
    this._charts.draw(r.charts, ticket.method === 'simulate', base?.result.charts);
    this._updateButtons();
    this._noteTimings(ticket.method);
  }

  private _noteTimings(method: Method): void {
    const t = this._timings;
    if (t.shownAt === null) {
      return;
    }
    const since = Math.round(performance.now() - t.shownAt);
    if (t.firstNumbersMs === null) {
      t.firstNumbersMs = since;
      this.node.dataset.firstNumbersMs = String(since);
    }
    if (method === 'simulate' && t.firstSimulationMs === null) {
      t.firstSimulationMs = since;
      this.node.dataset.firstSimulationMs = String(since);
    }
  }

  private _showError(error: IServerError, ticket: ITicket, retry: boolean): void {
    this._clearErrors();
    const catalog = this._state.catalog;
    const kind = catalog ? String(resolvedValue(catalog, this._state.scenario, 'kind')) : '';
    const shown = catalog ? visibleFields(catalog, kind) : [];
    const target = errorTarget(error, shown);
    if (!target || !this._controls.showError(target, errorText(error))) {
      this._results.showTopError(errorText(error), retry);
    }
    this._results.setStale(true);
    this._results.setStatus(`the ${ticket.method === 'simulate' ? 'simulation' : 'estimate'} was refused`, 'error');
  }

  private _clearErrors(): void {
    this._results.showTopError('');
    this._controls.clearErrors();
  }

  // -- baseline -----------------------------------------------------------------------------------------------

  private _togglePin(): void {
    const catalog = this._state.catalog;
    if (this._baseline) {
      this._baseline = null;
    } else if (this._shown && catalog) {
      const scenario = { ...this._state.scenario };
      this._baseline = {
        scenario,
        line: scenarioToLine(catalog, scenario),
        result: this._shown.result,
        method: this._shown.method,
        revision: this._shown.revision
      };
    }
    this._updateButtons();
    if (this._shown) {
      const { result, method, revision, suggested } = this._shown;
      const base = this._baseline;
      this._results.show(result, method, base ? base.result : null, revision === this._state.revision, suggested);
      this._charts.draw(result.charts, method === 'simulate', base?.result.charts);
    }
  }

  private _updateButtons(): void {
    const base = this._baseline;
    this._pin.textContent = base ? 'Unpin baseline' : 'Pin as baseline';
    this._pin.title = base
      ? 'Stop comparing with the pinned baseline'
      : 'Keep these numbers as the baseline: every number and chart is then compared with it';
    this._pin.setAttribute('aria-pressed', String(!!base));
    this._pin.disabled = !this._shown;
    for (const button of this._exportButtons) {
      button.disabled = !this._shown && button.dataset.export !== 'scenario';
    }
    this._baselineNode.hidden = !base;
    this._baselineNode.textContent = '';
    if (base) {
      const line = el('code', '', base.line.replace(/^%hwsim run ?/, '') || 'the default scenario');
      this._baselineNode.append(el('span', 'jp-hwsim-baseline-label', 'Baseline (grey in the charts): '), line);
      this._baselineNode.title = `Compared with ${base.line} (${base.method === 'simulate' ? 'simulated' : 'estimate'})`;
    }
  }

  // -- exports ------------------------------------------------------------------------------------------------

  private _downloadScenario(): void {
    const catalog = this._state.catalog;
    if (catalog) {
      download('hwsim-scenario.toml', scenarioToToml(catalog, this._state.scenario), 'application/toml');
    }
  }

  private _downloadResult(): void {
    if (this._shown) {
      download(`hwsim-result-${this._shown.method}.json`, resultJson(this._shown.result), 'application/json');
    }
  }

  private async _downloadTrace(): Promise<void> {
    this._results.setStatus('making the trace…', 'loading');
    try {
      const trace = await this._api.trace({ ...this._state.scenario }, SEED);
      download('hwsim-trace.json', JSON.stringify(trace), 'application/json');
      this._results.setStatus('trace saved: open it in ui.perfetto.dev or chrome://tracing', 'simulate');
    } catch (reason) {
      this._results.showTopError(`the trace could not be made: ${errorText(toServerError(reason))}`);
    }
  }

  private async _copyLine(button: HTMLButtonElement): Promise<void> {
    const text = this._line.textContent ?? '';
    try {
      await navigator.clipboard.writeText(text);
      button.textContent = 'Copied';
    } catch {
      // no clipboard (an insecure context): select the line so the user can copy it
      const range = document.createRange();
      range.selectNodeContents(this._line);
      const selection = window.getSelection();
      selection?.removeAllRanges();
      selection?.addRange(range);
      button.textContent = 'Selected';
    }
    setTimeout(() => (button.textContent = 'Copy'), 1500);
  }

  // -- notebook ---------------------------------------------------------------------------------------------

  // an arrow function: the tracker's signal calls it
  private readonly _updateInsertButton = (): void => {
    const notebook = this._tracker?.currentWidget ?? null;
    this._insert.disabled = !notebook;
    this._insert.title = notebook ? `Insert below the active cell of ${notebook.title.label}` : NO_NOTEBOOK;
  };

  /** A `%hwsim run ...` code cell below the active cell (with %load_ext first if the notebook lacks it). */
  private _insertCell(): void {
    const panel = this._tracker?.currentWidget;
    const model = panel?.content.model;
    const catalog = this._state.catalog;
    if (!panel || !model || !catalog) {
      return;
    }
    const notebook = panel.content;
    const sources = Array.from(model.sharedModel.cells, cell => cell.getSource());
    const source = cellSource(scenarioToLine(catalog, this._state.scenario), sources);
    const index = Math.min(notebook.activeCellIndex + 1, model.sharedModel.cells.length);
    model.sharedModel.insertCell(index, { cell_type: 'code', source, metadata: {} });
    notebook.activeCellIndex = index;
    void notebook.scrollToItem(index);
  }

  private readonly _tracker: INotebookTracker | null;
  private readonly _api: HwsimApi;
  private readonly _state: HwsimState;
  private readonly _results: ResultsView;
  private readonly _controls: ControlsView;
  private readonly _charts: ChartSet;
  private readonly _insert = document.createElement('button');
  private readonly _pin = document.createElement('button');
  private readonly _exportButtons: HTMLButtonElement[] = [];
  private readonly _baselineNode = document.createElement('div');
  private readonly _line = document.createElement('code');
  private _themes: IThemeManager | null = null;
  private _observer: MutationObserver | null = null;
  private _shown: { result: IResult; method: Method; revision: number; suggested: boolean } | null = null;
  private _baseline: IBaseline | null = null;
  private readonly _timings: IPanelTimings = { shownAt: null, firstNumbersMs: null, firstSimulationMs: null };
}

/** The scenario kept in JupyterLab's state database (the workspace), read once the workspace is restored. */
function scenarioStore(state: IStateDB, restored: Promise<unknown>): IScenarioStore {
  return {
    load: async () => {
      await restored;
      return savedScenario(await state.fetch(STATE_KEY));
    },
    save: scenario => {
      void state.save(STATE_KEY, scenario as ReadonlyPartialJSONObject).catch(() => undefined);
    }
  };
}
