"""calibrate(): fit the model's host figures to a real PyTorch pipeline on this machine (needs the torch extra).
`pipeline` measures and fits; `demo` is a small JPEG + CNN pipeline to calibrate on. Nothing is imported here,
so importing the package does not import PyTorch."""
