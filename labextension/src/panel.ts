import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IStateDB } from '@jupyterlab/statedb';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { HwsimApi } from './api';
import { ChartSet } from './charts';
import { ControlsView } from './controls';
import { el } from './dom';
import { errorTarget, errorText } from './errors';
import { cellSource, scenarioToLine } from './magic';
import { resolvedValue, visibleFields } from './model';
import { ITicket } from './requests';
import { ResultsView } from './results';
import { HwsimState, IScenarioStore, savedScenario } from './state';
import { ICatalog, IResult, IServerError, Scenario } from './types';

export const STATE_KEY = 'jupyter-hwsim:scenario';

const NO_NOTEBOOK = 'Open a notebook to insert a cell';

export interface IHwsimPanelOptions {
  rendermime: IRenderMimeRegistry;
  tracker: INotebookTracker | null;
  state: IStateDB | null;
  /** resolves when the workspace (and so the state database) is restored */
  restored: Promise<unknown>;
  api?: HwsimApi;
}

/**
 * The "HW what-if" sidebar: controls built from the server's catalog; the estimate while a slider moves, the
 * simulation once it rests; the numbers, bottleneck, suggestions and charts of the newest answer. It composes
 * the state (`HwsimState`) and the views of the controls, the read-outs and the charts.
 */
export class HwsimPanel extends Panel {
  constructor(options: IHwsimPanelOptions) {
    super();
    this.addClass('jp-hwsim-panel');
    this._tracker = options.tracker;
    const store = options.state ? scenarioStore(options.state, options.restored) : null;
    this._state = new HwsimState(options.api ?? new HwsimApi(), store, {
      catalogLoaded: catalog => this._catalogLoaded(catalog),
      startFailed: error => {
        this._results.showTopError(error.message, true);
        this._results.setStatus('', 'error');
      },
      scenarioChanged: () => {
        this._sync();
        this._results.setStale(true);
      },
      result: (result, ticket) => this._showResult(result, ticket),
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

    const view = new Widget();
    view.addClass('jp-hwsim-view');
    this._buildView(view.node);
    this.addWidget(view);

    this._charts = new ChartSet(options.rendermime);
    this.addWidget(this._charts.main);
    this.addWidget(this._charts.more);

    this._tracker?.currentChanged.connect(this._updateInsertButton, this);
    this._updateInsertButton();
  }

  /** The scenario shown (the fields the user set). */
  get scenario(): Scenario {
    return { ...this._state.scenario };
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._state.dispose();
    this._tracker?.currentChanged.disconnect(this._updateInsertButton, this);
    super.dispose();
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this._state.start();
  }

  protected onAfterAttach(msg: Message): void {
    super.onAfterAttach(msg);
    // load the catalog on first show: a hidden sidebar costs the server nothing
    if (this.isVisible) {
      void this._state.start();
    }
  }

  private _buildView(root: HTMLElement): void {
    const actions = el('div', 'jp-hwsim-actions');
    this._insert.className = 'jp-hwsim-button jp-mod-accept';
    this._insert.textContent = 'Insert as %hwsim cell';
    this._insert.addEventListener('click', () => this._insertCell());
    const reset = el('button', 'jp-hwsim-button', 'Reset') as HTMLButtonElement;
    reset.title = 'Back to the default scenario';
    reset.addEventListener('click', () => this._state.reset());
    actions.append(this._insert, reset);
    this._line.className = 'jp-hwsim-line';
    this._line.title = 'The cell "Insert as %hwsim cell" writes';

    const results = this._results;
    root.append(results.results, results.details, results.suggestions, actions, this._line, this._controls.node);
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

  private _showResult(r: IResult, ticket: ITicket): void {
    this._clearErrors();
    this._results.setStale(ticket.revision !== this._state.revision);
    this._results.show(r, ticket.method);
    this._charts.draw(r.charts, ticket.method === 'simulate');
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
  private readonly _state: HwsimState;
  private readonly _results: ResultsView;
  private readonly _controls: ControlsView;
  private readonly _charts: ChartSet;
  private readonly _insert = document.createElement('button');
  private readonly _line = document.createElement('code');
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
