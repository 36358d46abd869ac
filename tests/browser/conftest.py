"""Headless-browser test harness for JupyterLab (Playwright sync API + the system Chromium).

Setup (as root; CI repeats exactly this)::

    apt-get update && apt-get install -y chromium fonts-dejavu-core
    python -m pip install playwright jupyterlab ipywidgets altair nbformat ipykernel

Only the *Python package* ``playwright`` is needed: never run ``playwright install``; the
browser is Debian's ``chromium`` found on PATH. If it or playwright is missing the browser
tests fail (they are not skipped) with a message saying what to install.

Fixtures
    ``lab_server``      (session) a real ``python -m jupyter lab`` on 127.0.0.1 with an isolated
                        config/data/runtime/settings/workspaces dir and a temp ``root_dir``;
                        yields a :class:`LabServer` (``url``, ``token``, ``root_dir``, ``log_path``).
    ``chromium_browser`` (module) the launched Playwright ``Browser`` (module scope: see below).
    ``browser_page``    (function) a fresh context + ``Page`` (1400x1000) for the lab; requests
                        to anything but loopback are aborted; console messages, page errors and
                        (on failure) a screenshot are written to the artifacts dir.
    ``artifacts_dir``   (session) ``tests/browser/artifacts/`` (git-ignored).
    ``open_notebook``, ``run_all``, ``save_screenshot``: the helpers below, as fixtures, because
                        a test module here cannot reliably ``import conftest`` (see below).

Helpers
    ``open_notebook(page, lab, name, cells) -> None``
    ``run_all(page, timeout=60.0) -> None``
    ``save_screenshot(page, name) -> Path``  (fixture form; module form takes ``artifacts_dir``)
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import os
import pathlib
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ARTIFACTS = HERE / "artifacts"

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
VIEWPORT = {"width": 1400, "height": 1000}

SERVER_START_TIMEOUT = 90.0  # s until GET /api/status answers
NOTEBOOK_OPEN_TIMEOUT = 60.0  # s until the notebook is shown and its kernel is idle
RUN_ALL_TIMEOUT = 60.0  # s until no cell shows [*]
DEFAULT_PW_TIMEOUT_MS = 30_000  # Playwright's default for every locator action / expect

INSTALL_HINT = (
    "install them with (as root): apt-get update && apt-get install -y chromium fonts-dejavu-core; "
    "python -m pip install playwright   (the Python package only; do NOT run `playwright install`)"
)

# Settings overrides for the lab under test (the same format as {app_settings_dir}/overrides.json).
LAB_OVERRIDES = {
    # No "Jupyter news" toast and no update check: nothing leaves the machine, no toast covers the UI.
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    # Every cell stays attached to the DOM, so cell/output selectors see all of them.
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}
# Traitlets config for the server (written as jupyter_server_config.json into a temp JUPYTER_CONFIG_DIR).
SERVER_CONFIG = {
    "ServerApp": {"terminals_enabled": False},
    "LabApp": {
        "news_url": None,
        "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate",
        "extension_manager": "readonly",
    },
}


# --------------------------------------------------------------------------------------------
# Keep `from conftest import ROOT` working in tests/*.py.
#
# tests/ has no __init__.py, so pytest imports every conftest.py as the top-level module
# "conftest" and deletes the previous sys.modules["conftest"] first. Once this file is loaded
# (tests/browser sorts before tests/test_*.py) `from conftest import ROOT` in tests/test_*.py would
# find *this* module and fail. As soon as this conftest is registered, point sys.modules["conftest"]
# back at the nearest ancestor conftest. Consequence: test modules in tests/browser must not
# `import conftest` either; they get the helpers as fixtures.
# --------------------------------------------------------------------------------------------
def pytest_plugin_registered(plugin, manager):
    if getattr(plugin, "__file__", None) is None:
        return
    if pathlib.Path(plugin.__file__).resolve() != pathlib.Path(__file__).resolve():
        return
    if sys.modules.get("conftest") is not plugin:
        return
    by_file = {}
    for other in manager.get_plugins():
        f = getattr(other, "__file__", None)
        if f and getattr(other, "__name__", None) == "conftest":
            by_file[pathlib.Path(f).resolve()] = other
    for ancestor in HERE.parents:
        parent = by_file.get(ancestor / "conftest.py")
        if parent is not None:
            sys.modules["conftest"] = parent
            return


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    # Remember each phase's report on the item so fixtures can tell whether the test failed.
    report = yield
    setattr(item, f"_harness_rep_{report.when}", report)
    return report


# --------------------------------------------------------------------------------------------
# Prerequisites
# --------------------------------------------------------------------------------------------
def _require_browser_stack():
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail(
            f"browser tests need the `chromium` executable on PATH, but it is missing; {INSTALL_HINT}", pytrace=False
        )
    problem = None
    try:
        from playwright.sync_api import sync_playwright  # noqa: F401
    except ImportError as exc:
        problem = f"browser tests need the Python package `playwright` ({exc}); {INSTALL_HINT}"
    if problem:
        pytest.fail(problem, pytrace=False)
    return chromium


@pytest.fixture(scope="session", autouse=True)
def browser_executable():
    """Path of chromium; checked first (autouse) so a missing browser fails before the lab starts."""
    return _require_browser_stack()


def _require_lab_stack():
    missing = [
        m for m in ("jupyterlab", "jupyter_server", "ipykernel", "nbformat") if importlib.util.find_spec(m) is None
    ]
    if missing:
        pytest.fail(
            f"browser tests need {', '.join(missing)} in {sys.executable}'s environment: "
            f"python -m pip install jupyterlab ipykernel nbformat ipywidgets altair",
            pytrace=False,
        )


# --------------------------------------------------------------------------------------------
# Artifacts
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def artifacts_dir() -> pathlib.Path:
    """tests/browser/artifacts/ (git-ignored): screenshots, console logs, the server log."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for stale in [*ARTIFACTS.glob("*.png"), *ARTIFACTS.glob("*.log")]:  # files of an earlier run
        with contextlib.suppress(OSError):
            stale.unlink()
    return ARTIFACTS


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "page"


