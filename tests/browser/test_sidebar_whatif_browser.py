"""The "HW what-if" sidebar under pressure and on show, in a real JupyterLab and a real browser:

- never freezes: fifty value changes in two seconds leave the page responsive, at most one request in flight, the
  charts updated in place, and the final numbers equal to a direct REST call for the final scenario;
- looks right: light and dark themes (charts follow a theme change without a reload, no white cards, text contrast
  at least 4.5:1), no clipped chart titles or legends, the headline numbers and a chart in sight at 1280x720 and
  1024x768, a layout that holds still while a slider moves, plain labels, a number field beside each slider, an
  error beside its control, keyboard operation;
- compares with a pinned baseline and takes results out (scenario TOML, result JSON, trace, chart SVG/PNG);
- shows its first numbers soon after it is opened on a freshly started server (figures written, not asserted).

Figures (update latency, cold start) go to tests/browser/artifacts/sidebar_figures.json; screenshots for the README
to docs/images/.
"""

import json
import pathlib
import re
import statistics
import time
import tomllib

PANEL = "#jupyter-hwsim-panel"
ROOT = pathlib.Path(__file__).resolve().parents[2]
IMAGES = ROOT / "docs" / "images"
SIM_TIMEOUT_MS = 60_000

# Dispatches input events on a slider at a fixed pace (a drag), then one change; meanwhile a timer probe records the
# longest gap between its ticks (a frozen page stops ticking) and every time the headline numbers are redrawn.
DRAG_JS = """async ([selector, positions, gapMs]) => {
  const slider = document.querySelector(selector);
  const shown = document.querySelector('#jupyter-hwsim-panel .jp-hwsim-throughput');
  const draws = [];
  const observer = new MutationObserver(records => {
    for (const r of records) if (r.attributeName === 'data-method') draws.push(performance.now());
  });
  observer.observe(shown, {attributes: true});
  let last = performance.now(), maxGap = 0, ticks = 0;
  const probe = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
    ticks++;
  }, 10);
  const inputs = [];
  for (const p of positions) {
    slider.value = String(p);
    inputs.push(performance.now());
    slider.dispatchEvent(new Event('input', {bubbles: true}));
    await new Promise(resolve => setTimeout(resolve, gapMs));
  }
  slider.dispatchEvent(new Event('change', {bubbles: true}));
  const end = performance.now();
  // wait until the panel is idle again (bounded)
  const status = document.querySelector('#jupyter-hwsim-panel .jp-hwsim-status');
  for (let i = 0; i < 600 && !(shown.dataset.method === 'simulate' && shown.dataset.current === 'true'
       && status.dataset.busy === 'false'); i++) {
    await new Promise(resolve => setTimeout(resolve, 50));
  }
  clearInterval(probe);
  observer.disconnect();
  const latencies = inputs.map(t => { const d = draws.find(x => x > t); return d === undefined ? null : d - t; });
  return {latencies, maxGap, ticks, settleMs: (draws[draws.length - 1] ?? end) - end, draws: draws.length};
}"""

# Every visible text of the panel (HTML and the charts' SVG) with its colour over the background it sits on.
CONTRAST_JS = """(root) => {
  const parse = (c) => {
    const m = c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return {r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1};
  };
  const over = (fg, bg) => ({r: fg.r * fg.a + bg.r * (1 - fg.a), g: fg.g * fg.a + bg.g * (1 - fg.a),
                             b: fg.b * fg.a + bg.b * (1 - fg.a), a: 1});
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const background = (el) => {
    const layers = [];
    for (let n = el; n && n.nodeType === 1; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c && c.a > 0) { layers.push(c); if (c.a >= 1) break; }
    }
    let bg = {r: 255, g: 255, b: 255, a: 1};
    for (const c of layers.reverse()) bg = over(c, bg);
    return bg;
  };
  const out = [];
  const check = (el, text, colour) => {
    const fg = parse(colour);
    if (!fg) return;
    const bg = background(el);
    const f = over(fg, bg);
    const l1 = lum(f), l2 = lum(bg);
    const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
    out.push({text: text.slice(0, 40), ratio: Math.round(ratio * 100) / 100, colour, cls: el.className.baseVal ?? el.className});
  };
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || !el || el.closest('svg, [hidden], button:disabled, option, select')) continue;
    const box = el.getBoundingClientRect();
    if (!box.width || !box.height || getComputedStyle(el).visibility === 'hidden') continue;
    if (Number(getComputedStyle(el).opacity) === 0) continue;
    check(el, n.textContent.trim(), getComputedStyle(el).color);
  }
  for (const t of root.querySelectorAll('svg text')) {
    if (!t.textContent.trim()) continue;
    const fill = t.getAttribute('fill') || getComputedStyle(t).fill;
    const probe = document.createElement('span');
    probe.style.color = fill;
    document.body.append(probe);
    const colour = getComputedStyle(probe).color;
    probe.remove();
    check(t.closest('.jp-hwsim-chart'), t.textContent.trim(), colour);
  }
  return out;
}"""

