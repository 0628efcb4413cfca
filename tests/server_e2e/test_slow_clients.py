"""Hostile and careless clients (issue 35): slow heads, stalled bodies and
idle keep-alive connections must not starve other users; deadlines end
slow requests; the connection cap refuses clearly; half-closed clients get
their answer; log lines cannot be forged; the API key is checked first.

Each attack uses a bounded number of connections (ATTACK_CONNECTIONS); the
2,000-connection figures come from bench/bench_slow_clients.py.
"""
import http.client
import json
import os
import socket
import statistics
import threading
import time

import e2e_util as u

ATTACK_CONNECTIONS = 300


class SlowClients:
    """`n` connections driven from one thread: each sends `first` once,
    then `trickle` every `period` seconds (nothing if empty)."""

    def __init__(self, base_url, n, first, trickle=b"", period=1.0):
        host, port = u.host_port(base_url)
        self.socks = []
        for _ in range(n):
            s = socket.create_connection((host, port), timeout=10)
            s.sendall(first)
            s.setblocking(False)
            self.socks.append(s)
        self.trickle, self.period = trickle, period
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stopped.wait(self.period):
            if not self.trickle:
                continue
            for s in self.socks:
                try:
                    s.send(self.trickle)
                except OSError:
                    pass

    def answers(self, timeout=10):
        """What each connection received until the server closed it."""
        out = []
        deadline = time.monotonic() + timeout
        for s in self.socks:
            s.setblocking(True)
            got = b""
            while True:
                s.settimeout(max(0.05, deadline - time.monotonic()))
                try:
                    chunk = s.recv(65536)
                except (socket.timeout, OSError):
                    break
                if not chunk:
                    break
                got += chunk
            out.append(got)
        return out

    def close(self):
        self.stopped.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def stream_ttft_ms(base_url):
    """Arrival to the first content chunk of a streaming completion."""
    host, port = u.host_port(base_url)
    conn = http.client.HTTPConnection(host, port, timeout=30)
    body = json.dumps({"prompt": "The capital of France is", "max_tokens": 4, "stream": True,
                       "logit_bias": u.NO_EOS})
    start = time.perf_counter()
    conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    assert resp.status == 200
    ttft = None
    for line in resp:
        if ttft is None and line.startswith(b"data: {"):
            ttft = (time.perf_counter() - start) * 1000
        if line.startswith(b"data: [DONE]"):
            break
    conn.close()
    assert ttft is not None
    return ttft


def median_ttft(base_url, n=5):
    return statistics.median(stream_ttft_ms(base_url) for _ in range(n))


