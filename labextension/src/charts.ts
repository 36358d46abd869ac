/**
 * The sidebar's charts, drawn with the extension's own Vega and Vega-Lite (loaded on the first draw, offline): the
 * server's Vega-Lite specs in JupyterLab's theme colours, fitted to the panel's width, with the pinned baseline
 * overlaid. A new answer of the same chart only replaces its data in the drawn view (no rebuild), so dragging a
 * slider costs a data update, not a new chart; a theme change redraws in the new colours without a reload.
 */

import { Collapser } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { download } from './exports';
import { fitWidth, IThemeColors, LIGHT, overlayBaseline, skeleton, Spec, themedSpec } from './vlspec';
import { IResult } from './types';

type VegaModule = typeof import('vega');
type VegaView = import('vega').View;

// the charts after the headline numbers (the first stays in sight at 1280x720), then the rest, then the collapsed ones
export const FIRST_CHARTS = ['utilization'];
export const MAIN_CHARTS = ['gpu_time', 'curve', 'memory'];
export const MORE_CHARTS = ['roofline', 'timeline'];
/** Charts a baseline is not overlaid on (a timeline of other steps says nothing about this one). */
const NO_BASELINE = new Set(['timeline']);

/** A width change smaller than this does not redraw. */
const REDRAW_PX = 16;
/** Room for the chart's vertical scrollbar and borders. */
const MARGIN_PX = 8;

let vegaLoading: Promise<{ vega: VegaModule; compile: typeof import('vega-lite').compile }> | null = null;

/** Vega and Vega-Lite, loaded once, on the first chart drawn (their code is a chunk of its own). */
function loadVega() {
  if (!vegaLoading) {
    vegaLoading = Promise.all([import('vega'), import('vega-lite')]).then(([vega, vl]) => ({
      vega,
      compile: vl.compile
    }));
  }
  return vegaLoading;
}

/** A CSS colour as #rrggbb (through the browser's own parsing), or as it is if it has alpha or no rgb form. */
function hexColor(css: string): string {
  const probe = document.createElement('span');
  probe.style.color = css;
  document.body.append(probe);
  const rgb = getComputedStyle(probe).color;
  probe.remove();
  const m = /^rgb\((\d+), (\d+), (\d+)\)$/.exec(rgb);
  return m
    ? '#' +
        m
          .slice(1)
          .map(x => Number(x).toString(16).padStart(2, '0'))
          .join('')
    : css;
}

/** The theme's colours, read from JupyterLab's CSS variables now (they change with the theme). */
export function themeColors(): IThemeColors {
  const style = getComputedStyle(document.body);
  const v = (name: string, fallback: string) => style.getPropertyValue(name).trim() || fallback;
  const light = document.body.dataset.jpThemeLight !== 'false';
  return {
    text: v('--jp-ui-font-color1', LIGHT.text),
    label: v('--jp-ui-font-color1', LIGHT.label),
    grid: v('--jp-border-color2', LIGHT.grid),
    domain: v('--jp-border-color1', LIGHT.domain),
    muted: light ? '#9e9e9e' : '#8a8a8a',
    font: v('--jp-ui-font-family', LIGHT.font),
    background: hexColor(v('--jp-layout-color1', LIGHT.background)),
    light
  };
}

/**
 * One chart. Renders are serialized and only the newest spec waiting is drawn, so a fast slider never has two
 * views racing in the same node; a spec whose skeleton (all but the data) is unchanged updates the drawn view's
 * data in place.
 */
export class ChartSlot extends Widget {
  constructor(readonly name: string) {
    super();
    this.addClass('jp-hwsim-chart');
    this.node.dataset.chart = name;
    const tools = document.createElement('div');
    tools.className = 'jp-hwsim-chart-tools';
    for (const format of ['svg', 'png'] as const) {
      const button = document.createElement('button');
      button.className = 'jp-hwsim-button jp-hwsim-mini';
      button.textContent = format.toUpperCase();
      button.title = `Download this chart as ${format.toUpperCase()}`;
      button.setAttribute('aria-label', `Download the ${name.replace('_', ' ')} chart as ${format.toUpperCase()}`);
      button.dataset.export = format;
      button.addEventListener('click', () => void this.download(format));
      tools.append(button);
    }
    this._chart.className = 'jp-hwsim-chart-body';
    this._message.className = 'jp-hwsim-chart-message';
    this.node.append(tools, this._chart, this._message);
  }

  /** Draw this spec (a complete Vega-Lite document), with `baseline` (the same chart of the baseline) behind it. */
  draw(spec: Spec | undefined, baseline: Spec | undefined): void {
    if (!spec) {
      return;
    }
    this._spec = spec;
    this._baseline = NO_BASELINE.has(this.name) ? undefined : baseline;
    this._schedule();
  }

  /** Draw again in the theme's current colours. */
  retheme(): void {
    this._schedule();
  }

  /** The drawn chart as SVG text or a PNG data URL (null before the first draw). */
  async image(format: 'svg' | 'png'): Promise<string | null> {
    await this._done;
    if (!this._view) {
      return null;
    }
    return format === 'svg' ? this._view.toSVG() : this._view.toImageURL('png', 2);
  }

  async download(format: 'svg' | 'png'): Promise<void> {
    const image = await this.image(format);
    if (image) {
      download(`hwsim-${this.name}.${format}`, image, format === 'svg' ? 'image/svg+xml' : null);
    }
  }