# Elements of the panel painted (nearly) white: in the dark theme there must be none (no white cards).
WHITE_JS = """(root) => {
  const out = [];
  for (const el of [root, ...root.querySelectorAll('*')]) {
    const s = getComputedStyle(el);
    const paint = el instanceof SVGElement ? (el.tagName === 'rect' ? el.getAttribute('fill') : null)
                                           : s.backgroundColor;
    if (!paint) continue;
    const probe = document.createElement('span');
    probe.style.color = paint;
    document.body.append(probe);
    const m = getComputedStyle(probe).color.match(/rgba?\\(([^)]+)\\)/);
    probe.remove();
    if (!m) continue;
    const [r, g, b, a = 1] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    if (a > 0.5 && r > 220 && g > 220 && b > 220) out.push(`${el.tagName}.${el.className.baseVal ?? el.className}`);
  }
  return out;
}"""

# Chart text outside its SVG, or an SVG wider than its slot: something is clipped (or needs scrolling).
CLIPPED_JS = """(root) => {
  const out = [];
  for (const slot of root.querySelectorAll('.jp-hwsim-chart')) {
    const svg = slot.querySelector('svg.marks');
    if (!svg || !slot.getBoundingClientRect().width) continue;
    const box = svg.getBoundingClientRect();
    if (box.right > slot.getBoundingClientRect().right + 1) out.push(`${slot.dataset.chart}: wider than its slot`);
    for (const t of svg.querySelectorAll('text')) {
      const b = t.getBoundingClientRect();
      if (!t.textContent.trim() || !b.width) continue;
      if (b.left < box.left - 1 || b.right > box.right + 1 || b.top < box.top - 1 || b.bottom > box.bottom + 1)
        out.push(`${slot.dataset.chart}: "${t.textContent}" clipped`);
    }
  }
  return out;
}"""


def _number(text: str) -> float:
    return float(re.search(r"\d[\d,]*\.?\d*", text).group(0).replace(",", ""))


def _open_sidebar(page):
    page.keyboard.press("Control+Shift+c")
    page.locator(".lm-CommandPalette-input").fill("Open hardware what-if panel")
    page.locator(".lm-CommandPalette-item", has_text="Open hardware what-if panel").first.click()


def _settled(page, expect) -> float:
    shown = page.locator(f'{PANEL} .jp-hwsim-throughput[data-method="simulate"][data-current="true"]')
    expect(shown, "the panel never showed the simulation of the current scenario").to_have_count(
        1, timeout=SIM_TIMEOUT_MS
    )
    idle = page.locator(f'{PANEL} .jp-hwsim-status[data-busy="false"]')
    expect(idle).to_have_count(1, timeout=SIM_TIMEOUT_MS)
    return float(shown.get_attribute("data-value"))


def _charts_drawn(page, expect, names=("utilization", "gpu_time", "curve", "memory")):
    for name in names:
        marks = page.locator(f'{PANEL} .jp-hwsim-chart[data-chart="{name}"] svg.marks').first
        expect(marks, f"chart {name} was not drawn").to_be_visible(timeout=30_000)


def _start(page, lab_server, expect, size):
    page.set_viewport_size(size)
    page.goto(lab_server.page_url("lab", reset=""), wait_until="domcontentloaded")
    expect(page.locator(".jp-LauncherCard").first).to_be_visible(timeout=60_000)
    _open_sidebar(page)
    expect(page.locator(PANEL)).to_be_visible()
    return _settled(page, expect)


