"""The packages show the layers: a lower layer never imports a higher one, and no module reaches into another's
private names (nor into SimPy's)."""

import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parents[1] / "jupyter_hwsim"
# lowest first; a module may import its own layer and those below it
LAYERS = [
    ("core",),
    ("diagnosis",),
    ("kinds",),
    ("runner",),
    ("sweeps", "compare"),
    ("api", "scenario_text"),
    ("validation", "teaching", "calibration"),
    ("cli", "jupyter"),
    ("__init__", "__main__"),
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}


def _modules():
    return sorted(p for p in PKG.rglob("*.py") if "labextension" not in p.parts)


def _dotted(path: pathlib.Path, root: pathlib.Path = PKG) -> list[str]:
    return list(path.relative_to(root).with_suffix("").parts)


def _imports(path: pathlib.Path, root: pathlib.Path = PKG):
    """(target parts inside the package, imported names) of every import, at any depth of the module."""
    here = _dotted(path, root)
    pkg = here[:-1] if here[-1] != "__init__" else here[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "jupyter_hwsim":
                target = node.module.split(".")[1:]
            else:
                continue
            yield target, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "jupyter_hwsim":
                    yield a.name.split(".")[1:], []


def _layer(parts: list[str]) -> int:
    return RANK[parts[0]] if parts else RANK["__init__"]


def test_every_module_has_a_layer():
    for p in _modules():
        assert _dotted(p)[0] in RANK, f"{p.relative_to(PKG)}: add its package to LAYERS"


def _higher_imports(path: pathlib.Path, root: pathlib.Path = PKG) -> list[str]:
    mine, found = _layer(_dotted(path, root)), []
    for target, names in _imports(path, root):
        # `from .. import x` at the package root names the module x
        for t in [[n] for n in names] if not target else [target]:
            if t[0] in RANK and _layer(t) > mine:
                found.append(".".join(t))
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_lower_layers_never_import_higher_ones(path):
    assert not _higher_imports(path), f"{path.relative_to(PKG)} imports a higher layer: {_higher_imports(path)}"


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PKG)))
def test_no_private_names_across_modules(path):
    tree = ast.parse(path.read_text())
    for target, names in _imports(path):
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        assert not private, f"{path.relative_to(PKG)} imports private {private} from {'.'.join(target)}"
    modules = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    modules |= {"simpy", "env"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            attr = node.attr
            assert not (attr.startswith("_") and not attr.startswith("__")), (
                f"{path.relative_to(PKG)}:{node.lineno} uses {node.value.id}.{attr}"
            )


def test_the_layer_check_can_fail(tmp_path):
    """Imports of a higher layer are caught in each spelling; one of the same or a lower layer is not."""
    probe = tmp_path / "core" / "probe.py"
    probe.parent.mkdir()
    for code, found in [
        ("from .. import runner", ["runner"]),
        ("from ..jupyter import charts", ["jupyter"]),
        ("import jupyter_hwsim.api", ["api"]),
        ("from . import costs", []),
        ("def f():\n    from ..kinds import get", ["kinds"]),
    ]:
        probe.write_text(code + "\n")
        assert _higher_imports(probe, tmp_path) == found, code


def _names_a_kind(node) -> bool:
    """A string constant (or a tuple of them) naming a scenario kind."""
    from jupyter_hwsim.core.scenario import KINDS

    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_names_a_kind(e) for e in node.elts)
    return isinstance(node, ast.Constant) and node.value in KINDS


def test_no_kind_dispatch_outside_the_registry():
    """A kind's behaviour lives in its module of kinds/ and its traits in core.scenario.KIND_TRAITS: nothing else
    compares a scenario's kind with a kind's name."""
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                kind = [n for n in sides if getattr(n, "attr", getattr(n, "id", None)) == "kind"]
                kind += [n for n in sides if isinstance(n, ast.Subscript) and getattr(n.slice, "value", None) == "kind"]
                assert not (kind and any(_names_a_kind(n) for n in sides)), (
                    f"{p.relative_to(PKG)}:{node.lineno} dispatches on kind"
                )


def test_every_kind_is_registered_with_its_traits():
    from jupyter_hwsim import kinds
    from jupyter_hwsim.core.scenario import KIND_TRAITS

    assert set(kinds.REGISTRY) == set(KIND_TRAITS)
    for name, kind in kinds.REGISTRY.items():
        assert kind.name == name
