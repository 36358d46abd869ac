"""The %hwsim what-if panel in a real JupyterLab and a real browser: the read-outs follow the slider, the charts
draw offline, and nothing fails to load."""

import re
import time

FORBIDDEN_TEXT = ["Error loading script", "Javascript Error", "Error displaying widget", "Traceback", "hwsim: "]


def _number(text: str) -> float:
    return float(re.search(r"[\d,]+\.?\d*", text).group(0).replace(",", ""))


def _until_idle(kernel_state, lab, name, hold_s, done=lambda: False, timeout_s=90.0) -> bool:
    """Poll until done() (True) or until the server has reported the notebook's kernel idle for hold_s
    seconds on end (False); an AssertionError after timeout_s."""
    deadline, since = time.monotonic() + timeout_s, None
    while time.monotonic() < deadline:
        if done():
            return True
        if kernel_state(lab, name) == "idle":
            since = since or time.monotonic()
            if time.monotonic() - since >= hold_s:
                return False
        else:
            since = None
        time.sleep(0.25)
    raise AssertionError(
        f"{name}: the kernel neither settled nor finished within {timeout_s:.0f} s "
        f"(server state {kernel_state(lab, name)!r})"
    )


def test_the_panel_follows_its_batch_slider(
    browser_page, lab_server, open_notebook, run_all, save_screenshot, painted_pixels_js
):
    from playwright.sync_api import expect

    page = browser_page
    open_notebook(
        page,
        lab_server,
        "panel.ipynb",
        [
            "%load_ext jupyter_hwsim",
            "%hwsim workload=resnet50 gpu=a100 loader_workers=16 batch_size=32 steps=60",
        ],
    )
    run_all(page)
    panel = page.locator(".hwsim-whatif")
    expect(panel, "the what-if panel did not render").to_be_visible(timeout=30_000)
    throughput = panel.locator(".hwsim-throughput")
    expect(throughput).to_be_visible()
    expect(panel.locator(".hwsim-status"), "no simulated result").to_contain_text("simulated", timeout=30_000)
    save_screenshot(page, "panel_1_loaded", full_page=True)
    before = _number(throughput.inner_text())

    # the batch-size slider is the first selection slider; the keyboard moves it one power of two per press
    slider = panel.locator(".widget-hslider").first
    readout = slider.locator(".widget-readout")
    assert readout.inner_text().strip() == "32"
    slider.locator(".noUi-handle").click()
    # time from the key press to the read-out's change, measured in the page (no polling delay)
    page.evaluate("""() => {
        const el = document.querySelector('.hwsim-whatif .hwsim-throughput');
        window.__hwsim = {changes: []};
        new MutationObserver(() => window.__hwsim.changes.push(performance.now()))
            .observe(el.closest('.widget-html-content') || el.parentElement, {subtree: true, childList: true,
                                                                              characterData: true});
        document.addEventListener('keydown', () => { window.__hwsim.pressed = performance.now(); },
                                  {once: true, capture: true});
    }""")
    page.keyboard.press("ArrowRight")
    expect(readout).to_have_text("64")
    expect(throughput, "the read-out did not follow the slider").not_to_have_text(
        throughput.inner_text(), timeout=10_000
    )
    first_redraw_ms = page.evaluate("() => window.__hwsim.changes[0] - window.__hwsim.pressed")
    page.keyboard.press("ArrowRight")
    expect(readout).to_have_text("128")
    expect(panel.locator(".hwsim-status")).to_contain_text("simulated", timeout=30_000)
    after = _number(throughput.inner_text())
    print(
        f"\nthroughput {before:,.1f} -> {after:,.1f} samples/s; first read-out change {first_redraw_ms:.0f} ms "
        "after the key press"
    )
    assert after != before

    # a chart drew offline, inside the panel
    vega = panel.locator(".jp-RenderedVegaCommon5")
    expect(vega.first).to_be_visible(timeout=20_000)
    assert vega.count() >= 5
    marks = vega.first.locator("canvas, svg.marks").first
    expect(marks).to_be_visible()
    # canvas: painted pixels; SVG (the panel asks for it, so its text takes the theme's colour): marks drawn
    svg = marks.evaluate("el => el.tagName.toLowerCase() === 'svg'")
    assert marks.evaluate(painted_pixels_js) > (8 if svg else 100), "the utilization chart is blank"

    text = page.locator("body").inner_text()
    for bad in FORBIDDEN_TEXT:
        assert bad not in text, f"page shows {bad!r}"
    assert not [line for line in page.harness_log if line.startswith("[pageerror]")]
    save_screenshot(page, "panel_2_after_slider", full_page=True)


