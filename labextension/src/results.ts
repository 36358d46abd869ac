/**
 * The read-outs of the newest answer: the status line, the top error and its Retry button, the headline numbers
 * (kept in sight while the controls scroll, each with its change against the pinned baseline), memory, bottleneck
 * and warnings, and the suggestions (those worth showing; "Show all" for the rest).
 */

import { compareTo, comparePoints, IChange } from './compare';
import { el } from './dom';
import { busyMfuGap, formatNumber, formatPercent, formatSignificant, latencyLabel } from './format';
import { SEED, Step } from './state';
import { IResult, ISuggestion, Method } from './types';

export interface IResultsOptions {
  /** the Retry button was clicked */
  onRetry: () => void;
  /** a suggestion was clicked */
  onApply: (fields: ISuggestion['fields']) => void;
  /** whether requests are in flight, and which one shows in the status line */
  activity: () => { busy: boolean; running: Step | null };
}

/** What each headline number means (its tooltip). */
export const DEFINITIONS = {
  throughput:
    'Throughput: work done per second in steady state (samples/s for training and inference, requests/s for ' +
    'serving, tokens/s for LLM generation).',
  latency:
    'Latency: time per step (training, inference), per request (serving) or per output token (LLM); p50 is the ' +
    'median, p99 the time 99 in 100 stay under.',
  gpu:
    'GPU busy: share of wall time in which any kernel runs (what nvidia-smi shows). MFU (model FLOPs ' +
    "utilization): achieved FLOP/s divided by the chip's peak at this precision.",
  memory: 'Device memory: weights, gradients, optimizer state, activations and workspace against the GPU capacity.'
};

/** A headline tile: a label (with its definition on hover), the value and its change against the baseline. */
function tile(label: string, definition: string, value: HTMLElement, delta: HTMLElement): HTMLElement {
  const node = el('div', 'jp-hwsim-tile');
  node.title = definition;
  const name = el('div', 'jp-hwsim-tile-label', label);
  node.append(name, value, delta);
  delta.className = 'jp-hwsim-delta';
  delta.setAttribute('aria-live', 'off');
  return node;
}

function showChange(node: HTMLElement, change: IChange | null, what: string): void {
  node.textContent = change ? change.text : '';
  node.dataset.direction = change?.direction ?? '';
  node.dataset.better = change ? String(change.better) : '';
  node.title = change ? `${what} against the baseline: ${change.text.replace(/^[▲▼=] /, '')}` : '';
}

export class ResultsView {
  constructor(private readonly _options: IResultsOptions) {
    const top = el('div', 'jp-hwsim-top');
    const heading = el('div', 'jp-hwsim-titlebar');
    heading.append(el('h2', 'jp-hwsim-heading', 'HW what-if'), this._statusNode);
    this._statusNode.setAttribute('role', 'status');
    this._retry.textContent = 'Retry';
    this._retry.className = 'jp-hwsim-button';
    this._retry.hidden = true;
    this._retry.addEventListener('click', () => this._options.onRetry());
    this._topError.setAttribute('role', 'alert');
    top.append(heading, this._topError, this._retry);

    // the headline stays in sight (sticky) while the controls below it scroll; fixed-size tiles, so nothing moves
    this.numbers.className = 'jp-hwsim-numbers';
    this._throughput.className = 'jp-hwsim-throughput';
    this._latency.className = 'jp-hwsim-latency';
    this._busyMfu.className = 'jp-hwsim-busy-mfu';
    this.numbers.append(
      tile('Throughput', DEFINITIONS.throughput, this._throughput, this._dThroughput),
      tile('Latency p50', DEFINITIONS.latency, this._latency, this._dLatency),
      tile('GPU busy', DEFINITIONS.gpu, this._busyMfu, this._dGpu)
    );
    this._dThroughput.dataset.metric = 'throughput';
    this._dLatency.dataset.metric = 'latency';
    this._dGpu.dataset.metric = 'gpu';
    this.results.className = 'jp-hwsim-results';
    this.results.append(top, this.numbers);

    this._gap.className = 'jp-hwsim-gap';
    this._memory.className = 'jp-hwsim-memory';
    this._extra.className = 'jp-hwsim-extra';
    this._bottleneck.className = 'jp-hwsim-bottleneck';
    this._warnings.className = 'jp-hwsim-warnings';
    this.details.className = 'jp-hwsim-details';
    const memoryRow = el('div', 'jp-hwsim-readrow');
    const memoryLabel = el('span', 'jp-hwsim-readlabel', 'Memory');
    memoryLabel.title = DEFINITIONS.memory;
    memoryRow.append(memoryLabel, this._memory);
    this.details.append(this._gap, memoryRow, this._extra, this._warnings);
    // the bottleneck and its explanation, in a block of fixed height above the controls (click for all of it)
    this.summary.className = 'jp-hwsim-summary';
    this.summary.append(this._bottleneck);
    this._bottleneck.tabIndex = 0;
    this._bottleneck.setAttribute('role', 'button');
    this._bottleneck.setAttribute('aria-expanded', 'false');
    const toggle = () => {
      const open = this._bottleneck.getAttribute('aria-expanded') !== 'true';
      this._bottleneck.setAttribute('aria-expanded', String(open));
    };
    this._bottleneck.addEventListener('click', toggle);
    this._bottleneck.addEventListener('keydown', event => {
      if (event.key === 'Enter' || event.key === ' ') {
        event.preventDefault();
        toggle();
      }
    });

    this.suggestions.className = 'jp-hwsim-suggestions';
    this.suggestions.setAttribute('aria-label', 'What would help');
    this._showAll.className = 'jp-hwsim-button jp-hwsim-show-all';
    this._showAll.addEventListener('click', () => {
      this._expanded = !this._expanded;
      this._renderSuggestions();
    });
  }

