"""Command line: run, sweep, catalog, help. A bad input exits 2 with one line on stderr."""

from __future__ import annotations

import argparse
import json
import os
import sys

from .api import compare, estimate, simulate, sweep
from .core import catalog, reference
from .core.errors import HwsimError, show
from .core.scenario import Scenario
from .scenario_text import compare_args, fields_help, parse_pairs, split_args

SECTIONS = {"gpus": "gpus", "storage": "storage", "workloads": "workloads", "links": "links", "engines": "engines",
            "cpus": "cpus", "decoders": "decoders", "augmentations": "augmentations"}  # fmt: skip


def _write_csv(path: str, rows: list[dict]) -> None:
    import csv

    try:
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    except OSError as e:
        raise HwsimError("--csv", path, f"a file that can be written ({e.strerror})") from None


# the key specs `catalog SECTION` shows per entry: (heading, field, format)
_COLUMNS = {
    "gpus": [
        ("memory GiB", "memory_gb", "{:g}"),
        ("HBM GB/s", "memory_bandwidth_gbs", "{:,.0f}"),
        ("fp16 TFLOP/s", ("peak_tflops", "fp16"), "{:g}"),
        ("bf16", ("peak_tflops", "bf16"), "{:g}"),
        ("fp8", ("peak_tflops", "fp8"), "{:g}"),
        ("link", "host_link", "{}"),
    ],
    "storage": [
        ("GB/s", "bandwidth_gbs", "{:g}"),
        ("latency ms", "latency_ms", "{:g}"),
        ("concurrency", "concurrency", "{}"),
    ],
    "links": [("GB/s", "bandwidth_gbs", "{:g}"), ("pageable x", "pageable_factor", "{:g}")],
    "engines": [
        ("fusion", "fusion", "{}"),
        ("issue us/kernel", "issue_us", "{:g}"),
        ("graphs", "graphs", "{}"),
        ("trains", "trains", "{}"),
    ],  # fmt: skip
    "cpus": [
        ("cores", "physical_cores", "{}"),
        ("threads", "threads", "{}"),
        ("GHz", "sustained_ghz", "{:g}"),
        ("mem GB/s", "memory_bandwidth_gbs", "{:g}"),
        ("core speed", "core_speed", "{:g}"),
    ],
    "decoders": [
        ("device", "device", "{}"),
        ("library", "library", "{}"),
        ("decode Mpx/s", "decode_mpix_per_s", "{:g}"),
        ("augment ms", "augment_ms_per_sample", "{:g}"),
    ],
    "workloads": [
        ("arch", "arch", "{}"),
        ("default batch", "default_batch_size", "{}"),
        ("input bytes/sample", "input_bytes_per_sample", "{:,}"),
    ],
}


def _cell(entry: dict, field, fmt: str) -> str:
    value = entry.get(field[0], {}).get(field[1]) if isinstance(field, tuple) else entry.get(field)
    return "-" if value is None else fmt.format(value)