def test_run_and_sweep_outputs_render(browser_page, lab_server, open_notebook, run_all, save_screenshot):
    from playwright.sync_api import expect

    page = browser_page
    open_notebook(
        page,
        lab_server,
        "run.ipynb",
        [
            "%load_ext jupyter_hwsim",
            "r = %hwsim run workload=resnet50 gpu=a100 loader_workers=4 steps=60",
            "%hwsim sweep kind=inference batch_size=1,16,256 steps=30 latency_slo_ms=100",
        ],
    )
    run_all(page)
    expect(page.locator(".hwsim-report")).to_be_visible(timeout=30_000)
    expect(page.locator(".hwsim-sweep")).to_be_visible()
    charts = page.locator(".jp-RenderedVegaCommon5")
    expect(charts.first).to_be_visible()
    assert charts.count() >= 6
    text = page.locator("body").inner_text()
    for bad in FORBIDDEN_TEXT:
        assert bad not in text, f"page shows {bad!r}"
    save_screenshot(page, "run_and_sweep", full_page=True)


def test_the_panel_and_charts_in_notebook_7(browser_page, lab_server, save_screenshot, painted_pixels_js, kernel_state):
    """Notebook 7 (served by the same jupyter_server) renders the panel and the charts offline too."""
    import nbformat
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import expect

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell(c)
        for c in (
            "%load_ext jupyter_hwsim",
            "%hwsim workload=resnet50 gpu=a100 loader_workers=4 steps=60",
            "%hwsim run workload=resnet50 gpu=a100 loader_workers=4 steps=60",
        )
    ]
    nbformat.write(nb, f"{lab_server.root_dir}/nb7.ipynb")
    page = browser_page
    page.goto(lab_server.page_url("notebooks/nb7.ipynb"))
    # Notebook 7 once opened without starting a session under the full suite's load (a page error in its
    # start-up, no kernel for 90 s): wait for the server to report the session, and reload if it never comes.
    select = page.get_by_role("button", name="Select")  # the kernel dialog, when it asks
    for _attempt in range(3):
        expect(page.locator(".jp-Notebook-ExecutionIndicator")).to_have_count(1, timeout=60_000)
        deadline = time.monotonic() + 30
        while kernel_state(lab_server, "nb7.ipynb") is None and time.monotonic() < deadline:
            if select.count():
                try:
                    select.first.click(timeout=2_000)
                except PlaywrightError:  # the dialog closed between the look and the click
                    pass
            time.sleep(0.5)
        if kernel_state(lab_server, "nb7.ipynb") is not None:
            break
        page.reload()
    _until_idle(kernel_state, lab_server, "nb7.ipynb", hold_s=1.0)
    run = page.locator("[data-command='notebook:run-cell-and-select-next']").first
    for i in range(3):
        # Run each cell and wait for its execution count. Under the full suite's load a click can land
        # before the page has its kernel connection, and the request is lost: the cell shows [*] while the
        # server says the kernel is idle. Such a cell is sent again (a cell that really runs is left alone).
        prompt = page.locator(".jp-CodeCell .jp-InputPrompt").nth(i)
        for attempt in range(4):
            prompt.click()
            run.click()
            # counted, or not counted while the kernel has been idle for 5 s: the request was lost
            if _until_idle(
                kernel_state,
                lab_server,
                "nb7.ipynb",
                hold_s=5.0,
                done=lambda prompt=prompt: re.fullmatch(r"\[\d+\]:?", prompt.inner_text().strip()) is not None,
            ):
                break
            if attempt == 3:
                raise AssertionError(f"cell {i} of nb7.ipynb did not run: its prompt shows {prompt.inner_text()!r}")
    expect(page.locator(".hwsim-whatif")).to_be_visible(timeout=60_000)
    expect(page.locator(".hwsim-report")).to_be_visible(timeout=60_000)
    expect(page.locator(".hwsim-whatif .hwsim-status")).to_contain_text("simulated", timeout=30_000)
    charts = page.locator(".jp-RenderedVegaCommon5 canvas, .jp-RenderedVegaCommon5 svg.marks")
    expect(charts.nth(9)).to_be_attached(timeout=30_000)  # the panel's six and the report's five
    painted = [c.evaluate(painted_pixels_js) for c in charts.all()]
    assert sum(p > 8 for p in painted) >= 10, painted  # SVG marks (the panel's) or canvas pixels (the report's)
    text = page.locator("body").inner_text()
    for bad in FORBIDDEN_TEXT:
        assert bad not in text, f"page shows {bad!r}"
    save_screenshot(page, "notebook7", full_page=True)


# -- never freezes, looks right -------------------------------------------------------------------------------

