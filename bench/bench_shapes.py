#!/usr/bin/env python3
"""omnibus against llama.cpp's own llama-bench on the models people run.

For each GGUF (by default every file bench/make_shape_models.py left in
~/.cache/omnibus/shapes, F16 excluded), alternating run by run so both
engines see the same machine:
  * omnibus `run`: prefill of a prompt of exactly --prefill tokens in one
    batch (-b = the prompt), and decode of --decode tokens after a short
    prompt (or after --depth tokens of context), each a fresh process;
  * llama-bench -p PREFILL -n DECODE [-d DEPTH] -r 1, one process per
    repetition, the same threads.
Medians over --reps repetitions (after one discarded warm-up of each; with
--depth, of omnibus only) go
into a table on stdout and into bench/results/shapes_<timestamp>.json.

The limits: decode reads every weight once per token (and, after --depth
tokens, their K and V), so its bound is the read bandwidth (probed right
before and after each omnibus decode run, bench/roofline.py) over those
bytes per token; prefill is
arithmetic, reported against the int8 dot-product peak (`omnibus roofline
--limits-only`: the quantized types' kernels multiply int8 codes by int8
activations) and the FP32 matmul peak numpy reaches.

This is a benchmark, not a test: nothing fails on slow numbers.

  bench/bench_shapes.py --llama-bench /tmp/llama-build/.../bin/llama-bench \\
      --models ~/.cache/omnibus/shapes/llama-3.1-8b-Q4_K_M.gguf --reps 5
  # long context: decode only, after 4096 tokens, q8_0 cache on both sides
  bench/bench_shapes.py --llama-bench ... --models ... --prefill 0 --depth 4096 --kv-type q8_0
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import roofline
from bench_vs_llamacpp import run_omnibus

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OMNIBUS = REPO_ROOT / "build" / "src" / "cli" / "omnibus"
DEFAULT_SHAPES = Path.home() / ".cache" / "omnibus" / "shapes"
RESULTS_DIR = REPO_ROOT / "bench" / "results"
SHORT_PROMPT = "Once upon a time, in a small village by the sea,"
# One token per repetition in SmolLM2's vocabulary (the shape models' own):
# a prompt of exactly n tokens is this n times. Speed does not depend on the
# text.
ONE_TOKEN_WORD = " the"


def omnibus_run(args, model, prompt_args, n_new, batch, ctx):
    return run_omnibus(args.omnibus, model, args.threads, batch, [*prompt_args, "-c", str(ctx)], n_new, args.kv_type)


def llama_bench(args, model):
    cmd = [str(args.llama_bench), "-m", str(model), "-t", str(args.threads),
           "-p", str(args.prefill), "-n", str(args.decode), "-r", "1", "-o", "json"]
    if args.depth > 0:
        cmd += ["-d", str(args.depth)]
    if args.kv_type != "f16":
        # llama.cpp quantizes the V cache only with flash attention.
        cmd += ["-ctk", args.kv_type, "-ctv", args.kv_type, "-fa", "1"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"llama-bench failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    rows = json.loads(proc.stdout)
    result = {}
    for row in rows:
        key = "prefill_tokens_per_s" if row["n_gen"] == 0 else "decode_tokens_per_s"
        result[key] = row["avg_ts"]
    return result


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(value, spec, suffix=""):
    return "-" if value is None else f"{value:{spec}}{suffix}"


def bench_model(args, model, prompt_file):
    costs = roofline.model_costs(model)
    # A decode step after --depth tokens also reads their K and V (about
    # depth + decode / 2 positions on average over the run).
    kv_bytes = 0.0
    if args.depth > 0:
        per_position = roofline.kv_values_per_position(model)["kv_values_per_position"]
        kv_bytes = per_position * roofline.KV_VALUE_BYTES[args.kv_type] * (args.depth + args.decode / 2)
    bytes_per_token = costs["bytes_per_token"] + kv_bytes
    depth_file = None
    if args.depth > 0:
        depth_file = prompt_file.parent / f"depth{args.depth}.txt"
        depth_file.write_text(ONE_TOKEN_WORD * args.depth)
    ctx = max(args.prefill, args.depth) + args.decode + 64

    def prefill():
        if args.prefill == 0:  # decode only (long-context rows): no prefill run on either side
            return {"prefill_tokens_per_s": None, "prompt_tokens": 0, "load_ms": None, "peak_rss_mib": 0}
        return omnibus_run(args, model, ["-f", str(prompt_file)], 1, args.prefill, ctx)

    def decode():
        prompt = ["-f", str(depth_file)] if depth_file else ["-p", SHORT_PROMPT]
        return roofline.between_probes(
            lambda: omnibus_run(args, model, prompt, args.decode, max(args.prefill, 512), ctx), args.threads)

    # Warm-up (page cache, clocks): the omnibus runs read the whole file
    # into the page cache for both engines; after --depth tokens a llama-bench
    # warm-up would cost another long prefill and is left out.
    prefill(), decode()
    if args.depth == 0:
        llama_bench(args, model)
    pre, dec, around, llama = [], [], [], []
    for rep in range(args.reps):
        pre.append(prefill())
        run, probes = decode()
        dec.append(run)
        around.append(probes)
        llama.append(llama_bench(args, model))
        print(f"  {model.name} rep {rep + 1}/{args.reps}: omnibus pp {fmt(pre[-1]['prefill_tokens_per_s'], '.1f')} "
              f"tg {run['decode_tokens_per_s']:.2f}; llama.cpp pp {fmt(llama[-1].get('prefill_tokens_per_s'), '.1f')} "
              f"tg {llama[-1]['decode_tokens_per_s']:.2f}", file=sys.stderr)
    if args.prefill and pre[0]["prompt_tokens"] != args.prefill:
        print(f"warning: omnibus counted {pre[0]['prompt_tokens']} prompt tokens, wanted {args.prefill}",
              file=sys.stderr)
    bw = median(sum(p) / len(p) for p in around)
    shares = [roofline.paired_share(d["decode_tokens_per_s"], p, bytes_per_token)
              for d, p in zip(dec, around)]
    llama_shares = [roofline.paired_share(l["decode_tokens_per_s"], p, bytes_per_token)
                    for l, p in zip(llama, around)]
    return {
        "model": str(model),
        "file_gb": model.stat().st_size / 1e9,
        "bytes_per_token": bytes_per_token,
        "kv_bytes_per_token": kv_bytes,
        "matmul_params": costs["matmul_params"],
        "output_params": costs["output_params"],
        "omnibus": {
            "prefill_tokens_per_s": median(r["prefill_tokens_per_s"] for r in pre),
            "decode_tokens_per_s": median(r["decode_tokens_per_s"] for r in dec),
            "load_ms": median(r["load_ms"] for r in pre + dec),
            "peak_rss_mib": max(r["peak_rss_mib"] for r in pre + dec),
            "decode_share_of_bandwidth": median(shares),
        },
        "llamacpp": {
            "prefill_tokens_per_s": median(l.get("prefill_tokens_per_s") for l in llama),
            "decode_tokens_per_s": median(l["decode_tokens_per_s"] for l in llama),
            "decode_share_of_bandwidth": median(llama_shares),
        },
        "prefill_ratio": median(ratio(p["prefill_tokens_per_s"], l.get("prefill_tokens_per_s")) for p, l in zip(pre, llama)),
        "decode_ratio": median(d["decode_tokens_per_s"] / l["decode_tokens_per_s"] for d, l in zip(dec, llama)),
        "read_gb_per_s": bw,
        "runs": {"omnibus_prefill": pre, "omnibus_decode": dec, "llamacpp": llama, "probes": around},
    }


def int8_peak(args):
    """This machine's int8 dot-product peak (OP/s) with args.threads threads,
    from `omnibus roofline --limits-only`: the ceiling of the quantized
    types' prefill, whose kernels multiply int8 codes by int8 activations."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "limits.json"
        proc = subprocess.run([str(args.omnibus), "roofline", "--limits-only", "-t", str(args.threads),
                               "--json", str(out)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"omnibus roofline --limits-only failed: {proc.stderr[-2000:]}")
        limits = json.loads(out.read_text())
    return limits["peak_int8_ops"], limits["int8_path"]


def print_table(results, args, fp32_gflops, int8_ops, int8_path):
    depth = f" after {args.depth} tokens" if args.depth else ""
    print(f"\n{args.threads} threads, prefill {args.prefill} tokens, decode {args.decode} tokens{depth}, "
          f"{args.kv_type} cache, medians of {args.reps} alternating runs (ratios paired run by run)")
    print(f"FP32 matmul peak (numpy): {fp32_gflops:.0f} GFLOP/s; int8 dot-product peak ({int8_path}, "
          f"omnibus roofline --limits-only): {int8_ops / 1e9:.0f} GOP/s")
    print("(% int8 peak: prefill's matmul arithmetic over the int8 peak, every matrix taken as quantized; "
          "llama.cpp's in brackets)")
    head = ("| model | GB | prefill omnibus | llama.cpp | ratio | % int8 peak | % FP32 peak | decode omnibus "
            "| llama.cpp | ratio | % bandwidth omnibus | llama.cpp |")
    print(head)
    print("|" + " --- |" * 12)
    for r in results:
        o, l = r["omnibus"], r["llamacpp"]
        pp = o["prefill_tokens_per_s"]
        lp = l["prefill_tokens_per_s"]
        # A prompt's tokens go through every matrix but the output one (only
        # the last token's logits are computed, by both engines).
        flops = 2 * (r["matmul_params"] - r["output_params"])
        peak_share = None if pp is None else 100 * pp * flops / (fp32_gflops * 1e9)
        int8_share = None if pp is None else 100 * pp * flops / int8_ops
        llama_int8 = None if lp is None else 100 * lp * flops / int8_ops
        print(f"| {Path(r['model']).stem} | {r['file_gb']:.2f} | {fmt(pp, '.1f')} "
              f"| {fmt(lp, '.1f')} | {fmt(r['prefill_ratio'], '.2f', 'x')} "
              f"| {fmt(int8_share, '.0f', '%')} ({fmt(llama_int8, '.0f', '%')}) | {fmt(peak_share, '.0f', '%')} "
              f"| {o['decode_tokens_per_s']:.2f} | {l['decode_tokens_per_s']:.2f} | {r['decode_ratio']:.2f}x "
              f"| {100 * o['decode_share_of_bandwidth']:.0f}% | {100 * l['decode_share_of_bandwidth']:.0f}% |")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--llama-bench", type=Path, required=True, help="llama.cpp's llama-bench binary")
    p.add_argument("--omnibus", type=Path, default=DEFAULT_OMNIBUS)
    p.add_argument("--models", type=Path, nargs="*", help=f"GGUF files (default: {DEFAULT_SHAPES}/*.gguf but F16)")
    p.add_argument("-t", "--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--prefill", type=int, default=512, help="prompt tokens of the prefill runs (0: decode only)")
    p.add_argument("--decode", type=int, default=128)
    p.add_argument("--depth", type=int, default=0, help="decode after this many tokens of context")
    p.add_argument("--kv-type", choices=("f16", "q8_0"), default="f16")
    p.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    return p.parse_args()


def main():
    args = parse_args()
    models = args.models or sorted(m for m in DEFAULT_SHAPES.glob("*.gguf") if not m.name.endswith("-F16.gguf"))
    if not models:
        raise SystemExit(f"no models: run bench/make_shape_models.py first (it writes {DEFAULT_SHAPES})")
    limits = roofline.measure_machine(args.threads)
    limits["int8_ops_per_s"], limits["int8_path"] = int8_peak(args)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        prompt_file = Path(tmp) / "prompt.txt"
        prompt_file.write_text(ONE_TOKEN_WORD * args.prefill)
        for model in models:
            results.append(bench_model(args, model, prompt_file))
    print_table(results, args, limits["fp32_gflop_per_s"], limits["int8_ops_per_s"], limits["int8_path"])
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / f"shapes_{time.strftime('%Y%m%d_%H%M%S')}.json"
    out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "limits": limits,
                               "results": results}, indent=2))
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
