import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference"


@pytest.fixture
def reference_dir():
    if not REFERENCE.is_dir():
        pytest.fail(f"reference data not found at {REFERENCE}: the validation needs ../shared/reference")
    return REFERENCE