DOCS_IMAGES = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "images"
PANEL_CELL = "%hwsim workload=resnet50 gpu=a100 loader_workers=16 steps=60"


def _open_panel(page, lab_server, open_notebook, run_all, name, line=PANEL_CELL):
    from playwright.sync_api import expect

    open_notebook(page, lab_server, name, ["%load_ext jupyter_hwsim", line])
    run_all(page)
    panel = page.locator(".hwsim-whatif")
    expect(panel, "the what-if panel did not render").to_be_visible(timeout=60_000)
    expect(panel.locator(".hwsim-status[data-state='settled']"), "no simulated result").to_have_count(1, timeout=60_000)
    expect(panel.locator(".jp-RenderedVegaCommon5 svg.marks").nth(5)).to_be_attached(timeout=60_000)
    return panel


def _slider(panel, label):
    return panel.locator(".widget-hslider").filter(has_text=label).first


def test_fifty_changes_in_two_seconds_leave_the_tab_responsive_and_the_last_value_wins(
    browser_page, lab_server, open_notebook, run_all
):
    from playwright.sync_api import expect

    from jupyter_hwsim import Scenario, simulate

    page = browser_page
    panel = _open_panel(page, lab_server, open_notebook, run_all, "storm.ipynb")
    slider = _slider(panel, "Loader workers")
    readout = slider.locator(".widget-readout")
    assert readout.inner_text().strip() == "16"
    slider.locator(".noUi-handle").focus()
    keys = ["ArrowRight"] * 30 + ["ArrowLeft"] * 20  # 16 -> 46 -> 26
    for key in keys:
        page.keyboard.press(key)
        page.wait_for_timeout(40)
    # the page answers at once, while the kernel works through the changes
    assert page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(1 + 1)))") == 2
    expect(readout).to_have_text("26")
    expected = simulate(Scenario(workload="resnet50", gpu="a100", loader_workers=26, steps=60), suggest=False)
    throughput = panel.locator(".hwsim-throughput")
    expect(throughput, "the settled numbers are not those of the last value").to_contain_text(
        f"{expected.throughput:,.1f}", timeout=60_000
    )
    expect(panel.locator(".hwsim-status")).to_have_attribute("data-state", "settled", timeout=60_000)
    expect(throughput).to_contain_text(f"{expected.throughput:,.1f}")
    assert not [line for line in page.harness_log if line.startswith("[pageerror]")]


def test_suggestions_baseline_and_downloads_in_the_browser(browser_page, lab_server, open_notebook, run_all):
    from playwright.sync_api import expect

    page = browser_page
    page.set_viewport_size({"width": 1400, "height": 2150})
    panel = _open_panel(page, lab_server, open_notebook, run_all, "compare.ipynb", "%hwsim loader_workers=4 steps=60")
    # the downloads: scenario, result and trace, as files
    for text in ("scenario (TOML)", "result (JSON)", "trace (Perfetto)"):
        link = panel.locator(".hwsim-downloads a", has_text=text)
        expect(link).to_have_attribute("download", re.compile(r"^hwsim-training-"))
    with page.expect_download() as dl:
        panel.locator(".hwsim-downloads a", has_text="scenario (TOML)").click()
    assert "loader_workers = 4" in open(dl.value.path()).read()
    # pin, then apply the top suggestion: the numbers show their change against the baseline
    panel.get_by_role("button", name="Pin baseline").click()
    expect(panel.get_by_role("button", name="Unpin baseline")).to_be_visible()
    before = panel.locator(".hwsim-throughput").inner_text()
    suggestion = panel.locator(".hwsim-suggestion").first
    expect(suggestion).to_be_visible(timeout=30_000)
    suggestion.click()
    expect(panel.locator(".hwsim-throughput")).not_to_have_text(before, timeout=30_000)
    expect(panel.locator(".hwsim-throughput .hwsim-delta")).to_be_visible(timeout=30_000)
    expect(panel.locator(".hwsim-status")).to_have_attribute("data-state", "settled", timeout=60_000)
    expect(panel.locator(".jp-RenderedVegaCommon5 svg.marks").nth(5)).to_be_attached(timeout=60_000)
    page.locator(".jp-Cell").nth(1).locator(".jp-InputArea").evaluate("el => el.scrollIntoView()")
    page.mouse.move(5, 5)
    page.wait_for_timeout(1000)
    DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
    panel.screenshot(path=str(DOCS_IMAGES / "panel-baseline.png"))
    # chart images on demand
    panel.get_by_role("button", name="Chart images").click()
    expect(panel.locator(".hwsim-chart-files a[download='hwsim-utilization.png']")).to_be_attached(timeout=60_000)
    assert not [line for line in page.harness_log if line.startswith("[pageerror]")]


