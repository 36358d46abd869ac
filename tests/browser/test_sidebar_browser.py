"""The "HW what-if" sidebar (the jupyter-hwsim labextension) in a real JupyterLab and a real browser: it opens from
the command palette and the left bar, follows its sliders (estimate, then simulation), applies a suggestion, draws
its charts offline through JupyterLab's own Vega renderer, shows a refused value next to its control, inserts a
`%hwsim run` cell whose output agrees with it, and keeps its scenario across a reload.

Needs the labextension built and installed (`npm run build:prod` in labextension/, then `pip install .` or
`jupyter labextension develop --overwrite .`) and the jupyter_hwsim server extension enabled.
"""

import re
import time
import urllib.error

import pytest

PANEL = "#jupyter-hwsim-panel"
STATE_KEY = "jupyter-hwsim:scenario"  # the panel's key in JupyterLab's state database (the workspace)
FORBIDDEN_TEXT = ["Error loading script", "Javascript Error", "Traceback"]
# Moves a range input through positions with input events only (as a drag does), then sends one change.
DRAG_JS = """async ([selector, positions, gapMs]) => {
  const slider = document.querySelector(selector);
  for (const p of positions) {
    slider.value = String(p);
    slider.dispatchEvent(new Event('input', {bubbles: true}));
    await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
  slider.dispatchEvent(new Event('change', {bubbles: true}));
}"""
SIM_TIMEOUT_MS = 60_000  # the first simulation spawns the server's worker processes


def _number(text: str) -> float:
    return float(re.search(r"\d[\d,]*\.?\d*", text).group(0).replace(",", ""))


def _open_from_palette(page):
    page.keyboard.press("Control+Shift+c")
    palette = page.locator(".lm-CommandPalette-input")
    palette.fill("Open hardware what-if panel")
    page.locator(".lm-CommandPalette-item", has_text="Open hardware what-if panel").first.click()


def _open_from_left_bar(page):
    page.locator(f'.jp-SideBar .lm-TabBar-tab[data-id="{PANEL[1:]}"]').click()


def _settled(page, expect) -> float:
    """Wait until the panel shows the simulation of the scenario its controls show; return its throughput."""
    shown = page.locator(f'{PANEL} .jp-hwsim-throughput[data-method="simulate"][data-current="true"]')
    expect(shown, "the panel never showed the simulation of the current scenario").to_have_count(
        1, timeout=SIM_TIMEOUT_MS
    )
    return float(shown.get_attribute("data-value"))


def _wait_until_saved(page, lab_server, scenario: dict, timeout: float = 15.0):
    """Wait until the workspace on the server holds this scenario under the panel's state key.

    JupyterLab writes the workspace from a requestAnimationFrame callback, and headless Chromium draws no frame
    while nothing on the page changes: awaiting one here lets that write happen.
    """
    deadline = time.monotonic() + timeout
    saved = None
    while time.monotonic() < deadline:
        page.evaluate("() => new Promise((resolve) => requestAnimationFrame(() => resolve()))")
        data = (lab_server.api("lab/api/workspaces/default") or {}).get("data", {})
        saved = data.get(STATE_KEY)
        if saved == scenario:
            return
        time.sleep(0.25)
    raise AssertionError(f"the workspace never held {scenario} under {STATE_KEY!r} (last: {saved!r})")


def _set_slider(page, field: str, position: int):
    page.locator(f'{PANEL} input[data-field="{field}"]').fill(str(position))


