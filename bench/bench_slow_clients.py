#!/usr/bin/env python3
"""Slow and idle clients against a server's default configuration.

For each server (omnibus serve; llama-server too when it is built, as the
peer), started with its defaults on the same model: the TTFT of a normal
streaming chat request unloaded, then while N connections (default 2,000)
run each attack of issue 35:

  * trickled heads: a request line, then a header line every second, never
    a whole head (slowloris);
  * stalled bodies: a whole head announcing 1,000 bytes, then a tenth of them;
  * idle keep-alive: one whole request, then silence on the open connection.

Reports the median TTFT under each attack (a request that gets no answer
within --timeout counts as the timeout), how many of the attack's
connections the server accepted, its thread count and RSS. The bar is
issue 35's: TTFT within 200 ms of its unloaded value, threads and memory
bounded. Prints a table and writes JSON under bench/results/. Not a test;
see bench/README.md.

  python3 bench/bench_slow_clients.py [--connections 2000] [--reps 5] [--no-peer]
"""

import argparse
import datetime
import errno
import json
import os
import resource
import selectors
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from serving.client import stream_chat  # noqa: E402
from serving.servers import ServerProcess, find_llama_server, free_port, llama_command, omnibus_command  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ATTACKS = [
    ("trickled heads", b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n", b"X-Slow: 1\r\n"),
    ("stalled bodies", b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"messages\":",
     b""),
    ("idle keep-alive", b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", b""),
]


class Attack:
    """`n` connections opened without blocking; each sends `first` once
    connected, then `trickle` every `period` s. One thread drives them all."""

    def __init__(self, port, n, first, trickle, period=1.0):
        self.first, self.trickle, self.period = first, trickle, period
        self.sel = selectors.DefaultSelector()
        self.socks, self.connected = [], 0
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            err = s.connect_ex(("127.0.0.1", port))
            if err not in (0, errno.EINPROGRESS):
                s.close()
                continue
            self.socks.append(s)
            self.sel.register(s, selectors.EVENT_WRITE)
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        next_trickle = time.monotonic() + self.period
        while not self.stop_flag.is_set():
            for key, _ in self.sel.select(timeout=0.05):
                s = key.fileobj
                self.sel.unregister(s)
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    try:
                        s.send(self.first)
                        self.connected += 1
                    except OSError:
                        pass
            if self.trickle and time.monotonic() >= next_trickle:
                next_trickle += self.period
                for s in self.socks:
                    try:
                        s.send(self.trickle)
                    except OSError:
                        pass

    def close(self):
        self.stop_flag.set()
        self.thread.join()
        for s in self.socks:
            s.close()
        self.sel.close()


def ttft_ms(endpoint, model, timeout):
    res = stream_chat(endpoint, model, [{"role": "user", "content": "Name three colours."}], max_tokens=4,
                      temperature=0.0, timeout=timeout)
    return res.ttft_s * 1000 if res.ok else None


def median_ttft(endpoint, model, reps, timeout):
    got = [ttft_ms(endpoint, model, timeout) for _ in range(reps)]
    failed = sum(v is None for v in got)
    return statistics.median(timeout * 1000 if v is None else v for v in got), failed


def proc_stats(pid):
    threads = len(os.listdir(f"/proc/{pid}/task"))
    rss = 0.0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
    return threads, rss


def server_pid(server):
    """The server's own pid (the ServerProcess may be a wrapper's)."""
    return server.proc.pid


def run_server(label, command, port, args, log_dir):
    rows = []
    with ServerProcess(label, command, port, os.path.join(log_dir, f"slow-clients-{label}.log")) as server:
        endpoint = server.endpoint
        model = endpoint.model_id()
        ttft_ms(endpoint, model, args.timeout)  # warm up
        unloaded, failed = median_ttft(endpoint, model, args.reps, args.timeout)
        threads, rss = proc_stats(server_pid(server))
        rows.append(dict(server=label, attack="none", connections=0, accepted=0, ttft_ms=unloaded, failed=failed,
                         threads=threads, rss_mib=rss))
        print(f"{label}: unloaded TTFT {unloaded:.1f} ms, {threads} threads, {rss:.0f} MiB", flush=True)
        for name, first, trickle in ATTACKS:
            attack = Attack(port, args.connections, first, trickle)
            try:
                time.sleep(args.settle)
                loaded, failed = median_ttft(endpoint, model, args.reps, args.timeout)
                threads, rss = proc_stats(server_pid(server))
                accepted = attack.connected
            finally:
                attack.close()
            rows.append(dict(server=label, attack=name, connections=args.connections, accepted=accepted,
                             ttft_ms=loaded, failed=failed, threads=threads, rss_mib=rss))
            print(f"{label}: {name}: TTFT {loaded:.1f} ms ({failed} of {args.reps} without an answer in "
                  f"{args.timeout:.0f} s), {threads} threads, {rss:.0f} MiB", flush=True)
            time.sleep(args.settle)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", default=os.path.join(REPO, "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--omnibus", default=os.path.join(REPO, "build", "src", "cli", "omnibus"))
    ap.add_argument("--llama-server", default=None, help="llama-server binary (default: bench/build_llama_server.sh's)")
    ap.add_argument("--no-peer", action="store_true", help="omnibus only")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--connections", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=5, help="TTFT samples per condition (median)")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds a TTFT sample may wait")
    ap.add_argument("--settle", type=float, default=2.0, help="seconds between opening an attack and measuring")
    args = ap.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.connections + 100:
        sys.exit(f"the open-file limit ({hard}) is too low for {args.connections} connections")
    log_dir = os.path.join(REPO, "bench", "results")
    os.makedirs(log_dir, exist_ok=True)

    rows = []
    port = free_port()
    rows += run_server("omnibus", omnibus_command(args.omnibus, args.model, args.threads, port, ""), port, args,
                       log_dir)
    peer = None if args.no_peer else find_llama_server(args.llama_server)
    if peer:
        port = free_port()
        # llama-server's defaults but the context: 4 slots of 1,024 tokens.
        rows += run_server("llama-server", llama_command(peer, args.model, args.threads, port, 4, 1024, ""), port,
                           args, log_dir)
    elif not args.no_peer:
        print("llama-server not found (bench/build_llama_server.sh builds it): omnibus only")

    base = {r["server"]: r["ttft_ms"] for r in rows if r["attack"] == "none"}
    print()
    print(f"| server | attack ({args.connections} connections) | accepted | TTFT ms (median of {args.reps}) "
          f"| vs unloaded | no answer | threads | RSS MiB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        delta = r["ttft_ms"] - base[r["server"]]
        print(f"| {r['server']} | {r['attack']} | {r['accepted']} | {r['ttft_ms']:.1f} | "
              f"{'' if r['attack'] == 'none' else f'{delta:+.1f}'} | {r['failed']} | {r['threads']} | "
              f"{r['rss_mib']:.0f} |")
    for name, _, _ in ATTACKS:
        ours = [r for r in rows if r["server"] == "omnibus" and r["attack"] == name]
        theirs = [r for r in rows if r["server"] == "llama-server" and r["attack"] == name]
        if ours and theirs:
            print(f"{name}: TTFT omnibus / llama-server = {ours[0]['ttft_ms'] / theirs[0]['ttft_ms']:.3f}")
    print("limit: issue 35's bar, TTFT within 200 ms of unloaded with threads and RSS flat")

    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = os.path.join(log_dir, f"slow_clients-{stamp}.json")
    with open(out, "w") as f:
        json.dump(dict(args=vars(args), rows=rows, cpu=os.uname().machine), f, indent=1)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