def _set_theme(page, name):
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Settings$")).click()
    page.locator(".lm-Menu-item", has_text=re.compile(r"^Theme$")).first.hover()
    page.locator(".lm-Menu-item[data-command='apputils:change-theme']", has_text=name).first.click()
    page.wait_for_function(
        "(light) => document.body.dataset.jpThemeLight === light", arg="false" if "Dark" in name else "true"
    )
    page.wait_for_timeout(800)  # the theme's stylesheet applied


def _text_contrast(page) -> float:
    """The lowest contrast of the chart text in the panel against the notebook's background."""
    return page.evaluate(
        """() => {
        const rgb = (s) => (s.match(/[\\d.]+/g) || [0, 0, 0]).slice(0, 3).map(Number);
        const lum = ([r, g, b]) => [r, g, b].map(v => { v /= 255; return v <= 0.03928 ? v / 12.92
                                     : Math.pow((v + 0.055) / 1.055, 2.4); })
                                     .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
        const probe = document.createElement('div');
        probe.style.background = 'var(--jp-layout-color0)';
        document.body.appendChild(probe);
        const bg = lum(rgb(getComputedStyle(probe).backgroundColor));
        probe.remove();
        let worst = 99;
        for (const t of document.querySelectorAll(
            '.hwsim-whatif .role-axis-label text, .hwsim-whatif .role-title-text text, '
            + '.hwsim-whatif .role-legend-label text')) {
          const l = lum(rgb(getComputedStyle(t).fill));
          const c = (Math.max(l, bg) + 0.05) / (Math.min(l, bg) + 0.05);
          worst = Math.min(worst, c);
        }
        return worst;
    }"""
    )


def test_panel_screenshots_light_dark_and_projector(browser_page, lab_server, open_notebook, run_all):
    """The panel as the README shows it: light and dark themes and a 1280x720 projector. Chart text follows
    the theme without a redraw, and nothing is clipped at 1280 wide."""
    from playwright.sync_api import expect

    page = browser_page
    DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 2150})
    panel = _open_panel(page, lab_server, open_notebook, run_all, "looks.ipynb")
    page.locator(".jp-Cell").nth(1).locator(".jp-InputArea").evaluate("el => el.scrollIntoView()")
    page.mouse.move(5, 5)
    page.wait_for_timeout(500)
    assert _text_contrast(page) >= 4.5
    panel.screenshot(path=str(DOCS_IMAGES / "panel-light.png"))
    try:
        _set_theme(page, "JupyterLab Dark")
        assert _text_contrast(page) >= 4.5  # the same charts, not redrawn, now in the dark theme's text colour
        panel.screenshot(path=str(DOCS_IMAGES / "panel-dark.png"))
        page.set_viewport_size({"width": 1280, "height": 720})
        page.wait_for_timeout(500)
        panel.locator(".hwsim-numbers").scroll_into_view_if_needed()
        page.locator(".jp-Cell").nth(1).evaluate("el => el.scrollIntoView()")
        page.wait_for_timeout(300)
        # no horizontal scrolling: the controls and the numbers fit the width
        numbers = panel.locator(".hwsim-numbers").bounding_box()
        assert numbers and numbers["x"] + numbers["width"] <= 1280
        expect(panel.locator(".hwsim-throughput")).to_be_in_viewport()
        expect(panel.locator(".jp-RenderedVegaCommon5").first, "no chart on the first screen").to_be_in_viewport(
            ratio=0.5
        )
        assert panel.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), "the panel scrolls sideways"
        page.screenshot(path=str(DOCS_IMAGES / "panel-projector.png"))
    finally:
        _set_theme(page, "JupyterLab Light")


def test_a_refused_value_is_explained_beside_its_control(browser_page, lab_server, open_notebook, run_all):
    from playwright.sync_api import expect

    page = browser_page
    panel = _open_panel(page, lab_server, open_notebook, run_all, "refused.ipynb", "%hwsim kind=llm steps=10")
    slider = _slider(panel, "Prompt length")
    slider.locator(".noUi-handle").focus()
    page.keyboard.press("End")  # 32,768 tokens: longer than llama-2-7b's context
    error = panel.locator(".hwsim-row-error")
    expect(error).to_be_visible(timeout=30_000)
    expect(error).to_contain_text("prompt_tokens")
    s, e = slider.bounding_box(), error.bounding_box()
    assert 0 <= e["y"] - (s["y"] + s["height"]) < 40, (s, e)  # right under its control, not elsewhere
    expect(slider.locator(".widget-readout")).to_have_text("512")  # the control went back to the value in force
