"""The README's Python snippets run as written (from the repository's root, as a newcomer would)."""

import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
RUNNABLE = [b for b in BLOCKS if not b.lstrip().startswith("%")]  # magics run in test_notebook.py


def test_the_readme_has_snippets():
    assert len(RUNNABLE) >= 4


@pytest.mark.slow
@pytest.mark.parametrize("code", RUNNABLE, ids=lambda c: c.strip().splitlines()[0][:40])
def test_snippet_runs(code, tmp_path):
    script = tmp_path / "snippet.py"
    script.write_text(code.replace("seeds=3", "seeds=2"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