def test_sidebar_what_if(browser_page, lab_server, open_notebook, run_all, save_screenshot, painted_pixels_js):
    from playwright.sync_api import expect

    page = browser_page
    panel = page.locator(PANEL)
    try:
        catalog = lab_server.api("hwsim/api/catalog")
    except urllib.error.HTTPError as exc:
        pytest.fail(
            f"GET hwsim/api/catalog answered {exc.code}: the jupyter_hwsim server extension is not enabled "
            "(jupyter-config/jupyter_server_config.d/jupyter_hwsim.json must be installed)",
            pytrace=False,
        )
    assert "loader_workers" in catalog["kind_fields"]["training"]

    # 1. no notebook, no kernel: the palette opens the panel; it computes; inserting a cell is disabled
    page.goto(lab_server.page_url("lab", reset=""), wait_until="domcontentloaded")
    expect(page.locator(".jp-LauncherCard").first).to_be_visible(timeout=60_000)
    if page.locator(f'.jp-SideBar .lm-TabBar-tab[data-id="{PANEL[1:]}"]').count() == 0:
        pytest.fail(
            "the jupyter-hwsim labextension is not installed: cd labextension && npm install && "
            "npm run build:prod, then pip install . (or jupyter labextension develop --overwrite .)",
            pytrace=False,
        )
    _open_from_palette(page)
    expect(panel).to_be_visible()
    default_throughput = _settled(page, expect)
    assert default_throughput > 0
    insert = panel.get_by_role("button", name="Insert as %hwsim cell")
    expect(insert).to_be_disabled()
    expect(insert).to_have_attribute("title", "Open a notebook to insert a cell")
    expect(panel.locator(".jp-hwsim-line")).to_have_text("%hwsim run")
    save_screenshot(page, "sidebar_01_no_notebook")

    # 2. a notebook is open; the left-bar icon opens the panel
    open_notebook(page, lab_server, "sidebar.ipynb", ["print('ready')"])
    _open_from_left_bar(page)
    expect(panel).to_be_visible()
    _settled(page, expect)
    expect(insert).to_be_enabled()

    # 3. two loader workers: CPU-bound
    _set_slider(page, "loader_workers", 2)
    expect(panel.locator('[data-row="loader_workers"] .jp-hwsim-readout')).to_have_text("2 processes")
    cpu_bound = _settled(page, expect)
    expect(panel.locator(".jp-hwsim-badge")).to_have_attribute("data-bottleneck", "cpu")
    assert cpu_bound < default_throughput * 0.5, (cpu_bound, default_throughput)
    save_screenshot(page, "sidebar_02_cpu_bound")

    # 4. a suggestion with more loader workers (alone or with other changes): applying it raises the throughput;
    #    the suggestions follow the simulation (each candidate is re-simulated): wait for those of this scenario
    current = panel.locator(".jp-hwsim-suggestions:not(.jp-mod-stale) .jp-hwsim-suggestion")
    suggestion = current.filter(has_text="loader_workers=").first
    expect(suggestion).to_be_visible(timeout=SIM_TIMEOUT_MS)
    suggested = int(re.search(r"loader_workers=(\d+)", suggestion.locator("code").inner_text()).group(1))
    suggestion.click()
    expect(panel.locator('[data-row="loader_workers"] .jp-hwsim-readout')).to_have_text(f"{suggested} processes")
    after_suggestion = _settled(page, expect)
    assert after_suggestion > cpu_bound * 1.3, (after_suggestion, cpu_bound)

    # 5. more workers still: the throughput rises again
    _set_slider(page, "loader_workers", 16)
    more_workers = _settled(page, expect)
    assert more_workers > after_suggestion * 1.1, (more_workers, after_suggestion)
    save_screenshot(page, "sidebar_03_more_workers")

    # 6. a smaller batch: the numbers change
    latency_before = panel.locator(".jp-hwsim-latency").inner_text()
    _set_slider(page, "batch_size", 6)  # 2**6 = 64 samples
    expect(panel.locator('[data-row="batch_size"] .jp-hwsim-readout')).to_have_text("64 samples")
    small_batch = _settled(page, expect)
    assert abs(small_batch - more_workers) > 0.01 * more_workers, (small_batch, more_workers)
    expect(panel.locator(".jp-hwsim-latency")).not_to_have_text(latency_before)

    # 7. a drag (input events only, then one change): estimates follow it, a simulation ends it, and the last
    #    value wins however the answers interleave; back at 256 samples it matches step 5 exactly
    calls = []
    page.on(
        "request",
        lambda r: (
            calls.append(r.url.split("?")[0].rsplit("/", 1)[-1])
            if r.method == "POST" and "/hwsim/api/" in r.url
            else None
        ),
    )
    page.evaluate(DRAG_JS, [f'{PANEL} input[data-field="batch_size"]', [7, 8, 9, 10, 11, 12, 11, 10, 9, 8], 60])
    expect(panel.locator('[data-row="batch_size"] .jp-hwsim-readout')).to_have_text("256 samples")
    dragged = _settled(page, expect)
    assert abs(dragged - more_workers) <= 1e-6 * more_workers, (dragged, more_workers)
    assert calls.count("estimate") >= 2, calls
    # one simulation of the final value (the numbers), then one with the suggestions
    assert calls.count("simulate") == 2, calls

    # 8. the charts are drawn, offline, by JupyterLab's Vega renderer
    for name in ("utilization", "gpu_time", "curve", "memory"):
        marks = panel.locator(f'.jp-hwsim-chart[data-chart="{name}"]').locator("canvas, svg.marks").first
        expect(marks, f"chart {name} was not drawn").to_be_visible(timeout=30_000)
        box = marks.bounding_box()
        assert box and box["width"] > 50 and box["height"] > 30, (name, box)
        # an SVG chart counts its marks (a few bars), a canvas its painted pixels
        least = 5 if marks.evaluate("(el) => el.tagName.toLowerCase()") == "svg" else 100
        assert marks.evaluate(painted_pixels_js) > least, f"chart {name} is blank"
    panel.locator(".jp-hwsim-more .jp-Collapse-header").click()
    roofline = panel.locator('.jp-hwsim-chart[data-chart="roofline"]').locator("canvas, svg.marks").first
    expect(roofline).to_be_visible(timeout=30_000)
    panel.locator('.jp-hwsim-chart[data-chart="utilization"]').scroll_into_view_if_needed()
    save_screenshot(page, "sidebar_04_charts")
    body = page.locator("body").inner_text()
    for bad in FORBIDDEN_TEXT:
        assert bad not in body, f"page shows {bad!r}"

    # 9. "Insert as %hwsim cell": the notebook's %hwsim run agrees with the panel's simulation
    panel_throughput = _settled(page, expect)
    line = panel.locator(".jp-hwsim-line").inner_text().strip()
    assert line.startswith("%hwsim run ") and "loader_workers=16" in line and "batch_size=256" in line, line
    insert.click()
    notebook = page.locator("#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden)")
    cells = notebook.locator(".jp-Notebook .jp-Cell")
    expect(cells).to_have_count(2)
    expect(cells.nth(1).locator(".cm-content")).to_contain_text("%load_ext jupyter_hwsim")
    expect(cells.nth(1).locator(".cm-content")).to_contain_text(line)
    run_all(page)
    out = notebook.locator(".jp-OutputArea-output .hwsim-throughput")
    expect(out, "the %hwsim run cell printed no result").to_have_count(1, timeout=60_000)
    notebook_throughput = _number(out.inner_text())
    assert abs(notebook_throughput - panel_throughput) <= 0.01 * panel_throughput, (
        notebook_throughput,
        panel_throughput,
    )
    out.scroll_into_view_if_needed()
    save_screenshot(page, "sidebar_05_notebook")

    # 10. a refused value is shown in words next to its control
    panel.locator('select[data-field="kind"]').select_option("llm")
    _settled(page, expect)
    _set_slider(page, "prompt_tokens", 12)  # 4096 tokens: the whole llama-2-7b context
    error = panel.locator('[data-error-for="prompt_tokens"]')
    expect(error).to_contain_text("prompt_tokens=4096 is not accepted", timeout=SIM_TIMEOUT_MS)
    expect(panel.locator(".jp-hwsim-top-error")).to_be_hidden()
    panel.locator('[data-row="prompt_tokens"]').scroll_into_view_if_needed()
    save_screenshot(page, "sidebar_06_error")
    _set_slider(page, "prompt_tokens", 10)  # 1024
    _settled(page, expect)
    expect(error).to_be_empty()
    llm_line = panel.locator(".jp-hwsim-line").inner_text().strip()

    # 11. the scenario survives a reload (once JupyterLab has written the workspace to the server)
    _wait_until_saved(page, lab_server, {"kind": "llm", "batch_size": 256, "loader_workers": 16, "prompt_tokens": 1024})
    page.reload(wait_until="domcontentloaded")
    expect(panel).to_be_visible(timeout=60_000)  # the layout restorer reopens the sidebar
    _settled(page, expect)
    expect(panel.locator(".jp-hwsim-line")).to_have_text(llm_line)
    expect(panel.locator('select[data-field="kind"]')).to_have_value("llm")
    save_screenshot(page, "sidebar_07_reloaded")

    page_errors = [m for m in page.harness_log if m.startswith("[pageerror]")]
    assert not page_errors, page_errors
