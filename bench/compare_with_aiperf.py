#!/usr/bin/env python3
"""Check `omnibus bench` against NVIDIA's aiperf on the same server and workload.

The script starts `omnibus serve` on a free local port, waits for GET /health
to answer 200, and runs both load generators against it one after the other
(--rounds N: N times, alternating which goes first) with the same workload:

  * streaming /v1/chat/completions, temperature 0;
  * synthetic prompts of about --input-len tokens (each tool makes its own
    text: omnibus bench draws English words, aiperf cuts Shakespeare), so the
    prompts differ but their lengths match;
  * exactly --output-len output tokens per request (max tokens plus the
    `ignore_eos` extension, which the server honours);
  * a closed loop of --concurrency users (a new request as soon as one
    finishes), or with --rate R an open loop of constant arrivals (one
    request every 1/R s), --requests measured requests, after --warmup
    discarded ones;
  * token counts from the server's usage chunk for both
    (`stream_options.include_usage`; aiperf: --use-server-token-count).

It prints TTFT (mean, p50, p90), TPOT (aiperf: "inter token latency")
(mean, p50, p90), the gaps between streamed chunks (omnibus: "ITL", aiperf:
"inter chunk latency") and output tokens/s for both tools with their ratio
(omnibus / aiperf), flagging every ratio more than --tolerance (10%) from 1,
then checks and diagnostics: requests, token counts, the cores used by each
load generator, the server and other processes while the measured requests
ran, how soon each tool refills a free slot, and how many requests the server
prefilled together, and each tool's mean TTFT and end-to-end latency over
the server's own log of the same requests (ttft_ms, duration_ms). Everything goes to --json
(bench/results/aiperf_agreement.json); logs and both tools' raw outputs to
--work-dir. The server is stopped on every exit.

Choices that keep the comparison fair (see bench/README.md for the evidence):
  * aiperf gets `--request-rate 200 --arrival-pattern constant` next to
    --concurrency (--aiperf-issue-rate; 0 turns it off). With --concurrency
    alone, aiperf 0.13's timing_manager busy-polls for a free slot and keeps a
    whole core busy, which on a 2-core machine starves the server it measures.
    With the rate it checks every 5 ms instead.
  * The server runs with --no-prefix-cache unless --prefix-cache is given:
    aiperf's warm-up requests come from the same prompt pool as its measured
    ones, so some measured prompts would be cached whole.
  * Before each tool run the script waits (--quiet-wait) until other
    processes leave the cores alone, and notes any run they disturbed.

aiperf needs a HuggingFace tokenizer and the machine has no network. The
script builds one from the GGUF with transformers (AutoTokenizer with
gguf_file=...; transformers 5 reads GGUF only with torch installed, so without
torch it feeds the GGUF metadata, read with the `gguf` package, to the same
transformers converter), checks it against the server's POST /tokenize, and
saves it once under --tokenizer-cache. aiperf 0.13 in offline mode
(HF_HUB_OFFLINE=1) resolves --tokenizer only through the HuggingFace cache, so
a plain directory is refused ("Repo id must be in the form ..."); the
tokenizer is therefore saved in the cache's layout, as the local repository
`omnibus-local/<model>` of a private HF_HUB_CACHE given to aiperf alone.

Metric definitions:
  TTFT  both: request sent -> first chunk carrying output text.
  TPOT  omnibus: (e2e - TTFT) / (output tokens - 1), e2e ending at the last
        byte of the response (after the usage chunk and [DONE]);
        aiperf "ITL": (request latency - TTFT) / (output tokens - 1), request
        latency ending at the last chunk carrying text. Statistics over
        requests for both.
  chunk gap  omnibus "ITL" = aiperf "inter chunk latency": time between
        consecutive chunks carrying text, pooled over all requests.
  output tok/s  both: all output tokens / (last response - first request
        sent); omnibus ends at the last byte, aiperf at the last text chunk.
The JSON also holds omnibus's figures recomputed with aiperf's end points.

Needs: aiperf on PATH and transformers (scripts/setup.sh --bench), and gguf when torch
is absent. Takes about 3 minutes a round at the defaults.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import sys
import time
from pathlib import Path

from aiperf_tokenizer import check_tokenizer, prepare_tokenizer
from tool_processes import (OTHER_LOAD_WARN_CORES, SAMPLE_INTERVAL_S, Server, ToolError, kill_group, live_processes,
                            interrupt_on_sigterm, cpu_report, free_port, run_logged, wait_for_quiet)

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OMNIBUS = REPO_ROOT / "build" / "src" / "cli" / "omnibus"
DEFAULT_MODEL = REPO_ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_JSON = REPO_ROOT / "bench" / "results" / "aiperf_agreement.json"
DEFAULT_WORK_DIR = REPO_ROOT / "bench" / "results" / "aiperf_agreement"
DEFAULT_TOKENIZER_CACHE = Path.home() / ".cache" / "omnibus" / "aiperf-hf"

# (key in the table, label, omnibus summary field + statistic, aiperf metric + statistic)
METRICS = [
    ("ttft_mean", "TTFT mean (ms)", ("ttft_ms", "mean"), ("time_to_first_token", "avg")),
    ("ttft_p50", "TTFT p50 (ms)", ("ttft_ms", "p50"), ("time_to_first_token", "p50")),
    ("ttft_p90", "TTFT p90 (ms)", ("ttft_ms", "p90"), ("time_to_first_token", "p90")),
    ("tpot_mean", "TPOT mean (ms)", ("tpot_ms", "mean"), ("inter_token_latency", "avg")),
    ("tpot_p50", "TPOT p50 (ms)", ("tpot_ms", "p50"), ("inter_token_latency", "p50")),
    ("tpot_p90", "TPOT p90 (ms)", ("tpot_ms", "p90"), ("inter_token_latency", "p90")),
    ("chunk_gap_mean", "chunk gap mean", ("itl_ms", "mean"), ("inter_chunk_latency", "avg")),
    ("chunk_gap_p50", "chunk gap p50", ("itl_ms", "p50"), ("inter_chunk_latency", "p50")),
    ("output_tok_s", "output tok/s", ("output_token_throughput", None), ("output_token_throughput", "avg")),
]


# ---------------------------------------------------------------- the two tools

def run_omnibus_bench(args, server, model_id, work, tag):
    """Warm-up run (discarded), then the measured run; returns the figures."""
    common = [args.omnibus_bin, "bench", "--url", server.url, "--model", model_id, "--api", "chat",
              "--workload", "random", "--input-len", args.input_len, "--output-len", args.output_len,
              "--ignore-eos", "--temperature", "0", "-q"]
    # Open loop: gamma gaps of shape 1e6 have a coefficient of variation of
    # 0.1%, i.e. constant arrivals, like aiperf's --arrival-pattern constant.
    load = (["--rate", args.rate, "--burstiness", 1e6] if args.rate > 0
            else ["--concurrency", args.concurrency])
    if args.warmup > 0:
        # Another seed, so the measured prompts are not the warm-up's.
        run_logged(common + ["--concurrency", 1 if args.rate > 0 else args.concurrency,
                             "-n", args.warmup, "--seed", args.seed + 1000],
                   work / f"omnibus_bench_warmup{tag}.log", args.tool_timeout, what="omnibus bench warm-up")
    out = work / f"omnibus_bench{tag}.json"
    samples = run_logged(common + load + ["-n", args.requests, "--seed", args.seed, "--json", out],
                         work / f"omnibus_bench{tag}.log", args.tool_timeout, what="omnibus bench",
                         server_pid=server.proc.pid)
    doc = json.loads(out.read_text())
    summary = doc["runs"][0]["summary"]
    records = [r for r in doc["runs"][0]["requests"] if r.get("ok")]
    figures = {key: summary[field] if stat is None else summary[field][stat]
               for key, _, (field, stat), _ in METRICS}
    figures["e2e_mean"] = summary["e2e_ms"]["mean"]
    # Its times are relative to the run's start; the run ends just before the process does.
    span = summary["duration_s"]
    window_end = samples[-1][0] - SAMPLE_INTERVAL_S / 2
    figures.update(
        requests_completed=summary["completed"], requests_failed=summary["failed"],
        errors=summary.get("errors", []), duration_s=summary["duration_s"],
        mean_input_tokens=statistics.fmean(r["input_tokens"] for r in records) if records else None,
        mean_output_tokens=statistics.fmean(r["output_tokens"] for r in records) if records else None,
        token_counts_from_server=all(r.get("usage_from_server") for r in records),
        tool_wall_s=samples[-1][0] - samples[0][0],
        cpu_while_measuring=cpu_report(samples, window_end - span, window_end),
        refill_delay_ms=refill_delays_ms([(r["sent_s"], r["done_s"]) for r in records], args.concurrency),
        first_token_groups=first_token_groups([r["first_token_s"] for r in records]),
        raw_json=str(out))
    figures["with_aiperf_end_points"] = recompute_like_aiperf(records)
    return figures


def recompute_like_aiperf(records):
    """omnibus's records with aiperf's end point: the last chunk carrying text, not the last byte."""
    tpots, last_text = [], []
    for r in records:
        chunks = r.get("chunk_times_s") or []
        if not chunks or r["output_tokens"] < 2:
            continue
        tpots.append((chunks[-1] - r["first_token_s"]) / (r["output_tokens"] - 1) * 1e3)
        last_text.append(chunks[-1])
    if not tpots:
        return None
    tpots.sort()
    duration = max(last_text) - min(r["sent_s"] for r in records)
    return {"tpot_mean": statistics.fmean(tpots), "tpot_p50": percentile(tpots, 50),
            "tpot_p90": percentile(tpots, 90),
            "output_tok_s": sum(r["output_tokens"] for r in records) / duration,
            "tail_after_last_text_ms_mean": statistics.fmean(
                (r["done_s"] - r["chunk_times_s"][-1]) * 1e3 for r in records if r.get("chunk_times_s"))}


def percentile(sorted_values, q):
    """Linear interpolation between closest ranks (numpy's default; omnibus and aiperf use it too)."""
    rank = q / 100 * (len(sorted_values) - 1)
    lo = int(rank)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (rank - lo)


def aiperf_requests(artifacts):
    """Wall-clock (sent, ended, first token or None) seconds of each of aiperf's measured
    requests, in send order."""
    spans = []
    with open(artifacts / "profile_export.jsonl") as f:
        for line in f:
            doc = json.loads(line)
            meta = doc.get("metadata", {})
            if meta.get("benchmark_phase") != "profiling" or not meta.get("request_start_ns"):
                continue
            start = meta["request_start_ns"] / 1e9
            ttft = (doc.get("metrics", {}).get("time_to_first_token") or {}).get("value")
            spans.append((start, (meta.get("request_end_ns") or meta["request_start_ns"]) / 1e9,
                          None if ttft is None else start + ttft / 1e3))
    return sorted(spans)


def first_token_groups(first_token_times, within_s=0.005):
    """{n: how many times n requests got their first token together (within 5 ms)}: requests
    whose prompts the server prefilled in one step arrive together."""
    times = sorted(first_token_times)
    if not times:
        return {}
    sizes, current = [], 1
    for prev, t in zip(times, times[1:]):
        if t - prev < within_s:
            current += 1
        else:
            sizes.append(current)
            current = 1
    sizes.append(current)
    return {str(n): sizes.count(n) for n in sorted(set(sizes))}


def refill_delays_ms(spans, concurrency):
    """Closed loop: how long after a response ended the next request went out, per request
    beyond the first `concurrency` (the k-th send after them took the slot the k-th end freed)."""
    sends = sorted(span[0] for span in spans)[concurrency:]
    ends = sorted(span[1] for span in spans)
    gaps = sorted((s - e) * 1e3 for s, e in zip(sends, ends))
    if not gaps:
        return None
    return {"mean": statistics.fmean(gaps), "p50": percentile(gaps, 50), "p90": percentile(gaps, 90)}


def run_aiperf(args, server, model_id, tokenizer, work, tag):
    hub_cache, repo_id = tokenizer
    artifacts = work / f"aiperf{tag}"
    if artifacts.exists():
        shutil.rmtree(artifacts)
    cmd = [args.aiperf_bin, "profile", "--model", model_id, "--url", server.url,
           "--endpoint-type", "chat", "--streaming", "--tokenizer", repo_id,
           "--synthetic-input-tokens-mean", args.input_len, "--synthetic-input-tokens-stddev", "0",
           "--output-tokens-mean", args.output_len, "--output-tokens-stddev", "0",
           "--extra-inputs", "ignore_eos:true", "--extra-inputs", "temperature:0",
           "--use-server-token-count",
           *(["--request-rate", args.rate, "--arrival-pattern", "constant"] if args.rate > 0 else
             ["--concurrency", args.concurrency,
              *(["--request-rate", args.aiperf_issue_rate, "--arrival-pattern", "constant"]
                if args.aiperf_issue_rate > 0 else [])]),
           "--request-count", args.requests, "--random-seed", args.seed,
           "--ui", "none", "--no-server-metrics", "--no-gpu-telemetry",
           "--artifact-dir", artifacts] + shlex.split(args.aiperf_args)
    if args.warmup > 0:
        cmd += ["--warmup-request-count", args.warmup]
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_CACHE=str(hub_cache),
               HF_HUB_DISABLE_TELEMETRY="1")
    samples = run_logged(cmd, work / f"aiperf{tag}.log", args.tool_timeout, env=env, what="aiperf profile",
                         server_pid=server.proc.pid)
    export = artifacts / "profile_export_aiperf.json"
    if not export.exists():
        found = sorted(str(p.relative_to(artifacts)) for p in artifacts.rglob("*.json"))
        raise ToolError(f"aiperf wrote no {export.name} under {artifacts} (found: {found}); "
                        f"log: {work / f'aiperf{tag}.log'}")
    doc = json.loads(export.read_text())

    def metric(name, stat):
        m = doc.get(name)
        if not isinstance(m, dict) or m.get(stat) is None:
            raise ToolError(f"{export} has no {name}.{stat}; this script reads aiperf 0.13's export")
        return m[stat]

    figures = {key: metric(name, stat) for key, _, _, (name, stat) in METRICS}
    figures["e2e_mean"] = metric("request_latency", "avg")
    spans = aiperf_requests(artifacts)
    completed = doc.get("request_count", {}).get("avg")
    errors = doc.get("error_request_count", {}).get("avg", 0) or 0
    figures.update(
        requests_completed=int(completed) if completed is not None else None,
        requests_failed=int(errors), errors=doc.get("error_summary") or [],
        duration_s=metric("benchmark_duration", "avg"),
        mean_input_tokens=metric("input_sequence_length", "avg"),
        mean_output_tokens=metric("output_sequence_length", "avg"),
        token_counts_from_server=True, tool_wall_s=samples[-1][0] - samples[0][0],
        cpu_while_measuring=cpu_report(samples, spans[0][0], max(s[1] for s in spans)) if spans else {},
        refill_delay_ms=refill_delays_ms(spans, args.concurrency),
        first_token_groups=first_token_groups([s[2] for s in spans if s[2] is not None]),
        raw_json=str(export))
    return figures


