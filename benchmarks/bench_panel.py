"""Panel responsiveness (DESIGN section 7: under 100 ms from a changed value to a redrawn panel).

Measures, in the kernel's Python, the time from a control's new value to redrawn read-outs and charts: the
preview (closed-form estimate, while a slider moves) and the settled simulation that replaces it. The browser's
own redraw is measured by tests/browser/test_panel_browser.py. Run: python benchmarks/bench_panel.py
"""

from __future__ import annotations

import statistics

from jupyter_hwsim.jupyter.panel import WhatIf

MOVES = {
    "training resnet50 / a100": ({}, "loader_workers", [2, 4, 8, 16, 32, 12, 6, 3]),
    "serving resnet50 / a100": ({"kind": "serving"}, "arrival_rate_rps", [50, 100, 200, 400, 800, 1600, 3200, 1000]),
    "llm llama-2-7b / a100": ({"kind": "llm"}, "concurrency", [1, 2, 4, 8, 16, 32, 64, 128]),
}


def main():
    for name, (fields, control, values) in MOVES.items():
        p = WhatIf(debounce_s=0, **fields)
        p.timings.clear()
        for v in values:
            p.controls[control].value = v
        est = [t["ms"] for t in p.timings if t["what"] == "estimate"]
        sim = [t["ms"] for t in p.timings if t["what"] == "simulate"]
        print(
            f"{name:28} {control:18} preview median {statistics.median(est):6.1f} ms (max {max(est):6.1f})   "
            f"settled simulation median {statistics.median(sim):6.1f} ms"
        )


if __name__ == "__main__":
    main()
