"""REST latency under load: 10 concurrent clients against a real `jupyter server` on 127.0.0.1.

Each client acts as a sidebar being dragged: for its own values of a slider it sends the estimate of every value
(the preview) and, every fifth value, the simulation without suggestions (the settled numbers); at the end, the
simulation with suggestions (the search that re-simulates each candidate change). Every scenario a client sends is
its own, so the first round measures computing (no cached answer); a second round sends the same scenarios again
(what a slider dragged back, or a class on the same exercise, sends) and measures the result cache. Meanwhile
GET /api/status is timed: the server must stay responsive. Figures only, no thresholds.

Run: python benchmarks/bench_rest.py [clients=10] [values=20]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from local_server import TOKEN, command, free_port

_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _call(url: str, body: dict | None = None, timeout: float = 120.0) -> tuple[int, float, bool]:
    """(status, seconds, answered from the cache)"""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    req.add_header("Authorization", f"token {TOKEN}")
    t = time.perf_counter()
    try:
        with _HTTP.open(req, timeout=timeout) as resp:
            resp.read()
            return resp.status, time.perf_counter() - t, resp.headers.get("X-Hwsim-Cache") == "hit"
    except urllib.error.HTTPError as e:
        e.read()
        return e.code, time.perf_counter() - t, False


def client_plan(i: int, values: int) -> list[tuple[str, dict]]:
    """The requests of client i: its own scenarios (batch size and workers of its own), as a drag sends them."""
    plan = []
    batch = 32 * (1 + i % 8)
    for k in range(values):
        s = {"loader_workers": 1 + (i * 3 + k * 7) % 48, "batch_size": batch, "cpu_cores": 8 + i}
        plan.append(("estimate", s))
        if k % 5 == 4:
            plan.append(("simulate?seed=0&suggest=0", s))
    plan.append(("simulate?seed=0&suggest=1", plan[-1][1]))
    return plan


def run_round(base: str, clients: int, values: int) -> dict:
    lat: dict[str, list[float]] = {}
    hits = codes_bad = 0
    lock = threading.Lock()

    def one(i: int) -> None:
        nonlocal hits, codes_bad
        for path, body in client_plan(i, values):
            code, dt, hit = _call(f"{base}/hwsim/api/{path}", body)
            kind = path.split("?")[0] + ("+suggest" if "suggest=1" in path else "")
            with lock:
                lat.setdefault(kind, []).append(dt * 1e3)
                hits += hit
                codes_bad += code != 200

    status_ms: list[float] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            _code, dt, _hit = _call(f"{base}/api/status")
            status_ms.append(dt * 1e3)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    t0 = time.perf_counter()
    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    done.set()
    watcher.join()

    def q(xs: list[float]) -> dict:
        xs = sorted(xs)
        return {
            "n": len(xs),
            "p50_ms": round(statistics.median(xs), 1),
            "p95_ms": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 1),
            "max_ms": round(xs[-1], 1),
        }

    panel = lat.get("estimate", []) + lat.get("simulate", [])
    return {
        "requests": sum(len(v) for v in lat.values()),
        "wall_s": round(wall, 2),
        "cache_hits": hits,
        "non_200": codes_bad,
        "estimate": q(lat["estimate"]),
        "simulate": q(lat["simulate"]),
        "simulate+suggest": q(lat["simulate+suggest"]),
        "estimate+simulate (what a drag sends)": q(panel),
        "api_status": q(status_ms),
    }


def main(clients: int = 10, values: int = 20) -> dict:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        cmd, env = command(port, tmp)
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(600):  # at most ~60 s
                try:
                    if _call(f"{base}/hwsim/api/catalog", timeout=2)[0] == 200:
                        break
                except OSError:
                    pass
                time.sleep(0.1)
            else:
                raise RuntimeError("the server did not answer /hwsim/api/catalog within 60 s")
            time.sleep(8)  # let the worker processes warm up: this measures the steady state, not the start
            _call(f"{base}/hwsim/api/simulate?seed=0&suggest=0", {"loader_workers": 99})
            out = {
                "clients": clients,
                "cpu_count": os.cpu_count(),
                "first round (every scenario new)": run_round(base, clients, values),
                "second round (the same scenarios again)": run_round(base, clients, values),
            }
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
    return out


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    print(json.dumps(main(*args), indent=2))