  /** The status, the top error and the headline numbers (sticky). */
  readonly results = document.createElement('div');
  /** The headline numbers. */
  readonly numbers = document.createElement('div');
  /** The bottleneck and its explanation. */
  readonly summary = document.createElement('div');
  /** Memory and warnings. */
  readonly details = document.createElement('div');
  /** The suggestions' buttons. */
  readonly suggestions = document.createElement('div');

  /** The numbers, bottleneck, status line and suggestions of an answer, against the baseline if one is pinned. */
  show(r: IResult, method: Method, baseline: IResult | null, current: boolean, suggested: boolean): void {
    const simulated = method === 'simulate';
    this._throughput.dataset.value = String(r.throughput);
    this._throughput.dataset.method = method;
    this._throughput.textContent = '';
    this._throughput.append(el('b', '', formatNumber(r.throughput)), el('span', 'jp-hwsim-unit', r.throughput_unit));
    this._latency.textContent = '';
    this._latency.dataset.p50 = String(r.latency_ms.p50);
    const digits = r.latency_ms.p50 < 10 ? 2 : 1;
    this._latency.append(
      el('b', '', `${formatNumber(r.latency_ms.p50, digits)} ms`),
      el('span', 'jp-hwsim-unit', `p99 ${formatNumber(r.latency_ms.p99, digits)} ms`)
    );
    this._latency.title = `${latencyLabel(r.throughput_unit)}: p50 ${formatNumber(r.latency_ms.p50, 2)} ms, p99 ${formatNumber(r.latency_ms.p99, 2)} ms`;
    const busy = r.utilization.gpu_busy ?? 0;
    const mfu = r.utilization.gpu_mfu ?? 0;
    this._busyMfu.textContent = '';
    this._busyMfu.append(
      el('b', 'jp-hwsim-busy', `${formatPercent(busy)}`),
      el('span', 'jp-hwsim-unit jp-hwsim-mfu', `MFU ${formatPercent(mfu, 1)}`)
    );
    this._showBaseline(r, baseline);
    this._gap.textContent = busyMfuGap(busy, mfu);
    this._gap.hidden = !this._gap.textContent;
    this._showMemory(r);
    this._showExtra(r);

    this._bottleneck.textContent = '';
    const badge = el('span', 'jp-hwsim-badge', r.bottleneck.replace('_', ' '));
    badge.dataset.bottleneck = r.bottleneck;
    badge.title = 'The bottleneck: the resource that limits the throughput';
    this._bottleneck.append(badge, el('span', 'jp-hwsim-explanation', r.explanation));
    this._bottleneck.title = `${r.explanation} (click to show all of it)`;
    this._warnings.textContent = '';
    for (const w of r.warnings ?? []) {
      this._warnings.append(el('div', 'jp-hwsim-warning', `warning: ${w}`));
    }

    const events = Number(r.sim?.events ?? 0);
    const wall = Number(r.sim?.wall_ms ?? 0);
    this.setStatus(
      simulated
        ? `simulated: seed ${SEED}, ${events.toLocaleString('en-US')} events` +
            (suggested ? '; suggestions checked' : ` in ${wall.toFixed(0)} ms`)
        : 'estimate (closed form); the simulation follows',
      simulated ? 'simulate' : 'estimate'
    );
    // an answer without suggestions leaves the last ones (dimmed while they are of an older scenario)
    if (suggested) {
      this._suggestions = r.suggestions ?? [];
      this._searched = true;
      this._renderSuggestions();
    }
    this.suggestions.classList.toggle('jp-mod-stale', !(suggested && current));
  }

