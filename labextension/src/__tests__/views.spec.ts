/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment --
   the specs are plain JSON */
import { compareTo, comparePoints } from '../compare';
import { checkNumber } from '../controls';
import { resultJson, scenarioToToml, tomlValue } from '../exports';
import { ICatalog, IFieldSpec, IResult } from '../types';
import {
  BASE_PREFIX,
  contrast,
  fitWidth,
  LIGHT,
  overlayBaseline,
  readable,
  skeleton,
  themedSpec,
  wrapText
} from '../vlspec';

function field(type: IFieldSpec['type'], dflt: IFieldSpec['default'], lo = 0, hi = 100): IFieldSpec {
  return { type, unit: '', help: '', default: dflt, lo, hi, lo_open: false, choices: null, accepted: `${lo}-${hi}` };
}

const UTILIZATION = {
  $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
  title: 'Utilization per resource',
  width: 260,
  data: { name: 'rows' },
  layer: [
    {
      mark: { type: 'bar' },
      encoding: {
        x: { field: 'value', type: 'quantitative' },
        y: { field: 'label', type: 'nominal' },
        color: { field: 'group', type: 'nominal' }
      }
    },
    {
      mark: { type: 'text' },
      encoding: { x: { field: 'value', type: 'quantitative' }, y: { field: 'label', type: 'nominal' } }
    }
  ],
  datasets: { rows: [{ label: 'CPU', value: 0.5, group: 'pipeline' }] }
};

const BREAKDOWN = {
  title: 'Where the GPU time goes',
  height: 40,
  data: { name: 'rows' },
  mark: { type: 'bar' },
  encoding: {
    x: { field: 'fraction', type: 'quantitative', stack: 'zero' },
    color: { field: 'cause', type: 'nominal', legend: { columns: 4, orient: 'bottom' } }
  },
  datasets: { rows: [{ cause: 'input_preprocess', fraction: 1 }] }
};

describe('chart specs', () => {
  it('take the theme: transparent background, theme colours, black marks in the text colour', () => {
    const dark = { ...LIGHT, text: '#eee', label: '#ccc', light: false };
    const spec = { layer: [{ mark: { type: 'point', color: '#000000' } }], config: { view: { continuousWidth: 300 } } };
    const themed = themedSpec(spec, dark);
    expect(themed.config.background).toBe('transparent');
    expect(themed.config.axis.labelColor).toBe('#ccc');
    expect(themed.config.view.continuousWidth).toBe(300);
    expect(themed.layer[0].mark.color).toBe('#eee');
  });

  it('wrap a long title and limit legend columns to the width', () => {
    expect(wrapText('Timeline of the last steps: where the GPU waits', 20)).toEqual([
      'Timeline of the last',
      'steps: where the GPU',
      'waits'
    ]);
    const fitted = fitWidth(BREAKDOWN, 200);
    expect(fitted.width).toBe(200);
    expect(fitted.encoding.color.legend.columns).toBeLessThan(4);
    expect(fitWidth(BREAKDOWN, 320).title).toBe(BREAKDOWN.title); // fits in 320 px
    expect(fitWidth(BREAKDOWN, 120).title).toEqual({ text: ['Where the GPU', 'time goes'] });
  });

  it('overlay the baseline: bars side by side, its data under its own names, no labels of its own', () => {
    const base = { ...UTILIZATION, datasets: { rows: [{ label: 'CPU', value: 0.2, group: 'pipeline' }] } };
    const out = overlayBaseline(UTILIZATION, base, LIGHT)!;
    expect(out.datasets[BASE_PREFIX + 'rows']).toEqual(base.datasets.rows);
    expect(out.datasets.rows).toEqual(UTILIZATION.datasets.rows);
    const bars = out.layer[0].layer;
    expect(bars).toHaveLength(2);
    expect(bars[1].data).toEqual({ name: BASE_PREFIX + 'rows' });
    expect(bars[1].mark.color).toBe(LIGHT.muted);
    expect(bars[0].encoding.yOffset.field).toBe('__series');
    expect(out.layer[1].mark.type).toBe('text'); // the current labels only
    expect(out.layer[1].encoding.yOffset).toBeDefined();
    // a stacked breakdown gets a row per series
    const stacked = overlayBaseline(BREAKDOWN, BREAKDOWN, LIGHT)!;
    expect(stacked.layer[0].encoding.y.field).toBe('__series');
    expect(stacked.height).toBeGreaterThanOrEqual(48);
  });

  it('overlay nothing on a chart of another structure, and tell data changes from structure changes', () => {
    expect(overlayBaseline(UTILIZATION, BREAKDOWN, LIGHT)).toBeNull();
    const newData = { ...UTILIZATION, datasets: { rows: [] } };
    expect(skeleton(newData)).toBe(skeleton(UTILIZATION));
    expect(skeleton({ ...UTILIZATION, width: 100 })).not.toBe(skeleton(UTILIZATION));
  });
});

