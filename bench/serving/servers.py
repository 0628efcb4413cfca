"""Starting and stopping the servers under test, each on a free local port."""

import glob
import os
import shlex
import signal
import socket
import subprocess
import time
from typing import List, Optional

from .client import Endpoint

LLAMA_SERVER_DEFAULT = ("/tmp/llama-server-build/llama_cpp_python-0.3.36/vendor/llama.cpp/"
                        "build/bin/llama-server")


def find_llama_server(explicit: Optional[str]) -> Optional[str]:
    if explicit:
        return explicit
    if os.path.exists(LLAMA_SERVER_DEFAULT):
        return LLAMA_SERVER_DEFAULT
    hits = sorted(glob.glob("/tmp/llama-server-build/*/vendor/llama.cpp/build/bin/llama-server"))
    return hits[-1] if hits else None


def free_port() -> int:
    """A port nothing listens on right now (the OS picks it). A tiny race with
    other processes remains; start() notices when the server fails to bind."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def omnibus_command(binary: str, model: str, threads: int, port: int, extra: str) -> List[str]:
    return [binary, "serve", "-m", model, "-t", str(threads), "--host", "127.0.0.1",
            "--port", str(port)] + shlex.split(extra)


def llama_command(binary: str, model: str, threads: int, port: int, n_parallel: int,
                  slot_ctx: int, extra: str) -> List[str]:
    # llama-server splits -c evenly across its -np slots: give each slot room
    # for the ~1,000-token system prompt, the user turn and the answer.
    ctx = n_parallel * slot_ctx
    return [binary, "-m", model, "-t", str(threads), "--host", "127.0.0.1", "--port", str(port),
            "-c", str(ctx), "-np", str(n_parallel), "--cont-batching"] + shlex.split(extra)


class ServerProcess:
    """One server child process, logging to a file; use as a context manager."""

    def __init__(self, label: str, command: List[str], port: int, log_path: str,
                 startup_timeout_s: float = 180.0):
        self.label = label
        self.command = command
        self.endpoint = Endpoint(f"http://127.0.0.1:{port}")
        self.log_path = log_path
        self.startup_timeout_s = startup_timeout_s
        self.proc: Optional[subprocess.Popen] = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        log = open(self.log_path, "wb")
        # Own process group, so stop() reaches only this server and its children.
        self.proc = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.label} exited with {self.proc.returncode} before "
                                   f"/health answered; see {self.log_path}\n{self.log_tail()}")
            if self.endpoint.health_ok():
                return
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"{self.label}: /health not 200 after {self.startup_timeout_s:.0f} s; "
                           f"see {self.log_path}")

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
            self.proc.wait(timeout=15)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=15)

    def log_tail(self, lines: int = 15) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return b"".join(f.readlines()[-lines:]).decode(errors="replace")
        except OSError:
            return ""
