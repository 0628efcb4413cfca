"""Child processes for comparing load generators (bench/compare_with_aiperf.py):
running a tool with its output logged while sampling CPU use, the server under
test as a context manager, the CPU bookkeeping from /proc, and small HTTP
helpers. Linux only (/proc)."""

import json
import os
import shlex
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

SAMPLE_INTERVAL_S = 0.5  # how often the load generators' and the server's CPU use is read
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
OTHER_LOAD_WARN_CORES = 0.25  # other processes' CPU use during a measurement worth a note


class ToolError(RuntimeError):
    """A step failed; the message says what and where to look."""


live_processes = []  # child processes to kill if we leave early


def kill_group(proc, first_signal=signal.SIGINT, wait_s=15.0):
    """Stops `proc` and everything in its process group (it was started in its own session)."""
    if proc.poll() is not None:
        try:  # the leader is gone; stop anything it left behind in its group
            os.killpg(proc.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        return
    for sig, wait in ((first_signal, wait_s), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def interrupt_on_sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def run_logged(cmd, log_path, timeout_s, env=None, what="command", server_pid=None):
    """Runs cmd with stdout+stderr to log_path, sampling CPU use as it goes.

    Returns a list of (wall time s, CPU s of cmd's process group, CPU s of the server,
    busy CPU s of the whole machine) samples, taken every SAMPLE_INTERVAL_S from start to exit.
    """
    with open(log_path, "wb") as log:
        log.write(("$ " + shlex.join(str(c) for c in cmd) + "\n").encode())
        log.flush()
        proc = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    live_processes.append(proc)
    samples = []
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            samples.append((time.time(), group_cpu_seconds(proc.pid), process_cpu_seconds(server_pid),
                            machine_busy_seconds()))
            try:
                proc.wait(timeout=SAMPLE_INTERVAL_S)
                break
            except subprocess.TimeoutExpired:
                if time.monotonic() > deadline:
                    kill_group(proc)
                    raise ToolError(f"{what} ran past {timeout_s:.0f} s and was stopped; log: {log_path}\n"
                                    f"{tail(log_path)}")
        # The tool's group is gone now; the server's and the machine's figures still count.
        samples.append((time.time(), None, process_cpu_seconds(server_pid), machine_busy_seconds()))
    finally:
        kill_group(proc)  # no-op once it has exited; reaches leftovers in its group otherwise
        live_processes.remove(proc)
    if proc.returncode != 0:
        raise ToolError(f"{what} exited with {proc.returncode}; log: {log_path}\n{tail(log_path)}")
    return samples


def wait_for_quiet(max_wait_s, server_pid, window_s=2.0):
    """Waits (up to max_wait_s) until other processes use under OTHER_LOAD_WARN_CORES cores
    over window_s. Returns (seconds waited, their load over the last window in cores)."""
    t0 = time.monotonic()
    while True:
        busy0, server0 = machine_busy_seconds(), process_cpu_seconds(server_pid)
        time.sleep(window_s)
        busy1, server1 = machine_busy_seconds(), process_cpu_seconds(server_pid)
        if None in (busy0, busy1, server0, server1):
            return time.monotonic() - t0, None
        other = max(0.0, (busy1 - busy0) - (server1 - server0)) / window_s
        waited = time.monotonic() - t0
        if other < OTHER_LOAD_WARN_CORES or waited >= max_wait_s:
            return waited, other


def cpu_in_window(samples, column, t0, t1):
    """CPU seconds used between wall times t0 and t1, interpolated from the samples."""
    points = [(s[0], s[column]) for s in samples if s[column] is not None]
    if len(points) < 2:
        return None

    def at(t):
        if t <= points[0][0]:
            return points[0][1]
        for (ta, ca), (tb, cb) in zip(points, points[1:]):
            if t <= tb:
                return ca + (cb - ca) * (t - ta) / (tb - ta) if tb > ta else cb
        return points[-1][1]

    return at(t1) - at(t0)


def cpu_report(samples, t0, t1):
    """Cores used by the load generator, the server and everything else while requests were measured."""
    seconds = t1 - t0
    if seconds <= 0:
        return {}
    tool, server, busy = (cpu_in_window(samples, column, t0, t1) for column in (1, 2, 3))
    other = None if None in (tool, server, busy) else max(0.0, busy - tool - server)
    return {"window_s": seconds,
            "load_generator_cores": None if tool is None else tool / seconds,
            "server_cores": None if server is None else server / seconds,
            "other_processes_cores": None if other is None else other / seconds}


def tail(path, lines=25):
    try:
        data = Path(path).read_bytes().decode(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join("    " + line for line in data[-lines:])


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get_status(url, timeout=2.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except (urllib.error.URLError, OSError):
        return None


def http_post_json(url, body, timeout=10.0):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def _stat_fields(pid):
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def process_cpu_seconds(pid):
    """utime + stime of a running process (Linux), or None."""
    if pid is None:
        return None
    try:
        fields = _stat_fields(pid)
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, IndexError, ValueError):
        return None


def machine_busy_seconds():
    """CPU seconds all cores have spent busy since boot (/proc/stat), or None."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
        return (user + nice + system + irq + softirq + steal) / CLOCK_TICKS
    except (OSError, ValueError):
        return None


def group_cpu_seconds(pgid):
    """utime + stime of the live processes in process group pgid, plus what their
    reaped children used (so a tool's finished helper processes still count)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = _stat_fields(entry)
            if int(fields[2]) == pgid:
                total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        except (OSError, IndexError, ValueError):
            continue
    return total / CLOCK_TICKS


class Server:
    """`omnibus serve` in its own process group, logging to a file; a context manager."""

    def __init__(self, cmd, port, log_path, startup_timeout_s):
        self.cmd, self.port, self.log_path = cmd, port, log_path
        self.startup_timeout_s = startup_timeout_s
        self.url = f"http://127.0.0.1:{port}"
        self.proc = None

    def __enter__(self):
        with open(self.log_path, "wb") as log:
            log.write(("$ " + shlex.join(self.cmd) + "\n").encode())
            log.flush()
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        live_processes.append(self.proc)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ToolError(f"omnibus serve exited with {self.proc.returncode} before /health "
                                f"answered; log: {self.log_path}\n{tail(self.log_path)}")
            if http_get_status(self.url + "/health") == 200:
                return self
            time.sleep(0.25)
        raise ToolError(f"omnibus serve: GET /health not 200 after {self.startup_timeout_s:.0f} s; "
                        f"log: {self.log_path}\n{tail(self.log_path)}")

    def __exit__(self, *exc):
        if self.proc is not None:
            kill_group(self.proc, signal.SIGINT, wait_s=35.0)  # it drains running requests first
            if self.proc in live_processes:
                live_processes.remove(self.proc)

    def model_id(self):
        with urllib.request.urlopen(self.url + "/v1/models", timeout=10) as r:
            data = json.loads(r.read()).get("data") or []
        if not data:
            raise ToolError(f"{self.url}/v1/models lists no model")
        return data[0]["id"]
