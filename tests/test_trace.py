"""Chrome/Perfetto trace export: valid events, one track per stage and worker, busy time = utilization."""

import json
import subprocess
import sys

import pytest

from jupyter_hwsim import Scenario, simulate

REQUIRED = {"name", "ph", "ts", "dur", "pid", "tid"}


def _busy(trace, track_name, lo, hi, name=None):
    tid = next(
        e["tid"]
        for e in trace["traceEvents"]
        if e["ph"] == "M" and e["name"] == "thread_name" and e["args"]["name"] == track_name
    )
    total = 0.0
    for e in trace["traceEvents"]:
        if e["ph"] == "X" and e["tid"] == tid and (name is None or e["name"] == name):
            a, b = e["ts"] / 1e6, (e["ts"] + e["dur"]) / 1e6
            total += max(0.0, min(b, hi) - max(a, lo))
    return total / (hi - lo)


@pytest.mark.parametrize(
    "fields",
    [
        dict(storage="sata-ssd", loader_workers=4, jitter_cv=0.0),
        dict(
            workload="mlp-small",
            gpu="h100",
            batch_size=4096,
            host_link_gbs=0.05,
            preprocess_ms_per_sample=0.0001,
            jitter_cv=0.0,
        ),
    ],
)
def test_trace_matches_the_timeline_and_the_utilization(tmp_path, fields):
    r = simulate(Scenario(steps=100, **fields), suggest=False)
    path = tmp_path / "t.json"
    trace = r.to_chrome_trace(path)
    assert json.loads(path.read_text()) == trace
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert all(REQUIRED <= set(e) and e["dur"] >= 0 and "batch" in e["args"] for e in spans)
    assert len(spans) == len(r.timeline)
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert names == {t[0] for t in r.timeline}
    assert {"gpu", "storage"} <= names and any(n.startswith("worker") for n in names)
    lo = r.sim["warmup_s"]
    hi = max(t[3] for t in r.timeline if t[0] == "gpu")
    # the measured window ends at the last step; storage and copies are device-busy spans
    assert _busy(trace, "storage", lo, hi) == pytest.approx(r.utilization["storage"], abs=0.02)
    assert _busy(trace, "host_copy", lo, hi) == pytest.approx(r.utilization["host_link"], abs=0.02)
    steps = _busy(trace, "gpu", lo, hi)
    assert steps == pytest.approx(r.gpu_time["compute"] + r.gpu_time["memory"] + r.gpu_time["launch"], abs=0.02)


def test_serving_and_llm_traces_have_their_tracks():
    srv = simulate(Scenario(kind="serving", arrival_rate_rps=500, steps=200), suggest=False).to_chrome_trace()
    tracks = {e["args"]["name"] for e in srv["traceEvents"] if e["name"] == "thread_name"}
    assert {"preprocess", "host_copy", "gpu"} <= tracks
    gen = simulate(Scenario(kind="llm", steps=20), suggest=False).to_chrome_trace()
    names = {e["name"].split(" ")[0] for e in gen["traceEvents"] if e["ph"] == "X"}
    assert names == {"prefill", "decode"}


def test_cli_writes_a_trace(tmp_path):
    path = tmp_path / "run.json"
    p = subprocess.run(
        [sys.executable, "-m", "jupyter_hwsim", "run", "steps=30", "--trace", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(path.read_text())["traceEvents"]
    p = subprocess.run(
        [sys.executable, "-m", "jupyter_hwsim", "run", "steps=30", "--trace", "/nonexistent/x.json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and p.stderr.startswith("error: --trace=")
