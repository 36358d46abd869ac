"""Scenarios from text, as the CLI and the %hwsim magic take them: key=value pairs, TOML/JSON files, field help."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from .core.errors import HwsimError
from .core.scenario import FIELDS


def parse_value(text: str):
    """'256' -> 256, '0.5' -> 0.5, 'true' -> True, anything else stays a string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_pairs(pairs: list[str], multi: bool = False) -> dict:
    out = {}
    for p in pairs:
        if "=" not in p:
            raise HwsimError("argument", p, "key=value (see `python -m jupyter_hwsim help`)")
        k, v = p.split("=", 1)
        k = k.strip()
        out[k] = [parse_value(x) for x in v.split(",")] if multi else parse_value(v)
    return out


def load_file(path: str) -> dict:
    p = Path(path)
    if not p.is_file():
        raise HwsimError("scenario file", path, "an existing .toml or .json file")
    try:
        if p.suffix == ".json":
            data = json.loads(p.read_text())
        else:
            data = tomllib.loads(p.read_text())
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise HwsimError("scenario file", path, f"valid {p.suffix[1:].upper()} ({e})") from None
    return data.get("scenario", data) if isinstance(data, dict) else data


def split_args(args: list[str]) -> tuple[dict, list[str]]:
    files = [a for a in args if "=" not in a and a.endswith((".toml", ".json"))]
    rest = [a for a in args if a not in files]
    base = {}
    for f in files:
        base.update(load_file(f))
    return base, rest


def fields_help() -> str:
    lines = ["Scenario fields (key=value):"]
    for f in FIELDS.values():
        default = ("see above" if "default" in f.help else "catalogue") if f.default is None else f.default
        lines.append(f"  {f.name:<26} {f.help}; default {default}; {f.accepted()}")
    return "\n".join(lines)
