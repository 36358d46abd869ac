"""Sweeps at scale: the same table on any executor, intervals that shrink with seeds, best() under a limit."""

import csv
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from jupyter_hwsim import HwsimError, Scenario, sweep, sweeps

BASE = Scenario(workload="resnet50", gpu="a100", steps=40)
AXES = dict(batch_size=[16, 64], loader_workers=[2, 8])


def _strip(table):
    return [{k: v for k, v in row.items()} for row in table.rows]


@pytest.fixture(scope="module")
def dask_cluster():
    from dask.distributed import LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None, processes=True)
    yield cluster
    cluster.close()


def test_identical_tables_on_every_executor(dask_cluster):
    from dask.distributed import Client

    inline = sweep(BASE, seeds=2, workers=1, **AXES)
    pooled = sweep(BASE, seeds=2, workers=2, **AXES)  # 8 tasks < INLINE_BELOW: force a pool
    pooled_big = sweeps.run_sweep(BASE, dict(AXES, fusion=["eager", "compiled"]), seeds=2, workers=2)
    with ThreadPoolExecutor(2) as ex:
        threaded = sweep(BASE, seeds=2, executor=ex, **AXES)
    with Client(dask_cluster) as client:
        on_dask = sweep(BASE, seeds=2, executor=client, **AXES)
    for other in (pooled, threaded, on_dask):
        assert _strip(other) == _strip(inline)
    assert len(pooled_big.rows) == 8 and pooled_big.rows[0]["seeds"] == 2
    assert [r.to_dict() | {"sim": None} for r in on_dask] == [r.to_dict() | {"sim": None} for r in inline]


def test_confidence_intervals_shrink_as_seeds_grow():
    s = BASE.replace(jitter_cv=0.5, loader_workers=4)
    few, many = sweep(s, seeds=3, workers=1, batch_size=[32]), sweep(s, seeds=12, workers=1, batch_size=[32])
    w = lambda t: t.rows[0]["throughput_hi"] - t.rows[0]["throughput_lo"]  # noqa: E731
    assert 0 < w(many) < w(few)
    for t in (few, many):
        row = t.rows[0]
        assert row["throughput_lo"] <= row["throughput"] <= row["throughput_hi"]
    one = sweep(s, seeds=1, workers=1, batch_size=[32]).rows[0]
    assert one["throughput_lo"] == one["throughput"] == one["throughput_hi"]


def test_best_respects_its_limit():
    t = sweep(
        Scenario(kind="inference", workload="resnet50", gpu="a100", loader_workers=32, cpu_cores=64),
        method="estimate",
        batch_size=[1, 4, 16, 64, 256, 1024],
    )
    best = t.best("throughput", p99_ms=50)
    assert best["p99_ms"] <= 50
    assert all(r["throughput"] <= best["throughput"] for r in t.rows if r["p99_ms"] <= 50)
    assert any(r["throughput"] > best["throughput"] for r in t.rows)  # the limit bites
    assert t.best("throughput", p99_ms=1e-6) is None
    assert t.best("p99_ms", maximize=False)["batch_size"] == 1
    with pytest.raises(HwsimError):
        t.best("speed")


def test_pandas_and_chart():
    t = sweep(BASE, seeds=2, workers=1, **AXES)
    df = t.to_pandas()
    assert len(df) == 4 and {"batch_size", "loader_workers", "throughput", "throughput_lo", "bottleneck"} <= set(df)
    spec = t.chart(x="batch_size").to_dict()
    assert spec["layer"][1]["encoding"]["y"]["field"] == "throughput"
    values = spec["datasets"][spec["data"]["name"]] if "datasets" in spec else spec["data"]["values"]
    assert len(values) == 4 and {"throughput_lo", "throughput_hi", "series"} <= set(values[0])


@pytest.mark.parametrize(
    "kw, field", [(dict(seeds=0), "seeds"), (dict(executor="cluster"), "executor"), (dict(method="guess"), "method")]
)
def test_bad_sweep_arguments(kw, field):
    with pytest.raises(HwsimError) as e:
        sweep(BASE, batch_size=[8, 16], **kw)
    assert e.value.field == field


def test_keyboard_interrupt_stops_the_pool_cleanly(monkeypatch):
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    calls = {"n": 0}

    def interrupt(self):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(sweeps._Progress, "step", interrupt)
    with pytest.raises(KeyboardInterrupt):
        sweep(BASE.replace(steps=200), seeds=3, workers=2, batch_size=[8, 16, 32, 64, 128, 256])
    deadline = time.time() + 20
    while time.time() < deadline and {p.pid for p in me.children(recursive=True)} - before:
        time.sleep(0.2)
    assert not ({p.pid for p in me.children(recursive=True)} - before), "worker processes left behind"


@pytest.mark.slow
def test_cli_seeds_workers_csv_and_dask(tmp_path, dask_cluster):
    path = tmp_path / "s.csv"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter_hwsim",
            "sweep",
            "batch_size=16,64",
            "steps=40",
            "--seeds",
            "3",
            "--workers",
            "2",
            "--csv",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(path.open()))
    assert [r["batch_size"] for r in rows] == ["16", "64"] and rows[0]["seeds"] == "3"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter_hwsim",
            "sweep",
            "batch_size=16,64",
            "steps=40",
            "--dask",
            dask_cluster.scheduler_address,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    p = subprocess.run(
        [sys.executable, "-m", "jupyter_hwsim", "sweep", "batch_size=16,64", "--dask", "tcp://127.0.0.1:9"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and p.stderr.startswith("error: --dask=")
