/**
 * Vega-Lite spec transforms, pure (jest tests them in plain node): the theme's colours as a Vega-Lite config, a spec
 * fitted to a width with its title and legend kept inside it, a baseline overlaid in a muted colour, and the spec's
 * skeleton (everything but its data), which tells whether a drawn chart can take new data instead of a rebuild.
 */

/* eslint-disable @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-member-access,
   @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-call --
   this module walks Vega-Lite documents: plain JSON of any shape, read key by key */

export type Spec = { [key: string]: any }; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Colours of the theme (CSS colour strings, as JupyterLab's variables hold them). */
export interface IThemeColors {
  /** text: titles, labels of marks */
  text: string;
  /** secondary text: axis and legend labels */
  label: string;
  grid: string;
  domain: string;
  /** the baseline overlay */
  muted: string;
  font: string;
  /** the panel's background (text colours are checked against it) */
  background: string;
  /** whether the theme is light (for marks coloured black or white by the server) */
  light: boolean;
}

export const LIGHT: IThemeColors = {
  text: 'rgba(0, 0, 0, 0.87)',
  label: 'rgba(0, 0, 0, 0.74)',
  grid: '#e0e0e0',
  domain: '#9e9e9e',
  muted: '#9e9e9e',
  font: 'system-ui, sans-serif',
  background: '#ffffff',
  light: true
};

/** WCAG's relative luminance of a #rrggbb colour, or null for another form. */
function luminance(hex: string): number | null {
  const m = /^#([0-9a-f]{6})$/i.exec(hex.trim());
  if (!m) {
    return null;
  }
  const channel = (i: number) => {
    const v = parseInt(m[1].slice(i, i + 2), 16) / 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4);
}

export function contrast(a: string, b: string): number | null {
  const la = luminance(a);
  const lb = luminance(b);
  return la === null || lb === null ? null : (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

/**
 * A text colour readable on the theme's background (contrast at least 4.5:1): the same hue, mixed towards white on
 * a dark theme or black on a light one until it is. Colours not in #rrggbb form are left as they are.
 */
export function readable(color: string, c: IThemeColors): string {
  const bg = /^#[0-9a-f]{6}$/i.test(c.background) ? c.background : c.light ? '#ffffff' : '#212121';
  if ((contrast(color, bg) ?? 99) >= 4.5) {
    return color;
  }
  const target = c.light ? 0 : 255;
  const rgb = [1, 3, 5].map(i => parseInt(color.slice(i, i + 2), 16));
  for (let t = 0.1; t <= 1.0001; t += 0.1) {
    const mixed =
      '#' +
      rgb
        .map(v =>
          Math.round(v + (target - v) * t)
            .toString(16)
            .padStart(2, '0')
        )
        .join('');
    if ((contrast(mixed, bg) ?? 0) >= 4.5) {
      return mixed;
    }
  }
  return c.light ? '#000000' : '#ffffff';
}

/** Keys whose colour paints text: checked for contrast. */
const TEXT_COLOUR_KEYS = new Set(['titleColor', 'labelColor']);

/** Prefix of the baseline's datasets in an overlaid spec. */
export const BASE_PREFIX = 'baseline__';
export const SERIES_FIELD = '__series';
export const SERIES = ['baseline', 'now'];

/** The theme as a Vega-Lite config: transparent background (no white card), text and lines in the theme's colours. */
export function themeConfig(c: IThemeColors): Spec {
  const axis = {
    labelColor: c.label,
    titleColor: c.text,
    gridColor: c.grid,
    domainColor: c.domain,
    tickColor: c.domain,
    labelFont: c.font,
    titleFont: c.font,
    titleFontWeight: 'normal'
  };
  return {
    background: 'transparent',
    font: c.font,
    title: { color: c.text, subtitleColor: c.label, font: c.font, anchor: 'start', fontSize: 13, fontWeight: 600 },
    axis,
    legend: {
      labelColor: c.label,
      titleColor: c.text,
      labelFont: c.font,
      titleFont: c.font,
      labelLimit: 0,
      symbolOpacity: 1
    },
    header: { labelColor: c.label, titleColor: c.text },
    view: { stroke: c.grid },
    text: { color: c.text },
    rule: { color: c.domain }
  };
}

function isObject(x: unknown): x is Spec {
  return !!x && typeof x === 'object' && !Array.isArray(x);
}

/** `over` merged into `base`, objects deeply; `over` wins. */
export function deepMerge(base: Spec, over: Spec): Spec {
  const out: Spec = { ...base };
  for (const [k, v] of Object.entries(over)) {
    out[k] = isObject(v) && isObject(out[k]) ? deepMerge(out[k], v) : v;
  }
  return out;
}

const INK = new Set(['#000', '#000000', 'black', '#fff', '#ffffff', 'white']);

/** Walk every unit (mark) of a spec, through layers and compositions. */
function mapUnits(spec: Spec, fn: (unit: Spec) => Spec): Spec {
  if (Array.isArray(spec.layer)) {
    return { ...spec, layer: spec.layer.map((s: Spec) => mapUnits(s, fn)) };
  }
  for (const key of ['hconcat', 'vconcat', 'concat']) {
    if (Array.isArray(spec[key])) {
      return { ...spec, [key]: spec[key].map((s: Spec) => mapUnits(s, fn)) };
    }
  }
  return spec.mark ? fn(spec) : spec;
}

/**
 * The spec in the theme's colours: the theme's config under the spec's own, and marks the server coloured black or
 * white (ink meant for a white page) in the theme's text colour, so they stay visible on a dark one.
 */
export function themedSpec(spec: Spec, c: IThemeColors): Spec {
  const themed = mapUnits(spec, unit => {
    const mark = typeof unit.mark === 'string' ? { type: unit.mark } : unit.mark;
    const fix: Spec = {};
    for (const key of ['color', 'fill', 'stroke']) {
      if (typeof mark[key] !== 'string') {
        continue;
      }
      if (INK.has(mark[key].toLowerCase())) {
        fix[key] = c.text;
      } else if (mark.type === 'text') {
        fix[key] = readable(mark[key], c); // a label in the server's colour, kept readable on this background
      }
    }
    return Object.keys(fix).length ? { ...unit, mark: { ...mark, ...fix } } : unit;
  });
  // axis and legend text coloured by the server (a dual axis's titles in their series' colours)
  const readableText = (node: unknown): unknown => {
    if (Array.isArray(node)) {
      return node.map(readableText);
    }
    if (!isObject(node)) {
      return node;
    }
    const out: Spec = {};
    for (const [k, v] of Object.entries(node)) {
      out[k] =
        TEXT_COLOUR_KEYS.has(k) && typeof v === 'string' ? readable(v, c) : k === 'datasets' ? v : readableText(v);
    }
    return out;
  };
  return { ...(readableText(themed) as Spec), config: deepMerge(themeConfig(c), spec.config ?? {}) };
}

const COMPOSED = ['hconcat', 'vconcat', 'concat', 'facet', 'repeat'];
/** Average width of a character of the title (13 px semibold) and of legend labels (11 px). */
const TITLE_CHAR_PX = 7.2;
const LEGEND_CHAR_PX = 6.6;
/** Room the chart's SVG and PNG buttons take at the right of its title. */
const TOOLS_PX = 80;
const LEGEND_SYMBOL_PX = 30;

/** The labels a colour legend shows: its scale's domain, else the field's values in the spec's datasets. */
function legendLabels(spec: Spec, color: Spec): string[] {
  if (Array.isArray(color.scale?.domain)) {
    return color.scale.domain.map(String);
  }
  const out = new Set<string>();
  for (const rows of Object.values(spec.datasets ?? {})) {
    if (Array.isArray(rows)) {
      for (const row of rows) {
        if (isObject(row) && row[color.field] !== undefined) {
          out.add(String(row[color.field]));
        }
      }
    }
  }
  return [...out];
}

/** A title broken into lines of at most `chars` characters (at spaces). */
export function wrapText(text: string, chars: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && (line + ' ' + word).length > chars) {
      lines.push(line);
      line = word;
    } else {
      line = line ? `${line} ${word}` : word;
    }
  }
  if (line) {
    lines.push(line);
  }
  return lines;
}

/**
 * A spec sized to `width` pixels in all (axes, legends and padding included), its title wrapped and its legends'
 * columns limited so nothing is clipped. A composed spec, or no known width, keeps its own size.
 */
export function fitWidth(spec: Spec, width: number): Spec {
  if (!(width > 0) || COMPOSED.some(key => key in spec)) {
    return spec;
  }
  const out: Spec = { ...spec, width: Math.floor(width), autosize: { type: 'fit-x', contains: 'padding' } };
  // the title leaves room on its right for the chart's download buttons
  const chars = Math.max(16, Math.floor((width - TOOLS_PX) / TITLE_CHAR_PX));
  if (typeof spec.title === 'string' && spec.title.length > chars) {
    out.title = { text: wrapText(spec.title, chars) };
  } else if (isObject(spec.title) && typeof spec.title.text === 'string' && spec.title.text.length > chars) {
    out.title = { ...spec.title, text: wrapText(spec.title.text, chars) };
  }
  return mapUnits(out, unit => {
    const color = unit.encoding?.color;
    const legend = color?.legend;
    if (!isObject(legend) || typeof legend.columns !== 'number') {
      return unit;
    }
    const labels = legendLabels(spec, color);
    const longest = Math.max(8, ...labels.map(l => l.length));
    const columns = Math.max(
      1,
      Math.min(legend.columns, Math.floor(width / (LEGEND_SYMBOL_PX + longest * LEGEND_CHAR_PX)))
    );
    if (columns === legend.columns) {
      return unit;
    }
    return { ...unit, encoding: { ...unit.encoding, color: { ...color, legend: { ...legend, columns } } } };
  });
}

/** The spec without its data: two specs with the same skeleton draw the same chart of different data. */
export function skeleton(spec: Spec): string {
  const { datasets, ...rest } = spec; // eslint-disable-line @typescript-eslint/no-unused-vars
  return JSON.stringify(rest);
}

/** The structure of a chart (no data, no titles): a baseline is overlaid only on a chart of the same structure. */
function structure(spec: Spec): string {
  return JSON.stringify(spec, (key, value) => (key === 'datasets' || key === 'title' ? undefined : value));
}

type Units = { groupedY: boolean; stackedX: boolean };

function survey(spec: Spec): Units {
  const found: Units = { groupedY: false, stackedX: false };
  mapUnits(spec, unit => {
    const type = typeof unit.mark === 'string' ? unit.mark : unit.mark?.type;
    const y = unit.encoding?.y;
    if (type === 'bar') {
      if (y && (y.type === 'nominal' || y.type === 'ordinal')) {
        found.groupedY = true;
      } else if (!y && unit.encoding?.x) {
        found.stackedX = true;
      }
    }
    return unit;
  });
  return found;
}

const seriesTransform = (series: string) => ({ calculate: `'${series}'`, as: SERIES_FIELD });

/** A unit as the baseline (`series` 'baseline') or the current one ('now') of a grouped or stacked bar chart. */
function asSeries(unit: Spec, series: string, units: Units): Spec {
  const type = typeof unit.mark === 'string' ? unit.mark : unit.mark?.type;
  const enc = unit.encoding ?? {};
  const scale = { domain: SERIES };
  let encoding: Spec;
  if (units.groupedY && enc.y && (enc.y.type === 'nominal' || enc.y.type === 'ordinal')) {
    encoding = { ...enc, yOffset: { field: SERIES_FIELD, type: 'nominal', scale } };
  } else if (units.stackedX && type === 'bar' && !enc.y) {
    encoding = { ...enc, y: { field: SERIES_FIELD, type: 'nominal', title: null, scale } };
  } else {
    return unit;
  }
  return { ...unit, encoding, transform: [...(unit.transform ?? []), seriesTransform(series)] };
}

/** The baseline's unit, muted: grey (bars of a breakdown keep their colours, faded), behind the current one. */
function ghost(base: Spec, dataName: string | undefined, c: IThemeColors, units: Units): Spec | null {
  const mark = typeof base.mark === 'string' ? { type: base.mark } : { ...base.mark };
  if (mark.type === 'text') {
    return null; // the baseline's labels would sit on the current ones
  }
  const enc: Spec = { ...(base.encoding ?? {}) };
  const keepColours = units.stackedX && mark.type === 'bar' && enc.color?.field;
  if (keepColours) {
    mark.opacity = 0.4;
  } else {
    if (enc.color?.field) {
      enc.detail = { field: enc.color.field, type: enc.color.type ?? 'nominal' };
    }
    delete enc.color;
    delete enc.fill;
    delete enc.stroke;
    delete enc.opacity;
    mark.color = c.muted;
    delete mark.fill;
    delete mark.stroke;
    mark.opacity = mark.type === 'bar' ? 0.7 : 0.55;
  }
  const unit: Spec = { ...base, mark, encoding: enc };
  if (dataName) {
    unit.data = { name: BASE_PREFIX + dataName };
  }
  delete unit.title;
  return asSeries(unit, 'baseline', units);
}

const TOP_ONLY = ['$schema', 'config', 'datasets', 'title', 'width', 'height', 'autosize', 'padding', 'background'];

/**
 * The chart of `spec` with the baseline's chart (`base`, a spec of the same structure) drawn behind it in a muted
 * colour: bars side by side ("baseline" above "now"), lines and points in grey. Null when the two charts differ in
 * structure (another kind of scenario): then the chart is drawn without a baseline.
 */
export function overlayBaseline(spec: Spec, base: Spec | undefined, c: IThemeColors): Spec | null {
  if (!base || structure(spec) !== structure(base) || COMPOSED.some(k => k in spec)) {
    return null;
  }
  const units = survey(spec);
  const walk = (cur: Spec, old: Spec, inherited: string | undefined): Spec => {
    const dataName: string | undefined = cur.data?.name ?? inherited;
    if (Array.isArray(cur.layer)) {
      return { ...cur, layer: cur.layer.map((child: Spec, i: number) => walk(child, old.layer[i], dataName)) };
    }
    const now = asSeries(cur, 'now', units);
    const g = ghost(old, dataName, c, units);
    if (!g) {
      return now;
    }
    const current = { ...now, data: cur.data ?? (dataName ? { name: dataName } : undefined) };
    // bars of the two series sit in rows of their own: the current one first, so the legend shows its colours;
    // lines and points of the baseline go behind the current ones
    return { layer: units.groupedY || units.stackedX ? [current, g] : [g, current] };
  };
  // the top level's own keys stay on top; its unit or layer goes under them
  const top: Spec = {};
  const body: Spec = {};
  for (const [k, v] of Object.entries(spec)) {
    (TOP_ONLY.includes(k) ? top : body)[k] = v;
  }
  const baseBody: Spec = {};
  for (const [k, v] of Object.entries(base)) {
    if (!TOP_ONLY.includes(k)) {
      baseBody[k] = v;
    }
  }
  const overlaid = walk(body, baseBody, undefined);
  const datasets: Spec = { ...(spec.datasets ?? {}) };
  for (const [name, values] of Object.entries(base.datasets ?? {})) {
    datasets[BASE_PREFIX + name] = values;
  }
  const layered = Array.isArray(overlaid.layer) ? overlaid : { layer: [overlaid] };
  const out: Spec = { ...top, ...layered, datasets };
  if (units.stackedX && typeof out.height === 'number') {
    out.height = Math.max(out.height, 48); // two rows: baseline and now
  }
  return clean(out);
}

/** Drop keys left undefined (JSON has none). */
function clean(spec: Spec): Spec {
  return JSON.parse(JSON.stringify(spec));
}
