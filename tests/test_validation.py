"""Predicted vs. published measurements; writes docs/validation.md."""
from conftest import ROOT

from jupyter_hwsim import validation


def test_median_error_against_measurements(reference_dir):
    rows = validation.table(reference_dir)
    print()
    for r in rows:
        print(f"{r['case']:6} {r['hardware']:28} {r['precision']:18} measured {r['measured']:7.0f} "
              f"predicted {r['predicted']:7.0f} error {r['error']:+.0%}")
    med = validation.median_abs_error(rows)
    print(f"median absolute error {med:.1%}")
    (ROOT / "docs").mkdir(exist_ok=True)
    (ROOT / "docs" / "validation.md").write_text(validation.markdown(rows))
    assert len(rows) >= 8
    assert med <= 0.25