def _catalog_table(section: str, entries: dict) -> str:
    """One row per entry: its id, name, key specs and aliases."""
    cols = [c for c in _COLUMNS.get(section, []) if any(_cell(e, c[1], c[2]) != "-" for e in entries.values())]
    rows = [["id", "name", *(c[0] for c in cols), "aliases"]]
    for key, e in entries.items():
        rows.append(
            [
                key,
                e.get("name", "") + (f" (added: {e['origin']})" if e.get("origin") else ""),
                *(_cell(e, f, fmt) for _, f, fmt in cols),
                ", ".join(e.get("aliases", [])),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


def _sources_text(entries: dict) -> str:
    """Every sourced number of every entry with its source text and the URLs its `ref:` ids resolve to."""
    lines = []
    for key, e in entries.items():
        lines.append(f"{key} ({e.get('name', key)})" + (f"  added from {e['origin']}" if e.get("origin") else ""))
        for field, src in e.get("sources", {}).items():
            lines.append(f"  {field} = {e.get(field)}")
            lines.append(f"    source: {src}")
            lines += [f"    url: {u}" for u in reference.urls(src)]
    return "\n".join(lines)


def _integer(text: str) -> int:
    """An option's integer as the key=value pairs, the magic and REST read one: ASCII digits only (int() also takes
    "٣" and "1_000"); its range is checked where it is used, naming the option."""
    t = text.strip()
    if not (t.removeprefix("-").isascii() and t.removeprefix("-").isdigit()) or len(t) > 19:
        raise argparse.ArgumentTypeError(f"{show(text)} is not an integer of at most 19 ASCII digits")
    return int(t)


_integer.__name__ = "integer"  # what argparse calls it in its one-line error


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line on stderr (exit 2), like every other bad input."""

    def error(self, message: str):
        self.exit(2, f"error: {self.prog}: {' '.join(message.split())}\n")


def main(argv=None) -> int:
    fields = "scenario fields (key=value):\n" + fields_help().split("\n", 1)[1]
    raw = argparse.RawDescriptionHelpFormatter
    ap = _Parser(
        prog="python -m jupyter_hwsim",
        description="Simulate an ML pipeline (storage, CPU loaders, host link, GPU) and name its bottleneck.",
        epilog="`python -m jupyter_hwsim COMMAND --help` for one command; `help` lists every scenario field.",
    )
    from . import __version__

    ap.add_argument("--version", action="version", version=f"jupyter-hwsim {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    about = {
        "run": "simulate one scenario (discrete-event, seeded) and print its report",
        "estimate": "the closed-form steady state of one scenario (well under a millisecond)",
        "sweep": "the cross product of key=v1,v2,... values, in parallel; a table",
    }
    for name, text in about.items():
        p = sub.add_parser(name, help=text, description=text + ".", epilog=fields, formatter_class=raw)
        p.add_argument("args", nargs="*", help="key=value pairs and/or a scenario .toml/.json file")
        p.add_argument("--json", action="store_true", help="print the result dict (a list for sweep) as JSON")
        p.add_argument("--seed", type=_integer, default=0, help="random seed of the simulation (default 0)")
        if name == "run":
            p.add_argument("--trace", metavar="FILE", help="write the simulated timeline as a Chrome/Perfetto trace")
        if name == "sweep":
            p.add_argument("--seeds", type=_integer, default=1, help="runs per point (seed, seed+1, ...)")
            p.add_argument("--workers", type=_integer, default=None, help="local worker processes (default: all cores)")
            p.add_argument("--dask", metavar="ADDRESS", help="run on the Dask scheduler at ADDRESS")
            p.add_argument("--csv", metavar="FILE", help="write the table (means and 95%% intervals) as CSV")
            p.add_argument(
                "--best",
                action="store_true",
                help="also name the point of highest throughput whose p99 latency meets latency_slo_ms",
            )
    text = "a baseline beside a change: every number with its ratio"
    p = sub.add_parser(
        "compare",
        help=text,
        description=text + ". A.toml is the baseline (default: the default scenario), B.toml the change "
        "(default: A); key=value pairs change B.",
        usage="python -m jupyter_hwsim compare [A.toml] [B.toml] [key=value ...]",
        epilog=fields,
        formatter_class=raw,
    )
    p.add_argument("args", nargs="*", help="up to two scenario files and key=value changes of the second")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--seed", type=_integer, default=0, help="random seed of both simulations (default 0)")
    p.add_argument("--estimate", action="store_true", help="compare closed-form estimates instead of simulations")
    c = sub.add_parser(
        "catalog",
        help="the catalogue: devices, storage, links or workloads, with key specs",
        description="The catalogue: one row per entry with its key specs and aliases.",
    )
    c.add_argument(
        "section", nargs="?", default="gpus", choices=sorted(SECTIONS), help="which catalogue (default gpus)"
    )
    c.add_argument("--json", action="store_true", help="every entry as JSON")
    c.add_argument("--sources", action="store_true", help="each number with its source and the URLs behind it")
    text = "what was understood of a model file: layers, parameters, FLOPs, warnings"
    m = sub.add_parser(
        "import",
        help=text,
        description=text + ". PATH: a Hugging Face config.json (or its directory) or an .onnx file, or hf:/onnx:.",
    )
    m.add_argument("path", metavar="PATH", help="config.json, a model directory, model.onnx, hf:... or onnx:...")
    m.add_argument("--seq", type=_integer, default=None, help="tokens of a language model (default: its context)")
    m.add_argument("--json", action="store_true", help="print the figures as JSON")
    sub.add_parser("help", help="every scenario field with its unit, default and accepted range")
    try:
        a = ap.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        if a.cmd == "help":
            print(fields_help())
            return 0
        if a.cmd == "import":
            from .core.importers import load
            from .core.importers.summary import describe, describe_text, spec_of

            d = describe(load(spec_of(a.path)), seq=a.seq)
            print(json.dumps(d, indent=2) if a.json else describe_text(d))
            return 0
        if a.cmd == "catalog":
            entries = getattr(catalog, SECTIONS[a.section])()
            if a.json:
                print(json.dumps(entries, indent=2, sort_keys=True))
            elif a.sources:
                print(_sources_text(entries))
            else:
                print(_catalog_table(a.section, entries))
            return 0
        if a.cmd == "compare":
            fa, fb = compare_args(a.args)
            method = "estimate" if a.estimate else "simulate"
            c = compare(Scenario.from_dict(fa), Scenario.from_dict(fb), method=method, seed=a.seed)
            print(json.dumps(c.to_dict(), indent=2) if a.json else c)
            return 0
        base, rest = split_args(a.args)
        if a.cmd == "sweep":
            axes = parse_pairs(rest, multi=True)
            fixed = {k: v[0] for k, v in axes.items() if len(v) == 1}
            axes = {k: v for k, v in axes.items() if len(v) > 1}
            if not axes:
                raise HwsimError("sweep", " ".join(rest), "at least one key=v1,v2,... with two or more values")
            executor = None
            if a.dask:
                try:
                    from dask.distributed import Client
                except ImportError:
                    raise HwsimError("--dask", a.dask, "dask.distributed installed (pip install distributed)") from None
                try:
                    executor = Client(a.dask, timeout=10)
                except (OSError, TimeoutError) as e:
                    raise HwsimError("--dask", a.dask, f"the address of a running Dask scheduler ({e})") from None
            try:
                results = sweep(
                    Scenario.from_dict({**base, **fixed}),
                    seed=a.seed,
                    seeds=a.seeds,
                    executor=executor,
                    workers=a.workers,
                    progress=None if a.json else True,
                    **axes,
                )
            finally:
                if executor is not None:
                    executor.close()
            if a.csv:
                _write_csv(a.csv, results.rows)
            if a.json:
                print(json.dumps([r.to_dict() for r in results], indent=2, sort_keys=True))
            else:
                keys = list(axes)
                ci = a.seeds > 1
                print(
                    "  ".join(f"{k:>14}" for k in keys)
                    + f"  {'throughput':>12}"
                    + ("  95% interval      " if ci else "")
                    + f"  {'p50 ms':>9}  {'p99 ms':>9}  bottleneck"
                )
                for r, row in zip(results, results.rows):
                    band = f"  [{row['throughput_lo']:>8.1f}, {row['throughput_hi']:>8.1f}]" if ci else ""
                    print(
                        "  ".join(f"{str(r.scenario[k]):>14}" for k in keys)
                        + f"  {row['throughput']:>12.1f}{band}  {row['p50_ms']:>9.2f}  {row['p99_ms']:>9.2f}"
                        + f"  {row['bottleneck']}"
                    )
            if a.best:
                ok = [r for r in results if not r.memory["oom"] and r.latency_ms["p99"] <= r.scenario["latency_slo_ms"]]
                if ok:
                    r = max(ok, key=lambda r: r.throughput)
                    point = " ".join(f"{k}={r.scenario[k]}" for k in keys)
                    print(
                        f"best within {r.scenario['latency_slo_ms']:g} ms p99: {point}  "
                        f"{r.throughput:,.1f} {r.throughput_unit}  p99 {r.latency_ms['p99']:.2f} ms",
                        file=sys.stderr if a.json else sys.stdout,
                    )
                else:
                    print("best: no point meets the p99 budget of latency_slo_ms", file=sys.stderr)
            return 0
        s = Scenario.from_dict({**base, **parse_pairs(rest)})
        r = simulate(s, seed=a.seed) if a.cmd == "run" else estimate(s)
        if getattr(a, "trace", None):
            try:
                r.to_chrome_trace(a.trace)
            except OSError as e:
                raise HwsimError("--trace", a.trace, f"a file that can be written ({e.strerror})") from None
        print(r.to_json() if a.json else r.summary())
        return 0
    except HwsimError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def run() -> None:
    """The console entry point (`jupyter-hwsim`, `python -m jupyter_hwsim`): main's exit code, and quiet when
    the output is piped into `head` and the like."""
    try:
        sys.exit(main())
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
