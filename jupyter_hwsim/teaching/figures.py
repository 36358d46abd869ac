"""Static charts for the workshop notebooks: an Altair chart shown as Vega-Lite together with its SVG
(made offline by vl-convert), so it renders in JupyterLab and survives `jupyter nbconvert --to html`.

It imports no module of the package's Jupyter layer (teaching sits below it): the MIME type and the
Vega-Lite version are those JupyterLab 4 renders, as in jupyter/charts.py."""

from __future__ import annotations

VEGALITE_MIME = "application/vnd.vegalite.v5+json"  # the Vega-Lite JupyterLab 4 renders with the vega it ships
SCHEMA_V5 = "https://vega.github.io/schema/vega-lite/v5.json"
VL_VERSION = "5.21"  # the SVG is made with the same Vega-Lite


class Static:
    """Wraps an Altair chart; as the last expression of a cell it displays with its SVG."""

    def __init__(self, chart, name: str = "chart"):
        spec = chart.to_dict()
        spec["$schema"] = SCHEMA_V5
        self.spec, self.name = spec, name

    def svg(self) -> str:
        import vl_convert

        return vl_convert.vegalite_to_svg(self.spec, vl_version=VL_VERSION)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {VEGALITE_MIME: self.spec, "image/svg+xml": self.svg(), "text/plain": f"<{self.name} chart>"}


def static(chart, name: str = "chart") -> Static:
    """An Altair chart as a static, exportable figure."""
    return Static(chart, name)