describe('the baseline', () => {
  it('shows ratios with arrows, better or worse by the metric', () => {
    expect(compareTo(3000, 2000, true)).toMatchObject({ text: '▲ 1.50x', direction: 'up', better: true });
    expect(compareTo(50, 100, false)).toMatchObject({ text: '▼ 0.50x', direction: 'down', better: true });
    expect(compareTo(100.1, 100, true)).toMatchObject({ text: '= 1.00x', better: null });
    expect(compareTo(1, 0, true)).toBeNull();
    expect(comparePoints(0.62, 0.5, true)).toMatchObject({ text: '▲ +12 pts', better: true });
  });
});

describe('exports and fields', () => {
  const catalog = {
    fields: { kind: field('str', 'training'), loader_workers: field('int', 8), name: field('str', null) }
  } as unknown as ICatalog;

  it('writes the scenario as TOML that reads back', () => {
    expect(tomlValue('a "b"\n')).toBe('"a \\"b\\"\\n"');
    expect(tomlValue(true)).toBe('true');
    expect(tomlValue(7)).toBe('7');
    const toml = scenarioToToml(catalog, { kind: 'training', loader_workers: 16, name: 'x' });
    expect(toml.split('\n').filter(l => !l.startsWith('#'))).toEqual(['loader_workers = 16', 'name = "x"', '']);
  });

  it('writes the result without its chart specs', () => {
    const r = { throughput: 2, charts: { a: {} } } as unknown as IResult;
    expect(JSON.parse(resultJson(r))).toEqual({ throughput: 2 });
  });

  it('checks a typed number against the field', () => {
    expect(checkNumber(field('int', 8, 0, 64), '16')).toEqual({ value: 16 });
    expect(checkNumber(field('int', 8, 0, 64), '1.5')).toHaveProperty('error');
    expect(checkNumber(field('float', 1, 0, 10), '7.0')).toEqual({ value: 7 });
    expect(checkNumber(field('float', 1, 0, 10), '11')).toHaveProperty('error');
    expect(checkNumber(field('float', 1, 0, 10), 'abc')).toHaveProperty('error');
  });
});

describe('readable chart text', () => {
  it('keeps server colours readable on the background', () => {
    const dark = { ...LIGHT, background: '#212121', light: false };
    expect(contrast(readable('#d62728', dark), '#212121')!).toBeGreaterThanOrEqual(4.5);
    expect(contrast(readable('#f58518', LIGHT), '#ffffff')!).toBeGreaterThanOrEqual(4.5);
    expect(readable('#000000', LIGHT)).toBe('#000000');
    const spec = { encoding: { y: { axis: { titleColor: '#4c78a8' } } }, mark: { type: 'text', color: '#d62728' } };
    const themed = themedSpec(spec, dark);
    expect(contrast(themed.encoding.y.axis.titleColor as string, '#212121')!).toBeGreaterThanOrEqual(4.5);
    expect(contrast(themed.mark.color as string, '#212121')!).toBeGreaterThanOrEqual(4.5);
  });
});
