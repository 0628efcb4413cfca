#!/usr/bin/env python3
"""Sliding-window layers that keep only their window: KV memory per sequence.

Starts the omnibus server twice on a model with sliding-window layers (Gemma
3 by default), once as it runs by default (window layers keep only the blocks
their window still sees) and once with --no-window-kv (every layer keeps the
whole context), sends each one long greedy request (a prompt of --prompt
tokens, then --decode tokens), and samples /metrics while it runs: the KV
bytes the sequence holds (omnibus_kv_bytes_used; both block pools) and the
blocks of each pool. The figure that matters is the memory held at the end
of the request (the largest sample: one sequence's use only grows, bar the
window pool's churn). Also checks that both servers generate the same text,
and reports each one's prefill and decode time (not a speed benchmark: the
attention work is the same both ways).

Prints a table, writes JSON under bench/results/. Not a test; see
bench/README.md.
"""

import argparse
import datetime
import json
import os
import random
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from serving.client import Endpoint  # noqa: E402
from serving.servers import ServerProcess, free_port, omnibus_command  # noqa: E402
from serving.workload import prompt_of_tokens  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def metrics(url):
    with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name in GAUGES:
            out[name] = float(value)
    return out


def prompt_text(url, tokens, seed):
    """Text of at most `tokens` tokens (counted by the server's /tokenize), close to it."""
    return prompt_of_tokens(tokens, random.Random(seed), Endpoint(url).tokenize)


def one_request(url, text, decode_tokens, sample_s):
    """Runs the request while sampling /metrics; returns (response, samples, seconds)."""
    result = {}

    def send():
        body = json.dumps({"prompt": text, "max_tokens": decode_tokens, "temperature": 0,
                           "ignore_eos": True}).encode()
        req = urllib.request.Request(url + "/v1/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=3600) as r:
                result["body"] = json.loads(r.read())
        except Exception as e:  # reported below
            result["error"] = repr(e)

    samples = []
    t0 = time.perf_counter()
    worker = threading.Thread(target=send)
    worker.start()
    while worker.is_alive():
        samples.append(metrics(url))
        worker.join(timeout=sample_s)
    seconds = time.perf_counter() - t0
    if "error" in result:
        raise SystemExit(f"the request failed: {result['error']}")
    return result["body"], samples, seconds


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-m", "--model", default=os.path.join(REPO, "models/gemma-3-270m-q4_k_m.gguf"))
    p.add_argument("--omnibus-bin", default=os.path.join(REPO, "build/src/cli/omnibus"))
    p.add_argument("-t", "--threads", type=int, default=2)
    p.add_argument("-c", "--context", type=int, default=32768)
    p.add_argument("--prompt", type=int, default=32000, help="prompt tokens")
    p.add_argument("--decode", type=int, default=64, help="generated tokens")
    p.add_argument("--kv-cache-mib", type=int, default=1024, help="pool size of both servers")
    p.add_argument("--kv-type", default="f16")
    p.add_argument("--sample-s", type=float, default=0.1, help="seconds between /metrics samples")
    p.add_argument("--out-dir", default=os.path.join(REPO, "bench/results"))
    args = p.parse_args(argv)
    os.makedirs(args.out_dir, exist_ok=True)
    common = (f"-c {args.context} --kv-cache-mib {args.kv_cache_mib} --kv-type {args.kv_type} "
              f"--no-machine-probe")
    runs = {}
    for mode, extra in (("window", ""), ("whole", " --no-window-kv")):
        port = free_port()
        log = os.path.join(args.out_dir, f"window_kv_{mode}.log")
        with ServerProcess(mode, omnibus_command(args.omnibus_bin, args.model, args.threads, port,
                                                 common + extra), port, log, startup_timeout_s=600) as server:
            url = server.endpoint.base_url
            text = prompt_text(url, args.prompt, seed=11)
            before = metrics(url)
            body, samples, seconds = one_request(url, text, args.decode, args.sample_s)
            peak = max(samples, key=lambda s: s.get("omnibus_kv_bytes_used", 0))
            runs[mode] = {"prompt_tokens": body["usage"]["prompt_tokens"],
                          "completion_tokens": body["usage"]["completion_tokens"],
                          "text": body["choices"][0]["text"], "seconds": seconds, "samples": len(samples),
                          "peak": peak, "pool": before}
            print(f"{mode}: {len(samples)} samples over {seconds:.1f} s", file=sys.stderr)

    w, h = runs["window"], runs["whole"]
    mib = 1 / 2**20
    print(f"KV memory of one {w['prompt_tokens']}+{w['completion_tokens']}-token request, {args.model}, "
          f"{args.kv_type} cache, -c {args.context}")
    print(f"{'':>26} {'window KV':>12} {'--no-window-kv':>15}")
    print(f"{'KV held at the end, MiB':>26} {w['peak']['omnibus_kv_bytes_used'] * mib:>12.1f} "
          f"{h['peak']['omnibus_kv_bytes_used'] * mib:>15.1f}")
    print(f"{'full-layer blocks held':>26} {w['peak']['omnibus_kv_blocks_used']:>12.0f} "
          f"{h['peak']['omnibus_kv_blocks_used']:>15.0f}")
    print(f"{'window blocks held':>26} {w['peak']['omnibus_kv_window_blocks_used']:>12.0f} "
          f"{h['peak']['omnibus_kv_window_blocks_used']:>15.0f}")
    print(f"{'pool: full / window blocks':>26} "
          f"{w['pool']['omnibus_kv_blocks_total']:>6.0f}/{w['pool']['omnibus_kv_window_blocks_total']:<5.0f} "
          f"{h['pool']['omnibus_kv_blocks_total']:>9.0f}/{h['pool']['omnibus_kv_window_blocks_total']:<5.0f}")
    print(f"{'request seconds':>26} {w['seconds']:>12.1f} {h['seconds']:>15.1f}")
    ratio = w['peak']['omnibus_kv_bytes_used'] / h['peak']['omnibus_kv_bytes_used']
    same = w["text"] == h["text"]
    print(f"window / whole KV memory: {ratio:.3f}; same text: {same}")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = os.path.join(args.out_dir, f"window_kv-{stamp}.json")
    with open(out, "w") as f:
        json.dump({"args": vars(args), "runs": runs, "memory_ratio": ratio, "same_text": same}, f, indent=1)
    print(f"wrote {out}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