  /** Every number's change against the baseline (none when no baseline is pinned). */
  private _showBaseline(r: IResult, b: IResult | null): void {
    const same = b && b.throughput_unit === r.throughput_unit;
    showChange(this._dThroughput, same ? compareTo(r.throughput, b.throughput, true) : null, 'Throughput');
    showChange(this._dLatency, same ? compareTo(r.latency_ms.p50, b.latency_ms.p50, false) : null, 'Latency p50');
    showChange(
      this._dGpu,
      same ? comparePoints(r.utilization.gpu_mfu ?? 0, b.utilization.gpu_mfu ?? 0, true) : null,
      'MFU'
    );
    this.numbers.classList.toggle('jp-mod-compared', !!same);
  }

  /** Dim the numbers while they belong to an older scenario than the controls show. */
  setStale(stale: boolean): void {
    this.results.classList.toggle('jp-mod-stale', stale);
    this.details.classList.toggle('jp-mod-stale', stale);
    this.summary.classList.toggle('jp-mod-stale', stale);
    // for scripts and tests: whether the numbers shown are those of the scenario the controls show
    this._throughput.dataset.current = String(!stale);
  }

  /** An error at the top ('' hides it), with a Retry button if `retry`. */
  showTopError(text: string, retry = false): void {
    this._topError.textContent = text;
    this._topError.hidden = !text;
    this._retry.hidden = !retry;
  }

  setStatus(text: string, method: string): void {
    this._statusText = text;
    this._statusNode.dataset.method = method;
    this.updateBusy();
  }

  /** The status line shows whether requests are in flight. */
  updateBusy(): void {
    const { busy, running } = this._options.activity();
    this._statusNode.dataset.busy = String(busy);
    const doing =
      running === 'suggest'
        ? ' · finding what would help…'
        : running === 'simulate'
          ? ' · simulating…'
          : running === 'estimate'
            ? ' · estimating…'
            : '';
    this._statusNode.textContent = this._statusText + doing;
    this._statusNode.title = this._statusNode.textContent;
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
    bar.setAttribute('role', 'img');
    bar.setAttribute('aria-label', `memory ${text}`);
    const fill = el('div', 'jp-hwsim-bar-fill');
    fill.style.width = `${Math.min(100, m.capacity_gb ? (100 * m.total_gb) / m.capacity_gb : 0)}%`;
    bar.append(fill);
    this._memory.append(bar);
  }

