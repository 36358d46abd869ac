"""Smoke test of the JupyterLab browser harness: ipywidgets and an Altair/Vega-Lite chart render."""

import re

WIDGET_CELL = """\
import ipywidgets as widgets
slider = widgets.IntSlider(value=3, min=0, max=10, description="n")
label = widgets.Label(value="value=3")
slider.observe(lambda change: setattr(label, "value", f"value={change['new']}"), names="value")
display(widgets.VBox([slider, label]))
"""

CHART_CELL = """\
import altair as alt
data = alt.Data(values=[{"a": "A", "b": 3}, {"a": "B", "b": 7}, {"a": "C", "b": 5}])
spec = alt.Chart(data).mark_bar().encode(x="a:N", y="b:Q").to_dict()
spec["$schema"] = "https://vega.github.io/schema/vega-lite/v5.json"
display({"application/vnd.vegalite.v5+json": spec, "text/plain": "chart"}, raw=True)
"""

FORBIDDEN_TEXT = ["Error loading script", "Javascript Error", "Error displaying widget", "Traceback"]


def test_widgets_and_vega_render(browser_page, lab_server, open_notebook, run_all, save_screenshot, painted_pixels_js):
    from playwright.sync_api import expect  # here, not at import: a missing playwright fails via the fixtures

    page = browser_page
    open_notebook(page, lab_server, "smoke.ipynb", [WIDGET_CELL, CHART_CELL])
    run_all(page)

    # (a) ipywidgets: the slider and the label are real widget views, not "Loading widget..."
    slider = page.locator(".jp-OutputArea-output .jupyter-widgets.widget-slider")
    expect(slider, "IntSlider view did not render").to_be_visible()
    label = page.locator(".jp-OutputArea-output .jupyter-widgets.widget-label")  # the Label widget (div)
    readout = slider.locator(".widget-readout")
    expect(label).to_have_text("value=3")
    expect(readout).to_have_text("3")

    slider.locator(".noUi-handle").click()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    expect(readout, "the slider did not move with ArrowRight").not_to_have_text("3")
    moved = int(readout.inner_text().strip())
    assert moved > 3, f"slider moved the wrong way: readout {moved}"
    # the kernel-side observe() callback round-trips the new value into the Label
    expect(label, "Label did not follow the slider (observe round-trip)").to_have_text(f"value={moved}")

    # (b) Vega-Lite: JupyterLab's built-in renderer drew marks (canvas by default, or svg)
    vega = page.locator(".jp-OutputArea-output.jp-RenderedVegaCommon5")
    expect(vega, "no Vega-Lite output (.jp-RenderedVegaCommon5)").to_have_count(1)
    marks = vega.locator("canvas, svg.marks").first
    expect(marks, "Vega output has no canvas/svg").to_be_visible()
    box = marks.bounding_box()
    assert box and box["width"] > 50 and box["height"] > 50, f"chart too small: {box}"
    painted = marks.evaluate(painted_pixels_js)
    assert painted > 100, f"the chart canvas is blank ({painted} painted pixels)"

    text = page.locator("body").inner_text()
    for bad in FORBIDDEN_TEXT:
        assert bad not in text, f"page shows {bad!r}:\n{text[:3000]}"
    page_errors = [line for line in page.harness_log if line.startswith("[pageerror]")]
    assert not page_errors, f"uncaught errors in the page: {page_errors}"
    assert re.search(r"\[\d+\]:", page.locator(".jp-InputPrompt").first.inner_text())

    shot = save_screenshot(page, "lab_smoke")
    assert shot.stat().st_size > 10_000
