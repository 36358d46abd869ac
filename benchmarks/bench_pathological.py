"""A pathological request beside ten clients: a real `jupyter server` on 127.0.0.1 with its default limits.

Once its worker processes are warm, ten clients send what a dragged sidebar sends (an estimate per slider value, a
simulation every fifth value, one with its suggestion search every twentieth; every scenario new, so nothing is
answered from the cache) while GET /api/status is timed. Five seconds in, one more client sends a pathological
request that runs past the time budget (HwsimServer.timeout_s, 10 s by default). The cases:

  long       a training simulation of 100,000 steps with 1,024 loader workers (4.4 million events, about 20 s
             alone): the engine's event loop checks its budget every 4,096 events
  llm        an LLM simulation of 100,000 requests of 3,000 tokens (about 30 s alone): its decode loop checks the
             budget, but half its time or more goes to measuring the run (the gap before every token of every
             request), which does not
  unchecked  the simulation (without suggestions) of a custom ConvNeXt of 8 x 1,024 blocks, 57,000 operators
             (about 13 s alone): its 200 steps are quick; its step costs and the charts' batch curve (ten estimates
             of the model) check no budget
  estimate   the estimate of the same model (about 14 s alone, most of it the charts' batch curve); estimates of
             the catalogue's models run in the server's own thread

Measured: when the pathological request got its answer (a 504 at its budget), when the worker that held it was
freed (it stopped itself: the worker process sends a result; it was terminated: the process is gone), when the
pool was restarted and ready again (the server's log) and when the first simulation submitted after that was
answered; when an estimate queued behind the server's thread was answered; the latency of the normal requests
before, during and after, and how many got 503, 504 or no answer. The worker processes are watched with psutil
(the bytes they write: Linux). Figures only, no thresholds.

Run: python benchmarks/bench_pathological.py [long] [llm] [unchecked] [estimate]   (all by default)
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

import psutil  # the test extra
from local_server import TOKEN, command, free_port

CLIENTS = 10
BEFORE_S = 5.0  # normal load before the pathological request
AFTER_S = 6.0  # normal load after everything has recovered
MIN_S = 20.0  # the clients run at least this long
MAX_S = 150.0  # and at most this long
KINDS = ("estimate", "simulate", "simulate+suggest")
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_PIPE = {"input_bytes_per_sample": 150000, "preprocess_ms_per_sample": 1.0, "default_batch_size": 32}
_CONVNEXT = {"arch": "convnext", "patch": 4, "depths": [1024] * 8, "dims": [8] * 8, "num_classes": 10, **_PIPE}
CASES = {
    "long": (
        "simulate?seed=0",
        {"steps": 100000, "loader_workers": 1024, "prefetch_factor": 64, "batch_size": 1, "cpu_cores": 4},
    ),
    "llm": ("simulate?seed=0", {"kind": "llm", "steps": 100000, "output_tokens": 3000}),
    "unchecked": ("simulate?seed=0&suggest=0", {"workload": _CONVNEXT}),  # too big for the suggestion search
    "estimate": ("estimate", {"workload": _CONVNEXT}),
}


def _call(url: str, body: dict | None = None, timeout: float = 120.0) -> dict:
    """One request: its status (-1: no answer), start and end (time.time()), whether the cache answered, the body."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    req.add_header("Authorization", f"token {TOKEN}")
    t = time.time()
    try:
        with _HTTP.open(req, timeout=timeout) as resp:
            text = resp.read()
            code, hit = resp.status, resp.headers.get("X-Hwsim-Cache") == "hit"
    except urllib.error.HTTPError as e:
        text, code, hit = e.read(), e.code, False
    except OSError as e:  # reset, refused, timed out: no answer
        text, code, hit = str(e).encode(), -1, False
    return {"code": code, "t0": t, "t1": time.time(), "hit": hit, "text": text}


class Watch:
    """The server's log lines of jupyter_hwsim, stamped when read, and its worker processes sampled with psutil:
    per process, its CPU time and the bytes it has written (a worker writes when it sends a result)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc, self.log, self.samples = proc, [], {}  # samples: pid -> [(t, CPU s, bytes written)]
        self.server = psutil.Process(proc.pid)
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self._read, daemon=True), threading.Thread(target=self._sample)]
        for t in self.threads:
            t.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            if b"jupyter_hwsim" in line:
                self.log.append((time.time(), line.decode(errors="replace").strip()))

    def workers(self) -> list[psutil.Process]:
        """The server's worker processes (spawned by multiprocessing; not its resource tracker)."""
        out = []
        try:
            children = self.server.children()
        except psutil.Error:
            return out
        for p in children:
            try:
                if any("spawn_main" in a for a in p.cmdline()):
                    out.append(p)
            except psutil.Error:
                pass
        return out

    def _sample(self) -> None:
        while not self.done.is_set():
            t = time.time()
            for p in self.workers():
                try:
                    cpu = p.cpu_times()
                    written = p.io_counters().write_chars  # Linux: every byte written, pipes included
                except (psutil.Error, AttributeError):
                    continue
                self.samples.setdefault(p.pid, []).append((t, cpu.user + cpu.system, written))
            time.sleep(0.02)

    def first(self, text: str, after: float) -> float | None:
        return next((t for t, line in self.log if t >= after and text in line), None)

    def stop(self) -> None:
        self.done.set()
        self.threads[1].join()


