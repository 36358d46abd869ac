"""The reference table: published figures (datasheets, measurements) that catalogue sources cite as `ref:ID`.

Shipped inside the package (`data/reference/`), so every source resolves offline from a fresh clone.
"""

from __future__ import annotations

import csv
import functools
import io
import re
from importlib import resources

FILES = ("hardware_specs.csv", "measurements.csv")
_REF = re.compile(r"ref:([A-Za-z0-9_+()\-.]+)")


@functools.cache
def rows() -> dict[str, dict]:
    """Every reference row by its case id."""
    out: dict[str, dict] = {}
    folder = resources.files("jupyter_hwsim").joinpath("data", "reference")
    for name in FILES:
        text = folder.joinpath(name).read_text(encoding="utf-8")
        out.update({r["case_id"]: r for r in csv.DictReader(io.StringIO(text))})
    return out


def lookup(ref: str) -> list[dict]:
    """The rows one `ref:` id names: the id itself, or every row it is a prefix of (`A-NVIDIA_A100-*`)."""
    table = rows()
    for cand in dict.fromkeys((ref.rstrip(".,"), ref.rstrip(".,)"), ref.rstrip(".,*)").rstrip("-*"))):
        if cand in table:
            return [table[cand]]
        hits = [r for cid, r in table.items() if cid.startswith(cand)]
        if hits:
            return hits
    return []


def refs(source: str) -> list[str]:
    """The `ref:` ids a catalogue source text cites."""
    return _REF.findall(source)


def resolve(source: str) -> list[tuple[str, list[dict]]]:
    """Each `ref:` id of a source text with the rows it names (an empty list for an unknown id)."""
    return [(ref, lookup(ref)) for ref in refs(source)]


_URL = re.compile(r"https?://[^\s;,\"]+")
# "github:owner/repo path/in/repo@commit": a file of a public repository at a commit
_GITHUB = re.compile(r"github:([\w.-]+/[\w.-]+) ([^\s@]+)(?:@([0-9a-f]{7,40}))?")


def row_urls(row: dict) -> list[str]:
    """The URLs a reference row's source names, `github:` file references spelled out as URLs."""
    found = [u.rstrip(").") for u in _URL.findall(row["source"])]
    found += [
        f"https://github.com/{repo}/blob/{commit or 'HEAD'}/{path}"
        for repo, path, commit in _GITHUB.findall(row["source"])
    ]
    return found


def urls(source: str) -> list[str]:
    """The source URLs behind a catalogue source text, in order, without repeats."""
    seen: dict[str, None] = {}
    for _, hits in resolve(source):
        for r in hits:
            for url in row_urls(r):
                seen.setdefault(url, None)
    return list(seen)
