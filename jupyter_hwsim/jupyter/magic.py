"""The %hwsim / %%hwsim magic: the what-if panel, a static result, a sweep chart, help.

A bad key or value prints one line (field, value, what is accepted, did you mean)
and no traceback; the result of `run` and the points of `sweep` are returned.
"""

from __future__ import annotations

import html
import shlex
import sys
import tomllib

from IPython.display import display

from ..api import compare, estimate, simulate, sweep
from ..core.errors import HwsimError
from ..core.scenario import Scenario
from ..scenario_text import as_table, compare_args, fields_help, parse_pairs, split_args
from .report import result_html, table_html

COMMANDS = ("run", "estimate", "sweep", "compare", "help")

USAGE = """Simulate an ML pipeline from a notebook.

  %hwsim key=value ...            the what-if panel on that scenario
  %hwsim run key=value ...        a static result: summary, suggestions, charts (survives nbconvert)
  %hwsim estimate key=value ...   the same from the closed-form estimate
  %hwsim sweep key=v1,v2,... ...  throughput and p99 latency against the swept values (with the budget line
                                  when latency_slo_ms is given)
  %hwsim compare [a.toml] [b.toml] key=value ...
                                  a baseline beside a change: every number with its ratio
  %hwsim help                     every field with its unit, default and range
  %%hwsim [run|estimate|sweep] [key=value ...]
  <TOML scenario as the cell body; the line's keys override it>

Options: --seed N (default 0). Values: numbers, true/false, catalogue names (case-insensitive).
`r = %hwsim run ...` keeps the Result; `%hwsim sweep` returns the list of Results; `%hwsim compare` the
Comparison.
"""


def _fail(e: HwsimError) -> None:
    print(f"hwsim: {e}", file=sys.stderr)


def _parse(line: str, cell: str | None):
    """(command, seed, base fields from the cell and files, key=value words)."""
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise HwsimError("line", line, f"key=value words ({e})") from None
    seed = 0
    if "--seed" in words:
        i = words.index("--seed")
        if i + 1 >= len(words) or not (words[i + 1].isascii() and words[i + 1].isdigit() and len(words[i + 1]) < 20):
            raise HwsimError("--seed", words[i + 1] if i + 1 < len(words) else None, "a non-negative integer")
        seed = int(words[i + 1])
        del words[i : i + 2]
    cmd = words.pop(0) if words and words[0] in COMMANDS else "panel"
    base = {}
    if cell and cell.strip():
        try:
            data = tomllib.loads(cell)
        except tomllib.TOMLDecodeError as e:
            raise HwsimError("cell", cell.strip().splitlines()[0], f"a TOML scenario ({e})") from None
        except RecursionError:
            raise HwsimError("cell", cell.strip().splitlines()[0], "a TOML scenario of a few levels") from None
        base = as_table(data.get("scenario", data), "cell", cell.strip().splitlines()[0])
    if cmd == "compare":  # its two files are kept apart (scenario_text.compare_args)
        return cmd, seed, base, words
    files, rest = split_args(words)
    return cmd, seed, {**base, **files}, rest


def _show_charts(r) -> None:
    from . import charts  # Altair loads on first use, not with the extension

    for chart in charts.all_charts(r).values():
        if chart.name == "timeline" and not r.timeline:
            continue
        display(chart.bundle(static=True), raw=True)


def run_magic(line: str, cell: str | None = None):
    """Entry point of %hwsim and %%hwsim (see USAGE)."""
    try:
        cmd, seed, base, rest = _parse(line, cell)
        if cmd == "help":
            print(USAGE + "\n" + fields_help())
            return None
        if cmd == "sweep":
            axes = parse_pairs(rest, multi=True)
            fixed = {k: v[0] for k, v in axes.items() if len(v) == 1}
            axes = {k: v for k, v in axes.items() if len(v) > 1}
            if not axes:
                raise HwsimError("sweep", " ".join(rest), "at least one key=v1,v2,... with two or more values")
            s = Scenario.from_dict({**base, **fixed})
            results = sweep(s, seed=seed, **axes)
            show_sweep(results, list(axes), slo_ms=s.latency_slo_ms if "latency_slo_ms" in {**base, **fixed} else None)
            return results
        if cmd == "compare":
            fa, fb = compare_args(rest)
            c = compare(Scenario.from_dict({**base, **fa}), Scenario.from_dict({**base, **fb}), seed=seed)
            display({"text/html": compare_html(c), "text/plain": str(c)}, raw=True)
            return c
        s = Scenario.from_dict({**base, **parse_pairs(rest)})
        if cmd == "panel":
            from .panel import WhatIf

            panel = WhatIf(s, seed=seed)
            display(panel)
            return None
        r = simulate(s, seed=seed) if cmd == "run" else estimate(s)
        show_result(r)
        return r
    except HwsimError as e:
        _fail(e)
        return None


def compare_html(c) -> str:
    """The comparison as a table: a green arrow where the change is better, a red one where it is worse."""
    colour = {True: "var(--jp-success-color1, #2e7d32)", False: "var(--jp-error-color1, #c62828)"}
    rows = []
    for row in c.rows:
        r = row["ratio"]
        arrow = "" if r is None or abs(r - 1) < 0.005 else ("▲" if r > 1 else "▼")
        style = f" style='color:{colour[row['better']]}'" if row["better"] is not None else ""
        ratio = "-" if r is None else f"{r:.2f}x {arrow}"
        rows.append(
            f"<tr><td>{html.escape(row['label'])}</td><td>{row['a']:,.4g}</td><td>{row['b']:,.4g}</td>"
            f"<td{style}>{ratio}</td></tr>"
        )
    changed = ", ".join(f"{k}: {html.escape(str(a))} → {html.escape(str(b))}" for k, (a, b) in c.changed.items())
    return (
        f"<div class='hwsim-compare'><p><b>Changed</b>: {changed or 'nothing'}<br><b>Bottleneck</b>: "
        f"{c.a.bottleneck} → {c.b.bottleneck}</p><table><tr><th></th><th>baseline</th><th>change</th>"
        f"<th>ratio</th></tr>{''.join(rows)}</table></div>"
    )


def show_result(r) -> None:
    """The static report: HTML summary and suggestions, then each chart (interactive, with an SVG)."""
    display({"text/html": result_html(r), "text/plain": r.summary()}, raw=True)
    _show_charts(r)


def show_sweep(results, keys: list[str], slo_ms: float | None = None) -> None:
    from . import charts

    x = keys[0]
    numeric = all(isinstance(r.scenario[x], (int, float)) and not isinstance(r.scenario[x], bool) for r in results)
    if numeric and len(keys) == 1:
        points = charts.batch_points(results, x)
        per = {"requests/s": "request p99 (ms)", "tokens/s": "time per token p99 (ms)"}.get(
            results[0].throughput_unit, "step p99 (ms)"
        )
        display(
            charts.curve(points, x, results[0].throughput_unit, slo_ms=slo_ms, latency_title=per).bundle(static=True),
            raw=True,
        )
    display({"text/html": table_html(results, keys), "text/plain": f"{len(results)} points"}, raw=True)


def hwsim(line: str, cell: str | None = None):
    return run_magic(line, cell)


hwsim.__doc__ = USAGE + "\n" + fields_help()  # what %hwsim? shows


def load_ipython_extension(ipython) -> None:
    ipython.register_magic_function(hwsim, magic_kind="line_cell", magic_name="hwsim")
