"""Fixtures for the end-to-end tests of `omnibus serve` on the real model.

The binary comes from OMNIBUS_BIN (default build/src/cli/omnibus under the
repo root), the model from OMNIBUS_MODEL (default the SmolLM2-135M Q4_1
file). Without the model the tests skip, unless OMNIBUS_REQUIRE_MODEL=1, in
which case they fail (the rule of tests/real_model.h).

Each server runs as a child process on a free port with its output in a temp
file; when a test fails, the tail of every live server's log is attached to
the report. A server that died before teardown fails the module.
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import openai
import pytest

import e2e_util as u

REPO = Path(__file__).resolve().parents[2]
REQUIRE_MODEL = os.environ.get("OMNIBUS_REQUIRE_MODEL") == "1"
READY_TIMEOUT_S = 60.0
THREADS = "2"


def _resolve(env, default):
    p = Path(os.environ.get(env, default))
    if p.is_absolute():
        return p
    return p if p.exists() else REPO / p


BIN = _resolve("OMNIBUS_BIN", "build/src/cli/omnibus")
MODEL = _resolve("OMNIBUS_MODEL", "models/SmolLM2-135M-Instruct.Q4_1.gguf")
MODEL_ID = MODEL.name[: -len(".gguf")] if MODEL.name.endswith(".gguf") else MODEL.name

_LIVE = []  # every ServerProcess not yet stopped, for failure reports
# Every server's log, in one directory a run: removed when the whole run
# passes, kept (and named at the end) when anything failed.
_LOG_DIR = Path(tempfile.mkdtemp(prefix="omnibus-serve-logs-"))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long end-to-end test (concurrency, preemption, floods)")


def pytest_sessionfinish(session, exitstatus):
    if exitstatus in (0, 5):  # passed, or nothing collected
        shutil.rmtree(_LOG_DIR, ignore_errors=True)
    else:
        print(f"\nomnibus serve logs kept in {_LOG_DIR}")


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """One `omnibus serve` child process."""

    def __init__(self, args, name):
        self.name = name
        self.args = list(args)
        self.api_key = self.args[self.args.index("--api-key") + 1] if "--api-key" in self.args else None
        self.model_id = self.args[self.args.index("--alias") + 1] if "--alias" in self.args else MODEL_ID
        self.stopped = False
        self.clean_exit = False
        fd, self.log_path = tempfile.mkstemp(prefix=f"{name}-", suffix=".log", dir=_LOG_DIR)
        os.close(fd)
        for attempt in range(3):
            self.port = _free_port()
            self.base_url = f"http://127.0.0.1:{self.port}"
            cmd = [str(BIN), "serve", "-m", str(MODEL), "-t", THREADS, "--host", "127.0.0.1",
                   "--port", str(self.port), *self.args]
            self.cmd = cmd
            with open(self.log_path, "ab") as log:
                log.write(f"$ {' '.join(cmd)}\n".encode())
                log.flush()
                self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            _LIVE.append(self)
            try:
                self._wait_ready()
                return
            except RuntimeError:
                exited = self.proc.poll() is not None
                self.stop()
                # Another process may have taken the port between the probe
                # and the bind: try a new one.
                if attempt < 2 and exited and "in use" in self.tail().lower():
                    self.stopped = False
                    continue
                raise

    def _wait_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server '{self.name}' exited with {self.proc.returncode} before it was ready:\n"
                                   f"{self.tail()}")
            try:
                if u.get(self.base_url, "/health", timeout=2).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server '{self.name}' not ready after {READY_TIMEOUT_S:.0f} s:\n{self.tail()}")

    def alive(self):
        return self.proc.poll() is None

    def tail(self, lines=40):
        try:
            with open(self.log_path, "rb") as f:
                text = f.read().decode(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def client(self, api_key=None, timeout=120):
        key = api_key if api_key is not None else (self.api_key or "sk-unused")
        return openai.OpenAI(base_url=self.base_url + "/v1", api_key=key, max_retries=0, timeout=timeout)

    def stop(self):
        """SIGTERM (then SIGKILL after 15 s). Returns whether the shutdown was
        clean: still running until now, then exit code 0 on SIGTERM."""
        if self.stopped:
            return self.clean_exit
        self.stopped = True
        if self in _LIVE:
            _LIVE.remove(self)
        was_alive = self.alive()
        killed = False
        if was_alive:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                killed = True
                self.proc.kill()
                self.proc.wait(timeout=15)
        self.clean_exit = was_alive and not killed and self.proc.returncode == 0
        return self.clean_exit


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        for s in list(_LIVE):
            state = "running" if s.alive() else f"EXITED with {s.proc.returncode}"
            report.sections.append((f"omnibus serve '{s.name}' ({state}), log tail", s.tail()))


@pytest.fixture(scope="session")
def need_model():
    if not MODEL.exists():
        if REQUIRE_MODEL:
            pytest.fail(f"the real model is required (OMNIBUS_REQUIRE_MODEL=1): {MODEL} is missing")
        pytest.skip(f"needs the real model: {MODEL} is missing")
    if not BIN.exists():
        pytest.fail(f"the omnibus binary is missing: {BIN} (set OMNIBUS_BIN)")


@pytest.fixture(scope="module")
def server_factory(need_model):
    """start(*flags, name=...) -> ServerProcess. Every server still running
    is stopped when the module ends; one that had crashed, or that does not
    exit 0 on SIGTERM within 15 s, fails the module's last test."""
    started = []

    def start(*flags, name="server"):
        s = ServerProcess(flags, name)
        started.append(s)
        return s

    yield start
    reports = []
    for s in started:
        if s.stopped:
            continue  # a test stopped it and checked the outcome itself
        was_alive = s.alive()
        if not s.stop():
            what = "died during the tests" if not was_alive else "did not exit cleanly on SIGTERM"
            reports.append(f"'{s.name}' {what} (exit code {s.proc.returncode}):\n{s.tail()}")
    if reports:
        pytest.fail("omnibus serve:\n" + "\n".join(reports))


@pytest.fixture(scope="module")
def server(server_factory):
    """The default server of a module: context 1024, everything else default."""
    return server_factory("-c", "1024", name="default")


@pytest.fixture(scope="module")
def client(server):
    return server.client()


@pytest.fixture(scope="module")
def model_id():
    return MODEL_ID
