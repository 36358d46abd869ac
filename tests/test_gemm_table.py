"""The matmul fixed time (devices.toml matmul_latency_us) is reproducible from its source, OpenXLA's measured GEMM
table (data/reference/xla_matmul_table.csv), with the model's own tile fill: refitting it here gives the catalogue's
figure, and with it the model meets the measured times far better than without."""

import csv
import dataclasses
import math
import statistics
from pathlib import Path

import pytest

from jupyter_hwsim import catalog
from jupyter_hwsim.core import costs
from jupyter_hwsim.core.workloads import Op

TABLE = Path(costs.__file__).resolve().parents[1] / "data" / "reference" / "xla_matmul_table.csv"


def _rows(arch: str, dtype: str) -> list[dict]:
    with TABLE.open() as f:
        return [r for r in csv.DictReader(f) if r["arch"] == arch and r["dtype"] == dtype]


def _model_and_measured(device: str, arch: str) -> list[tuple[float, float]]:
    """(model time without the fixed time, measured time) of each bf16 shape, in seconds."""
    d = catalog.get("gpus", device)
    rate = d["peak_tflops"]["bf16"] * 1e12 * d["compute_efficiency"]
    out = []
    for r in _rows(arch, "bf16xbf16->bf16"):
        b, m, n, k = (int(r[x]) for x in "bmnk")
        flops = 2.0 * b * m * n * k
        op = Op("gemm", "matmul", flops, 0, 0, rows=m, cols=n, groups=b)
        fill = costs.sm_occupancy(op, 1, d["parallel_units"], d["tile"])
        out.append((flops / (rate * fill), flops / float(r["flops_per_s"])))
    return out


def _fit_t0(pairs) -> float:
    """argmin over t0 >= 0 of sum log^2((t0 + model) / measured), by golden-section search (convex in t0)."""

    def loss(t0):
        return sum(math.log((t0 + a) / b) ** 2 for a, b in pairs)

    lo, hi = 0.0, 50e-6
    g = (math.sqrt(5) - 1) / 2
    for _ in range(80):
        x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
        lo, hi = (lo, x2) if loss(x1) < loss(x2) else (x1, hi)
    return (lo + hi) / 2


@pytest.mark.parametrize("device, arch", [("h100-sxm", "sm_90"), ("b200", "sm_100_B200"), ("mi300x", "gfx942")])
def test_the_matmul_fixed_time_is_refitted_from_its_table(device, arch):
    pairs = _model_and_measured(device, arch)
    assert len(pairs) == 375
    t0 = _fit_t0(pairs)
    listed = catalog.get("gpus", device)["matmul_latency_us"] * 1e-6
    assert t0 == pytest.approx(listed, rel=0.02)

    def median_error(fixed):
        return statistics.median(abs((fixed + a) / b - 1) for a, b in pairs)

    assert median_error(t0) < median_error(0.0) / 2.5  # the roofs alone are far too fast on small shapes


def test_devices_without_a_table_take_the_h100_figure():
    assert catalog.defaults("gpus")["matmul_latency_us"] == catalog.get("gpus", "h100-sxm")["matmul_latency_us"]
    assert catalog.get("gpus", "a100")["matmul_latency_us"] == catalog.defaults("gpus")["matmul_latency_us"]


# ---- Vidur's measured PyTorch linears: the overlap near the ridge and the matmul efficiency of typical shapes ----

VIDUR = Path(costs.__file__).resolve().parents[1] / "data" / "reference" / "vidur_linear_table.csv"
VIDUR_DEVICES = {"a100": "a100-sxm-80gb", "h100": "h100-sxm"}


def _vidur(gpu: str) -> list[dict]:
    with VIDUR.open() as f:
        return [r for r in csv.DictReader(f) if r["gpu"] == gpu]


