#!/usr/bin/env python3
"""A soak: many users for a long time, careless and hostile ones among them.

Starts `omnibus serve` (default configuration, the default model) unless
--url points at a running server, then runs --users client threads for
--minutes. Each user loops over requests of mixed kinds:

  * completions and chat, streaming and not, prompts of ~5 to ~600 tokens,
    max_tokens 4..96 (most of the traffic);
  * cancelled (--cancel-share, default 10%): a stream read for a few chunks,
    then the socket closed;
  * malformed (--bad-share, default 5%): broken JSON, wrong field types,
    unknown routes, a body cut short, garbage bytes, an oversized field.

Every request must end in exactly one way: completed (200 with a
finish_reason; [DONE] for streams), rejected with a clear error (a 4xx/5xx
with an OpenAI error body), or cancelled by the client. Anything else (a
reset without an answer, a timeout, a 200 without a finish) is LOST and
makes the run fail. Every --sample seconds it records the server's RSS,
thread count, open descriptors and /metrics counters; after the warm-up
(--warmup-minutes) RSS and threads must stay flat (RSS within
--rss-slack-mib of its post-warm-up minimum).

Prints the outcome counts, the RSS/threads curve (one row a minute) and a
verdict; writes JSON under bench/results/. Not a test (an hour by
default); see bench/README.md.

  python3 bench/soak.py [--minutes 60] [--users 12]
"""

import argparse
import datetime
import http.client
import json
import os
import random
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from serving.servers import ServerProcess, free_port, omnibus_command  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("the a river engine garden signal market winter theory sample network memory quickly because "
         "although during between across library station harbor museum method result figure").split()

MALFORMED = [
    ("POST", "/v1/completions", b'{"prompt": "hi", "max_tokens": ', "truncated JSON"),
    ("POST", "/v1/completions", b'{"prompt": 5}', "wrong type"),
    ("POST", "/v1/chat/completions", b'{"messages": "hello"}', "wrong type"),
    ("POST", "/v1/chat/completions", b'{"messages": [{"role": "wizard", "content": "x"}]}', "bad role"),
    ("POST", "/v1/completions", b'{"prompt": "hi", "max_tokens": -3}', "out of range"),
    ("POST", "/v1/completions", b'{"prompt": "hi", "temperature": "hot"}', "wrong type"),
    ("POST", "/v1/completions", b'{"prompt": [99999999]}', "token id out of range"),
    ("GET", "/v1/nothing/here", None, "unknown route"),
    ("DELETE", "/v1/completions", None, "wrong method"),
    ("POST", "/v1/completions", b'{"prompt": "' + b"x" * 200000 + b'"', "long and unterminated"),
    ("POST", "/v1/completions", bytes(range(256)) * 4, "binary garbage"),
]


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.lost = []

    def add(self, outcome, detail=""):
        with self.lock:
            self.counts[outcome] = self.counts.get(outcome, 0) + 1
            if outcome == "LOST" and len(self.lost) < 50:
                self.lost.append(detail)


def prompt(rng):
    n = rng.choice([5, 20, 60, 150, 400, 600])
    return " ".join(rng.choice(WORDS) for _ in range(n))


def is_error_body(data):
    try:
        doc = json.loads(data)
    except ValueError:
        return False
    return isinstance(doc, dict) and isinstance(doc.get("error"), dict) and bool(doc["error"].get("message"))