def save_screenshot_to(page, artifacts_dir: pathlib.Path, name: str, *, full_page: bool = False) -> pathlib.Path:
    path = artifacts_dir / (_safe_name(name.removesuffix(".png")) + ".png")
    page.screenshot(path=str(path), full_page=full_page)
    return path


@pytest.fixture(name="save_screenshot")
def _save_screenshot_fixture(artifacts_dir):
    """save_screenshot(page, name) -> Path of artifacts/<name>.png"""

    def save_screenshot(page, name: str, *, full_page: bool = False) -> pathlib.Path:
        return save_screenshot_to(page, artifacts_dir, name, full_page=full_page)

    return save_screenshot


# --------------------------------------------------------------------------------------------
# JupyterLab server
# --------------------------------------------------------------------------------------------
# Talk to 127.0.0.1 directly, whatever *_proxy variables the environment has.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclasses.dataclass
class LabServer:
    url: str  # http://127.0.0.1:PORT (no trailing slash)
    token: str
    root_dir: pathlib.Path  # the server's contents root: notebooks go here
    log_path: pathlib.Path
    process: subprocess.Popen

    def api(self, path: str, method: str = "GET", body=None, timeout: float = 10.0):
        """Call the REST API (path like 'api/sessions'); returns the decoded JSON or None."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            f"{self.url}/{path.lstrip('/')}",
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with _HTTP.open(req, timeout=timeout) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def page_url(self, path: str, **query) -> str:
        """URL of a lab page (e.g. 'lab/tree/x.ipynb') with the token appended."""
        params = [(k, v) for k, v in query.items() if v is not None] + [("token", self.token)]
        qs = "&".join(k if v == "" else f"{k}={urllib.parse.quote(str(v))}" for k, v in params)
        return f"{self.url}/{path.lstrip('/')}?{qs}"

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no server log)"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _prepare_lab_home(base: pathlib.Path) -> dict:
    """Create an isolated Jupyter home under `base`; return the directories."""
    dirs = {
        k: base / k
        for k in ("root", "config", "data", "runtime", "lab-settings", "lab-workspaces", "app-settings", "ipython")
    }
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)

    # The lab's app settings dir normally is {sys.prefix}/share/jupyter/lab/settings (read-only
    # site config: overrides.json, page_config.json). Point LabApp.app_settings_dir at a temp copy
    # of it with our overrides merged in, so nothing is written into the environment.
    try:
        from jupyterlab.commands import get_app_dir

        default_settings = pathlib.Path(get_app_dir()) / "settings"
    except Exception:  # pragma: no cover - jupyterlab API change
        default_settings = pathlib.Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings"
    if default_settings.is_dir():
        shutil.copytree(default_settings, dirs["app-settings"], dirs_exist_ok=True)
    overrides_path = dirs["app-settings"] / "overrides.json"
    overrides = {}
    if overrides_path.is_file():
        with contextlib.suppress(ValueError):
            overrides = json.loads(overrides_path.read_text())
    for plugin, values in LAB_OVERRIDES.items():
        overrides.setdefault(plugin, {}).update(values)
    overrides_path.write_text(json.dumps(overrides, indent=2))

    config = json.loads(json.dumps(SERVER_CONFIG))
    config["LabApp"]["app_settings_dir"] = str(dirs["app-settings"])
    (dirs["config"] / "jupyter_server_config.json").write_text(json.dumps(config, indent=2))
    return dirs


def _lab_env(dirs: dict) -> dict:
    env = os.environ.copy()
    for var in ("JUPYTER_CONFIG_PATH", "JUPYTER_TOKEN", "JUPYTER_PLATFORM_DIRS"):
        env.pop(var, None)  # no extra user config dirs / tokens leak in
    env.update(
        {
            "JUPYTER_CONFIG_DIR": str(dirs["config"]),
            "JUPYTER_DATA_DIR": str(dirs["data"]),
            "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
            "JUPYTERLAB_SETTINGS_DIR": str(dirs["lab-settings"]),
            "JUPYTERLAB_WORKSPACES_DIR": str(dirs["lab-workspaces"]),
            "IPYTHONDIR": str(dirs["ipython"]),
            "JUPYTER_PREFER_ENV_PATH": "1",
            "PYTHONUNBUFFERED": "1",
            # the kernel spec says "python": make sure it is this interpreter's environment
            "PATH": os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
    )
    return env


def _wait_for_status(lab: LabServer, deadline: float) -> str | None:
    """Poll GET /api/status?token=...; return None when it answers, else the reason it never did."""
    status_url = f"{lab.url}/api/status?token={lab.token}"
    last = "no answer yet"
    while time.monotonic() < deadline:
        rc = lab.process.poll()
        if rc is not None:
            return f"jupyter lab exited with code {rc} before answering"
        try:
            with _HTTP.open(status_url, timeout=3) as resp:
                if resp.status == 200:
                    json.loads(resp.read())
                    return None
                last = f"HTTP {resp.status}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            last = repr(exc)
        time.sleep(0.25)
    return f"GET /api/status did not answer within {SERVER_START_TIMEOUT:.0f} s (last: {last})"


def _descendants(pid: int) -> list:
    try:
        import psutil
    except ImportError:
        return []
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _stop_server(lab: LabServer) -> None:
    proc = lab.process
    children = _descendants(proc.pid)  # kernels run in their own sessions: remember them by pid
    if proc.poll() is None:
        # Graceful: shuts down all kernels, then the server exits.
        with contextlib.suppress(Exception):
            lab.api("api/shutdown", method="POST", timeout=5)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
    # Anything it started that is still alive (its own process group, or kernels it failed to stop).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, 9)
    for child in children:
        with contextlib.suppress(Exception):
            if child.is_running():  # psutil checks the create time, so a reused pid is not hit
                child.kill()


def start_lab(base: pathlib.Path, log_path: pathlib.Path) -> LabServer:
    """Start a JupyterLab on 127.0.0.1 in its own home under `base` (isolated from the user's config); returns
    once /api/status answers, or fails the test with the server log's tail."""
    _require_lab_stack()
    dirs = _prepare_lab_home(base)
    env = _lab_env(dirs)
    token = secrets.token_hex(24)
    failures = []
    for attempt in range(3):  # a free port can be taken between probing and binding: retry
        port = _free_port()
        cmd = [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--ServerApp.token={token}",
            "--allow-root",
            f"--ServerApp.root_dir={dirs['root']}",
        ]
        log = open(log_path, "w" if attempt == 0 else "a")
        log.write("$ " + " ".join(cmd).replace(token, "<token>") + "\n")
        log.flush()
        proc = subprocess.Popen(
            cmd,
            cwd=dirs["root"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        lab = LabServer(
            url=f"http://127.0.0.1:{port}", token=token, root_dir=dirs["root"], log_path=log_path, process=proc
        )
        problem = _wait_for_status(lab, time.monotonic() + SERVER_START_TIMEOUT)
        if problem is None:
            return lab
        _stop_server(lab)
        failures.append(problem)
        if "address already in use" not in lab.log_tail().lower():
            break
    pytest.fail(
        f"JupyterLab did not start: {'; '.join(failures)}\n--- {log_path} (tail) ---\n{lab.log_tail()}", pytrace=False
    )


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory, artifacts_dir):
    """A running JupyterLab on 127.0.0.1 (isolated from the user's config); a LabServer."""
    lab = start_lab(tmp_path_factory.mktemp("jupyterlab"), artifacts_dir / "jupyterlab-server.log")
    try:
        yield lab
    finally:
        _stop_server(lab)


# --------------------------------------------------------------------------------------------
# Browser
# --------------------------------------------------------------------------------------------
# Module scope, not session: while a sync Playwright is started it marks an asyncio loop as running
# in the main thread, so any later test that calls asyncio.run()/run_until_complete (nbclient,
# jupyter_server tests, ...) would fail with "This event loop is already running". Stopping it
# after each browser test module keeps the rest of the suite unaffected (launch costs ~1 s).
@pytest.fixture(scope="module")
def chromium_browser(browser_executable):
    """Debian's chromium, launched headless through Playwright (one per test module)."""
    chromium = browser_executable
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    browser, problem = None, None
    try:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS, timeout=60_000)
    except Exception as exc:
        problem = f"could not launch {chromium} through Playwright: {exc}"
    if browser is None:
        pw.stop()
        pytest.fail(problem, pytrace=False)
    try:
        yield browser
    finally:
        with contextlib.suppress(Exception):
            browser.close()
        pw.stop()


def _is_loopback(url: str) -> bool:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("data", "blob", "about", "chrome", "devtools"):
        return True
    return parts.hostname in ("127.0.0.1", "localhost", "::1")


@pytest.fixture
def browser_page(request, chromium_browser, lab_server, artifacts_dir):
    """A fresh Playwright Page (1400x1000) in its own context, for the lab.

    page.harness_log (list[str]) collects console messages, page errors and blocked requests;
    it is written to artifacts/<test>-console.log, plus a screenshot if the test failed.
    """
    context = chromium_browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale="en-US")
    context.set_default_timeout(DEFAULT_PW_TIMEOUT_MS)
    context.set_default_navigation_timeout(NOTEBOOK_OPEN_TIMEOUT * 1000)
    log: list[str] = []

    def block(route):
        log.append(f"[blocked non-loopback request] {route.request.url}")
        route.abort()

    context.route(lambda url: not _is_loopback(url), block)
    page = context.new_page()
    page.on("console", lambda m: log.append(f"[console.{m.type}] {m.text}"))
    page.on("pageerror", lambda e: log.append(f"[pageerror] {e}"))
    page.harness_log = log
    try:
        yield page
    finally:
        name = _safe_name(request.node.name)
        failed = any(
            getattr(getattr(request.node, f"_harness_rep_{w}", None), "failed", False) for w in ("setup", "call")
        )
        if failed:
            with contextlib.suppress(Exception):
                save_screenshot_to(page, artifacts_dir, f"{name}-FAILED")
        with contextlib.suppress(OSError):
            (artifacts_dir / f"{name}-console.log").write_text("\n".join(log) + "\n")
        with contextlib.suppress(Exception):
            context.close()
        _shutdown_sessions(lab_server)


