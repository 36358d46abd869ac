"""Every example notebook runs top to bottom in a fresh kernel, offline, and is committed without outputs."""

import time

import nbclient
import nbformat
import pytest
from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "example_notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert any(p.name == "00_start_here.ipynb" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path):
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit notebooks without outputs"
    t = time.perf_counter()
    nbclient.NotebookClient(
        nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    took = time.perf_counter() - t
    print(f"\n{path.name}: {took:.1f} s")
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors[0]
    stderr = [
        o.text
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "stream" and o.name == "stderr" and "hwsim:" in o.text
    ]
    assert not stderr, stderr
    nbformat.validate(nb)
