"""Every number unchanged: the golden scenarios give the recorded results, bit for bit (see tests/golden/cases.py)."""

import gzip
import json

import pytest
from golden import cases as golden

with gzip.open(golden.RESULTS, "rt") as _f:
    RECORDED = json.load(_f)


def test_the_cases_are_the_recorded_ones():
    assert [r["case"] for r in RECORDED] == golden.cases()
    assert len(RECORDED) >= 100


@pytest.mark.parametrize("i", range(len(RECORDED)))
def test_results_are_unchanged(i):
    rec = RECORDED[i]
    s = golden.Scenario(**rec["case"])
    assert golden._clean(golden.simulate(s, seed=i, suggest=i % 3 == 0).to_dict()) == rec["simulate"]
    assert golden._clean(golden.estimate(s, suggest=False).to_dict()) == rec["estimate"]