def server_log_completions(log_path):
    """(ttft_ms, duration_ms) of every completed chat request the server logged, in log order."""
    out = []
    for line in Path(log_path).read_text(errors="replace").splitlines():
        if "/v1/chat/completions 200" not in line:
            continue
        m = re.search(r"ttft_ms=([\d.]+) duration_ms=([\d.]+)", line)
        if m:
            out.append((float(m.group(1)), float(m.group(2))))
    return out


def server_side_figures(log_path, lines_before, measured):
    """The server's own view of a tool's measured requests: the last `measured` completions
    logged since `lines_before` (warm-up requests complete before the measured ones start)."""
    done = server_log_completions(log_path)[lines_before:][-measured:]
    if not done:
        return None
    return {"requests": len(done), "ttft_mean_ms": statistics.fmean(t for t, _ in done),
            "e2e_mean_ms": statistics.fmean(d for _, d in done)}


# ---------------------------------------------------------------- report

def median_figures(rounds):
    """Per-key median over the rounds of one tool (numbers, and dicts of numbers, only)."""
    rounds = [r for r in rounds if r]
    if len(rounds) <= 1:
        return rounds[0] if rounds else None
    out = {}
    for key in rounds[0]:
        values = [r.get(key) for r in rounds]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            out[key] = statistics.median(values)
        elif all(isinstance(v, dict) for v in values):
            out[key] = median_figures(values)
    return out


