"""The sidebar's model code (jest) and the installed extension, from the Python test suite."""

import json
import re
import subprocess
import sys

from conftest import ROOT


def test_sidebar_model_jest_suite():
    lab = ROOT / "labextension"
    assert (lab / "node_modules").is_dir(), "pip install . runs npm install in labextension/"
    p = subprocess.run(["npm", "test", "--silent"], cwd=lab, capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    tests = re.search(r"Tests:\s+(.*)", out).group(1)
    assert "failed" not in tests and int(re.search(r"(\d+) passed", tests).group(1)) >= 20, tests


def test_extensions_are_installed_and_enabled():
    p = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list", "--json"], capture_output=True, text=True, timeout=120
    )
    out = p.stdout + p.stderr
    if p.returncode != 0 or not p.stdout.strip().startswith("{"):  # older CLIs print a table only
        p = subprocess.run(
            [sys.executable, "-m", "jupyter", "labextension", "list"], capture_output=True, text=True, timeout=120
        )
        out = p.stdout + p.stderr
        line = next(x for x in out.splitlines() if "jupyter-hwsim" in x)
        assert "enabled" in line and "OK" in line, out
    else:
        assert "jupyter-hwsim" in json.dumps(json.loads(p.stdout)), out
    p = subprocess.run(
        [sys.executable, "-m", "jupyter", "server", "extension", "list"], capture_output=True, text=True, timeout=120
    )
    line = next(x for x in (p.stdout + p.stderr).splitlines() if "jupyter_hwsim" in x)
    assert "enabled" in line, p.stdout + p.stderr