def _shutdown_sessions(lab: LabServer) -> None:
    """Stop every kernel session the test opened, so the next test starts fresh and nothing idles."""
    try:
        sessions = lab.api("api/sessions", timeout=5) or []
    except Exception:
        return
    for s in sessions:
        with contextlib.suppress(Exception):
            lab.api(f"api/sessions/{s['id']}", method="DELETE", timeout=10)


# --------------------------------------------------------------------------------------------
# Notebook helpers
# --------------------------------------------------------------------------------------------
# The notebook shown in the main area (hidden dock widgets carry lm-mod-hidden).
CURRENT_NOTEBOOK = "#jp-main-dock-panel .jp-NotebookPanel:not(.lm-mod-hidden)"
KERNEL_INDICATOR = ".jp-Notebook-ExecutionIndicator"  # in the notebook toolbar; data-status="idle|busy|..."

_CELLS_STATE_JS = """(sel) => {
  const panel = document.querySelector(sel);
  if (!panel) return null;
  const ind = panel.querySelector('.jp-Notebook-ExecutionIndicator');
  const cells = [...panel.querySelectorAll('.jp-Notebook .jp-Cell')].map((c) => {
    const code = c.classList.contains('jp-CodeCell');
    const prompt = code ? (c.querySelector('.jp-InputPrompt')?.textContent ?? '') : '';
    const src = (c.querySelector('.cm-content')?.textContent ?? '').trim();
    return {code, prompt: prompt.replace(/\\s+/g, ' ').trim(), empty: src.length === 0};
  });
  const stderr = [...panel.querySelectorAll('[data-mime-type="application/vnd.jupyter.stderr"]')]
    .map((e) => e.innerText.slice(-1500));
  const dialog = document.querySelector('.jp-Dialog');
  return {status: ind ? ind.dataset.status : null, cells, stderr,
          dialog: dialog ? dialog.innerText.slice(0, 500) : null};
}"""