  private _showExtra(r: IResult): void {
    this._extra.textContent = '';
    const row = (label: string, text: string) => {
      const node = el('div', 'jp-hwsim-readrow');
      node.append(el('span', 'jp-hwsim-readlabel', label), el('span', '', text));
      this._extra.append(node);
    };
    if (r.ttft_ms) {
      row('First token', `p50 ${formatNumber(r.ttft_ms.p50)} ms`);
      row(
        'Per stream',
        `${formatNumber(r.tokens_per_s_per_stream ?? 0)} tokens/s (fits ${r.max_concurrency ?? '?'} sequences)`
      );
    }
    if (r.goodput !== undefined && r.goodput !== null) {
      row('Goodput', `${formatNumber(r.goodput)} requests/s within ${r.scenario?.latency_slo_ms} ms`);
    }
    const one = r.throughput_unit.split('/')[0].replace(/s$/, '');
    if (r.power_w !== undefined && r.power_w !== null) {
      const cost =
        r.cost_usd_per_million !== undefined && r.cost_usd_per_million !== null
          ? `, $${formatSignificant(r.cost_usd_per_million)} per million ${one}s`
          : '';
      row(
        'Power, cost',
        `${formatSignificant(r.power_w)} W, ${formatSignificant(r.energy_j_per_unit ?? 0)} J per ${one}${cost}`
      );
    }
    const a = r.accuracy;
    if (a) {
      row(
        'Trust',
        a.status === 'validated' && a.low !== undefined && a.high !== undefined
          ? `likely ${formatSignificant(a.low)}–${formatSignificant(a.high)} ${r.throughput_unit} ` +
              `(median error ${Math.round(100 * (a.median_abs_error ?? 0))}% over ${a.n} published rows)`
          : `not validated (${a.n} published rows of its class)`
      );
    }
  }

  /** The suggestions worth showing (`shown` true or missing); "Show all" lists the others too. */
  private _renderSuggestions(): void {
    this.suggestions.textContent = '';
    const all = this._suggestions;
    if (!all.length) {
      const text = this._searched ? 'What would help: no change found.' : 'What would help: after the simulation…';
      this.suggestions.append(el('div', 'jp-hwsim-muted', text));
      return;
    }
    const shown = all.filter(s => s.shown !== false);
    const hidden = all.length - shown.length;
    const list = this._expanded ? all : shown;
    const metric = all[0].metric ?? 'throughput';
    const heading = el('h3', 'jp-hwsim-subheading', 'What would help');
    heading.title = `Each change re-simulated; the speed-up of ${metric}. Click one to apply it.`;
    this.suggestions.append(heading);
    if (!shown.length) {
      this.suggestions.append(el('div', 'jp-hwsim-muted', 'No change found that clearly helps (1.05x or more).'));
    }
    for (const s of list) {
      const speed = s.speedup !== undefined && s.speedup !== null ? `${s.speedup.toFixed(2)}x` : s.fits ? 'fits' : '-';
      const button = el('button', 'jp-hwsim-button jp-hwsim-suggestion') as HTMLButtonElement;
      button.classList.toggle('jp-mod-minor', s.shown === false);
      const head = el('span', 'jp-hwsim-suggestion-head');
      head.append(el('code', '', s.change), el('span', 'jp-hwsim-speedup', speed));
      button.append(head);
      if (s.why) {
        button.append(el('span', 'jp-hwsim-why', s.why));
      }
      button.title = `Apply ${s.change}`;
      button.setAttribute('aria-label', `Apply ${s.change}: ${speed}${s.why ? `, ${s.why}` : ''}`);
      button.addEventListener('click', () => this._options.onApply(s.fields));
      this.suggestions.append(button);
    }
    if (hidden) {
      this._showAll.textContent = this._expanded ? 'Show fewer' : `Show all (${hidden} more)`;
      this._showAll.setAttribute('aria-expanded', String(this._expanded));
      this.suggestions.append(this._showAll);
    }
  }

  private _statusText = '';
  private _suggestions: ISuggestion[] = [];
  private _expanded = false;
  private _searched = false;
  private readonly _showAll = document.createElement('button');
  private readonly _statusNode = el('div', 'jp-hwsim-status');
  private readonly _topError = el('div', 'jp-hwsim-top-error');
  private readonly _retry = document.createElement('button');
  private readonly _throughput = document.createElement('div');
  private readonly _latency = document.createElement('div');
  private readonly _busyMfu = document.createElement('div');
  private readonly _dThroughput = document.createElement('div');
  private readonly _dLatency = document.createElement('div');
  private readonly _dGpu = document.createElement('div');
  private readonly _gap = document.createElement('div');
  private readonly _memory = document.createElement('span');
  private readonly _extra = document.createElement('div');
  private readonly _bottleneck = document.createElement('div');
  private readonly _warnings = document.createElement('div');
}