  /** How many times the chart was built, and how many times only its data changed (for tests and benchmarks). */
  get counts(): { builds: number; updates: number } {
    return { builds: this._builds, updates: this._updates };
  }

  dispose(): void {
    this._view?.finalize();
    this._view = null;
    super.dispose();
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    if (Math.abs(this._width() - this._drawnWidth) >= REDRAW_PX) {
      this._schedule();
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    // what arrived while it was hidden, or a width it had no room for
    if (this._dirty || Math.abs(this._width() - this._drawnWidth) >= REDRAW_PX) {
      this._schedule();
    }
  }

  /** The width a chart may take: 0 while hidden (then it keeps its own size). */
  private _width(): number {
    return Math.max(0, this.node.clientWidth - MARGIN_PX);
  }

  private _schedule(): void {
    this._dirty = true;
    if (!this._rendering) {
      this._done = this._drain();
    }
  }

  private async _drain(): Promise<void> {
    this._rendering = true;
    try {
      // a chart out of sight (a collapsed section) is drawn when it is shown (onAfterShow)
      while (this._dirty && this._spec && !this.isDisposed && this.isVisible) {
        this._dirty = false;
        try {
          await this._render(this._spec, this._baseline);
          this._message.textContent = '';
        } catch (reason) {
          this._message.textContent = `the chart could not be drawn: ${String(reason)}`;
        }
      }
    } finally {
      this._rendering = false;
    }
  }

  private async _render(source: Spec, baseline: Spec | undefined): Promise<void> {
    const { vega, compile } = await loadVega();
    if (this.isDisposed) {
      return;
    }
    const colors = themeColors();
    const width = this._width();
    const overlaid = baseline ? overlayBaseline(source, baseline, colors) : null;
    this.node.classList.toggle('jp-mod-baseline', !!overlaid);
    const spec = themedSpec(fitWidth(overlaid ?? source, width), colors);
    const skel = skeleton(spec);
    const datasets = (spec.datasets ?? {}) as { [name: string]: unknown[] };
    if (this._view && skel === this._skeleton) {
      // the same chart of new data: replace the data that changed, keep the view
      let changed = false;
      for (const [name, values] of Object.entries(datasets)) {
        const text = JSON.stringify(values);
        if (this._data.get(name) !== text) {
          this._data.set(name, text);
          this._view.data(name, values);
          changed = true;
        }
      }
      if (changed) {
        this._updates++;
        this.node.dataset.updates = String(this._updates);
        this._view.resize();
        await this._view.runAsync();
      }
    } else {
      const old = this._view;
      const view = new vega.View(vega.parse(compile(spec as never).spec), { renderer: 'svg', hover: true });
      const next = document.createElement('div');
      await view.initialize(next).runAsync();
      if (this.isDisposed) {
        view.finalize();
        return;
      }
      // swap in one step: the old chart stays until the new one is drawn (no empty frame, no jump)
      this._chart.replaceChildren(next);
      old?.finalize();
      this._view = view;
      this._skeleton = skel;
      this._data = new Map(Object.entries(datasets).map(([k, v]) => [k, JSON.stringify(v)]));
      this._builds++;
      this.node.dataset.builds = String(this._builds);
    }
    this._drawnWidth = width;
  }

  private readonly _chart = document.createElement('div');
  private readonly _message = document.createElement('div');
  private _view: VegaView | null = null;
  private _skeleton = '';
  private _data = new Map<string, string>();
  private _spec: Spec | null = null;
  private _baseline: Spec | undefined;
  private _drawnWidth = 0;
  private _rendering = false;
  private _dirty = false;
  private _done: Promise<void> = Promise.resolve();
  private _builds = 0;
  private _updates = 0;
}

/** The panel's charts: the first (kept near the numbers), the main ones, then the roofline and timeline collapsed. */
export class ChartSet {
  constructor() {
    this.first = new Panel();
    this.first.addClass('jp-hwsim-charts');
    this.main = new Panel();
    this.main.addClass('jp-hwsim-charts');
    const more = new Panel();
    more.addClass('jp-hwsim-charts');
    more.title.label = 'Roofline and timeline';
    for (const [group, names] of [
      [this.first, FIRST_CHARTS],
      [this.main, MAIN_CHARTS],
      [more, MORE_CHARTS]
    ] as const) {
      for (const name of names) {
        const slot = new ChartSlot(name);
        group.addWidget(slot);
        this._slots.set(name, slot);
      }
    }
    this.more = new Collapser({ widget: more });
    this.more.addClass('jp-hwsim-more');
    this.more.collapsed = true;
  }

  readonly first: Panel;
  readonly main: Panel;
  readonly more: Collapser;

  /** Draw the charts of an answer; an estimate has no timeline, so the last simulated one stays. */
  draw(charts: IResult['charts'] | undefined, simulated: boolean, baseline: IResult['charts'] | undefined): void {
    for (const [name, slot] of this._slots) {
      if (name === 'timeline' && !simulated) {
        continue;
      }
      slot.draw(charts?.[name], baseline?.[name]);
    }
  }

  /** Redraw every chart in the theme's current colours. */
  retheme(): void {
    for (const slot of this._slots.values()) {
      slot.retheme();
    }
  }

  slot(name: string): ChartSlot | undefined {
    return this._slots.get(name);
  }

  get slots(): ChartSlot[] {
    return [...this._slots.values()];
  }

  private readonly _slots = new Map<string, ChartSlot>();
}
