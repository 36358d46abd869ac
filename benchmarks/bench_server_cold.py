"""REST cold start: a real `jupyter server` on 127.0.0.1, timed from process start to the first answers.

For each run: start the server in a temporary directory with a token, poll GET /hwsim/api/catalog until it answers
(the server is ready), then time the first POST /hwsim/api/simulate of a default scenario and a second, warm one.
The first request must answer 200 within 3 s of the server being ready (it used to wait for the worker processes
to start and answer 504). Loopback only; every loop is bounded. Run: python benchmarks/bench_server_cold.py [runs] [server|lab]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from local_server import TOKEN, command, free_port

BODY = {"kind": "training"}


def _request(url: str, body: dict | None = None, timeout: float = 60.0) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="GET" if body is None else "POST")
    req.add_header("Authorization", f"token {TOKEN}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def one_run(app: str = "server") -> dict:
    port = free_port()
    base = f"http://127.0.0.1:{port}/hwsim/api"
    with tempfile.TemporaryDirectory() as tmp:
        cmd, env = command(port, tmp, app)  # as `jupyter server` / `jupyter lab`
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            ready = None
            for _ in range(600):  # at most ~60 s
                try:
                    code, _cat = _request(f"{base}/catalog", timeout=2)
                    if code == 200:
                        ready = time.perf_counter() - t0
                        break
                except (OSError, ValueError):
                    pass
                time.sleep(0.1)
            if ready is None:
                raise RuntimeError("the server did not answer /hwsim/api/catalog within 60 s")
            t = time.perf_counter()
            code1, out1 = _request(f"{base}/simulate", BODY)
            first = time.perf_counter() - t
            t = time.perf_counter()
            code2, _out2 = _request(f"{base}/simulate", BODY)
            warm = time.perf_counter() - t
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=15)
    return {
        "ready_s": ready,
        "first": (code1, first, out1.get("error", {}).get("message") if code1 != 200 else None),
        "warm": (code2, warm),
    }


def main(runs: int = 3, app: str = "server") -> None:
    for i in range(runs):
        r = one_run(app)
        code1, first, msg = r["first"]
        code2, warm = r["warm"]
        print(
            f"jupyter {app} run {i + 1}: catalog answers {r['ready_s']:.2f} s after start; first simulate {code1} in {first:.2f} s"
            f"{f' ({msg})' if msg else ''}; second {code2} in {warm:.2f} s"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3, sys.argv[2] if len(sys.argv) > 2 else "server")
