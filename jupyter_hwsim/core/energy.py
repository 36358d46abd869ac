"""Board power, energy and cost of a result: what a run draws and what its output costs.

Power: idle_w + (tdp_w - idle_w) x the GPU's busy share (the catalogue's sourced board figures; assumption: a
busy GPU draws its board limit, which overstates memory-bound kernels). Energy per unit divides it by the
throughput; cost per million units divides the price per GPU-hour likewise; CO2e multiplies energy by the grid's
intensity. Every figure scales with `replicas` (one GPU each)."""

from __future__ import annotations

J_PER_KWH = 3.6e6


def power_w(device: dict, gpu_busy: float) -> float | None:
    """Board power of one GPU busy `gpu_busy` of the time; None when the catalogue has no power figures."""
    tdp, idle = device.get("tdp_w"), device.get("idle_w")
    if tdp is None or idle is None:
        return None
    return idle + (tdp - idle) * min(1.0, max(0.0, gpu_busy))


def figures(device: dict, gpu_busy: float, throughput: float, gpus: int, price_per_hour_usd, grid_gco2_per_kwh):
    """{power_w, energy_j_per_unit, cost_usd_per_million, co2e_g_per_million}: None where a figure is missing
    or nothing is produced."""
    p = power_w(device, gpu_busy)
    price = price_per_hour_usd if price_per_hour_usd is not None else device.get("price_per_hour_usd")
    out: dict[str, float | None] = {"power_w": None if p is None else p * gpus, "energy_j_per_unit": None,
                                    "cost_usd_per_million": None, "co2e_g_per_million": None}  # fmt: skip
    if throughput <= 0:
        return out
    if p is not None:
        j = p * gpus / throughput
        out.update(energy_j_per_unit=j, co2e_g_per_million=j * 1e6 / J_PER_KWH * grid_gco2_per_kwh)
    if price is not None:
        out["cost_usd_per_million"] = price * gpus / 3600.0 / throughput * 1e6
    return out
