#!/usr/bin/env python3
"""Side-by-side speed: omnibus against llama.cpp, and both against the rooflines.

One invocation measures, with the same model and thread count:
  * omnibus (`omnibus run ... --stats-json`): prefill on a prompt of exactly
    512 tokens (-f FILE -n 1) and decode of 128 tokens after a short prompt;
    each repetition is a fresh process, so its peak RSS is its own.
  * llama.cpp through llama-cpp-python, in a child Python process (so its
    RSS is its own): prefill = one eval() of the same 512 tokens on an empty
    context; decode = 128 single-token evals after the same short prompt.
  * the machine's memory bandwidth and FP32 FLOP/s (bench/roofline.py),
    giving the decode and prefill ceilings for this model; with
    --long-context, also the decode ceiling at that context, where each
    step reads the K/V cache besides the weights.
Medians over --reps repetitions (after one discarded warm-up) go into a
table on stdout and into bench/results/bench_<timestamp>.json.

This is a benchmark, not a test: nothing here fails on slow numbers.
See bench/README.md for the definitions.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import roofline

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = REPO_ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_OMNIBUS = REPO_ROOT / "build" / "src" / "cli" / "omnibus"
DEFAULT_PROMPT_SOURCE = REPO_ROOT / "tools" / "golden_texts" / "perplexity.txt"
RESULTS_DIR = REPO_ROOT / "bench" / "results"
SHORT_PROMPT = "Once upon a time, in a small village by the sea,"


# ---------------------------------------------------------------- prompts

LONG_DECODE_TOKENS = 64  # generated after the long prompt (--long-context)


def tokenize(vocab, data):
    add_bos = vocab.metadata.get("tokenizer.ggml.add_bos_token") == "true"
    return vocab.tokenize(data, add_bos=add_bos, special=True)


def exact_prompt(vocab, source_bytes, n_tokens):
    """Bytes of a prefix of the source that tokenize to exactly n_tokens.

    Cutting the token list and detokenizing can merge across the cut when
    retokenized, so adjust the cut until the count comes out right.
    """
    tokens = tokenize(vocab, source_bytes)
    if len(tokens) < n_tokens + 16:
        raise SystemExit(f"prompt source has only {len(tokens)} tokens; "
                         f"need more than {n_tokens}")
    cut = n_tokens
    for _ in range(32):
        text = vocab.detokenize(tokens[:cut])
        got = len(tokenize(vocab, text))
        if got == n_tokens:
            return text
        cut += n_tokens - got
    raise SystemExit(f"could not build a prompt of exactly {n_tokens} tokens")


def prep_child(config_path):
    """Child process: the prompts (llama.cpp's tokenizer) and model costs.

    Kept out of the parent so the parent stays small: a process started by
    the parent inherits its peak RSS through exec (Linux keeps the larger of
    the two in ru_maxrss), which would inflate omnibus's own figure.
    """
    import llama_cpp
    cfg = json.loads(Path(config_path).read_text())
    vocab = llama_cpp.Llama(model_path=cfg["model"], vocab_only=True,
                            verbose=False)
    prompt = exact_prompt(vocab, Path(cfg["source"]).read_bytes(),
                          cfg["n_tokens"])
    Path(cfg["prompt_file"]).write_bytes(prompt)
    print(json.dumps({
        "prompt_tokens": tokenize(vocab, prompt),
        "short_tokens": tokenize(vocab, SHORT_PROMPT.encode()),
        "model_costs": roofline.model_costs(cfg["model"]),
        "kv": roofline.kv_values_per_position(cfg["model"])}))


def run_child(mode, config):
    """Runs this script in `mode` in a fresh interpreter; returns its JSON."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    try:
        cmd = [sys.executable, str(Path(__file__).resolve()), mode, f.name]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            hint = ""
            if proc.returncode < 0:
                hint = (f" (killed by signal {-proc.returncode}; a llama.cpp built with AMX "
                        "crashes so on some VMs: scripts/setup.sh --bench builds it without)")
            raise SystemExit(f"{mode} failed, exit {proc.returncode}{hint}:\n{proc.stderr[-3000:]}")
    finally:
        os.unlink(f.name)
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- omnibus

def run_omnibus(binary, model, threads, batch, prompt_args, n_new, kv_type="f16"):
    with tempfile.TemporaryDirectory() as tmp:
        stats_path = Path(tmp) / "stats.json"
        cmd = [str(binary), "run", "-m", str(model), *prompt_args,
               "-n", str(n_new), "-t", str(threads), "-b", str(batch),
               "--kv-type", kv_type,
               "--ignore-eos", "--temp", "0", "--stats-json", str(stats_path)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not stats_path.exists():
            raise SystemExit(f"omnibus failed ({proc.returncode}): "
                             f"{' '.join(cmd)}\n{proc.stderr[-2000:]}")
        return json.loads(stats_path.read_text())


def omnibus_prefill(args, threads, prompt_file):
    """One prefill run: the prompt file, one token generated."""
    return run_omnibus(args.omnibus, args.model, threads, args.batch,
                       ["-f", str(prompt_file)], 1, args.kv_type)


def omnibus_decode(args, threads):
    """One decode run: the short prompt, --decode-tokens generated."""
    return run_omnibus(args.omnibus, args.model, threads, args.batch,
                       ["-p", SHORT_PROMPT], args.decode_tokens, args.kv_type)


def bench_omnibus(args, threads, prompt_file, expect_tokens, long_prompt_file=None):
    def prefill():
        return omnibus_prefill(args, threads, prompt_file)

    def decode():
        return omnibus_decode(args, threads)

    def long_decode():
        return run_omnibus(args.omnibus, args.model, threads, args.batch,
                           ["-f", str(long_prompt_file),
                            "-c", str(args.long_context + LONG_DECODE_TOKENS + 16)],
                           LONG_DECODE_TOKENS, args.kv_type)

    prefill(), decode()  # warm-up: page cache, CPU clocks
    pre = [prefill() for _ in range(args.reps)]
    dec, long_dec, bw_around = [], [], []
    pair_bandwidth = not args.skip_limits
    for _ in range(args.reps):
        # Short and long context back to back, so each pair sees the same
        # machine: on a shared VM speed drifts by tens of percent over
        # minutes, which a ratio of two separate medians would take in.
        # For the same reason each short decode run is bracketed by two
        # bandwidth probes (roofline.between_probes).
        if pair_bandwidth:
            run, around = roofline.between_probes(decode, threads)
            dec.append(run)
            bw_around.append(around)
        else:
            dec.append(decode())
        if long_prompt_file is not None:
            long_dec.append(long_decode())
    if pre[0]["prompt_tokens"] != expect_tokens:
        print(f"warning: omnibus counted {pre[0]['prompt_tokens']} prompt "
              f"tokens, llama.cpp {expect_tokens}", file=sys.stderr)
    warn_if_unstable(f"omnibus prefill tok/s ({threads}t)",
                     (r["prefill_tokens_per_s"] for r in pre))
    warn_if_unstable(f"omnibus decode tok/s ({threads}t)",
                     (r["decode_tokens_per_s"] for r in dec))
    # Each long run's share of the short run just before it.
    shares = [l["decode_tokens_per_s"] / d["decode_tokens_per_s"] for d, l in zip(dec, long_dec)]
    return {
        "prefill_tokens_per_s": median(r["prefill_tokens_per_s"] for r in pre),
        "decode_tokens_per_s": median(r["decode_tokens_per_s"] for r in dec),
        "ttft_ms_short_prompt": median(r["ttft_ms"] for r in dec),
        "load_ms": median(r["load_ms"] for r in pre + dec),
        "peak_rss_mib": max(r["peak_rss_mib"] for r in pre + dec),
        "runs": {"prefill": pre, "decode": dec, "decode_long_context": long_dec},
        **({"decode_read_gb_per_s_around": bw_around} if bw_around else {}),
        **({"decode_tokens_per_s_long_context": median(r["decode_tokens_per_s"] for r in long_dec),
            "long_context_shares_paired": shares,
            "long_context_share_paired": median(shares)}
           if long_dec else {}),
    }


# ---------------------------------------------------------------- llama.cpp

def bench_llamacpp(args, threads, prompt_tokens, short_tokens, long_tokens=None,
                   reps=None, pair_bandwidth=None):
    """Runs llama_child() in a fresh interpreter and returns its result."""
    result = run_child("--llama-child", {
        "model": str(args.model), "threads": threads, "batch": args.batch,
        "kv_type": args.kv_type, "reps": reps or args.reps,
        "decode_tokens": args.decode_tokens,
        "prompt_tokens": prompt_tokens, "short_tokens": short_tokens,
        "pair_bandwidth": (not args.skip_limits) if pair_bandwidth is None else pair_bandwidth,
        "long_tokens": long_tokens or [], "long_decode_tokens": LONG_DECODE_TOKENS})
    for key, values in result["runs"].items():
        warn_if_unstable(f"llama.cpp {key} ({threads}t)", values)
    return result


def proc_status_mib(field):
    """VmRSS or VmHWM of this process image (not inherited through exec)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def llama_child(config_path):
    """Child process: times llama.cpp and prints one JSON line."""
    import numpy as np
    import llama_cpp
    cfg = json.loads(Path(config_path).read_text())
    base_rss = proc_status_mib("VmRSS")
    start = time.perf_counter()
    # llama.cpp's CPU defaults: f16 KV, flash attention "auto" (= on for the
    # CPU backend; llama-cpp-python turns it off unless asked). --kv-type
    # q8_0 / q4_0 / bf16 sets type_k = type_v to it (a quantized V needs flash
    # attention).
    kv_type = {"f16": llama_cpp.GGML_TYPE_F16, "q8_0": llama_cpp.GGML_TYPE_Q8_0,
               "q4_0": llama_cpp.GGML_TYPE_Q4_0,
               # ggml's enum value; llama-cpp-python exports no name for it.
               "bf16": getattr(llama_cpp, "GGML_TYPE_BF16", 30)}[cfg["kv_type"]]

    def open_model(n_ctx):
        return llama_cpp.Llama(
            model_path=cfg["model"], n_ctx=n_ctx, n_batch=cfg["batch"],
            n_ubatch=cfg["batch"], n_threads=cfg["threads"],
            n_threads_batch=cfg["threads"], flash_attn=True, logits_all=False,
            type_k=kv_type, type_v=kv_type, verbose=False, seed=0)

    llm = open_model(1024)
    load_ms = (time.perf_counter() - start) * 1e3
    n_vocab = llm.n_vocab()

    def last_argmax():
        ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        return int(np.argmax(np.ctypeslib.as_array(ptr, shape=(n_vocab,))))

    def prefill():
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(cfg["prompt_tokens"])
        last_argmax()
        return len(cfg["prompt_tokens"]) / (time.perf_counter() - t0)

    def greedy_decode(prompt, n):
        """(decode tok/s over n single-token evals, ms to the first token)."""
        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt)
        token = last_argmax()
        t1 = time.perf_counter()
        for _ in range(n):
            llm.eval([token])
            token = last_argmax()
        return n / (time.perf_counter() - t1), (t1 - t0) * 1e3

    def decode():
        return greedy_decode(cfg["short_tokens"], cfg["decode_tokens"])

    def decode_long():
        # Decode after a long prompt: attention reads the whole context.
        return greedy_decode(cfg["long_tokens"], cfg["long_decode_tokens"])[0]

    prefill(), decode()  # warm-up
    pre = [prefill() for _ in range(cfg["reps"])]
    dec, bw_around = [], []
    for _ in range(cfg["reps"]):
        # Bracketed by bandwidth probes, as omnibus's runs (bench_omnibus).
        if cfg["pair_bandwidth"]:
            run, around = roofline.between_probes(decode, cfg["threads"])
            dec.append(run)
            bw_around.append(around)
        else:
            dec.append(decode())
    long_dec = []
    if cfg["long_tokens"]:
        # A second context just big enough, so the standard rows above keep
        # n_ctx = 1024 as in every earlier run.
        peak_before_long = proc_status_mib("VmHWM")
        llm.close()
        llm = open_model(len(cfg["long_tokens"]) + cfg["long_decode_tokens"] + 16)
        # Each long run next to a short one on the same context, for the
        # back-to-back share (as for omnibus).
        paired_short = []
        for _ in range(cfg["reps"]):
            paired_short.append(decode()[0])
            long_dec.append(decode_long())
    peak = peak_before_long if cfg["long_tokens"] else proc_status_mib("VmHWM")
    shares = [l / d for d, l in zip(paired_short, long_dec)] if long_dec else []  # paired_short: long runs only
    print(json.dumps({
        "llama_cpp_version": llama_cpp.__version__,
        "prefill_tokens_per_s": statistics.median(pre),
        "decode_tokens_per_s": statistics.median(d[0] for d in dec),
        "ttft_ms_short_prompt": statistics.median(d[1] for d in dec),
        "load_ms": load_ms, "peak_rss_mib": peak,
        "python_baseline_rss_mib": base_rss,  # numpy + libllama, no model
        "runs": {"prefill_tokens_per_s": pre,
                 "decode_tokens_per_s": [d[0] for d in dec],
                 "decode_tokens_per_s_long_context": long_dec},
        **({"decode_read_gb_per_s_around": bw_around} if bw_around else {}),
        **({"decode_tokens_per_s_long_context": statistics.median(long_dec),
            "long_context_shares_paired": shares,
            "long_context_share_paired": statistics.median(shares)} if long_dec else {}),
    }))


# ---------------------------------------------------------------- report

def median(values):
    return statistics.median(list(values))


def warn_if_unstable(label, values):
    """Flags runs whose spread says the machine was busy, not the engine."""
    values = list(values)
    if values and min(values) > 0 and max(values) > 1.5 * min(values):
        print(f"warning: {label} varied from {min(values):.1f} to "
              f"{max(values):.1f} across runs; the machine was probably busy",
              file=sys.stderr)


ROWS = [  # key, label, roofline key or None
    ("prefill_tokens_per_s", "prefill tok/s (512-token prompt)",
     "prefill_tokens_per_s"),
    ("decode_tokens_per_s", "decode tok/s", "decode_tokens_per_s"),
    ("decode_tokens_per_s_long_context", "decode tok/s, long context", None),
    ("ttft_ms_short_prompt", "TTFT ms (short prompt)", None),
    ("load_ms", "load ms", None),
    ("peak_rss_mib", "peak RSS MiB", None),
]


def long_context_roofline(report, n_tokens):
    """The decode ceiling at the long run's mean context: the read bandwidth
    over the weights plus the K/V bytes at that many positions (the short
    roofline leaves the cache out). Also the short-context rooflines' view:
    at long context K and V crowd the weights out of a large last-level
    cache, so the share of short-context speed that bandwidth allows is
    weights / (weights + K/V) only against the DRAM roofline."""
    limits, costs = report.get("limits"), report.get("model_costs")
    if not limits or not costs or "kv" not in report:
        return None
    positions = n_tokens + LONG_DECODE_TOKENS / 2
    kv_bytes = report["kv"]["kv_values_per_position"] * roofline.KV_VALUE_BYTES[report["kv_type"]] * positions
    total = costs["bytes_per_token"] + kv_bytes
    return {"mean_positions": positions, "kv_bytes_per_token": kv_bytes,
            "bytes_per_token": total,
            "decode_tokens_per_s": limits["read_gb_per_s"] * 1e9 / total,
            "weights_share_of_bytes": costs["bytes_per_token"] / total,
            "kv_upper_bound": report["kv"]["sliding_window"]}


def print_long_context(omni, llama, n_tokens, roof=None):
    """Decode speed after a long prompt, as a share of short-context decode
    and of the long-context roofline."""
    print(f"decode at {n_tokens} tokens of context ({LONG_DECODE_TOKENS} tokens after the prompt):")
    if roof:
        print(f"  roofline: {roof['decode_tokens_per_s']:.1f} tok/s "
              f"({roof['bytes_per_token'] / 2**20:.1f} MiB per token: weights + "
              f"{roof['kv_bytes_per_token'] / 2**20:.1f} MiB of K/V"
              + (", an upper bound: sliding-window layers read less" if roof["kv_upper_bound"] else "")
              + f"); bandwidth alone allows {100 * roof['weights_share_of_bytes']:.0f}% "
              "of short-context speed when both run from DRAM")
    for name, r in (("omnibus", omni), ("llama.cpp", llama)):
        if not r or "decode_tokens_per_s_long_context" not in r:
            continue
        long_speed = r["decode_tokens_per_s_long_context"]
        paired = r.get("long_context_share_paired")
        # The spread of the pairs: on a shared VM one pair moves by several
        # points, so a median near a bar says little without it.
        shares = r.get("long_context_shares_paired") or []
        spread = f", pairs {100 * min(shares):.0f}-{100 * max(shares):.0f}%" if len(shares) > 1 else ""
        print(f"  {name:10s} {long_speed:7.1f} tok/s = {100 * long_speed / r['decode_tokens_per_s']:.0f}% "
              f"of its short-context decode"
              + (f" (median of back-to-back pairs: {100 * paired:.0f}%{spread})" if paired else "")
              + (f", {100 * long_speed / roof['decode_tokens_per_s']:.0f}% of the roofline" if roof else ""))
    if omni and llama and "decode_tokens_per_s_long_context" in (omni or {}) and \
            "decode_tokens_per_s_long_context" in (llama or {}):
        print(f"  ratio omnibus / llama.cpp: "
              f"{omni['decode_tokens_per_s_long_context'] / llama['decode_tokens_per_s_long_context']:.2f}")


def paired_roofline_shares(omni, llama, costs):
    """Each engine's decode as a share of the bandwidth roofline of its own
    moment (roofline.paired_share per run), median over the runs."""
    shares = {}
    for name, r, speeds in (
            ("omnibus", omni, lambda r: [d["decode_tokens_per_s"] for d in r["runs"]["decode"]]),
            ("llama.cpp", llama, lambda r: r["runs"]["decode_tokens_per_s"])):
        if r and r.get("decode_read_gb_per_s_around"):
            shares[name] = median(
                roofline.paired_share(tps, around, costs["bytes_per_token"])
                for tps, around in zip(speeds(r), r["decode_read_gb_per_s_around"]))
    return shares


def fmt(value, pattern="{:.1f}"):
    return "-" if value is None else pattern.format(value)


def print_table(omni, llama, roof):
    header = ["metric", "omnibus", "llama.cpp", "ratio",
              "omnibus % roofline", "llama.cpp % roofline"]
    lines = [header]
    for key, label, roof_key in ROWS:
        o = omni.get(key) if omni else None
        l = llama.get(key) if llama else None
        ceiling = roof.get(roof_key) if roof_key else None
        lines.append([
            label, fmt(o), fmt(l),
            fmt(o / l if o is not None and l else None, "{:.2f}"),
            fmt(100 * o / ceiling if o is not None and ceiling else None),
            fmt(100 * l / ceiling if l is not None and ceiling else None)])
    widths = [max(len(row[i]) for row in lines) for i in range(len(header))]
    for n, row in enumerate(lines):
        print(" | ".join(c.ljust(w) for c, w in zip(row, widths)))
        if n == 0:
            print("-+-".join("-" * w for w in widths))
    print("ratio = omnibus / llama.cpp (above 1 is better for tok/s, "
          "worse for ms and MiB)")


def print_limits(limits, costs, roof):
    print(f"machine ({limits['threads']} threads): read "
          f"{limits['read_gb_per_s']:.1f} GB/s, copy "
          f"{limits['copy_gb_per_s']:.1f} GB/s, fp32 matmul "
          f"{limits['fp32_gflop_per_s']:.1f} GFLOP/s")
    print(f"model: {costs['bytes_per_token'] / 2**20:.1f} MiB read per token,"
          f" {costs['matmul_params'] / 1e6:.1f} M matmul parameters")
    print(f"rooflines: decode {roof['decode_tokens_per_s']:.1f} tok/s "
          f"(weights from DRAM; "
          f"{roof['decode_tokens_per_s_model_sized']:.1f} if they stay in "
          f"cache: {limits['read_gb_per_s_model_sized']:.1f} GB/s over "
          f"{limits['model_sized_array_mib']} MiB), "
          f"prefill {roof['prefill_tokens_per_s']:.1f} tok/s")


def scaling(args, prompt_file, prompt_tokens, short_tokens):
    """Speed at 1 and 2 threads, and the 2t/1t ratio; also the machine's
    read bandwidth at 1 and 2 threads, whose ratio caps decode's 2t/1t
    wherever one thread's decode already reads near one core's bandwidth.

    The 1- and 2-thread runs alternate (1t then 2t, then 2t then 1t, ...),
    one of each per repetition, and each repetition's 2t/1t is a ratio of
    two runs made seconds apart. On this shared VM speed drifts by tens of
    percent over minutes, so running all 1-thread repetitions before all
    2-thread ones put that drift into the ratio (1.50-1.64 for omnibus
    prefill in runs where a back-to-back pair gave 2.0). The printed 2t/1t
    is the median of the pairs' ratios; the medians per thread count are
    kept too. The read bandwidth is probed the same way (a 256 MiB probe
    per run, 1t and 2t alternating): one probe per thread count once read
    2t/1t 1.96 where pairs a minute apart read ~1.5."""
    result = {}
    if not args.skip_limits:
        probes = alternate_threads(
            args.reps, lambda t: roofline.measure_machine(t, mib=256, reps=3)["read_gb_per_s"])
        result["memory_read_gb_per_s"] = paired_scaling("memory", "read GB/s", probes[1], probes[2])

    def omnibus_once(t):
        return {"prefill_tokens_per_s": omnibus_prefill(args, t, prompt_file)["prefill_tokens_per_s"],
                "decode_tokens_per_s": omnibus_decode(args, t)["decode_tokens_per_s"]}

    def llamacpp_once(t):
        # One child per run (it loads the model, warms up, times one
        # prefill and one decode).
        r = bench_llamacpp(args, t, prompt_tokens, short_tokens, reps=1, pair_bandwidth=False)
        return {key: r[key] for key in ("prefill_tokens_per_s", "decode_tokens_per_s")}

    for name, enabled, once in (("omnibus", not args.skip_omnibus, omnibus_once),
                                ("llama.cpp", not args.skip_llamacpp, llamacpp_once)):
        if not enabled:
            continue
        once(1), once(2)  # warm-up: page cache, CPU clocks
        runs = alternate_threads(args.reps, once)
        result[name] = {key: paired_scaling(name, key, [r[key] for r in runs[1]], [r[key] for r in runs[2]])
                        for key in ("prefill_tokens_per_s", "decode_tokens_per_s")}
    return result


def alternate_threads(reps, once):
    """once(1) and once(2), `reps` of each, alternating (1t then 2t, then
    2t then 1t, ...): {1: [results], 2: [results]}, index i of each list
    from the same repetition."""
    runs = {1: [], 2: []}
    for rep in range(reps):
        for t in ((1, 2) if rep % 2 == 0 else (2, 1)):
            runs[t].append(once(t))
    return runs


def paired_scaling(name, key, ones, twos):
    """Prints and returns 2t/1t as the median of the repetitions' ratios,
    with the medians per thread count and their ratio."""
    one, two = median(ones), median(twos)
    paired = median(b / a for a, b in zip(ones, twos))
    print(f"{name:9s} {key:22s} 1t {one:8.1f}  2t {two:8.1f}  "
          f"2t/1t {paired:.2f} (median of {len(ones)} back-to-back pairs; "
          f"of the medians {two / one:.2f})")
    return {"1t": one, "2t": two, "2t/1t": paired, "2t/1t_of_medians": two / one,
            "runs_1t": ones, "runs_2t": twos}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-m", "--model", type=Path, default=DEFAULT_MODEL)
    p.add_argument("--omnibus", type=Path, default=DEFAULT_OMNIBUS,
                   help="path to the omnibus binary")
    p.add_argument("-t", "--threads", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--prefill-tokens", type=int, default=512)
    p.add_argument("--decode-tokens", type=int, default=128)
    p.add_argument("--long-context", type=int, default=2048,
                   help="also time decode of %d tokens after a prompt this long "
                        "(0: skip)" % 64)
    p.add_argument("--batch", type=int, default=512,
                   help="prompt tokens per forward step, both engines")
    p.add_argument("--prompt-source", type=Path, default=DEFAULT_PROMPT_SOURCE,
                   help="text whose first tokens form the prefill prompt")
    p.add_argument("--kv-type", choices=("f16", "q8_0", "q4_0", "bf16"), default="f16",
                   help="KV cache type for both engines (llama.cpp: type_k = type_v)")
    p.add_argument("--threads-scaling", action="store_true",
                   help="also run at 1 and 2 threads and print 2t/1t")
    p.add_argument("--skip-omnibus", action="store_true")
    p.add_argument("--skip-llamacpp", action="store_true")
    p.add_argument("--skip-limits", action="store_true",
                   help="do not measure bandwidth and FLOP/s")
    p.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    p.add_argument("--llama-child", help=argparse.SUPPRESS)
    p.add_argument("--prep-child", help=argparse.SUPPRESS)
    return p.parse_args()


def measure(args, prompt_file, prep, report):
    """The omnibus and llama.cpp runs; fills report and prints the table."""
    prompt_tokens, short_tokens = prep["prompt_tokens"], prep["short_tokens"]
    long_file, long_tokens = prep.get("long_prompt_file"), prep.get("long_tokens")
    omni = llama = None
    if not args.skip_omnibus:
        omni = bench_omnibus(args, args.threads, prompt_file,
                             len(prompt_tokens), long_file)
        report["omnibus"] = omni
    if not args.skip_llamacpp:
        llama = bench_llamacpp(args, args.threads, prompt_tokens,
                               short_tokens, long_tokens)
        report["llama_cpp"] = llama
    print_table(omni, llama, report.get("rooflines", {}))
    shares = paired_roofline_shares(omni, llama, report["model_costs"])
    if shares:
        report["decode_roofline_share_paired"] = shares
        print("decode against the bandwidth probed right before and after each run "
              "(median of the runs' shares): "
              + ", ".join(f"{name} {100 * share:.1f}%" for name, share in shares.items()))
    if long_tokens:
        roof = long_context_roofline(report, len(long_tokens))
        if roof:
            report["long_context_roofline"] = roof
        print_long_context(omni, llama, len(long_tokens), roof)
    if args.threads_scaling:
        report["threads_scaling"] = scaling(args, prompt_file, prompt_tokens,
                                            short_tokens)


def main():
    args = parse_args()
    if args.llama_child:
        llama_child(args.llama_child)
        return
    if args.prep_child:
        prep_child(args.prep_child)
        return
    if not args.model.is_file():
        raise SystemExit(f"model not found: {args.model}")
    if not args.skip_omnibus and not args.omnibus.is_file():
        raise SystemExit(f"omnibus binary not found: {args.omnibus} "
                         "(build it, pass --omnibus, or --skip-omnibus)")
    load = os.getloadavg()[0]
    if load > 0.5:
        print(f"warning: load average {load:.1f} before starting; other "
              "processes share the CPUs and the numbers will be noisy",
              file=sys.stderr)
    report = {"time": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "model": str(args.model), "threads": args.threads, "kv_type": args.kv_type,
              "reps": args.reps, "batch": args.batch,
              "decode_tokens": args.decode_tokens,
              "short_prompt": SHORT_PROMPT, "load_average_start": load}
    with tempfile.TemporaryDirectory() as tmp:
        prompt_file = Path(tmp) / "prompt.txt"
        prep = run_child("--prep-child", {
            "model": str(args.model), "source": str(args.prompt_source),
            "n_tokens": args.prefill_tokens, "prompt_file": str(prompt_file)})
        report["prefill_prompt_tokens"] = len(prep["prompt_tokens"])
        if args.long_context > 0:
            long_file = Path(tmp) / "long_prompt.txt"
            long_prep = run_child("--prep-child", {
                "model": str(args.model), "source": str(args.prompt_source),
                "n_tokens": args.long_context, "prompt_file": str(long_file)})
            prep["long_prompt_file"], prep["long_tokens"] = long_file, long_prep["prompt_tokens"]
            report["long_context_tokens"] = len(long_prep["prompt_tokens"])
        report["model_costs"] = costs = prep["model_costs"]
        report["kv"] = prep["kv"]
        if not args.skip_limits:
            limits = roofline.measure_machine(
                args.threads, model_mib=roofline.model_mib(costs))
            roof = roofline.rooflines(limits, costs)
            report.update(limits=limits, rooflines=roof)
            print_limits(limits, costs, roof)
        measure(args, prompt_file, prep, report)
    report["load_average_end"] = os.getloadavg()[0]
    # Anything the harness itself peaked at is a floor under its children's
    # ru_maxrss (inherited through exec): keep it visible.
    report["harness_peak_rss_mib"] = resource.getrusage(
        resource.RUSAGE_SELF).ru_maxrss / 1024
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out = args.out_dir / f"bench_{time.strftime('%Y%m%d_%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
