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
    if not text.isascii():  # int("٣") is 3 and int("²") fails: only ASCII digits are numbers here
        return text
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
    try:
        found = p.is_file()
    except OSError as e:  # a name too long for the file system, and the like
        raise HwsimError("scenario file", path, f"the path of an existing .toml or .json file ({e.strerror})") from None
    if not found:
        raise HwsimError("scenario file", path, "an existing .toml or .json file")
    try:
        if p.suffix == ".json":
            data = json.loads(p.read_text())
        else:
            data = tomllib.loads(p.read_text())
    except RecursionError:
        raise HwsimError("scenario file", path, "at most a few levels of nested tables and lists") from None
    except OSError as e:
        raise HwsimError("scenario file", path, f"a file that can be read ({e.strerror})") from None
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise HwsimError("scenario file", path, f"valid {p.suffix[1:].upper()} ({e})") from None
    return as_table(data.get("scenario", data) if isinstance(data, dict) else data, "scenario file", path)


def as_table(data, what: str, where: str) -> dict:
    """The scenario a file or a cell holds: a table of field = value (or a [scenario] table), else one error."""
    if not isinstance(data, dict):
        raise HwsimError(what, where, f"a table of scenario fields (field = value), not a {type(data).__name__}")
    return data


def split_args(args: list[str]) -> tuple[dict, list[str]]:
    files = [a for a in args if "=" not in a and a.endswith((".toml", ".json"))]
    rest = [a for a in args if a not in files]
    base = {}
    for f in files:
        base.update(load_file(f))
    return base, rest


def compare_args(args: list[str]) -> tuple[dict, dict]:
    """`compare [A.toml] [B.toml] [key=value ...]`: the baseline A (default: the default scenario) and the change
    B (default: A) with the key=values applied to it."""
    files = [a for a in args if "=" not in a and a.endswith((".toml", ".json"))]
    if len(files) > 2:
        raise HwsimError("compare", " ".join(files), "at most two scenario files: the baseline and the change")
    a = load_file(files[0]) if files else {}
    b = load_file(files[1]) if len(files) == 2 else dict(a)
    return a, {**b, **parse_pairs([x for x in args if x not in files])}


def fields_help() -> str:
    lines = ["Scenario fields (key=value):"]
    for f in FIELDS.values():
        default = ("see above" if "default" in f.help else "catalogue") if f.default is None else f.default
        lines.append(f"  {f.name:<26} {f.help}; default {default}; {f.accepted()}")
    return "\n".join(lines)