def _cells_state(page) -> dict | None:
    return page.evaluate(_CELLS_STATE_JS, CURRENT_NOTEBOOK)


def _kernel_session_state(lab: LabServer, name: str) -> str | None:
    """execution_state of the kernel of the session for notebook `name`, from GET /api/sessions."""
    try:
        sessions = lab.api("api/sessions", timeout=5)
    except Exception:
        return None
    for s in sessions or []:
        if s.get("path") == name and s.get("kernel"):
            return s["kernel"].get("execution_state")
    return None


def write_notebook(path: pathlib.Path, cells: list[str]) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells]
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))


def open_notebook(page, lab: LabServer, name: str, cells: list[str], *, timeout: float = NOTEBOOK_OPEN_TIMEOUT) -> None:
    """Write `name` (relative to lab.root_dir) with these code cells, open it, wait for an idle kernel."""
    write_notebook(lab.root_dir / name, cells)
    # ?reset starts from an empty workspace, so only this notebook is open
    page.goto(
        lab.page_url(f"lab/tree/{urllib.parse.quote(name)}", reset=""),
        wait_until="domcontentloaded",
        timeout=timeout * 1000,
    )
    deadline = time.monotonic() + timeout
    state = None
    ui_idle_since = None
    while time.monotonic() < deadline:
        state = _cells_state(page)
        if state and state["dialog"]:
            raise AssertionError(f"a dialog appeared while opening {name}: {state['dialog']!r}")
        ui_idle = bool(state) and state["status"] == "idle" and len(state["cells"]) == len(cells)
        if ui_idle and _kernel_session_state(lab, name) == "idle":
            ui_idle_since = ui_idle_since or time.monotonic()
            if time.monotonic() - ui_idle_since >= 0.5:  # idle, and stays idle (not just between replies)
                return
        else:
            ui_idle_since = None
        time.sleep(0.25)
    raise AssertionError(
        f"notebook {name} did not open with an idle kernel within {timeout:.0f} s: "
        f"UI state={state!r}, kernel (REST)={_kernel_session_state(lab, name)!r}; page log tail: "
        f"{getattr(page, 'harness_log', [])[-10:]}\n--- server log tail ---\n{lab.log_tail(30)}"
    )