def _linear_us(device: str, row: dict, efficiency: float, p: float, monkeypatch) -> float:
    """The model's time of one of the table's linears (fp16, M = num_tokens), at this matmul efficiency and overlap."""
    from jupyter_hwsim import Scenario
    from jupyter_hwsim.core import workloads

    monkeypatch.setattr(costs, "MATMUL_OVERLAP_P", p)
    m = costs.resolve(Scenario(kind="inference", workload="llama-2-7b", gpu=device, precision="fp16"))
    r = dataclasses.replace(costs.rates(m), matmul=m.device["peak_tflops"]["fp16"] * 1e12 * efficiency)
    op = workloads._linear("linear", int(row["m"]), int(row["k"]), int(row["n"]))
    _, _, t_c, t_m = costs.roofline(op, 1, r, 2.0, 2.0, False)
    return max(costs.with_matmul_overheads(op, r, 1, t_c, t_m, 1)) * 1e6


def _loss(gpu: str, efficiency: float, p: float, monkeypatch) -> float:
    rows = _vidur(gpu)
    return sum(math.log(float(r["measured_us"]) / _linear_us(VIDUR_DEVICES[gpu], r, efficiency, p, monkeypatch)) ** 2
               for r in rows)  # fmt: skip


def _fit_efficiency(gpu: str, p: float, monkeypatch) -> float:
    lo, hi = 0.4, 1.2
    g = (math.sqrt(5) - 1) / 2
    for _ in range(40):
        x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
        lo, hi = (lo, x2) if _loss(gpu, x1, p, monkeypatch) < _loss(gpu, x2, p, monkeypatch) else (x1, hi)
    return (lo + hi) / 2


@pytest.mark.parametrize("gpu", sorted(VIDUR_DEVICES))
def test_the_gemm_efficiency_is_refitted_from_vidurs_table(gpu, monkeypatch):
    assert len(_vidur(gpu)) == 68
    device, p = catalog.get("gpus", VIDUR_DEVICES[gpu]), costs.MATMUL_OVERLAP_P
    fitted = _fit_efficiency(gpu, p, monkeypatch)
    assert fitted == pytest.approx(device["gemm_efficiency"], abs=0.005)

    def mean_error(efficiency, p):
        rows = _vidur(gpu)
        return statistics.mean(
            abs(_linear_us(VIDUR_DEVICES[gpu], r, efficiency, p, monkeypatch) / float(r["measured_us"]) - 1)
            for r in rows
        )

    before = mean_error(device["compute_efficiency"], math.inf)  # the best shape's efficiency and the plain max
    after = mean_error(device["gemm_efficiency"], p)
    assert after < 0.08 and after < before * 0.75


def test_the_overlap_exponent_is_the_tables_best(monkeypatch):
    """One exponent for both devices (each with its refitted efficiency): the catalogue's beats its neighbours."""

    def total(p):
        return sum(_loss(gpu, _fit_efficiency(gpu, p, monkeypatch), p, monkeypatch) for gpu in VIDUR_DEVICES)

    p = costs.MATMUL_OVERLAP_P
    assert total(p) < min(total(p - 0.5), total(p + 0.5), total(math.inf))


def test_a_few_rows_more_never_make_a_matmul_much_slower():
    """Below GEMV_ROWS a matmul runs the faster of a vector-unit GEMV and a padded tensor-core tile: no step up in time
    where the tile takes over (a 4096 -> 12288 projection, fp16, A100)."""
    from jupyter_hwsim import Scenario
    from jupyter_hwsim.core import workloads

    m = costs.resolve(Scenario(kind="inference", workload="llama-2-7b", gpu="a100-sxm-80gb", precision="fp16"))
    r = costs.rates(m)

    def us(rows):
        op = workloads._linear("qkv", rows, 4096, 12288)
        _, _, t_c, t_m = costs.roofline(op, 1, r, 2.0, 2.0, False)
        return max(costs.with_matmul_overheads(op, r, 1, t_c, t_m, 1)) * 1e6

    times = [us(n) for n in range(1, 33)]
    assert all(b >= a * 0.99 for a, b in zip(times, times[1:]))  # more rows never take less time...
    assert max(times) < times[0] * 1.2  # ...and 32 rows of a memory-bound projection cost about what one does
