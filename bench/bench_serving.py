#!/usr/bin/env python3
"""Serving benchmark: omnibus serve against llama.cpp's llama-server.

Workload "shared-system-prompt chat": every request carries the same
~1,000-token system prompt and a short, varied user turn, and streams its
answer from /v1/chat/completions. Requests arrive open loop as a Poisson
process at each offered rate. Per rate it reports TTFT, TPOT, throughput and
goodput (requests/s within the TTFT and TPOT objectives), then the TTFT of a
cached against a never-seen system prompt on an idle server. The script
starts each server itself on a free port and stops it afterwards.

Not a test: it never fails on slow numbers. See bench/README.md.
"""

import argparse
from concurrent.futures import ThreadPoolExecutor
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from serving import report, stats, workload  # noqa: E402
from serving.client import Endpoint, poisson_arrivals, run_open_loop, stream_chat  # noqa: E402
from serving.servers import (ServerProcess, find_llama_server, free_port,  # noqa: E402
                             llama_command, omnibus_command)

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WARMUP_TURN = "Say hello to a new employee in one sentence."


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", choices=["omnibus", "llama", "both"], default="both")
    p.add_argument("--url", help="benchmark an already running OpenAI-compatible server instead "
                   "of starting one (label 'external')")
    p.add_argument("-m", "--model", default=os.path.join(REPO, "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    p.add_argument("-t", "--threads", type=int, default=2, help="threads for every server")
    p.add_argument("--omnibus-bin", default=os.path.join(REPO, "build/src/cli/omnibus"))
    p.add_argument("--omnibus-args", default="", help="extra flags for omnibus serve (one string)")
    p.add_argument("--llama-bin", help="llama-server binary (default: bench/build_llama_server.sh's output)")
    p.add_argument("--llama-args", default="-fa off",
                   help="extra flags for llama-server (one string); flash attention is off by default "
                        "because it halved llama-server's decode speed here (bench/README.md)")
    p.add_argument("--llama-np", default="1,2,4", help="llama-server -np settings to try; the best counts")
    p.add_argument("--llama-slot-ctx", type=int, default=2048,
                   help="context per llama-server slot; -c = np * this")
    p.add_argument("--rates", default="1,2,4,8", help="offered request rates, requests/s")
    p.add_argument("--requests", type=int, default=20, help="requests per rate")
    p.add_argument("--duration", type=float, help="seconds of arrivals per rate (replaces --requests)")
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--temperature", type=float, default=0.0)
    p.add_argument("--ignore-eos", action="store_true", help="send ignore_eos: true (a llama.cpp/vLLM extension)")
    p.add_argument("--system-tokens", type=int, default=1000, help="system prompt length in tokens")
    p.add_argument("--seed", type=int, default=0, help="seeds arrivals and user turns")
    p.add_argument("--slo-ttft-ms", type=float, default=2000.0)
    p.add_argument("--slo-tpot-ms", type=float, default=150.0)
    p.add_argument("--cached-reps", type=int, default=5, help="requests each for cached/uncached TTFT (0: skip)")
    p.add_argument("--request-timeout", type=float, default=300.0, help="socket timeout per request, s")
    p.add_argument("--out", help="JSON path (default bench/results/serving-<timestamp>.json)")
    args = p.parse_args(argv)
    args.rate_list = [float(x) for x in args.rates.split(",") if x.strip()]
    args.np_list = [int(x) for x in args.llama_np.split(",") if x.strip()]
    if any(r <= 0 for r in args.rate_list) or any(n <= 0 for n in args.np_list):
        p.error("rates and -np settings must be positive")
    return args


class Prompts:
    """The shared system prompt and the fresh ones, built once with the first
    tokenizer reachable so every server gets identical text."""

    def __init__(self, args):
        self.args = args
        self.shared = None
        self.fresh = []
        self.counted_by = None

    def ensure(self, endpoint: Endpoint):
        if self.shared is not None:
            return
        count, self.counted_by = self._counter(endpoint)
        a = self.args
        self.shared = workload.build_system_prompt(0, a.system_tokens, count, seed=a.seed)
        self.fresh = [workload.build_system_prompt(v, a.system_tokens, count, seed=a.seed)
                      for v in range(1, a.cached_reps + 1)]
        print(f"system prompt: {self.shared[1]} tokens (counted by {self.counted_by}); "
              f"fresh prompts: {[n for _, n in self.fresh]}", flush=True)

    def _counter(self, endpoint: Endpoint):
        if endpoint.tokenize("hello world") is not None:
            return (lambda text: endpoint.tokenize(text)), "server /tokenize"
        try:
            from llama_cpp import Llama
            vocab = Llama(model_path=self.args.model, vocab_only=True, verbose=False)
            return (lambda text: len(vocab.tokenize(text.encode(), add_bos=False))), "llama_cpp vocab"
        except Exception:  # noqa: BLE001 - any failure here means: no local tokenizer
            return workload.estimate_tokens, "estimate (chars / 5.2)"


def server_specs(args):
    """(target, label, command or None, log name, warm-up requests) for every
    server to run. llama-server caches a prompt per slot, so each of its -np
    slots is warmed with the system prompt (as on a server that has been up
    a while); omnibus's prefix cache is shared, so one request warms it."""
    specs = []
    if args.url:
        return [("external", f"external {args.url}", None, None, 1)]
    if args.target in ("omnibus", "both"):
        specs.append(("omnibus", "omnibus serve", lambda port: omnibus_command(
            args.omnibus_bin, args.model, args.threads, port, args.omnibus_args), "omnibus", 1))
    if args.target in ("llama", "both"):
        binary = find_llama_server(args.llama_bin)
        if not binary:
            sys.exit("llama-server not found: run bench/build_llama_server.sh or pass --llama-bin")
        for n_parallel in args.np_list:
            specs.append(("llama", f"llama-server -np {n_parallel}",
                          lambda port, n=n_parallel, b=binary: llama_command(
                              b, args.model, args.threads, port, n, args.llama_slot_ctx, args.llama_args),
                          f"llama-np{n_parallel}", n_parallel))
    return specs


def request_extra(args):
    return {"ignore_eos": True} if args.ignore_eos else {}


def ask(endpoint: Endpoint, model: str, system_text: str, turn: str, max_tokens: int, args):
    """One streamed chat request: the system prompt, then one user turn."""
    return stream_chat(endpoint, model, workload.chat_messages(system_text, turn), max_tokens,
                       args.temperature, args.request_timeout, request_extra(args))


def measure_cached(endpoint: Endpoint, model: str, prompts: Prompts, args):
    """Median TTFT of a cached vs never-seen system prompt, sequential on an
    idle server. Each pair shares a user turn that differs from the others,
    so only the system prompt can come from the cache."""
    turns = workload.user_turns(args.cached_reps, seed=args.seed + 99991)
    shared_text = prompts.shared[0]
    ask(endpoint, model, shared_text, WARMUP_TURN, 4, args)
    errors = []

    def ttfts(pairs):
        out = []
        for system_text, turn in pairs:
            r = ask(endpoint, model, system_text, turn, 4, args)
            if r.ok:
                out.append(r.ttft_s)
            else:
                errors.append(r.error)
        return out

    cached = ttfts((shared_text, turn) for turn in turns)
    uncached = ttfts((text, turn) for (text, _), turn in zip(prompts.fresh, turns))
    if not cached or not uncached:
        return {"error": "; ".join(errors[:3]) or "no requests", "cached_s": cached, "uncached_s": uncached}
    c, u = stats.median(cached), stats.median(uncached)
    return {"cached_ms": 1000 * c, "uncached_ms": 1000 * u, "ratio": c / u,
            "prompt_tokens": prompts.shared[1], "fresh_prompt_tokens": [n for _, n in prompts.fresh],
            "cached_s": cached, "uncached_s": uncached, "errors": errors}


def rate_seed(seed: int, rate: float) -> int:
    """Arrivals and turns depend on the rate, not its place in --rates, so a
    rate measured in two runs sees the same requests."""
    return seed * 1_000_003 + round(rate * 1000)


def run_rates(endpoint: Endpoint, model: str, prompts: Prompts, args, label: str):
    shared_text = prompts.shared[0]
    per_rate = []
    for i, rate in enumerate(args.rate_list):
        arrivals = poisson_arrivals(rate, None if args.duration else args.requests,
                                    args.duration, seed=rate_seed(args.seed, rate))
        turns = workload.user_turns(len(arrivals), seed=rate_seed(args.seed, rate) + 500)
        print(f"  [{label}] rate {rate:g}/s: {len(arrivals)} requests over "
              f"{arrivals[-1] if arrivals else 0:.0f} s ...", flush=True)
        results, wall = run_open_loop(
            endpoint, model, arrivals, lambda turn: workload.chat_messages(shared_text, turn), turns,
            args.max_tokens, args.temperature, args.request_timeout, request_extra(args))
        summary = stats.summarize(results, wall, args.slo_ttft_ms / 1000, args.slo_tpot_ms / 1000)
        per_rate.append({"rate": rate, "summary": summary, "requests": [r.to_json() for r in results]})
        s = summary
        print(f"    done {s['completed']}/{s['requests']} in {wall:.0f} s, TTFT p50 "
              f"{report._f(s['ttft_ms']['p50'])} ms, goodput {s['goodput']:.2f}/s", flush=True)
    return per_rate


def run_one(spec, args, prompts: Prompts, stamp: str):
    target, label, make_cmd, log_name, warm_requests = spec
    run = {"target": target, "label": label}
    server = None
    try:
        if make_cmd is None:
            endpoint = Endpoint(args.url)
        else:
            port = free_port()
            run["command"] = make_cmd(port)
            log_path = os.path.join(REPO, "bench/results", f"serving-{stamp}-{log_name}.log")
            run["log"] = log_path
            print(f"starting {label}: {' '.join(run['command'])}", flush=True)
            server = ServerProcess(label, run["command"], port, log_path)
            server.start()
            endpoint = server.endpoint
        model = endpoint.model_id()
        prompts.ensure(endpoint)
        run["model_id"] = model
        run["system_prompt_tokens_here"] = endpoint.tokenize(prompts.shared[0])
        with ThreadPoolExecutor(max_workers=warm_requests) as pool:
            warm = list(pool.map(lambda _: ask(endpoint, model, prompts.shared[0], WARMUP_TURN,
                                               args.max_tokens, args), range(warm_requests)))
        failed = [w for w in warm if not w.ok]
        if failed:
            raise RuntimeError(f"warm-up request failed: {failed[0].error}")
        run["rates"] = run_rates(endpoint, model, prompts, args, label)
        if args.cached_reps > 0:
            run["cached_prefix"] = measure_cached(endpoint, model, prompts, args)
    except (RuntimeError, OSError) as exc:
        run["error"] = str(exc)
        print(f"{label}: FAILED: {exc}", flush=True)
    finally:
        if server is not None:
            server.stop()
    return run


def main():
    args = parse_args()
    stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S")
    os.makedirs(os.path.join(REPO, "bench/results"), exist_ok=True)
    out_path = args.out or os.path.join(REPO, "bench/results", f"serving-{stamp}.json")
    specs = server_specs(args)
    per_setting = sum(args.duration or args.requests / r for r in args.rate_list)
    print(f"{len(specs)} server setting(s) x ~{per_setting:.0f} s of arrivals each "
          f"(plus drain, start-up and cached-prefix checks)", flush=True)
    machine = report.machine_info(args.threads)
    if machine["loadavg_start"][0] > 0.5:
        print(f"warning: load average {machine['loadavg_start'][0]:.2f} at start; numbers will be noisy",
              flush=True)
    prompts = Prompts(args)
    doc = {"settings": {k: v for k, v in vars(args).items()}, "machine": machine, "runs": []}
    for spec in specs:
        doc["runs"].append(run_one(spec, args, prompts, stamp))
        doc["workload"] = {"system_prompt": prompts.shared, "counted_by": prompts.counted_by,
                           "fresh_prompt_tokens": [n for _, n in prompts.fresh]}
        doc["machine"]["loadavg_end"] = os.getloadavg()
        with open(out_path, "w") as f:  # after every server, so a crash keeps what was measured
            json.dump(doc, f, indent=1)
    print()
    print(f"machine: {machine['cpu_model']}, {machine['logical_cores']} logical cores, "
          f"{args.threads} threads per server; SLO TTFT <= {args.slo_ttft_ms:g} ms, "
          f"TPOT <= {args.slo_tpot_ms:g} ms; times in ms, goodput in req/s")
    for run in doc["runs"]:
        if run.get("error"):
            print(f"== {run['label']}: FAILED: {run['error']}")
            continue
        print(report.rate_table(run["label"], run["rates"]))
        print(report.cached_line(run["label"], run.get("cached_prefix")))
        print()
    for line in report.goodput_ratio_lines(doc["runs"], args.rate_list):
        print(line)
    print(f"results: {out_path}")


if __name__ == "__main__":
    main()
