"""The hardware and workload catalogue: TOML data files with a source for every number."""

from __future__ import annotations

import functools
import json
import re
import tomllib
from importlib import resources

from .errors import HwsimError, did_you_mean

_FILES = {
    "gpus": "devices.toml",
    "storage": "storage.toml",
    "links": "links.toml",
    "workloads": "workloads.toml",
    "precisions": "precisions.toml",
    "engines": "engines.toml",
    "cpus": "cpus.toml",
    "decoders": "decoders.toml",
    "augmentations": "augmentations.toml",
}
_FIELD = {
    "gpus": "gpu",
    "storage": "storage",
    "links": "host_link",
    "workloads": "workload",
    "precisions": "precision",
    "engines": "engine",
    "cpus": "cpu",
    "decoders": "decoder",
    "augmentations": "augmentation",
}


@functools.cache
def _load(section: str) -> dict:
    with resources.files("jupyter_hwsim").joinpath("data").joinpath(_FILES[section]).open("rb") as f:
        data = tomllib.load(f)
    defaults = data.pop("defaults", None)
    if defaults:
        dsrc = defaults.pop("sources", {})
        for entry in data.values():
            for key, value in defaults.items():
                if key not in entry:
                    entry[key] = value
                    entry.setdefault("sources", {})[key] = dsrc[key]
    for key, entry in data.items():
        entry["id"] = key
    if section == "workloads":
        data = {**_packaged_models(), **data}  # a TOML entry wins over a config file of the same name
    from .scenario import own  # entries are read-only: a caller's change cannot alter the catalogue

    return {key: own(entry, f"{section}.{key}") for key, entry in data.items()}


def _packaged_models() -> dict:
    """The Hugging Face config.json files shipped in data/models (the validation table's language models), as
    workloads named by their file: llama-3.1-8b, mixtral-8x7b, qwen2.5-7b, ... offered wherever the built-in
    ones are. A file the importer does not read (a model type it does not know) is left out."""
    from .importers.hf import from_hf_config

    out = {}
    folder = resources.files("jupyter_hwsim").joinpath("data").joinpath("models")
    for f in sorted(folder.iterdir(), key=lambda f: f.name):
        if not f.name.endswith(".json"):
            continue
        cfg = json.loads(f.read_text(encoding="utf-8"))
        repo = re.search(r"huggingface\.co/[^/\s]+/([^/\s]+)", str(cfg.get("_source", "")))
        try:
            w = from_hf_config(cfg, name=repo.group(1) if repo else None, source=f"data/models/{f.name}")
        except HwsimError:
            continue
        key = f.name.removesuffix(".json")
        w["sources"]["config"] = f"data/models/{f.name} ({cfg.get('_source', 'no source recorded')})"
        out[key] = {**w, "id": key}
    return out


@functools.cache
def defaults(section: str) -> dict:
    """A section's [defaults] table: what an entry that does not say takes (a custom one too, for its optional
    keys)."""
    with resources.files("jupyter_hwsim").joinpath("data").joinpath(_FILES[section]).open("rb") as f:
        d = tomllib.load(f).get("defaults", {})
    d.pop("sources", None)
    return d


# entries added at run time: catalog.add(), or the TOML files of the folder named by USER_FOLDER_ENV
_ADDED: dict[str, dict] = {section: {} for section in _FILES}
USER_FOLDER_ENV = "JUPYTER_HWSIM_CATALOG"
_ADDABLE = ("gpus", "storage", "links", "workloads", "engines", "cpus")
_user_folder_read: list[str] = []  # the folder already read (it is read once, on first use)
_changes = [0]  # entries added so far (catalog.add(), a user folder's): see generation()


def generation() -> int:
    """A number that changes whenever the catalogue does: every entry added by add() or from the user folder of
    $JUPYTER_HWSIM_CATALOG (a folder named since the last call is read now, so a bad one is refused here). A cache
    of results keys on it, so a changed entry is never answered with a result computed from the old one."""
    _read_user_folder()
    return _changes[0]


def _entries(section: str) -> dict:
    _read_user_folder()
    return {**_load(section), **_ADDED[section]}


@functools.cache
def _aliases(section: str) -> dict:
    table = {}
    for key, entry in _entries(section).items():
        for name in [key, *entry.get("aliases", [])]:
            table[_norm(name)] = key
    return table


def _norm(name: str) -> str:
    return str(name).strip().lower().replace("_", "-").replace(" ", "-")


def maker(device: dict) -> str:
    """Who made a device: the first word of its name ("NVIDIA", "AMD", "Apple", "Google"); what an engine's
    platforms and a vendor library's behaviour are keyed on."""
    return str(device.get("name", "")).split(" ")[0]


def names(section: str) -> list[str]:
    """Catalogue ids of a section: gpus, storage, links, workloads, precisions."""
    return list(_entries(section))


def get(section: str, name: str) -> dict:
    """One entry by id or alias, case-insensitive; a miss is an error with a suggestion."""
    if not isinstance(name, str):
        raise HwsimError(_FIELD[section], name, f"a name from the catalogue: {', '.join(names(section))}")
    key = _aliases(section).get(_norm(name))
    if key is None:
        raise HwsimError(
            _FIELD[section], name, f"one of {', '.join(names(section))}", did_you_mean(_norm(name), _aliases(section))
        )
    # no merged copy on this hot path: the alias table (cached) has read the user folder already
    return _ADDED[section].get(key) or _load(section)[key]


