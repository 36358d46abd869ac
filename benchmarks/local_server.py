"""A real Jupyter server on a free local port, as the REST benchmarks start it: the command line and its
environment (a temporary root and runtime folder, a fixed token)."""

from __future__ import annotations

import os
import socket
import sys

TOKEN = "hwsim-bench-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def command(port: int, root: str, app: str = "server") -> tuple[list[str], dict]:
    """(argv, env) of `jupyter server` (or `jupyter lab`) on 127.0.0.1:port serving the folder root."""
    cmd = [
        os.path.join(os.path.dirname(sys.executable), f"jupyter-{app}"),
        "--ip=127.0.0.1",
        f"--port={port}",
        "--no-browser",
        "--allow-root",
        f"--IdentityProvider.token={TOKEN}",
        f"--ServerApp.root_dir={root}",
    ]
    return cmd, {**os.environ, "JUPYTER_RUNTIME_DIR": os.path.join(root, "runtime")}