def _set_theme(page, expect, name: str):
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Settings$")).click()
    page.locator(".lm-Menu-item", has_text=re.compile(r"^Theme$")).first.click()
    page.locator(".lm-Menu-item", has_text=re.compile(rf"^{re.escape(name)}$")).first.click()
    expect(page.locator("body")).to_have_attribute("data-jp-theme-name", name, timeout=30_000)
    page.wait_for_timeout(500)  # the charts redraw a frame after the theme's stylesheet is in


def _figures(artifacts_dir, **figures):
    path = artifacts_dir / "sidebar_figures.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data.update(figures)
    path.write_text(json.dumps(data, indent=2) + "\n")


def _shot(page, name: str, show: str | None = None):
    """A picture for the docs: the panel scrolled to its top, or with `show` (a selector) in the middle."""
    IMAGES.mkdir(parents=True, exist_ok=True)
    if show:
        page.locator(show).evaluate("(el) => el.scrollIntoView({block: 'center'})")
    else:
        page.locator(PANEL).evaluate("(p) => { p.scrollTop = 0; }")
    page.mouse.move(700, 700)  # no hover state in the picture
    page.screenshot(path=str(IMAGES / name))


def test_never_freezes(browser_page, lab_server, artifacts_dir):
    """Fifty changes in two seconds: responsive, coalesced, charts updated in place, the final numbers exact."""
    from playwright.sync_api import expect

    page = browser_page
    calls = []
    _start(page, lab_server, expect, {"width": 1280, "height": 720})
    _charts_drawn(page, expect)
    flight = {"now": 0, "most": 0}

    def started(r):
        if r.method == "POST" and "/hwsim/api/" in r.url:
            calls.append(r.url.rsplit("/", 1)[-1])
            flight["now"] += 1
            flight["most"] = max(flight["most"], flight["now"])

    def ended(r):
        if r.method == "POST" and "/hwsim/api/" in r.url:
            flight["now"] -= 1

    page.on("request", started)
    page.on("requestfinished", ended)
    page.on("requestfailed", ended)
    slider = f'{PANEL} input[data-field="loader_workers"]'
    before = page.locator(slider).bounding_box()
    builds_before = {
        n: int(page.locator(f'{PANEL} .jp-hwsim-chart[data-chart="{n}"]').get_attribute("data-builds") or 0)
        for n in ("utilization", "gpu_time", "memory")
    }
    positions = [(i * 7) % 60 + 2 for i in range(49)] + [24]
    out = page.evaluate(DRAG_JS, [slider, positions, 40])

    # the page answered all along and still does
    assert out["ticks"] > 50, out
    assert page.evaluate("() => 1 + 1") == 2
    # coalesced: never more than one request in flight, at most one per change, the simulations at the end
    assert flight["most"] == 1, flight
    assert len(calls) <= len(positions) + 2, calls
    assert [c.split("?")[0] for c in calls[-2:]] == ["simulate", "simulate"], calls
    # the final numbers are those of the final value, exactly as a direct REST call gives them
    expect(page.locator(f'{PANEL} [data-row="loader_workers"] .jp-hwsim-readout')).to_have_text("24 processes")
    expect(page.locator(f'{PANEL} input[data-number="loader_workers"]')).to_have_value("24")
    shown = _settled(page, expect)
    direct = lab_server.api("hwsim/api/simulate?seed=0", method="POST", body={"loader_workers": 24}, timeout=60)
    assert shown == direct["throughput"], (shown, direct["throughput"])
    latency = page.locator(f"{PANEL} .jp-hwsim-latency").get_attribute("data-p50")
    assert float(latency) == direct["latency_ms"]["p50"]
    # the charts took new data in place: no rebuild per value
    for name, built in builds_before.items():
        slot = page.locator(f'{PANEL} .jp-hwsim-chart[data-chart="{name}"]')
        if name != "memory":  # memory does not depend on the loader: its data stays, nothing to redraw
            assert int(slot.get_attribute("data-updates") or 0) >= 1, (name, slot.get_attribute("data-builds"), built)
        assert int(slot.get_attribute("data-builds") or 0) - built <= 2, name
    # the slider did not move under the pointer
    after = page.locator(slider).bounding_box()
    assert abs(after["y"] - before["y"]) < 1 and abs(after["x"] - before["x"]) < 1, (before, after)

    lat = sorted(x for x in out["latencies"] if x is not None)
    figures = {
        "drag_changes": len(positions),
        "drag_requests": len(calls),
        "drag_most_requests_in_flight": flight["most"],
        "drag_update_latency_ms_p50": round(statistics.median(lat), 1) if lat else None,
        "drag_update_latency_ms_p95": round(lat[int(0.95 * (len(lat) - 1))], 1) if lat else None,
        "drag_longest_main_thread_gap_ms": round(out["maxGap"], 1),
        "drag_settle_ms_after_last_change": round(out["settleMs"], 1),
    }
    _figures(artifacts_dir, **figures)
    print("sidebar drag figures:", figures)