def thread_count(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0


ATTACKS = {
    # A request line, then one header line a second: never a whole head.
    "trickled heads": dict(first=b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n", trickle=b"X-Slow: 1\r\n"),
    # A whole head, then a body that stops a tenth of the way in.
    "stalled bodies": dict(first=b"POST /v1/completions HTTP/1.1\r\nContent-Length: 1000\r\n\r\n{\"prompt\":"),
    # One whole request, then nothing: the connection idles on keep-alive.
    "idle keep-alive": dict(first=b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"),
}


def test_slow_and_idle_connections_do_not_starve_others(server_factory):
    s = server_factory("-c", "1024", name="default-config")
    pid = s.proc.pid
    stream_ttft_ms(s.base_url)  # warm up
    unloaded = median_ttft(s.base_url)
    threads_before = thread_count(pid)
    rss_before = rss_mib(pid)
    for name, attack in ATTACKS.items():
        clients = SlowClients(s.base_url, ATTACK_CONNECTIONS, **attack)
        try:
            time.sleep(0.5)
            loaded = median_ttft(s.base_url)
            threads = thread_count(pid)
            rss = rss_mib(pid)
        finally:
            clients.close()
        print(f"{name}: TTFT {unloaded:.1f} -> {loaded:.1f} ms with {ATTACK_CONNECTIONS} connections; "
              f"threads {threads_before} -> {threads}; RSS {rss_before:.0f} -> {rss:.0f} MiB")
        # Not a speed test: the bar is far above the 200 ms of issue 35 (which
        # bench/bench_slow_clients.py measures), and far below the 15 s
        # timeouts a thread per connection gave.
        assert loaded < unloaded + 2000, (name, unloaded, loaded)
        assert threads <= threads_before, (name, threads_before, threads)
        assert rss < rss_before + 64, (name, rss_before, rss)
    assert u.get(s.base_url, "/health").status == 200


def test_deadlines_end_slow_requests_whatever_they_trickle(server_factory):
    s = server_factory("-c", "1024", "--http-header-timeout-s", "1", "--http-body-timeout-s", "1",
                       "--http-idle-timeout-s", "1", name="short-deadlines")
    slow = {name: SlowClients(s.base_url, 10, period=0.2, **attack) for name, attack in ATTACKS.items()}
    try:
        start = time.monotonic()
        answers = {name: c.answers(timeout=6) for name, c in slow.items()}
        elapsed = time.monotonic() - start
    finally:
        for c in slow.values():
            c.close()
    assert elapsed < 6
    for got in answers["trickled heads"] + answers["stalled bodies"]:
        assert got.startswith(b"HTTP/1.1 408 "), got[:200]
        assert b'"code":"request_timeout"' in got, got
    for got in answers["idle keep-alive"]:
        # The one answer, then the server closed the idle connection.
        assert got.startswith(b"HTTP/1.1 200 OK") and got.count(b"HTTP/1.1") == 1, got[:200]
    metrics = u.get(s.base_url, "/metrics").body.decode()
    assert "omnibus_http_request_timeouts_total 20" in metrics
    assert "omnibus_http_idle_connections_closed_total 10" in metrics


def test_connections_over_the_limit_get_a_clear_503(server_factory):
    s = server_factory("-c", "1024", "--max-connections", "40", name="capped")
    # The cap counts connections until the server sees them closed: wait
    # until the readiness probes' are gone, or one held connection would be
    # refused and one of the five over the cap let in.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        metrics = u.request(s.base_url, "GET", "/metrics", headers={"Connection": "close"}).body.decode()
        if "omnibus_http_open_connections 1\n" in metrics:  # this request's own
            break
        time.sleep(0.05)
    held = SlowClients(s.base_url, 40, first=b"")
    try:
        time.sleep(0.3)
        over = SlowClients(s.base_url, 5, first=b"")
        answers = over.answers(timeout=5)
        over.close()
        # A connection the client closed counts until the server reads the
        # close, so the probe's may still have held a place: then one held
        # connection was refused instead of one over the cap.
        answers += [got for got in held.answers(timeout=0.5) if got]
    finally:
        held.close()
    refused = [got for got in answers if got]
    assert len(refused) == 5, [got[:40] for got in answers]
    for got in refused:
        assert got.startswith(b"HTTP/1.1 503 "), got[:200]
        assert b"too many open connections" in got and b"Retry-After:" in got, got
    # Room again once they are gone.
    deadline = time.monotonic() + 5
    while u.get(s.base_url, "/health").status != 200 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert u.post(s.base_url, "/v1/completions", {"prompt": "Hi", "max_tokens": 2}).status == 200


def half_closed_request(base_url, body):
    host, port = u.host_port(base_url)
    data = json.dumps(body).encode()
    with socket.create_connection((host, port), timeout=60) as sock:
        sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
        sock.shutdown(socket.SHUT_WR)
        got = b""
        while chunk := sock.recv(65536):
            got += chunk
    return got


def test_half_closed_clients_get_their_answer(server):
    body = {"prompt": "Once upon a time", "max_tokens": 8, "logit_bias": u.NO_EOS}
    plain = half_closed_request(server.base_url, body)
    assert plain.startswith(b"HTTP/1.1 200 OK"), plain[:300]
    assert json.loads(plain.split(b"\r\n\r\n", 1)[1])["usage"]["completion_tokens"] == 8
    streamed = half_closed_request(server.base_url, dict(body, stream=True))
    assert streamed.startswith(b"HTTP/1.1 200 OK"), streamed[:300]
    assert b'"finish_reason":"length"' in streamed and b"data: [DONE]" in streamed, streamed


def test_log_lines_cannot_be_forged(server):
    forged = "omnibus: info: req-forged POST /v1/completions 200"
    path = "/nothing%0d%0a" + forged.replace(" ", "%20") + "%0a"
    resp = u.get(server.base_url, path)
    assert resp.status == 404
    u.get(server.base_url, "/health")  # a line after it
    with open(server.log_path, "rb") as f:
        lines = f.read().decode(errors="replace").splitlines()
    assert not any(line.startswith("omnibus: info: req-forged") for line in lines)
    logged = [line for line in lines if "/nothing" in line]
    assert logged and "\\x0d\\x0a" in logged[-1], logged


def test_the_api_key_is_checked_before_the_route(server_factory):
    s = server_factory("-c", "1024", "--api-key", "sekret", name="keyed")
    for method, path in [("DELETE", "/v1/completions"), ("GET", "/v1/chat/completions"), ("GET", "/no/such/route"),
                         ("PUT", "/metrics"), ("POST", "/v1/models")]:
        resp = u.request(s.base_url, method, path)
        assert u.assert_openai_error(resp, 401)["code"] == "invalid_api_key", (method, path, resp)
    assert u.get(s.base_url, "/health").status == 200
    key = {"Authorization": "Bearer sekret"}
    assert u.request(s.base_url, "DELETE", "/v1/completions", headers=key).status == 405
    assert u.get(s.base_url, "/no/such/route", headers=key).status == 404
