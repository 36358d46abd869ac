import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Collapser } from '@jupyterlab/ui-components';
import { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Message } from '@lumino/messaging';
import { Panel, Widget } from '@lumino/widgets';

import { fitWidth } from './format';
import { IResult } from './types';

/** JupyterLab's own vega5 extension renders this with its bundled vega (no CDN). */
export const VEGALITE_MIME = 'application/vnd.vegalite.v5+json';

type Spec = { [key: string]: unknown };

// each spec carries its own title
const MAIN_CHARTS = ['utilization', 'gpu_time', 'curve', 'memory'];
const MORE_CHARTS = ['roofline', 'timeline'];

/** A width change smaller than this does not redraw. */
const REDRAW_PX = 16;
/** Room vega-embed keeps on the right for its "..." actions menu. */
const ACTIONS_PX = 38;

/**
 * One chart of the panel, sized to the panel's width. Renders are serialized and only the newest spec waiting is
 * drawn, so a fast slider never has two vega views racing in the same node.
 */
export class ChartSlot extends Panel {
  constructor(rendermime: IRenderMimeRegistry, name: string) {
    super();
    this.addClass('jp-hwsim-chart');
    this.node.dataset.chart = name;
    this._rendermime = rendermime;
    this._message = new Widget();
    this._message.addClass('jp-hwsim-chart-message');
    this.addWidget(this._message);
  }

  /** Draw this spec (a complete Vega-Lite document); an unchanged spec at an unchanged width is not redrawn. */
  draw(spec: Spec | undefined): void {
    if (!spec || !this._ensureRenderer()) {
      return;
    }
    this._spec = spec;
    this._schedule();
  }

  /**
   * The renderer is made on the first draw: a sidebar never opened adds no (empty) Vega output nodes to the page,
   * where they would only confuse page-wide queries for rendered outputs.
   */
  private _ensureRenderer(): IRenderMime.IRenderer | null {
    if (!this._renderer && !this._message.node.textContent) {
      try {
        this._renderer = this._rendermime.createRenderer(VEGALITE_MIME);
        this.insertWidget(0, this._renderer);
      } catch {
        this._message.node.textContent = `no renderer for ${VEGALITE_MIME}: is @jupyterlab/vega5-extension disabled?`;
      }
    }
    return this._renderer;
  }

  protected onResize(msg: Widget.ResizeMessage): void {
    super.onResize(msg);
    if (Math.abs(this._width() - this._drawnWidth) >= REDRAW_PX) {
      this._schedule();
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    // a chart drawn while collapsed had no width to fit
    if (Math.abs(this._width() - this._drawnWidth) >= REDRAW_PX) {
      this._schedule();
    }
  }

  /** The width a chart may take: 0 while hidden (then it keeps its own size). */
  private _width(): number {
    return Math.max(0, this.node.clientWidth - ACTIONS_PX);
  }

  private _schedule(): void {
    if (!this._rendering) {
      void this._drain();
    }
  }

  private async _drain(): Promise<void> {
    this._rendering = true;
    try {
      for (;;) {
        if (!this._spec || !this._renderer || this.isDisposed) {
          break;
        }
        const width = this._width();
        const fitted = fitWidth(this._spec, width);
        const text = JSON.stringify(fitted);
        if (text === this._drawnText) {
          break; // nothing new since the last render
        }
        this._drawnText = text;
        this._drawnWidth = width;
        try {
          const model = new MimeModel({ data: { [VEGALITE_MIME]: fitted as ReadonlyPartialJSONObject } });
          await this._renderer.renderModel(model);
          this._message.node.textContent = '';
        } catch (reason) {
          this._message.node.textContent = `the chart could not be drawn: ${String(reason)}`;
        }
      }
    } finally {
      this._rendering = false;
    }
  }

  private readonly _rendermime: IRenderMimeRegistry;
  private _renderer: IRenderMime.IRenderer | null = null;
  private _message: Widget;
  private _spec: Spec | null = null;
  private _drawnText = '';
  private _drawnWidth = 0;
  private _rendering = false;
}

/** The panel's charts: the main ones, then the roofline and timeline in a collapsed section. */
export class ChartSet {
  constructor(rendermime: IRenderMimeRegistry) {
    this.main = new Panel();
    this.main.addClass('jp-hwsim-charts');
    const more = new Panel();
    more.addClass('jp-hwsim-charts');
    more.title.label = 'Roofline and timeline';
    for (const [group, specs] of [
      [this.main, MAIN_CHARTS],
      [more, MORE_CHARTS]
    ] as const) {
      for (const name of specs) {
        const slot = new ChartSlot(rendermime, name);
        group.addWidget(slot);
        this._slots.set(name, slot);
      }
    }
    this.more = new Collapser({ widget: more });
    this.more.addClass('jp-hwsim-more');
    this.more.collapsed = true;
  }

  readonly main: Panel;
  readonly more: Collapser;

  /** Draw the charts of an answer; an estimate has no timeline, so the last simulated one stays. */
  draw(charts: IResult['charts'] | undefined, simulated: boolean): void {
    for (const [name, slot] of this._slots) {
      if (name === 'timeline' && !simulated) {
        continue;
      }
      slot.draw(charts?.[name]);
    }
  }

  private readonly _slots = new Map<string, ChartSlot>();
}