def test_looks_right_light_and_dark(browser_page, lab_server, artifacts_dir):
    """Themes, contrast, no white cards, nothing clipped, numbers and a chart in sight, labels, keyboard, errors."""
    from playwright.sync_api import expect

    page = browser_page
    panel = page.locator(PANEL)
    for size in ({"width": 1280, "height": 720}, {"width": 1024, "height": 768}):
        _start(page, lab_server, expect, size)
        _charts_drawn(page, expect, ("utilization",))
        # the headline numbers and the first chart in sight without scrolling, no horizontal scrolling
        for sel in (".jp-hwsim-numbers", '.jp-hwsim-chart[data-chart="utilization"] svg.marks'):
            box = panel.locator(sel).first.bounding_box()
            assert box and box["y"] >= 0 and box["y"] + box["height"] <= size["height"], (size, sel, box)
            assert box["x"] + box["width"] <= size["width"], (size, sel, box)
        assert panel.evaluate("(p) => p.scrollWidth <= p.clientWidth + 1"), f"horizontal scrolling at {size}"
        page.set_viewport_size({"width": 1280, "height": 720})

    # plain labels with units, a definition on hover, a number field beside each slider, ARIA names
    row = panel.locator('[data-row="storage_bandwidth_gbs"]')
    expect(row.locator(".jp-hwsim-label")).to_have_text("Storage read speed (GB/s)")
    expect(panel.locator('[data-row="loader_workers"] .jp-hwsim-label')).to_have_text("Loader workers")
    assert "(%hwsim field: loader_workers)" in panel.locator(
        '[data-row="loader_workers"] .jp-hwsim-label'
    ).get_attribute("title")
    for slider in panel.locator('input[type="range"]').all():
        if slider.is_visible():
            assert slider.get_attribute("aria-label"), slider.get_attribute("data-field")
            name = slider.get_attribute("data-field")
            expect(panel.locator(f'input[type="number"][data-number="{name}"]')).to_be_visible()
    assert panel.locator(".jp-hwsim-tile").first.get_attribute("title").startswith("Throughput:")

    # an exact value typed in the number field is simulated as typed (no slider snapping)
    number = panel.locator('input[data-number="storage_bandwidth_gbs"]')
    number.fill("7")
    number.press("Enter")
    expect(row.locator(".jp-hwsim-readout")).to_have_text("7 GB/s")
    _settled(page, expect)
    # a refused value: its error beside its control, in words, nothing else changed
    workers = panel.locator('input[data-number="loader_workers"]')
    workers.fill("-3")
    workers.press("Enter")
    error = panel.locator('[data-error-for="loader_workers"]')
    expect(error).to_contain_text("out of range")
    expect(panel.locator('input[data-field="loader_workers"]')).to_have_attribute("aria-invalid", "true")
    box, err = panel.locator('[data-row="loader_workers"]').bounding_box(), error.bounding_box()
    assert box["y"] <= err["y"] <= box["y"] + box["height"], (box, err)
    _shot(page, "sidebar-error.png", show=f'{PANEL} [data-row="loader_workers"]')
    workers.fill("8")
    workers.press("Enter")
    expect(error).to_be_empty()
    # keyboard: focus a slider and press an arrow key; the numbers follow
    before = _settled(page, expect)
    slider = panel.locator('input[data-field="loader_workers"]')
    slider.focus()
    for _ in range(4):
        page.keyboard.press("ArrowLeft")
    expect(panel.locator('[data-row="loader_workers"] .jp-hwsim-readout')).to_have_text("4 processes")
    assert _settled(page, expect) != before
    # reset to the default scenario for the pictures
    panel.get_by_role("button", name="Reset").click()
    _settled(page, expect)
    _charts_drawn(page, expect)

    for theme, picture in (("JupyterLab Light", "sidebar-light.png"), ("JupyterLab Dark", "sidebar-dark.png")):
        if theme == "JupyterLab Dark":
            fill_light = panel.locator('.jp-hwsim-chart[data-chart="utilization"] svg text').first.get_attribute("fill")
            _set_theme(page, expect, theme)  # no reload: the charts redraw in the dark theme's colours
            expect(panel.locator('.jp-hwsim-chart[data-chart="utilization"] svg text').first).not_to_have_attribute(
                "fill", fill_light or "", timeout=10_000
            )
            assert not panel.evaluate(WHITE_JS), panel.evaluate(WHITE_JS)
        low = [t for t in panel.evaluate(CONTRAST_JS) if t["ratio"] < 4.5]
        assert not low, (theme, low)
        clipped = panel.evaluate(CLIPPED_JS)
        assert not clipped, (theme, clipped)
        _shot(page, picture)
        if theme == "JupyterLab Light":
            _shot(page, "sidebar.png")  # the README's picture
    # the projector: 1280x720, dark, the numbers and a chart in sight
    _shot(page, "sidebar-projector-dark.png")
    _set_theme(page, expect, "JupyterLab Light")
    page.set_viewport_size({"width": 1024, "height": 768})
    page.wait_for_timeout(500)
    _shot(page, "sidebar-1024x768.png")

    page_errors = [m for m in page.harness_log if m.startswith("[pageerror]")]
    assert not page_errors, page_errors


