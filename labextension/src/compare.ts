/**
 * A number against the pinned baseline: the ratio (x) and an arrow, and whether the change is for the better.
 * Pure: jest tests it in plain node.
 */

export interface IChange {
  /** now / baseline */
  ratio: number;
  /** "▲ 1.52x", "▼ 0.66x" or "= 1.00x" */
  text: string;
  direction: 'up' | 'down' | 'same';
  /** true: better than the baseline; false: worse; null: the same */
  better: boolean | null;
}

/** Within this relative difference the two numbers are shown as the same. */
const SAME = 0.005;

/** `now` against `base`; `higherIsBetter` for throughput, false for latency. Null when there is no ratio. */
export function compareTo(now: number, base: number, higherIsBetter: boolean): IChange | null {
  if (!Number.isFinite(now) || !Number.isFinite(base) || base <= 0 || now < 0) {
    return null;
  }
  const ratio = now / base;
  const direction = Math.abs(ratio - 1) < SAME ? 'same' : ratio > 1 ? 'up' : 'down';
  const arrow = { up: '▲', down: '▼', same: '=' }[direction];
  const digits = ratio >= 100 ? 0 : ratio >= 10 ? 1 : 2;
  const better = direction === 'same' ? null : (direction === 'up') === higherIsBetter;
  return { ratio, text: `${arrow} ${ratio.toFixed(digits)}x`, direction, better };
}

/** A fraction (utilization) against the baseline's, in percentage points: "▲ +12 pts". */
export function comparePoints(now: number, base: number, higherIsBetter: boolean): IChange | null {
  if (!Number.isFinite(now) || !Number.isFinite(base)) {
    return null;
  }
  const points = (now - base) * 100;
  const direction = Math.abs(points) < 0.5 ? 'same' : points > 0 ? 'up' : 'down';
  const arrow = { up: '▲', down: '▼', same: '=' }[direction];
  const better = direction === 'same' ? null : (direction === 'up') === higherIsBetter;
  const sign = points > 0 ? '+' : points < 0 ? '−' : '±';
  return {
    ratio: base ? now / base : NaN,
    text: `${arrow} ${sign}${Math.abs(points).toFixed(0)} pts`,
    direction,
    better
  };
}
