/**
 * The read-outs of the newest answer: the status line, the top error and its Retry button, the headline numbers
 * (kept in sight while the controls scroll), memory, bottleneck and warnings, and the suggestions.
 */

import { el, labelled } from './dom';
import { busyMfuGap, formatNumber, formatPercent, latencyLabel } from './format';
import { SEED } from './state';
import { IResult, ISuggestion, Method } from './types';

const MAX_SUGGESTIONS = 5;

export interface IResultsOptions {
  /** the Retry button was clicked */
  onRetry: () => void;
  /** a suggestion was clicked */
  onApply: (fields: ISuggestion['fields']) => void;
  /** whether requests are in flight, and which one shows in the status line */
  activity: () => { busy: boolean; running: Method | null };
}

export class ResultsView {
  constructor(private readonly _options: IResultsOptions) {
    const top = el('div', 'jp-hwsim-top');
    top.append(el('div', 'jp-hwsim-heading', 'HW what-if'), this._statusNode, this._topError);
    this._retry.textContent = 'Retry';
    this._retry.className = 'jp-hwsim-button';
    this._retry.hidden = true;
    this._retry.addEventListener('click', () => this._options.onRetry());
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
    this.results.className = 'jp-hwsim-results';
    this.results.append(top, headline);

    this._gap.className = 'jp-hwsim-gap';
    this._memory.className = 'jp-hwsim-memory';
    this._extra.className = 'jp-hwsim-extra';
    this._bottleneck.className = 'jp-hwsim-bottleneck';
    this._warnings.className = 'jp-hwsim-warnings';
    this.details.className = 'jp-hwsim-details';
    this.details.append(this._gap, labelled('memory', this._memory), this._extra, this._bottleneck, this._warnings);

    this.suggestions.className = 'jp-hwsim-suggestions';
  }

  /** The status, the top error and the headline numbers. */
  readonly results = document.createElement('div');
  /** Memory, bottleneck and warnings. */
  readonly details = document.createElement('div');
  /** The suggestions' buttons. */
  readonly suggestions = document.createElement('div');

  /** The numbers, bottleneck, status line and suggestions of an answer. */
  show(r: IResult, method: Method): void {
    const simulated = method === 'simulate';
    this._throughput.dataset.value = String(r.throughput);
    this._throughput.dataset.method = method;
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
    this.setStatus(
      simulated
        ? `simulated: seed ${SEED}, ${events.toLocaleString('en-US')} events in ${wall.toFixed(0)} ms`
        : 'estimate (closed form): the simulation follows when the value settles',
      simulated ? 'simulate' : 'estimate'
    );
    this._showSuggestions(r, simulated);
  }

  /** Dim the numbers while they belong to an older scenario than the controls show. */
  setStale(stale: boolean): void {
    this.results.classList.toggle('jp-mod-stale', stale);
    this.details.classList.toggle('jp-mod-stale', stale);
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
    const doing = running === 'simulate' ? ' · simulating…' : running === 'estimate' ? ' · estimating…' : '';
    this._statusNode.textContent = this._statusText + doing;
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
      this._extra.append(labelled('goodput', el('span', '', `${formatNumber(r.goodput)} requests/s within ${slo} ms`)));
    }
  }

  private _showSuggestions(r: IResult, simulated: boolean): void {
    this.suggestions.textContent = '';
    const list = (r.suggestions ?? []).slice(0, MAX_SUGGESTIONS);
    if (!list.length) {
      if (!simulated) {
        this.suggestions.append(el('div', 'jp-hwsim-muted', 'What would help: after the simulation…'));
      }
      return;
    }
    const metric = list[0].metric ?? 'throughput';
    this.suggestions.append(
      el('div', 'jp-hwsim-subheading', `What would help (each re-simulated; speed-up of ${metric}; click to apply)`)
    );
    for (const s of list) {
      const speed = s.speedup !== undefined && s.speedup !== null ? `${s.speedup.toFixed(2)}x` : s.fits ? 'fits' : '-';
      const button = el('button', 'jp-hwsim-button jp-hwsim-suggestion') as HTMLButtonElement;
      button.append(el('code', '', s.change), '  ', el('span', 'jp-hwsim-speedup', speed));
      button.title = s.why ?? '';
      button.addEventListener('click', () => this._options.onApply(s.fields));
      this.suggestions.append(button);
    }
  }

  private _statusText = '';
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
}
