"""compare() and the cost and energy figures every result carries."""

import json
import subprocess
import sys

import pytest

from jupyter_hwsim import HwsimError, Scenario, compare, estimate, simulate
from jupyter_hwsim.core import catalog, energy


def _row(c, metric):
    return next(r for r in c.rows if r["metric"] == metric)


def test_a_comparison_is_the_ratio_of_two_runs():
    s = Scenario(workload="resnet50", gpu="a100", loader_workers=4)
    c = compare(s, loader_workers=16)
    a, b = simulate(s), simulate(s.replace(loader_workers=16))
    x = _row(c, "throughput")
    assert x["a"] == pytest.approx(a.throughput) and x["b"] == pytest.approx(b.throughput)
    assert x["ratio"] == pytest.approx(b.throughput / a.throughput) and x["better"] is (x["ratio"] > 1)
    p99 = _row(c, "latency_p99_ms")
    assert p99["better"] is (p99["ratio"] < 1)  # lower latency is better
    assert _row(c, "gpu_busy")["better"] is None  # a utilization is neither
    assert c.changed == {"loader_workers": (4, 16)}
    assert c.b.bottleneck == b.bottleneck


def test_compare_takes_two_scenarios_and_refuses_two_kinds():
    a, b = Scenario(kind="llm"), Scenario(kind="llm", gpu="h100", engine="vllm")
    c = compare(a, b, method="estimate")
    assert set(c.changed) == {"gpu", "engine"}  # the fusion alias is not a change of its own
    assert _row(c, "ttft_p50_ms")["b"] == pytest.approx(estimate(b).ttft_ms["p50"])
    with pytest.raises(HwsimError, match="kind"):
        compare(Scenario(), Scenario(kind="llm"))
    with pytest.raises(HwsimError, match="method"):
        compare(Scenario(), method="guess")


def test_the_cli_compares_files_and_refuses_in_one_line(tmp_path):
    (tmp_path / "a.toml").write_text('kind = "serving"\n')
    (tmp_path / "b.toml").write_text('kind = "serving"\ngpu = "h100"\n')
    run = [sys.executable, "-m", "jupyter_hwsim", "compare"]
    out = subprocess.run(
        [*run, "a.toml", "b.toml", "--estimate", "--json"], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    assert d["changed"] == {"gpu": ["a100-sxm-80gb", "h100-sxm"]}
    for bad in (["a.toml", "b.toml", "a.toml"], ["kind=llm"], ["gpu=nope"]):
        out = subprocess.run([*run, *bad, "--estimate"], cwd=tmp_path, capture_output=True, text=True)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_power_lies_between_idle_and_the_board_limit():
    dev = catalog.get("gpus", "a100-sxm-80gb")
    assert energy.power_w(dev, 0.0) == dev["idle_w"] and energy.power_w(dev, 1.0) == dev["tdp_w"]
    assert energy.power_w(dev, 0.5) == pytest.approx((dev["idle_w"] + dev["tdp_w"]) / 2)
    assert energy.power_w({"tdp_w": 100}, 0.5) is None  # no idle figure: no power


def test_cost_and_energy_follow_throughput_price_and_gpus():
    s = Scenario(kind="serving", arrival_rate_rps=400)
    r = estimate(s)
    price = catalog.get("gpus", s.gpu)["price_per_hour_usd"]
    assert r.cost_usd_per_million * r.throughput * 3600 / 1e6 == pytest.approx(price)
    assert r.energy_j_per_unit * r.throughput == pytest.approx(r.power_w)
    assert r.co2e_g_per_million == pytest.approx(r.energy_j_per_unit * 1e6 / 3.6e6 * s.grid_gco2_per_kwh)
    mine = estimate(s.replace(price_per_hour_usd=2 * price))
    assert mine.cost_usd_per_million == pytest.approx(2 * r.cost_usd_per_million, rel=1e-9)
    two = estimate(s.replace(replicas=2))  # the same offered load on two GPUs: twice the idle power
    assert two.throughput == pytest.approx(r.throughput, rel=0.02)
    assert two.power_w > r.power_w and two.cost_usd_per_million == pytest.approx(2 * r.cost_usd_per_million, rel=0.03)


def test_an_out_of_memory_run_has_no_cost():
    r = estimate(Scenario(kind="llm", workload="llama-2-70b", gpu="t4"))
    assert r.memory["oom"] and r.cost_usd_per_million is None and r.power_w is None


def test_the_magic_compares_and_shows_one_line_on_bad_input(tmp_path, monkeypatch):
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    ip = start_ipython() or get_ipython()  # the shell is global: another test module may have started it
    ip.run_line_magic("load_ext", "jupyter_hwsim")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.toml").write_text('kind = "llm"\n')
    with capture_output() as cap:
        c = ip.run_line_magic("hwsim", "compare a.toml gpu=h100")
    assert c.changed == {"gpu": ("a100-sxm-80gb", "h100-sxm")}
    html = next(o.data["text/html"] for o in cap.outputs if "text/html" in o.data)
    assert "Time to first token" in html and "h100-sxm" in html
    with capture_output() as cap:
        assert ip.run_line_magic("hwsim", "compare gpu=h1000") is None
    assert len(cap.stderr.strip().splitlines()) == 1 and "gpu" in cap.stderr and "Traceback" not in cap.stdout


def test_the_panels_read_outs_show_cost_and_trust_where_known():
    from jupyter_hwsim.jupyter.report import numbers_html

    def cell(html, cls):
        return html.split(f"class='{cls}'>")[1].split("</td>")[0]

    priced = numbers_html(estimate(Scenario(gpu="a100"), suggest=False))
    assert "per million" in cell(priced, "hwsim-cost") and "likely" in cell(priced, "hwsim-accuracy")
    unpriced = numbers_html(estimate(Scenario(gpu="rtx-4090"), suggest=False))  # no cloud rents it: power only
    assert " W " in cell(unpriced, "hwsim-cost") and "$" not in cell(unpriced, "hwsim-cost")