def compare(ours, theirs, tolerance):
    rows = []
    for key, label, _, _ in METRICS:
        a, b = ours[key], theirs[key]
        ratio = a / b if b else None
        rows.append({"metric": key, "label": label, "omnibus_bench": a, "aiperf": b, "ratio": ratio,
                     "flagged": ratio is None or abs(ratio - 1) > tolerance})
    return rows


def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}"


def print_report(rows, ours, theirs, args, notes):
    print()
    load = (f"open loop, one request every {1 / args.rate:g} s" if args.rate > 0 else
            f"{args.concurrency} user{'' if args.concurrency == 1 else 's'} (closed loop)")
    print(f"omnibus bench vs aiperf: {args.requests} requests, {load}, "
          f"~{args.input_len} tokens in, {args.output_len} out, streaming chat"
          + (f", median of {args.rounds} rounds" if args.rounds > 1 else ""))
    print(f"{'metric':<16} {'omnibus bench':>14} {'aiperf':>12} {'ratio':>7}")
    for r in rows:
        flag = f"  <-- differs by more than {args.tolerance:.0%}" if r["flagged"] else ""
        print(f"{r['label']:<16} {fmt(r['omnibus_bench']):>14} {fmt(r['aiperf']):>12} "
              f"{fmt(r['ratio'], 3):>7}{flag}")
    print("TPOT is aiperf's inter_token_latency (ITL); chunk gap (ms) is omnibus bench's ITL and "
          "aiperf's inter_chunk_latency.")
    print()
    print("workload check (should match):")
    for key, label, digits in (("requests_completed", "requests completed", 0),
                               ("mean_input_tokens", "mean input tokens", 1),
                               ("mean_output_tokens", "mean output tokens", 1),
                               ("duration_s", "duration (s)", 1)):
        print(f"  {label:<22} {fmt(ours.get(key), digits):>10} {fmt(theirs.get(key), digits):>10}")
    print(f"CPU while the measured requests ran (cores of {os.cpu_count()}):")
    for key, label in (("load_generator_cores", "load generator"), ("server_cores", "server"),
                       ("other_processes_cores", "other processes")):
        print(f"  {label:<22} {fmt((ours.get('cpu_while_measuring') or {}).get(key), 2):>10} "
              f"{fmt((theirs.get('cpu_while_measuring') or {}).get(key), 2):>10}")
    closed_loop = args.rate == 0
    if closed_loop and args.concurrency > 1 and ours.get("refill_delay_ms") and theirs.get("refill_delay_ms"):
        a, b = ours["refill_delay_ms"], theirs["refill_delay_ms"]
        print(f"response end -> next request sent (ms, p50 / p90): {fmt(a['p50'], 2)} / {fmt(a['p90'], 2)}"
              f"  vs  {fmt(b['p50'], 2)} / {fmt(b['p90'], 2)}")
    if (args.rate > 0 or args.concurrency > 1) and args.rounds == 1:
        def groups(figs):
            return ", ".join(f"{n}x{count}" for n, count in (figs.get("first_token_groups") or {}).items())
        print(f"requests prefilled together (size x times): {groups(ours)}  vs  {groups(theirs)}")
    # Each tool against the server's own clock: under batching the two tools can
    # offer the server different load, and this shows whether a difference
    # between them is the server's behaviour (both tools agree with its log) or
    # a measurement difference (one does not).
    if ours.get("server_log") and theirs.get("server_log"):
        print("each tool against the server's own log of the same requests (mean ms, tool / server):")
        for key, label in (("ttft_mean", "TTFT"), ("e2e_mean", "end-to-end")):
            server_key = key + "_ms"
            cells = []
            for figs in (ours, theirs):
                tool_v, server_v = figs.get(key), figs["server_log"].get(server_key)
                ratio = tool_v / server_v if tool_v and server_v else None
                cells.append(f"{fmt(tool_v)} / {fmt(server_v)} = {fmt(ratio, 3)}")
            print(f"  {label:<12} omnibus bench {cells[0]:<28} aiperf {cells[1]}")
    like = ours.get("with_aiperf_end_points")
    if like:
        print(f"omnibus recomputed ending at the last text chunk (aiperf's end point): TPOT mean "
              f"{fmt(like['tpot_mean'], 2)} ms, p50 {fmt(like['tpot_p50'], 2)}, p90 {fmt(like['tpot_p90'], 2)}; "
              f"{fmt(like['output_tok_s'])} tok/s (last text chunk -> last byte: "
              f"{fmt(like['tail_after_last_text_ms_mean'], 2)} ms)")
    for note in notes:
        print(f"note: {note}")


