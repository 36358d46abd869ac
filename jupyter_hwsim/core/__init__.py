"""The pure core: scenario, catalogue, workloads, costs (the roofline), the discrete-event simulator, the
analytic twin and the result. It imports the standard library, SimPy and NumPy, never a layer above it."""
