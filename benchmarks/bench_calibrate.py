"""Calibration accuracy: calibrate the JPEG + CNN pipeline of tests/test_calibrate.py at batch 32 with
1 worker, predict batches 16 and 64 at 0, 1 and 2 workers, and measure them in turns with the
calibration point (4 rounds of 1.2 s bursts, the medians kept; see tests/test_calibrate.run_rounds for why in
turns): the comparison tests/test_calibrate.py makes, with what each round fitted.
Run: python benchmarks/bench_calibrate.py (about 5 minutes; needs torch and pillow; exits 1 if a point
misses by 20% or more)."""

import pathlib
import statistics
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
import test_calibrate as tc  # noqa: E402


def main():
    with tempfile.TemporaryDirectory() as root:
        ds = tc.write_images(pathlib.Path(root))
        rounds = tc.run_rounds(ds)
        rows, errors = tc.table(rounds)
    for i, r in enumerate(rounds):  # what each round's calibration fitted, and its own drift-free errors
        m, w = r["cal"].measured, r["cal"].scenario.workload
        print(
            f"round {i + 1}: step x{m['contention']['step']:.2f}, "
            f"worker hand-off {w['handoff_ms_per_batch']:.1f} ms/batch + {w['handoff_ms_per_sample']:.2f} ms/sample, "
            f"lost beside the step {m['contention'].get('worker_ms_per_batch', 0):.1f} ms/batch; "
            f"its rounds {m['throughput_range'][0]:+.0%}..{m['throughput_range'][1]:+.0%}; "
            "errors " + " ".join(f"{bs}/{nw} {e:+.0%}" for (bs, nw), e in tc.round_errors(r).items())
        )
    print(tc.TABLE_HEAD + "\n" + "\n".join(rows))
    print(f"drift-free: median |error| {statistics.median(errors):.1%}, max {max(errors):.1%} (target: each under 20%)")
    return 0 if max(errors) < 0.20 else 1


if __name__ == "__main__":
    sys.exit(main())
