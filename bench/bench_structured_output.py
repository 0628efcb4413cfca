#!/usr/bin/env python3
"""What structured output costs a server under load: N concurrent chat
requests constrained by a JSON Schema against N unconstrained ones, on
omnibus and (with --llama-server) on llama.cpp's llama-server, each engine
against itself in the same run.

Both kinds of request decode exactly --max-tokens tokens: the unconstrained
ones with ignore_eos, the constrained ones under a schema that cannot end
sooner (an array of at least --min-items strings). Throughput = completion
tokens of all N requests / wall time from the first request sent to the
last answer. Rounds alternate the two kinds (after a discarded warm-up);
medians over --reps go to a table and to
bench/results/structured_output_<timestamp>.json, with the loss
1 - constrained / unconstrained (issue 39's bar: at most 10% at N = 8).

The per-token mask times over the schema corpus come from
`omnibus grammar-bench` (--mask-models runs it for each model named) and go
in the same table: they bound what a mask can cost a decode step.

This is a benchmark, not a test: nothing fails on slow numbers. It checks
that every constrained answer parses as JSON and that each request decoded
--max-tokens tokens, and says so when not.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tool_processes import Server, ToolError, free_port  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = REPO_ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_GEMMA = REPO_ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"
DEFAULT_OMNIBUS = REPO_ROOT / "build" / "src" / "cli" / "omnibus"
RESULTS_DIR = REPO_ROOT / "bench" / "results"
PROMPT = "List the names of towns you know, as a JSON object."


def schema(min_items):
    return {"type": "object",
            "properties": {"towns": {"type": "array", "items": {"type": "string"}, "minItems": min_items}},
            "required": ["towns"], "additionalProperties": False}


def request_body(model, constrained, max_tokens, min_items, index):
    body = {"model": model, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": max_tokens,
            "temperature": 0.8, "seed": 1000 + index}
    if constrained:
        body["response_format"] = {"type": "json_schema",
                                   "json_schema": {"name": "towns", "schema": schema(min_items), "strict": True}}
    else:
        body["ignore_eos"] = True
    return body


def post(url, body, timeout_s):
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout_s) as r:
        return json.loads(r.read())


def one_round(url, model, constrained, args):
    """N requests at once; returns (tokens/s, completion tokens, problems)."""
    answers, errors = [None] * args.concurrency, []

    def run(i):
        try:
            answers[i] = post(url, request_body(model, constrained, args.max_tokens, args.min_items, i),
                              args.timeout)
        except Exception as e:  # noqa: BLE001 - reported below, the round goes on
            errors.append(f"request {i}: {e}")

    threads = [threading.Thread(target=run, args=(i,)) for i in range(args.concurrency)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - start
    tokens, problems = 0, list(errors)
    for i, a in enumerate(answers):
        if a is None:
            continue
        got = a["usage"]["completion_tokens"]
        tokens += got
        if got != args.max_tokens:
            problems.append(f"request {i} decoded {got} tokens, not {args.max_tokens}")
        if constrained:
            text = a["choices"][0]["message"]["content"] or ""
            if a["choices"][0]["finish_reason"] == "stop":
                try:
                    json.loads(text)
                except ValueError:
                    problems.append(f"request {i}: finished answer is not JSON: {text[:80]!r}")
    return tokens / wall if wall > 0 else 0.0, tokens, problems


def measure(url, model, args):
    """Alternating rounds, the first a warm-up; medians of tokens/s per kind."""
    runs = {False: [], True: []}
    problems = []
    for rep in range(args.reps + 1):
        for constrained in (False, True) if rep % 2 == 0 else (True, False):
            rate, _, trouble = one_round(url, model, constrained, args)
            problems += [("constrained: " if constrained else "plain: ") + p for p in trouble]
            if rep > 0:
                runs[constrained].append(rate)
    plain, constrained = statistics.median(runs[False]), statistics.median(runs[True])
    return {"plain_tok_s": plain, "constrained_tok_s": constrained,
            "loss": 1 - constrained / plain if plain > 0 else float("nan"),
            "plain_runs": runs[False], "constrained_runs": runs[True], "problems": problems[:20]}


def omnibus_server(args, port, log):
    cmd = [str(args.omnibus), "serve", "-m", str(args.model), "--port", str(port), "--max-seqs",
           str(max(args.concurrency, 8))]
    if args.threads:
        cmd += ["-t", str(args.threads)]
    return Server(cmd, port, log, startup_timeout_s=120)


def llama_server(args, port, log):
    cmd = [str(args.llama_server), "-m", str(args.model), "--port", str(port), "-np", str(args.concurrency),
           "-c", str(args.concurrency * (args.max_tokens + 256)), "--cont-batching"]
    if args.threads:
        cmd += ["-t", str(args.threads)]
    return Server(cmd, port, log, startup_timeout_s=300)


def mask_times(args, model):
    out = RESULTS_DIR / f"grammar_bench_{Path(model).stem}.json"
    cmd = [str(args.omnibus), "grammar-bench", "-m", str(model), "--json", str(out)]
    if args.schema_limit:
        cmd += ["--limit", str(args.schema_limit)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ToolError(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return json.loads(out.read_text())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    p.add_argument("--omnibus", type=Path, default=DEFAULT_OMNIBUS)
    p.add_argument("--llama-server", type=Path, help="llama.cpp's llama-server (bench/build_llama_server.sh)")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--min-items", type=int, default=200, help="the schema's minItems: the answer cannot end sooner")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="0: each engine's default")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--mask-models", type=Path, nargs="*", default=None,
                   help="models whose vocabularies grammar-bench times (default: SmolLM2 and Gemma 3 if present)")
    p.add_argument("--schema-limit", type=int, default=0, help="grammar-bench: only the first N schemas")
    args = p.parse_args()
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    result = {"model": str(args.model), "concurrency": args.concurrency, "max_tokens": args.max_tokens,
              "reps": args.reps, "engines": {}, "masks": {}}

    mask_models = args.mask_models
    if mask_models is None:
        mask_models = [m for m in (DEFAULT_MODEL, DEFAULT_GEMMA) if m.exists()]
    for m in mask_models:
        print(f"grammar-bench with {m.name} ...", flush=True)
        result["masks"][m.name] = mask_times(args, m)

    engines = [("omnibus", omnibus_server)]
    if args.llama_server:
        engines.append(("llama.cpp", llama_server))
    for name, make in engines:
        port = free_port()
        log = RESULTS_DIR / f"structured_output_{name}_{stamp}.log"
        print(f"{name}: {args.concurrency} concurrent requests x {args.max_tokens} tokens, "
              f"{args.reps} reps ...", flush=True)
        with make(args, port, log) as server:
            result["engines"][name] = measure(server.url, server.model_id(), args)

    print()
    print("| vocabulary | schemas compiled | mask mean | mask p50 | mask p99 | compile p90 |")
    print("|---|---|---|---|---|---|")
    for name, m in result["masks"].items():
        print(f"| {name} ({m['vocab_size']} tokens) | {m['compiled']}/{m['schemas']} | {m['mask_us']['mean']:.1f} us"
              f" | {m['mask_us']['p50']:.1f} us | {m['mask_us']['p99']:.1f} us | {m['compile_ms']['p90']:.2f} ms |")
    print("(bars: mean <= 50 us, p99 <= 1 ms, compile p90 <= 10 ms)")
    print()
    print(f"| engine | {args.concurrency} plain, tok/s | {args.concurrency} constrained, tok/s | loss |")
    print("|---|---|---|---|")
    for name, e in result["engines"].items():
        print(f"| {name} | {e['plain_tok_s']:.1f} | {e['constrained_tok_s']:.1f} | {100 * e['loss']:.1f}% |")
        for problem in e["problems"]:
            print(f"  {name}: {problem}")
    print("(bar: loss <= 10% at 8 concurrent requests; the limit is the decode step, memory-bandwidth-bound)")
    out = RESULTS_DIR / f"structured_output_{stamp}.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    try:
        main()
    except ToolError as e:
        print(f"bench_structured_output: {e}", file=sys.stderr)
        sys.exit(1)