def call(host, port, method, path, body, timeout):
    """(status, body bytes) of one request on a fresh connection, or
    (None, why) when no answer came."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    except (OSError, http.client.HTTPException) as e:
        return None, f"{type(e).__name__}: {e}"
    finally:
        conn.close()


def normal_request(host, port, rng, tally, timeout):
    chat = rng.random() < 0.5
    stream = rng.random() < 0.5
    body = {"max_tokens": rng.randint(4, 96), "stream": stream, "temperature": rng.choice([0, 0.7])}
    if chat:
        body["messages"] = [{"role": "user", "content": prompt(rng)}]
    else:
        body["prompt"] = prompt(rng)
    path = "/v1/chat/completions" if chat else "/v1/completions"
    status, data = call(host, port, "POST", path, json.dumps(body), timeout)
    if status is None:
        return tally.add("LOST", f"{path} stream={stream}: {data}")
    if status != 200:
        return tally.add("rejected" if is_error_body(data) else "LOST", f"{status} {data[:200]!r}")
    if stream:
        ok = b"data: [DONE]" in data and b'"finish_reason":"' in data and b'"error"' not in data
        if b'"error"' in data:
            return tally.add("rejected")  # an error event: a clear error mid-stream
    else:
        try:
            ok = all(c.get("finish_reason") for c in json.loads(data)["choices"])
        except (ValueError, KeyError, TypeError):
            ok = False
    tally.add("completed" if ok else "LOST", f"200 without a finish: {data[-300:]!r}")


def cancelled_request(host, port, rng, tally, timeout):
    body = json.dumps({"prompt": prompt(rng), "max_tokens": 200, "stream": True,
                       "logit_bias": {"0": -100, "2": -100}}).encode()
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            got = b""
            want = rng.randint(1, 4)
            while got.count(b"data: ") < want:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
    except OSError as e:
        return tally.add("LOST", f"cancel: {e}")
    if got.startswith(b"HTTP/1.1 200"):
        tally.add("cancelled")
    elif got[:12].startswith(b"HTTP/1.1 4") or got[:12].startswith(b"HTTP/1.1 5"):
        tally.add("rejected")
    else:
        tally.add("LOST", f"cancel: {got[:200]!r}")


def malformed_request(host, port, rng, tally, timeout):
    method, path, body, what = rng.choice(MALFORMED)
    cut = rng.random() < 0.2 and body is not None
    if cut:
        # Announce more than is sent, then hang up: no answer is due.
        try:
            with socket.create_connection((host, port), timeout=timeout) as s:
                s.sendall(f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body) + 100}\r\n\r\n".encode()
                          + body[:len(body) // 2])
            return tally.add("cancelled")
        except OSError as e:
            return tally.add("LOST", f"cut body: {e}")
    status, data = call(host, port, method, path, body, timeout)
    if status is None:
        return tally.add("LOST", f"malformed {what}: {data}")
    ok = 400 <= status < 600 and is_error_body(data)
    tally.add("rejected" if ok else "LOST", f"malformed {what}: {status} {data[:200]!r}")


def user(host, port, seed, args, tally, stop):
    rng = random.Random(seed)
    while not stop.is_set():
        r = rng.random()
        if r < args.cancel_share:
            cancelled_request(host, port, rng, tally, args.timeout)
        elif r < args.cancel_share + args.bad_share:
            malformed_request(host, port, rng, tally, args.timeout)
        else:
            normal_request(host, port, rng, tally, args.timeout)


def proc_sample(pid):
    rss = threads = fds = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) / 1024
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        pass
    return rss, threads, fds


def server_outcomes(host, port):
    conn = http.client.HTTPConnection(host, port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    except (OSError, http.client.HTTPException):
        return {}
    finally:
        conn.close()
    out = {}
    for line in text.splitlines():
        if line.startswith("omnibus_requests_total{"):
            out[line.split('"')[1]] = float(line.split()[-1])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", default=os.path.join(REPO, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--omnibus", default=os.path.join(REPO, "build", "src", "cli", "omnibus"))
    ap.add_argument("--url", help="a running server (its pid via --pid for RSS); default: start one")
    ap.add_argument("--pid", type=int, default=0)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--warmup-minutes", type=float, default=5)
    ap.add_argument("--users", type=int, default=12)
    ap.add_argument("--cancel-share", type=float, default=0.10)
    ap.add_argument("--bad-share", type=float, default=0.05)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--sample", type=float, default=10, help="seconds between RSS samples")
    ap.add_argument("--rss-slack-mib", type=float, default=32)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    results = os.path.join(REPO, "bench", "results")
    os.makedirs(results, exist_ok=True)
    server = None
    if args.url:
        host, port = args.url.replace("http://", "").rsplit(":", 1)
        port, pid = int(port), args.pid
    else:
        host, port = "127.0.0.1", free_port()
        server = ServerProcess("omnibus", omnibus_command(args.omnibus, args.model, args.threads, port, ""), port,
                               os.path.join(results, "soak-server.log"))
        server.start()
        pid = server.proc.pid

    tally, stop = Tally(), threading.Event()
    samples = []
    start = time.monotonic()
    users = [threading.Thread(target=user, args=(host, port, args.seed * 1000 + i, args, tally, stop), daemon=True)
             for i in range(args.users)]
    for t in users:
        t.start()
    try:
        while time.monotonic() - start < args.minutes * 60:
            time.sleep(args.sample)
            rss, threads, fds = proc_sample(pid) if pid else (0, 0, 0)
            with tally.lock:
                counts = dict(tally.counts)
            samples.append(dict(t_s=round(time.monotonic() - start, 1), rss_mib=rss, threads=threads, fds=fds,
                                counts=counts))
            print(f"{samples[-1]['t_s']:7.0f} s  RSS {rss:6.0f} MiB  threads {threads}  fds {fds}  {counts}",
                  flush=True)
    finally:
        stop.set()
        for t in users:
            t.join(timeout=args.timeout)
    final = server_outcomes(host, port)
    if server:
        server.stop()

    after = [s for s in samples if s["t_s"] >= args.warmup_minutes * 60] or samples
    rss_values = [s["rss_mib"] for s in after]
    thread_values = [s["threads"] for s in after]
    rss_flat = max(rss_values) - min(rss_values) <= args.rss_slack_mib
    threads_flat = max(thread_values) == min(thread_values)
    lost = tally.counts.get("LOST", 0)

    print()
    print("| outcome | requests |")
    print("| --- | --- |")
    for k in sorted(tally.counts):
        print(f"| {k} | {tally.counts[k]} |")
    print(f"server's /metrics at the end (sequences): {final}")
    print()
    print("| minute | RSS MiB | threads | open fds |")
    print("| --- | --- | --- | --- |")
    for minute in range(int(args.minutes) + 1):
        near = [s for s in samples if minute * 60 <= s["t_s"] < (minute + 1) * 60]
        if near:
            print(f"| {minute} | {statistics.median(s['rss_mib'] for s in near):.0f} | "
                  f"{max(s['threads'] for s in near)} | {max(s['fds'] for s in near)} |")
    verdict = lost == 0 and rss_flat and threads_flat
    print(f"after warm-up: RSS {min(rss_values):.0f}-{max(rss_values):.0f} MiB (flat: {rss_flat}), threads "
          f"{min(thread_values)}-{max(thread_values)} (flat: {threads_flat}); lost {lost}")
    for detail in tally.lost[:10]:
        print(f"  lost: {detail}")
    print("PASS" if verdict else "FAIL")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = os.path.join(results, f"soak-{stamp}.json")
    with open(out, "w") as f:
        json.dump(dict(args=vars(args), counts=tally.counts, lost=tally.lost, server_outcomes=final,
                       samples=samples, rss_flat=rss_flat, threads_flat=threads_flat, passed=verdict), f, indent=1)
    print(f"wrote {out}")
    sys.exit(0 if verdict else 1)


if __name__ == "__main__":
    main()