def test_baseline_exports_and_suggestions(browser_page, lab_server, artifacts_dir):
    from playwright.sync_api import expect

    page = browser_page
    panel = page.locator(PANEL)
    _start(page, lab_server, expect, {"width": 1280, "height": 720})
    _charts_drawn(page, expect)

    # pin, then change: every headline number shows its change; the charts overlay the baseline
    panel.get_by_role("button", name="Pin as baseline").click()
    expect(panel.locator(".jp-hwsim-baseline")).to_contain_text("Baseline")
    base = float(panel.locator(".jp-hwsim-throughput").get_attribute("data-value"))
    number = panel.locator('input[data-number="loader_workers"]')
    number.fill("2")
    number.press("Enter")
    now = _settled(page, expect)
    delta = panel.locator('.jp-hwsim-delta[data-metric="throughput"]')
    expect(delta).to_contain_text("x")
    arrow = "▲" if now > base * 1.005 else "▼" if now < base * 0.995 else "="
    assert delta.inner_text().startswith(arrow), (delta.inner_text(), now, base)
    assert abs(float(re.search(r"([\d.]+)x", delta.inner_text()).group(1)) - now / base) < 0.01
    expect(panel.locator('.jp-hwsim-delta[data-metric="latency"]')).to_contain_text("x")
    expect(panel.locator('.jp-hwsim-delta[data-metric="gpu"]')).to_contain_text("pts")
    for name in ("utilization", "gpu_time", "memory", "curve"):
        expect(panel.locator(f'.jp-hwsim-chart[data-chart="{name}"]')).to_have_class(re.compile("jp-mod-baseline"))
    _charts_drawn(page, expect)
    _shot(page, "sidebar-baseline.png")

    # suggestions: the ones worth showing, and "show all" for the rest
    suggestions = panel.locator(".jp-hwsim-suggestion")
    expect(suggestions.first).to_be_visible(timeout=SIM_TIMEOUT_MS)
    result = lab_server.api("hwsim/api/simulate?seed=0", method="POST", body={"loader_workers": 2}, timeout=60)
    listed = [s for s in result["suggestions"] if s.get("shown", True)]
    expect(suggestions).to_have_count(len(listed))
    _shot(page, "sidebar-suggestions.png", show=f"{PANEL} .jp-hwsim-suggestions")
    if len(listed) < len(result["suggestions"]):
        panel.locator(".jp-hwsim-show-all").click()
        expect(suggestions).to_have_count(len(result["suggestions"]))
        panel.locator(".jp-hwsim-show-all").click()
        expect(suggestions).to_have_count(len(listed))

    # take it out: the scenario, the result, the trace and each chart
    def fetch(locator) -> bytes:
        with page.expect_download(timeout=SIM_TIMEOUT_MS) as info:
            locator.click()
        return pathlib.Path(info.value.path()).read_bytes()

    toml = tomllib.loads(fetch(panel.locator('button[data-export="scenario"]')).decode())
    assert toml == {"loader_workers": 2}, toml
    shown = json.loads(fetch(panel.locator('button[data-export="result"]')))
    assert shown["throughput"] == now and "charts" not in shown
    trace = json.loads(fetch(panel.locator('button[data-export="trace"]')))
    spans = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    assert spans and trace["otherData"]["throughput"] == now, trace["otherData"]
    chart = panel.locator('.jp-hwsim-chart[data-chart="utilization"]')
    chart.hover()
    svg = fetch(chart.locator('button[data-export="svg"]')).decode()
    assert svg.startswith("<svg") and "Utilization" in svg
    png = fetch(chart.locator('button[data-export="png"]'))
    assert png.startswith(b"\x89PNG")
    # unpin: the comparisons go
    panel.get_by_role("button", name="Unpin baseline").click()
    expect(delta).to_have_text("")
    expect(panel.locator('.jp-hwsim-chart[data-chart="utilization"]')).not_to_have_class(re.compile("jp-mod-baseline"))