_EXEC_PROMPT = re.compile(r"^\[\s*\d+\s*\]:?$")


def run_all(page, timeout: float = RUN_ALL_TIMEOUT) -> None:
    """Run > Run All Cells in the current notebook; wait until every cell has run and none shows [*]."""
    before = _cells_state(page)
    if before is None:
        raise AssertionError("run_all: no notebook is open in the main area")
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
    # Run > Run All Cells is the command "runmenu:run-all" in JupyterLab 4.x; fall back to its label
    item = page.locator('.lm-Menu .lm-Menu-item[data-command="runmenu:run-all"]').or_(
        page.locator(
            ".lm-Menu .lm-Menu-item", has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$"))
        )
    )
    item.first.click()
    old_prompts = [c["prompt"] for c in before["cells"]]

    deadline = time.monotonic() + timeout
    quiet_since = None
    state = before
    while time.monotonic() < deadline:
        state = _cells_state(page)
        if state is None:
            raise AssertionError("run_all: the notebook disappeared from the main area")
        if state["dialog"]:
            raise AssertionError(f"run_all: a dialog appeared: {state['dialog']!r}")
        code = [(i, c) for i, c in enumerate(state["cells"]) if c["code"] and not c["empty"]]
        running = [i for i, c in code if "*" in c["prompt"]]
        pending = [
            i
            for i, c in code
            if not _EXEC_PROMPT.match(c["prompt"])
            or (i < len(old_prompts) and _EXEC_PROMPT.match(old_prompts[i]) and c["prompt"] == old_prompts[i])
        ]
        if not running and state["status"] == "idle":
            if not pending:
                return
            # idle, nothing running, yet cells never ran: execution stopped (an exception, usually)
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > 3.0:
                raise AssertionError(
                    f"run_all: execution stopped before cells {pending} ran (prompts "
                    f"{[c['prompt'] for c in state['cells']]}); stderr/tracebacks:\n" + "\n---\n".join(state["stderr"])
                )
        else:
            quiet_since = None
        time.sleep(0.2)
    raise AssertionError(
        f"run_all: cells still running/pending after {timeout:.0f} s: prompts "
        f"{[c['prompt'] for c in state['cells']]}, kernel status {state['status']!r}; stderr:\n"
        + "\n---\n".join(state["stderr"])
    )


