"""Predicted vs. published measurements; writes docs/validation.md."""
from conftest import ROOT

from jupyter_hwsim import validation


def _print(rows):
    print()
    for r in rows:
        print(f"{r['case']:6} {r['hardware']:28} {r['framework']:18} {r['precision'][:14]:14} "
              f"measured {r['measured']:8.1f} predicted {r['predicted']:8.1f} error {r['error']:+.0%}")
    print(f"median absolute error {validation.median_abs_error(rows):.1%}")


def test_median_error_against_measurements(reference_dir):
    rows = validation.table(reference_dir)
    llm_rows = validation.table(reference_dir, validation.LLM_CASES)
    _print(rows)
    _print(llm_rows)
    (ROOT / "docs").mkdir(exist_ok=True)
    (ROOT / "docs" / "validation.md").write_text(validation.markdown(rows, llm_rows))
    assert len(rows) >= 8
    assert validation.median_abs_error(rows) <= 0.25


def test_llm_decode_rows_sit_under_the_bandwidth_roofline(reference_dir):
    """Bytes per token over achievable bandwidth bounds every engine: a prediction well under a measurement
    would mean the model reads too many bytes or credits too little bandwidth."""
    rows = validation.table(reference_dir, validation.LLM_CASES)
    assert len(rows) == 24
    for r in rows:
        assert r["predicted"] >= 0.95 * r["measured"], r["case"]
        assert r["bottleneck"] in ("memory_bw", "overhead", "compute"), r["case"]
    compiled = [r for r in rows if r["framework"].startswith("MLC")]
    assert validation.median_abs_error(compiled) < 0.25