def _hog(watch: Watch, t_send: float, t_budget: float) -> tuple[int | None, float | None, str]:
    """The worker that held the pathological request (it wrote nothing and used the most CPU between its start
    and its budget), and when it was freed: the first result it wrote after that, or its end."""
    lo, hi = t_send + 1.0, t_budget - 0.5
    best, best_cpu = None, 0.2  # a worker that serves writes its results; one set aside gets only idle CPU
    for pid, rows in watch.samples.items():
        inside = [r for r in rows if lo <= r[0] <= hi]
        if len(inside) < 2 or inside[0][2] != inside[-1][2] or rows[0][0] > lo:  # not one started since
            continue
        cpu = inside[-1][1] - inside[0][1]
        if cpu > best_cpu:
            best, best_cpu = pid, cpu
    if best is None:
        return None, None, ""
    rows = [r for r in watch.samples[best] if r[0] >= lo]
    for a, b in zip(rows, rows[1:]):
        if b[2] != a[2]:
            return best, b[0], "it stopped itself (the worker sent its result)"
    if best not in [p.pid for p in watch.workers()]:
        return best, rows[-1][0] + 0.02, "the worker process was terminated"
    return best, None, ""


def _q(xs: list[float]) -> dict:
    if not xs:
        return {"n": 0}
    xs = sorted(xs)
    return {
        "n": len(xs),
        "p50_ms": round(statistics.median(xs), 1),
        "p95_ms": round(xs[min(len(xs) - 1, int(0.95 * len(xs)))], 1),
        "max_ms": round(xs[-1], 1),
    }


def _phase(rows: list[dict]) -> dict:
    out = _q([(r["t1"] - r["t0"]) * 1e3 for r in rows])
    out["over 1 s"] = sum(r["t1"] - r["t0"] > 1.0 for r in rows)
    out["over 2 s"] = sum(r["t1"] - r["t0"] > 2.0 for r in rows)
    for code in sorted({r["code"] for r in rows} | {503, 504}):
        if code != 200:
            out[str(code) if code > 0 else "no answer"] = sum(r["code"] == code for r in rows)
    return out


def _recovery(watch: Watch, normal: list[dict], sent: dict, answer: dict | None) -> dict | None:
    """When each part of the server came back; None while something is still held."""
    if answer is None:
        return None
    t_send = sent["t0"]
    budget = 10.0
    try:
        budget = float(json.loads(answer["text"])["error"]["budget_s"])
    except (ValueError, KeyError, TypeError):
        pass
    t_budget = t_send + budget
    rec = {"t_send": t_send, "t_budget": t_budget, "budget_s": budget, "answer": answer}
    # an estimate of the catalogue's sent a second after it (it is then surely under way): answered at once,
    # unless the server's thread is held
    after = [
        r for r in normal if r["kind"] == "estimate" and r["t0"] > t_send + 1.0 and r["code"] == 200 and not r["hit"]
    ]
    rec["first_estimate"] = min((r["t1"] for r in after), default=None)
    pid, freed, how = _hog(watch, t_send, t_budget)
    if pid is None:  # no worker held it: the server's thread did
        if rec["first_estimate"] is None:
            return None
        rec["recovered"] = max(rec["first_estimate"], answer["t1"])
        return rec
    if freed is None:
        return None
    rec.update(hog=pid, freed=freed, how=how)
    # the pool restarted (before), or a worker process started in the slot of the one that held it (after)
    restarted = min(
        (t for t in (watch.first(x, t_send) for x in ("were restarted", "was restarted", "in its place")) if t),
        default=None,
    )
    rec["restarted"] = restarted
    if restarted is not None:
        ready = watch.first("ready after", restarted)
        if ready is None:
            return None
        sims = [r for r in normal if r["kind"].startswith("simulate") and r["t0"] >= ready and r["code"] == 200]
        if not sims:
            return None
        rec["ready"] = ready
        rec["first_pooled"] = min(r["t1"] for r in sims)
        rec["recovered"] = rec["first_pooled"]
    else:
        rec["recovered"] = freed
    rec["recovered"] = max(rec["recovered"], answer["t1"])
    return rec


