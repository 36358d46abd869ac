"""The Jupyter surfaces: the %hwsim magic, the ipywidgets what-if panel, the charts, the static report and the
jupyter_server REST extension. Thin layers over the public API; nothing below imports them."""
