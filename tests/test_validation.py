"""Predicted vs. published measurements (the report itself is written by `python -m jupyter_hwsim.validation`)."""

from conftest import ROOT

from jupyter_hwsim import validation


def test_median_error_against_measurements():
    rows = validation.table()
    assert len(rows) == len(validation.CASES)
    assert validation.median_abs_error(rows) <= 0.25


def test_llm_decode_rows_sit_under_the_bandwidth_roofline():
    """Bytes per token over achievable bandwidth bounds every engine: a prediction well under a measurement
    would mean the model reads too many bytes or credits too little bandwidth."""
    rows = validation.table(validation.LLM_CASES)
    assert len(rows) == 24
    for r in rows:
        assert r["predicted"] >= 0.95 * r["measured"], r["case"]
        assert r["bottleneck"] in ("memory_bw", "overhead", "compute"), r["case"]
    compiled = [r for r in rows if r["framework"].startswith("MLC")]
    assert validation.median_abs_error(compiled) < 0.25


def test_the_report_is_current(tmp_path):
    """docs/validation.md is what the script writes from the code as it stands: regenerate it when numbers move."""
    out = tmp_path / "validation.md"
    assert validation.main([str(out)]) == 0
    assert out.read_text() == (ROOT / "docs" / "validation.md").read_text()