@pytest.fixture(name="open_notebook")
def _open_notebook_fixture():
    """open_notebook(page, lab, name, cells) -> None"""
    return open_notebook


@pytest.fixture(name="run_all")
def _run_all_fixture():
    """run_all(page, timeout=60.0) -> None"""
    return run_all


@pytest.fixture(name="kernel_state")
def _kernel_state_fixture():
    """kernel_state(lab, name) -> the server's execution_state of the notebook's kernel, or None"""
    return _kernel_session_state


@pytest.fixture(scope="session")
def painted_pixels_js() -> str:
    """JS for locator.evaluate: painted pixels of a chart's canvas (or marks of an svg); 0 means blank."""
    return """(el) => {
  if (el.tagName.toLowerCase() === 'svg') return el.querySelectorAll('path, rect').length;
  const d = el.getContext('2d').getImageData(0, 0, el.width, el.height).data;
  let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
  return n;
}"""


# --------------------------------------------------------------------------------------------
# A second, fresh JupyterLab (cold start measurements)
# --------------------------------------------------------------------------------------------
@pytest.fixture
def fresh_lab_server(tmp_path_factory, artifacts_dir):
    """fresh_lab_server() -> a new, cold LabServer (stopped after the test); for cold-start measurements."""
    started = []

    def start() -> LabServer:
        lab = start_lab(tmp_path_factory.mktemp("fresh-lab"), artifacts_dir / f"fresh-lab-{len(started)}.log")
        started.append(lab)
        return lab

    yield start
    for lab in started:
        _stop_server(lab)