def gpus() -> dict:
    return _entries("gpus")


def storage() -> dict:
    return _entries("storage")


def links() -> dict:
    return _entries("links")


def workloads() -> dict:
    return _entries("workloads")


def precisions() -> dict:
    return _entries("precisions")


def engines() -> dict:
    return _entries("engines")


def cpus() -> dict:
    return _entries("cpus")


def decoders() -> dict:
    return _entries("decoders")


def augmentations() -> dict:
    return _entries("augmentations")


MAX_ID_CHARS = 200  # an added entry's name: a label for tables and menus, not a text


def add(section: str, entry, id: str | None = None, origin: str = "catalog.add()") -> dict:
    """Add a device, storage, link, workload, engine or host CPU at run time: a dict or a TOML table of the
    documented fields (python -m jupyter_hwsim catalog SECTION --json shows them), deep-checked like a custom
    entry of a scenario. Its id (the argument, else the entry's "id") must be new. Returns the stored entry."""
    from .scenario import check_cpu, own, thaw
    from .workloads import check_custom

    if section not in _ADDABLE:
        raise HwsimError("section", section, "one of " + ", ".join(_ADDABLE))
    if isinstance(entry, str):
        try:
            entry = tomllib.loads(entry)
        except tomllib.TOMLDecodeError as e:
            raise HwsimError(_FIELD[section], entry.strip().splitlines()[0] if entry.strip() else entry,
                             f"a TOML table of the entry's fields ({e})") from None  # fmt: skip
    if not isinstance(entry, dict):
        raise HwsimError(_FIELD[section], entry, "a table (dict) of the entry's fields")
    key = id if id is not None else entry.get("id")
    if (
        not isinstance(key, str)
        or not key.strip()
        or len(key) > MAX_ID_CHARS
        or _norm(key) != key.strip().lower().replace("_", "-")
    ):
        raise HwsimError(f"{_FIELD[section]}.id", key, f"a name of letters, digits and dashes, at most {MAX_ID_CHARS}")
    key = _norm(key)
    taken = _aliases(section).get(key)
    if taken is not None and taken not in _ADDED[section]:
        raise HwsimError(f"{_FIELD[section]}.id", key, f"a new name: {taken} is a built-in {_FIELD[section]}")
    entry = thaw(own(entry, _FIELD[section]))
    if section == "cpus":
        check_cpu(entry)
    else:
        check_custom(section, entry)
    aliases = entry.get("aliases", [])  # other names of the entry: text, and not the name of another entry
    if not isinstance(aliases, list) or not all(isinstance(a, str) and _norm(a) for a in aliases):
        raise HwsimError(f"{_FIELD[section]}.aliases", aliases, "a list of names")
    for a in aliases:
        if _aliases(section).get(_norm(a), key) != key:
            raise HwsimError(f"{_FIELD[section]}.aliases", a, f"a new name: it names {_aliases(section)[_norm(a)]}")
    entry.update(id=key, origin=origin)
    entry.setdefault("name", key)
    _ADDED[section][key] = own(entry, f"{section}.{key}")
    _aliases.cache_clear()
    _changes[0] += 1
    _forget_derived()
    return _ADDED[section][key]


def _forget_derived() -> None:
    """What was computed from entries and kept by their names (operator lists, step costs) is dropped: an entry
    added again under its name has other figures."""
    from . import costs, workloads

    workloads.forget()
    costs.forget()


def _read_user_folder() -> None:
    """The TOML files of the folder named by $JUPYTER_HWSIM_CATALOG (devices.toml, storage.toml, ...: the
    package's own file names), each table one entry added as by add(); read once, on first use."""
    import os
    from pathlib import Path

    folder = os.environ.get(USER_FOLDER_ENV)
    if not folder or folder in _user_folder_read:
        return
    _user_folder_read.append(folder)
    if not Path(folder).is_dir():
        raise HwsimError(USER_FOLDER_ENV, folder, "a folder of catalogue TOML files (devices.toml, cpus.toml, ...)")
    for section in _ADDABLE:
        path = Path(folder) / _FILES[section]
        if not path.is_file():
            continue
        try:
            tables = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise HwsimError(str(path), path.name, f"a readable TOML file ({e})") from None
        for key, entry in tables.items():
            add(section, entry, id=key, origin=str(path))
    _read_user_models(Path(folder) / "models")


def _read_user_models(folder) -> None:
    """Model files of the user folder's models/ subfolder (a Hugging Face config.json or an ONNX model each),
    imported and added as workloads named by their file: what a user drops there, every surface offers."""
    from .importers import load

    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        prefix = {".json": "hf", ".onnx": "onnx"}.get(path.suffix.lower())
        if prefix is None:
            continue
        w = dict(load(f"{prefix}:{path}"))
        w.pop("id", None)
        add("workloads", w, id=_norm(path.stem), origin=str(path))
