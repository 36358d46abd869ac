"""The hardware and workload catalogue: TOML data files with a source for every number."""

from __future__ import annotations

import functools
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
    return data


@functools.cache
def _aliases(section: str) -> dict:
    table = {}
    for key, entry in _load(section).items():
        for name in [key, *entry.get("aliases", [])]:
            table[_norm(name)] = key
    return table


def _norm(name: str) -> str:
    return str(name).strip().lower().replace("_", "-").replace(" ", "-")


def names(section: str) -> list[str]:
    """Catalogue ids of a section: gpus, storage, links, workloads, precisions."""
    return list(_load(section))


def get(section: str, name: str) -> dict:
    """One entry by id or alias, case-insensitive; a miss is an error with a suggestion."""
    if not isinstance(name, str):
        raise HwsimError(_FIELD[section], name, f"a name from the catalogue: {', '.join(names(section))}")
    key = _aliases(section).get(_norm(name))
    if key is None:
        raise HwsimError(
            _FIELD[section], name, f"one of {', '.join(names(section))}", did_you_mean(_norm(name), _aliases(section))
        )
    return _load(section)[key]


def gpus() -> dict:
    return dict(_load("gpus"))


def storage() -> dict:
    return dict(_load("storage"))


def links() -> dict:
    return dict(_load("links"))


def workloads() -> dict:
    return dict(_load("workloads"))


def precisions() -> dict:
    return dict(_load("precisions"))


def engines() -> dict:
    return dict(_load("engines"))


def cpus() -> dict:
    return dict(_load("cpus"))


def decoders() -> dict:
    return dict(_load("decoders"))
