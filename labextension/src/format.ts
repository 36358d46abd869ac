/**
 * Formatting helpers: the read-outs' text (as the `%hwsim run` report prints it) and a chart spec fitted to a width.
 */

import { Value } from './types';

/** Three significant digits: the values a log slider gives are short in a `%hwsim` line. */
export function roundSignificant(x: number, digits = 3): number {
  return x === 0 ? 0 : Number(x.toPrecision(digits));
}

/** 1234.56 -> "1,234.6" (Python's f"{x:,.1f}", as the `%hwsim run` report prints it). */
export function formatNumber(x: number, digits = 1): string {
  return x.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** `x` to `digits` significant figures, with thousands separators: 0.139, 9.06, 2,150. */
export function formatSignificant(x: number, digits = 3): string {
  return Number(x.toPrecision(digits)).toLocaleString('en-US', { maximumFractionDigits: 20 });
}

export function formatPercent(x: number, digits = 0): string {
  return `${(x * 100).toFixed(digits)}%`;
}

/** What the latency is measured over, per throughput unit. */
export function latencyLabel(unit: string): string {
  return { 'requests/s': 'per request', 'tokens/s': 'per output token' }[unit] ?? 'per step';
}

/** The sentence under "GPU busy | MFU" when the two are far apart (more than 20 points), else ''. */
export function busyMfuGap(busy: number, mfu: number): string {
  if (busy - mfu <= 0.2) {
    return '';
  }
  return (
    `The GPU is busy ${formatPercent(busy)} of the time but does useful math at ${formatPercent(mfu)} of its ` +
    'peak: busy counts any kernel running, however little of the chip it uses or however long it waits on memory.'
  );
}

/** A control's value as text with the field's unit. */
export function formatFieldValue(value: Value, unit: string): string {
  let text: string;
  if (typeof value === 'number') {
    text = Number.isInteger(value) ? value.toLocaleString('en-US') : String(roundSignificant(value));
  } else {
    text = String(value);
  }
  return unit && unit !== 'x' ? `${text} ${unit}` : text;
}