def test_cold_start(browser_page, fresh_lab_server, artifacts_dir):
    """A freshly started server: the sidebar shows an estimate first, then the simulation; the times are written."""
    from playwright.sync_api import expect

    page = browser_page
    t0 = time.monotonic()
    lab = fresh_lab_server()
    server_ready_s = time.monotonic() - t0
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(lab.page_url("lab", reset=""), wait_until="domcontentloaded")
    expect(page.locator(".jp-LauncherCard").first).to_be_visible(timeout=60_000)
    lab_ready_s = time.monotonic() - t0
    _open_sidebar(page)
    panel = page.locator(PANEL)
    expect(panel).to_have_attribute("data-first-numbers-ms", re.compile(r"\d+"), timeout=SIM_TIMEOUT_MS)
    expect(panel).to_have_attribute("data-first-simulation-ms", re.compile(r"\d+"), timeout=SIM_TIMEOUT_MS)
    figures = {
        "cold_server_ready_s": round(server_ready_s, 2),
        "cold_lab_page_ready_s": round(lab_ready_s, 2),
        "cold_sidebar_first_numbers_ms": int(panel.get_attribute("data-first-numbers-ms")),
        "cold_sidebar_first_simulation_ms": int(panel.get_attribute("data-first-simulation-ms")),
    }
    _figures(artifacts_dir, **figures)
    print("sidebar cold start:", figures)
    assert figures["cold_sidebar_first_numbers_ms"] <= figures["cold_sidebar_first_simulation_ms"]


def test_memory_stays_flat_over_500_changes(browser_page, lab_server, artifacts_dir):
    """Five hundred slider changes: the page's JS heap (after garbage collection) grows by far less than 300 MB."""
    from playwright.sync_api import expect

    page = browser_page
    _start(page, lab_server, expect, {"width": 1280, "height": 720})
    _charts_drawn(page, expect)
    cdp = page.context.new_cdp_session(page)

    def heap_mb() -> float:
        cdp.send("HeapProfiler.collectGarbage")
        return cdp.send("Runtime.getHeapUsage")["usedSize"] / 2**20

    before = heap_mb()
    slider = f'{PANEL} input[data-field="loader_workers"]'
    positions = [(i * 11) % 63 + 1 for i in range(499)] + [12]
    out = page.evaluate(DRAG_JS, [slider, positions, 20])
    _settled(page, expect)
    after = heap_mb()
    growth = after - before
    _figures(
        artifacts_dir,
        memory_changes=len(positions),
        memory_heap_before_mb=round(before, 1),
        memory_heap_after_mb=round(after, 1),
        memory_heap_growth_mb=round(growth, 1),
        memory_longest_main_thread_gap_ms=round(out["maxGap"], 1),
    )
    print(f"sidebar heap over {len(positions)} changes: {before:.1f} -> {after:.1f} MB")
    assert growth < 300, (before, after)
    expect(page.locator(f'{PANEL} [data-row="loader_workers"] .jp-hwsim-readout')).to_have_text("12 processes")
