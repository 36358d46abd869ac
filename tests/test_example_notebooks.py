"""Every example notebook runs top to bottom in a fresh kernel, offline, and is committed without outputs."""

import functools
import re
import time

import nbclient
import nbformat
import pytest
from conftest import ROOT

NOTEBOOKS = sorted((ROOT / "example_notebooks").glob("*.ipynb"))


@functools.cache
def executed(path):
    """(the notebook executed in a fresh kernel, seconds it took): run once per test session."""
    nb = nbformat.read(path, as_version=4)
    t = time.perf_counter()
    nbclient.NotebookClient(
        nb, kernel_name="python3", timeout=180, resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return nb, time.perf_counter() - t


def test_there_are_notebooks():
    assert any(p.name == "00_start_here.ipynb" for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path):
    nb, took = executed(path)
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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_charts_survive_export_to_html(path):
    """Each chart carries a static SVG that nbconvert's HTML export keeps as an image (no JavaScript needed)."""
    nbconvert = pytest.importorskip("nbconvert")
    nb, _ = executed(path)
    charts = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "application/vnd.vegalite.v5+json" in o.get("data", {})
    ]
    assert all("image/svg+xml" in o["data"] for o in charts)
    html, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    assert len(re.findall(r'<img[^>]*src="data:image/svg\+xml', html)) >= len(charts)
