"""What-if panel responsiveness (DESIGN section 7: a preview within 50 ms of a changed value, the settled
simulation within 300 ms; dragging never blocks the tab; memory stays flat over hundreds of changes).

Two parts:

* kernel (default): in the kernel's Python, the time from a control's new value to redrawn read-outs (the
  preview: closed-form estimate) and to the settled simulation with its charts, for each kind;
* browser (``--browser``): a real JupyterLab and the system chromium (Playwright, as tests/browser does):
  the time to the first numbers, the update latency from a key press on a slider to the settled numbers
  (p50/p95, and to the preview), and the JS heap growth over 500 value changes (CDP
  ``Performance.getMetrics`` JSHeapUsedSize, after a garbage collection, before and after).

Run: python benchmarks/bench_panel.py [--browser] [--changes 500] [--samples 30]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import pathlib
import statistics
import sys
import tempfile
import time

from jupyter_hwsim.jupyter.panel import WhatIf

ROOT = pathlib.Path(__file__).resolve().parents[1]
MOVES = {
    "training resnet50 / a100": ({}, "loader_workers", [2, 4, 8, 16, 32, 12, 6, 3]),
    "serving resnet50 / a100": ({"kind": "serving"}, "arrival_rate_rps", [50.0, 100.0, 200.0, 500.0, 1000.0, 300.0]),
    "llm llama-2-7b / a100": ({"kind": "llm"}, "concurrency", [1, 2, 4, 8, 16, 32, 64, 128]),
}


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def kernel():
    print("kernel side (Python, no browser): change -> redrawn read-outs / settled simulation")
    for name, (fields, control, values) in MOVES.items():

        async def run(fields=fields, control=control, values=values, name=name):
            t0 = time.perf_counter()
            p = WhatIf(debounce_s=0.05, **fields)
            first = time.perf_counter() - t0
            while not p._settled:
                await asyncio.sleep(0.005)
            print(
                f"  {name:26} first numbers (estimate) {first * 1e3:5.0f} ms, settled with suggestions "
                f"{(time.perf_counter() - t0) * 1e3:5.0f} ms after the panel is made"
            )
            p.timings.clear()
            for v in values:
                p.controls[control].value = v
                for _ in range(400):  # until the settled numbers for this value are drawn
                    await asyncio.sleep(0.005)
                    if any(t["what"] == "simulate" for t in p.timings[-1:]) and not p._in_flight:
                        break
            return p.timings

        timings = asyncio.run(run())
        est = [t["ms"] for t in timings if t["what"] == "estimate"]
        sim = [t for t in timings if t["what"] == "simulate"]
        print(
            f"  {name:26} {control:18} preview p50 {statistics.median(est):5.1f} ms (max {max(est):5.1f}); "
            f"simulation + charts p50 {statistics.median(t['ms'] for t in sim):6.1f} ms; change -> settled "
            f"p50 {statistics.median(t['since_change_ms'] for t in sim):6.1f} ms (debounce 50 ms)"
        )


def _conftest():
    spec = importlib.util.spec_from_file_location("hwsim_browser_harness", ROOT / "tests" / "browser" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _heap_mb(cdp, collect: bool = True) -> float:
    if collect:
        cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return metrics["JSHeapUsedSize"] / 2**20


def browser(changes: int, samples: int):
    import secrets
    import shutil
    import subprocess

    from playwright.sync_api import expect, sync_playwright

    h = _conftest()
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("the browser part needs the system chromium on PATH (apt-get install chromium)")
    base = pathlib.Path(tempfile.mkdtemp(prefix="hwsim-bench-panel-"))
    dirs = h._prepare_lab_home(base)
    token, port = secrets.token_hex(16), h._free_port()
    log = open(base / "lab.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            f"--ServerApp.token={token}",
            "--allow-root",
            f"--ServerApp.root_dir={dirs['root']}",
        ],
        cwd=dirs["root"],
        env=h._lab_env(dirs),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    lab = h.LabServer(f"http://127.0.0.1:{port}", token, dirs["root"], base / "lab.log", proc)
    pw = sync_playwright().start()
    try:
        problem = h._wait_for_status(lab, time.monotonic() + h.SERVER_START_TIMEOUT)
        if problem:
            sys.exit(problem)
        b = pw.chromium.launch(executable_path=chromium, headless=True, args=h.CHROMIUM_ARGS)
        page = b.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        page.set_default_timeout(60_000)
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        h.open_notebook(page, lab, "bench.ipynb", ["%load_ext jupyter_hwsim", "%hwsim loader_workers=16 steps=60"])
        page.locator(".jp-Cell").nth(0).click()
        t0 = time.perf_counter()
        h.run_all(page)
        panel = page.locator(".hwsim-whatif")
        expect(panel.locator(".hwsim-throughput")).to_be_visible()
        first_numbers = time.perf_counter() - t0
        expect(panel.locator(".hwsim-status[data-state='settled']")).to_have_count(1)
        first_settled = time.perf_counter() - t0
        expect(panel.locator(".jp-RenderedVegaCommon5 svg.marks").nth(5)).to_be_attached()
        first_charts = time.perf_counter() - t0
        print(
            f"browser: first numbers {first_numbers:.2f} s after Run All (both cells, kernel warm), settled "
            f"{first_settled:.2f} s, all six charts {first_charts:.2f} s"
        )
        # warm: the %hwsim cell alone again (extension, imports and templates loaded)
        page.locator(".jp-Cell").nth(1).locator(".jp-InputPrompt").click()
        t0 = time.perf_counter()
        page.keyboard.press("Control+Enter")
        expect(panel).to_have_count(0, timeout=30_000)
        expect(panel.locator(".hwsim-throughput")).to_be_visible()
        warm_numbers = time.perf_counter() - t0
        expect(panel.locator(".hwsim-status[data-state='settled']")).to_have_count(1)
        warm_settled = time.perf_counter() - t0
        print(f"browser: the %hwsim cell run again: numbers {warm_numbers:.2f} s, settled {warm_settled:.2f} s")
        expect(panel.locator(".jp-RenderedVegaCommon5 svg.marks").nth(5)).to_be_attached()
        page.wait_for_timeout(1500)
        handle = panel.locator(".widget-hslider").filter(has_text="Loader workers").first.locator(".noUi-handle")
        handle.focus()
        page.evaluate("""() => {
            const status = document.querySelector('.hwsim-whatif .hwsim-status').parentElement;
            const thr = document.querySelector('.hwsim-whatif .hwsim-throughput').closest('.widget-html-content');
            window.__b = {preview: null, settled: null};
            new MutationObserver(() => {
                const s = status.querySelector('.hwsim-status');
                if (s && s.dataset.state === 'settled' && window.__b.settled === null && window.__b.armed)
                    window.__b.settled = performance.now();
            }).observe(status, {subtree: true, childList: true, attributes: true, characterData: true});
            new MutationObserver(() => {
                if (window.__b.preview === null && window.__b.armed) window.__b.preview = performance.now();
            }).observe(thr, {subtree: true, childList: true, characterData: true});
            document.addEventListener('keydown', () => {
                window.__b.pressed = performance.now(); window.__b.armed = true;
                window.__b.preview = null; window.__b.settled = null;
            }, {capture: true});
        }""")
        preview, settled = [], []
        for i in range(samples):
            page.keyboard.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
            page.wait_for_function("() => window.__b.settled !== null", timeout=60_000)
            page.wait_for_timeout(150)  # the suggestions follow the settled numbers
            b_ = page.evaluate("() => window.__b")
            settled.append(b_["settled"] - b_["pressed"])
            if b_["preview"] is not None:
                preview.append(b_["preview"] - b_["pressed"])
        print(
            f"browser: update latency, key press -> settled numbers: p50 {pct(settled, 0.5):.0f} ms, "
            f"p95 {pct(settled, 0.95):.0f} ms ({samples} changes; debounce 350 ms included); key press -> first "
            f"read-out change: p50 {pct(preview, 0.5):.0f} ms, p95 {pct(preview, 0.95):.0f} ms"
        )
        page.evaluate("() => { window.__b.armed = false; }")
        heap0 = _heap_mb(cdp)
        t = time.perf_counter()
        peak = heap0
        for i in range(changes):
            page.keyboard.press("ArrowRight" if (i // 25) % 2 == 0 else "ArrowLeft")
            page.wait_for_timeout(20)
            if i % 100 == 99:
                peak = max(peak, _heap_mb(cdp, collect=False))
        drive_s = time.perf_counter() - t
        rt = time.perf_counter()
        page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(0)))")
        answer_ms = (time.perf_counter() - rt) * 1e3
        expect(panel.locator(".hwsim-status")).to_have_attribute("data-state", "settled", timeout=120_000)
        page.wait_for_timeout(2000)
        heap1 = _heap_mb(cdp)
        print(
            f"browser: {changes} changes in {drive_s:.1f} s; the page answered a frame {answer_ms:.0f} ms after the "
            f"last; JS heap {heap0:.1f} -> {heap1:.1f} MB after GC (growth {heap1 - heap0:+.1f} MB; peak "
            f"{peak:.1f} MB before GC)"
        )
        b.close()
    finally:
        pw.stop()
        h._stop_server(lab)
        log.close()
        shutil.rmtree(base, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--browser", action="store_true", help="also measure in JupyterLab and chromium")
    ap.add_argument("--changes", type=int, default=500)
    ap.add_argument("--samples", type=int, default=30)
    args = ap.parse_args()
    kernel()
    if args.browser:
        browser(args.changes, args.samples)


if __name__ == "__main__":
    main()