def run_case(base: str, watch: Watch, name: str) -> dict:
    path, body = CASES[name]
    normal: list[dict] = []
    status: list[dict] = []
    stop = threading.Event()
    lock = threading.Lock()

    def client(i: int) -> None:
        k = 0
        while not stop.is_set():
            # a drag of its own: loader workers and CPU speed change, so every scenario is new
            s = {"loader_workers": 1 + (i * 3 + k * 7) % 48, "batch_size": 32 * (1 + i % 8), "cpu_cores": 8 + i}
            s["cpu_speed"] = round(0.5 + 0.001 * k, 3)
            kind, url = "estimate", "estimate"
            if k % 20 == 19:
                kind, url = "simulate+suggest", "simulate?seed=0&suggest=1"
            elif k % 5 == 4:
                kind, url = "simulate", "simulate?seed=0&suggest=0"
            r = _call(f"{base}/hwsim/api/{url}", s)
            r["kind"] = kind
            with lock:
                normal.append(r)
            k += 1

    def watcher() -> None:
        while not stop.is_set():
            status.append(_call(f"{base}/api/status", timeout=30))
            time.sleep(0.05)

    sent: dict = {}
    answer: list[dict] = []

    def pathological() -> None:
        sent["t0"] = time.time()
        answer.append(_call(f"{base}/hwsim/api/{path}", body, timeout=MAX_S))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)] + [threading.Thread(target=watcher)]
    t_start = time.time()
    for t in threads:
        t.start()
    time.sleep(BEFORE_S)
    bad = threading.Thread(target=pathological)
    bad.start()
    rec = None
    while time.time() - t_start < MAX_S:
        time.sleep(0.5)
        with lock:
            rec = _recovery(watch, list(normal), sent, answer[0] if answer else None)
        if rec is not None and time.time() >= max(rec["recovered"] + AFTER_S, t_start + MIN_S):
            break
    stop.set()
    for t in threads:
        t.join()
    bad.join()
    t_end = time.time()
    if rec is None:
        rec = _recovery(watch, normal, sent, answer[0] if answer else None)
    t_send = sent["t0"]
    if rec is None:
        return {"case": name, "error": "the server did not recover within the run", "log": [x[1] for x in watch.log]}
    t_budget, recovered, ans = rec["t_budget"], rec["recovered"], rec["answer"]

    def rel(t: float | None) -> float | None:
        return None if t is None else round(t - t_budget, 2)

    try:
        message = json.loads(ans["text"])["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = ans["text"][:200].decode(errors="replace")
    out: dict = {
        "case": name,
        "request": f"POST /hwsim/api/{path} {json.dumps(body)[:160]}",
        "pathological": {
            "status": ans["code"],
            "answered_s_after_its_budget": rel(ans["t1"]),
            "budget_s": rec["budget_s"],
            "message": message,
        },
    }
    if "hog" not in rec:
        out["held"] = "the server's thread (no worker process held it)"
        out["the thread free again (an estimate answered), s after the budget"] = rel(rec["first_estimate"])
    else:
        out["held"] = "a worker process"
        out["worker freed, s after the budget"] = rel(rec["freed"])
        out["how"] = rec["how"]
        out["pool restarted, s after the budget"] = rel(rec["restarted"])
        out["pool ready again, s after the budget"] = rel(rec.get("ready"))
        out["first simulation submitted after that answered, s after the budget"] = rel(rec.get("first_pooled"))
    out["recovered, s after the budget"] = rel(recovered)
    phases = {
        "before": lambda r: r["t0"] < t_send,
        "during (sent to recovered)": lambda r: t_send <= r["t0"] < recovered,
        "while it was being stopped (budget to recovered)": lambda r: t_budget <= r["t0"] < recovered,
        "after": lambda r: r["t0"] >= recovered,
    }
    out["normal requests"] = {p: _phase([r for r in normal if f(r)]) for p, f in phases.items()}
    out["normal requests by kind"] = {
        p: {kind: _phase([r for r in normal if r["kind"] == kind and f(r)]) for kind in KINDS}
        for p, f in phases.items()
    }
    out["api_status"] = {p: _phase([r for r in status if f(r)]) for p, f in phases.items()}
    out["wall_s"] = round(t_end - t_start, 1)
    out["log"] = [f"{t - t_budget:+.2f} s {line.split('] ', 1)[-1]}" for t, line in watch.log if t >= t_send]
    return out


def serve_and_run(name: str) -> dict:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as tmp:
        cmd, env = command(port, tmp)
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        watch = Watch(proc)
        try:
            for _ in range(600):  # at most ~60 s
                if _call(f"{base}/hwsim/api/catalog", timeout=2)["code"] == 200:
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError("the server did not answer /hwsim/api/catalog within 60 s")
            for _ in range(600):  # the worker processes warm: this measures the steady state, not the start
                if watch.first("ready after", 0.0) is not None:
                    break
                time.sleep(0.1)
            else:
                raise RuntimeError("the worker processes were not ready within 60 s")
            _call(f"{base}/hwsim/api/simulate?seed=0&suggest=0", {"loader_workers": 99})
            time.sleep(2)
            out = run_case(base, watch, name)
        finally:
            watch.stop()
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
    return out


def main(names: list[str]) -> list[dict]:
    return [{"cpu_count": os.cpu_count(), "load_average_before": os.getloadavg(), **serve_and_run(n)} for n in names]


if __name__ == "__main__":
    names = sys.argv[1:] or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        sys.exit(f"unknown case {unknown[0]!r}: one of {', '.join(CASES)}")
    print(json.dumps(main(names), indent=2))