# ---------------------------------------------------------------- main

def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Run `omnibus bench` and aiperf against the same `omnibus serve` and workload, "
                    "and compare TTFT, TPOT (aiperf: ITL) and output tokens/s.",
        epilog="See bench/README.md for the metric definitions and how the two tools differ.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--omnibus-bin", type=Path, default=DEFAULT_OMNIBUS, help="the omnibus binary")
    p.add_argument("-m", "--model", type=Path, default=DEFAULT_MODEL, help="GGUF model to serve")
    p.add_argument("--port", type=int, default=0, help="server port (0: a free one)")
    p.add_argument("-t", "--threads", type=int, default=2, help="server threads")
    p.add_argument("--input-len", type=int, default=128, help="prompt tokens per request (user text)")
    p.add_argument("--output-len", type=int, default=64, help="output tokens per request (ignore_eos)")
    p.add_argument("-c", "--concurrency", type=int, default=4, help="closed-loop users")
    p.add_argument("--rate", type=float, default=0.0,
                   help="open loop instead: both tools send one request every 1/R s (constant arrivals), "
                        "so the server sees the same schedule from both (0: closed loop of -c users)")
    p.add_argument("-n", "--requests", type=int, default=40, help="measured requests per tool")
    p.add_argument("--warmup", type=int, default=4, help="discarded warm-up requests per tool")
    p.add_argument("--rounds", type=int, default=1,
                   help="run both tools this many times, alternating which goes first; report medians")
    p.add_argument("--seed", type=int, default=1, help="seed of both tools' prompts")
    p.add_argument("--tolerance", type=float, default=0.10, help="flag ratios further than this from 1")
    p.add_argument("--prefix-cache", action="store_true",
                   help="leave the server's prefix cache on (off by default; see the module docstring)")
    p.add_argument("--serve-args", default="",
                   help="extra arguments for omnibus serve, as one string: --serve-args='--max-seqs 8'")
    p.add_argument("--aiperf-bin", default="aiperf", help="the aiperf command")
    p.add_argument("--aiperf-issue-rate", type=float, default=200.0,
                   help="also pass aiperf --request-rate R --arrival-pattern constant: it then checks for "
                        "a free concurrency slot every 1/R s instead of busy-polling a CPU core "
                        "(0: plain --concurrency, which spins)")
    p.add_argument("--aiperf-args", default="",
                   help="extra arguments for aiperf profile, as one string: --aiperf-args='--workers-max 1'")
    p.add_argument("--tokenizer-cache", type=Path, default=DEFAULT_TOKENIZER_CACHE,
                   help="where aiperf's tokenizer (made from the GGUF) is kept")
    p.add_argument("--quiet-wait", type=float, default=60.0,
                   help="before each tool run, wait up to this many seconds for other processes to "
                        f"use under {OTHER_LOAD_WARN_CORES} cores (0: do not wait)")
    p.add_argument("--json", type=Path, default=DEFAULT_JSON, help="write both tools' figures here")
    p.add_argument("--work-dir", type=Path, default=DEFAULT_WORK_DIR,
                   help="logs, omnibus bench's JSON and aiperf's artifacts")
    p.add_argument("--startup-timeout", type=float, default=120.0, help="seconds to wait for /health")
    p.add_argument("--tool-timeout", type=float, default=1800.0, help="seconds allowed per tool run")
    p.add_argument("--check", action="store_true", help="exit with status 1 when a metric is flagged")
    args = p.parse_args(argv)
    for name in ("input_len", "output_len", "concurrency", "requests", "rounds", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.output_len < 2:
        p.error("--output-len must be >= 2 (TPOT needs two tokens)")
    if args.warmup < 0:
        p.error("--warmup must be >= 0")
    if args.rate < 0:
        p.error("--rate must be >= 0")
    return args


def _resolve(path):
    """A relative path names a file under the current directory, else under the repository root."""
    if path.is_absolute() or path.exists():
        return path.resolve()
    return REPO_ROOT / path


def preflight(args):
    args.omnibus_bin, args.model = _resolve(args.omnibus_bin), _resolve(args.model)
    if not (args.omnibus_bin.is_file() and os.access(args.omnibus_bin, os.X_OK)):
        raise ToolError(f"no omnibus binary at {args.omnibus_bin} (build it, or pass --omnibus-bin)")
    if not args.model.is_file():
        raise ToolError(f"no model at {args.model} (pass -m/--model)")
    aiperf = shutil.which(args.aiperf_bin)
    if aiperf is None:
        raise ToolError(f"'{args.aiperf_bin}' is not on PATH: pip install aiperf, or pass --aiperf-bin")
    args.aiperf_bin = aiperf
    try:
        from importlib.metadata import version
        return version("aiperf")
    except Exception:  # noqa: BLE001 - the version is only recorded
        return None


def main(argv=None):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, interrupt_on_sigterm)
    # No network here: transformers (in this process) must not try the hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        aiperf_version = preflight(args)
        args.work_dir.mkdir(parents=True, exist_ok=True)
        load_start = os.getloadavg()
        print(f"tokenizer for aiperf from {args.model.name} ...", file=sys.stderr)
        hub, repo_id, snapshot, how = prepare_tokenizer(args.model, args.tokenizer_cache)
        print(f"  {repo_id} in {hub} ({how})", file=sys.stderr)

        port = args.port or free_port()
        serve_cmd = [str(args.omnibus_bin), "serve", "-m", str(args.model), "--port", str(port),
                     "-t", str(args.threads)]
        if not args.prefix_cache:
            serve_cmd.append("--no-prefix-cache")
        serve_cmd += shlex.split(args.serve_args)
        notes = []
        per_round = {"omnibus_bench": [], "aiperf": []}
        print(f"starting: {shlex.join(serve_cmd)}", file=sys.stderr)
        with Server(serve_cmd, port, args.work_dir / "server.log", args.startup_timeout) as server:
            model_id = server.model_id()
            note = check_tokenizer(snapshot, server.url)
            if note:
                notes.append(note)
                print(f"warning: {note}", file=sys.stderr)
            for i in range(args.rounds):
                tag = f"_round{i + 1}" if args.rounds > 1 else ""
                order = ["omnibus_bench", "aiperf"] if i % 2 == 0 else ["aiperf", "omnibus_bench"]
                for tool in order:
                    if args.quiet_wait > 0:
                        waited, other = wait_for_quiet(args.quiet_wait, server.proc.pid)
                        if other is not None and other >= OTHER_LOAD_WARN_CORES:
                            print(f"warning: other processes still use {other:.2f} cores after "
                                  f"{waited:.0f} s of waiting; measuring anyway", file=sys.stderr)
                    print(f"round {i + 1}/{args.rounds}: {tool.replace('_', ' ')} "
                          f"({args.warmup} warm-up + {args.requests} requests) ...", file=sys.stderr)
                    logged_before = len(server_log_completions(server.log_path))
                    if tool == "omnibus_bench":
                        figures = run_omnibus_bench(args, server, model_id, args.work_dir, tag)
                    else:
                        figures = run_aiperf(args, server, model_id, (hub, repo_id), args.work_dir, tag)
                    figures["server_log"] = server_side_figures(server.log_path, logged_before, args.requests)
                    figures["order_in_round"] = order.index(tool)
                    per_round[tool].append(figures)
                    other = (figures.get("cpu_while_measuring") or {}).get("other_processes_cores")
                    if other is not None and other > OTHER_LOAD_WARN_CORES:
                        notes.append(f"{tool} round {i + 1}: other processes kept {other:.2f} cores busy "
                                     f"while it measured: its figures reflect that load too")
                    if figures["requests_failed"] or figures["requests_completed"] != args.requests:
                        notes.append(f"{tool} round {i + 1}: {figures['requests_completed']} of "
                                     f"{args.requests} completed, {figures['requests_failed']} failed "
                                     f"{figures['errors']}")
        ours, theirs = median_figures(per_round["omnibus_bench"]), median_figures(per_round["aiperf"])
        for tool, figs in (("omnibus bench", ours), ("aiperf", theirs)):
            if figs.get("mean_output_tokens") not in (None, float(args.output_len), args.output_len):
                notes.append(f"{tool}: mean output tokens {figs['mean_output_tokens']:.1f}, not {args.output_len}")
        rows = compare(ours, theirs, args.tolerance)
        load_end = os.getloadavg()
        print_report(rows, ours, theirs, args, notes)

        report = {
            "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
            "server_command": serve_cmd, "model_id": model_id, "aiperf_version": aiperf_version,
            "aiperf_tokenizer": {"repo_id": repo_id, "hf_hub_cache": str(hub), "built_with": how},
            "machine": {"cpus": os.cpu_count(), "load_average_start": load_start, "load_average_end": load_end},
            "tolerance": args.tolerance, "comparison": rows,
            "omnibus_bench": ours, "aiperf": theirs, "rounds": per_round, "notes": notes,
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nwrote {args.json} (logs and raw outputs in {args.work_dir})")
        return 1 if args.check and any(r["flagged"] for r in rows) else 0
    except ToolError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        for proc in list(live_processes):
            kill_group(proc)


if __name__ == "__main__":
    sys.exit(main())
