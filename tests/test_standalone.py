"""A fresh clone stands on its own: its tests pass from a copy with nothing beside it, and read nothing outside it."""

import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

# run inside the copy: every file opened below the copy's parent folder must lie inside the copy
_AUDIT = textwrap.dedent("""
    import os, sys
    root, outside = os.path.realpath(sys.argv[1]), os.path.dirname(os.path.realpath(sys.argv[1]))
    escaped = []
    def hook(event, args):
        if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
            p = os.path.realpath(os.fsdecode(args[0]))
            if p.startswith(outside + os.sep) and not p.startswith(root + os.sep):
                escaped.append(p)
    sys.addaudithook(hook)
    import pytest, jupyter_hwsim
    assert os.path.realpath(jupyter_hwsim.__file__).startswith(root), jupyter_hwsim.__file__
    code = pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[2:]])
    if escaped:
        print("read outside the repository:", sorted(set(escaped)))
        sys.exit(3)
    sys.exit(code)
""")


def _tracked_files():
    """What a clone of this checkout would hold once committed: tracked and untracked files git does not ignore."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [f for f in out.decode().split("\0") if f]


@pytest.mark.slow
def test_tests_pass_from_a_copy_with_nothing_beside_it(tmp_path):
    """The reference-data tests, from a copy of the tracked files whose sibling `shared/` holds a decoy of the
    old reference table: code reading the sibling folder would find it, and the audit hook reports it."""
    copy = tmp_path / "outer" / "repo"
    for f in _tracked_files():
        if (ROOT / f).is_file():
            (copy / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, copy / f)
    design_folder = "sha" + "red"  # the design repository's name, spelled so no path check mistakes this for a read
    decoy = tmp_path / "outer" / design_folder / "reference"
    shutil.copytree(copy / "jupyter_hwsim" / "data" / "reference", decoy)
    p = subprocess.run(
        [sys.executable, "-c", _AUDIT, str(copy), "tests/test_catalog.py", "tests/test_validation.py"],
        cwd=copy,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"},
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert " passed" in p.stdout


def test_nothing_names_a_folder_beside_the_repository():
    """The design repository's folder is not there in a clone: no code, notebook or CI script may name it."""
    banned = ("../" + "shared", "shared" + "/reference")  # spelled in pieces so this file does not match itself
    for f in _tracked_files():
        if (ROOT / f).is_file() and (f.endswith((".py", ".ipynb", ".ts", ".toml", ".cfg")) or f.startswith(".ci/")):
            text = (ROOT / f).read_text(errors="replace")
            assert not any(b in text for b in banned), f
