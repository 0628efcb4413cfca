#!/usr/bin/env python3
"""Speculative decoding side by side: omnibus `--draft ngram` against
llama.cpp's prompt lookup (llama-cpp-python's LlamaPromptLookupDecoding),
each against its own plain decoding, on the same prompts and threads.

Workloads are chat requests whose answers copy their input to different
degrees (quoting a paragraph, editing code, summarising, free writing).
Each is rendered once in the model's ChatML form and given to both engines
as the same text; both decode greedily until end of turn or --max-tokens.
Decode tokens/s = (generated - 1) / (last token - first token), so the
prompt's prefill is out of it. omnibus: a fresh `omnibus run` process per
repetition (its --stats-json also gives steps and accepted guesses).
llama.cpp: one child process holding two Llama objects, with and without
the lookup draft model. Medians over --reps repetitions (after a discarded
warm-up) go to a table and to bench/results/speculative_<timestamp>.json.

This is a benchmark, not a test: nothing fails on slow numbers. It prints
whether each engine's text was the same with and without guesses (it must
be for omnibus; tests/ check that exactly).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = REPO_ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_OMNIBUS = REPO_ROOT / "build" / "src" / "cli" / "omnibus"
RESULTS_DIR = REPO_ROOT / "bench" / "results"

PARAGRAPH = ("The city council met on Tuesday to discuss the new budget. Members agreed to increase funding for "
             "public parks and libraries, while reducing spending on road maintenance. The mayor said the changes "
             "would make the city a better place to live for families and young people. A final vote is expected "
             "next month.")
CODE = '''def add(a, b):
    """Return the sum of a and b."""
    return a + b


def total(values):
    result = 0
    for value in values:
        result = add(result, value)
    return result
'''
WORKLOADS = {
    "quote": f"Here is a paragraph:\n\n\"{PARAGRAPH}\"\n\nRepeat the paragraph above exactly, word for word.",
    "code-edit": f"Rename the function add to plus in this Python code and show the whole code:\n\n{CODE}",
    "summarise": f"Summarise this text in two sentences:\n\n{PARAGRAPH}",
    "free": "Write a short story about a dragon who learns to paint.",
}


def chatml(message):
    return f"<|im_start|>user\n{message}<|im_end|>\n<|im_start|>assistant\n"


def median(values):
    return statistics.median(values) if values else float("nan")


def alternate(reps, once):
    """once(draft) for draft off and on, reps + 1 times in alternating order;
    the first round is a warm-up. Returns (plain runs, draft runs)."""
    runs = {False: [], True: []}
    for rep in range(reps + 1):
        for draft in (False, True) if rep % 2 == 0 else (True, False):
            result = once(draft)
            if rep > 0:
                runs[draft].append(result)
    return runs[False], runs[True]


# ---------------------------------------------------------------- omnibus

def omnibus_once(args, text, draft):
    with tempfile.TemporaryDirectory() as tmp:
        stats_path = Path(tmp) / "stats.json"
        cmd = [str(args.omnibus), "run", "-m", str(args.model), "-p", text, "-n", str(args.max_tokens),
               "-t", str(args.threads), "--temp", "0", "--stats-json", str(stats_path)]
        if draft:
            cmd += ["--draft", "ngram", "--draft-max", str(args.draft_max)]
            if args.draft_all:
                cmd.append("--draft-all")
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not stats_path.exists():
            raise SystemExit(f"omnibus failed ({proc.returncode}): {' '.join(cmd[:6])} ...\n{proc.stderr[-2000:]}")
        stats = json.loads(stats_path.read_text())
        stats["text"] = proc.stdout
        return stats


def bench_omnibus(args, texts):
    out = {}
    for name, text in texts.items():
        plain, spec = alternate(args.reps, lambda draft: omnibus_once(args, text, draft))
        out[name] = {
            "plain_tokens_per_s": median([s["decode_tokens_per_s"] for s in plain]),
            "draft_tokens_per_s": median([s["decode_tokens_per_s"] for s in spec]),
            "speedups": [s["decode_tokens_per_s"] / p["decode_tokens_per_s"] for s, p in zip(spec, plain)],
            "generated_tokens": spec[0]["generated_tokens"],
            "decode_steps": spec[0]["decode_steps"],
            "drafted_tokens": spec[0]["drafted_tokens"],
            "accepted_tokens": spec[0]["accepted_tokens"],
            "same_text": all(s["text"] == plain[0]["text"] for s in spec + plain),
            "text": plain[0]["text"],
        }
    return out


# ---------------------------------------------------------------- llama.cpp

def llama_child(config_path):
    """Child process: times llama.cpp with and without prompt lookup; one JSON line."""
    import llama_cpp
    from llama_cpp.llama_speculative import LlamaPromptLookupDecoding
    cfg = json.loads(Path(config_path).read_text())

    def open_model(draft):
        return llama_cpp.Llama(model_path=cfg["model"], n_ctx=2048, n_threads=cfg["threads"],
                               n_threads_batch=cfg["threads"], flash_attn=True, verbose=False, seed=0,
                               draft_model=LlamaPromptLookupDecoding(num_pred_tokens=cfg["draft_max"])
                               if draft else None)

    models = {False: open_model(False), True: open_model(True)}
    eos = {models[False].token_eos()}
    for name in ("<|im_end|>", "<|endoftext|>"):
        ids = models[False].tokenize(name.encode(), add_bos=False, special=True)
        if len(ids) == 1:
            eos.add(ids[0])

    def once(llm, text):
        llm.reset()
        tokens = llm.tokenize(text.encode(), add_bos=False, special=True)
        out, times = [], []
        for token in llm.generate(tokens, temp=0.0, top_k=1, repeat_penalty=1.0, reset=True):
            times.append(time.perf_counter())
            if token in eos:
                break
            out.append(token)
            if len(out) >= cfg["max_tokens"]:
                break
        rate = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 else float("nan")
        return {"tokens_per_s": rate, "tokens": out}

    result = {}
    for name, text in cfg["texts"].items():
        plain, spec = alternate(cfg["reps"], lambda draft: once(models[draft], text))
        result[name] = {
            "plain_tokens_per_s": median([r["tokens_per_s"] for r in plain]),
            "draft_tokens_per_s": median([r["tokens_per_s"] for r in spec]),
            "speedups": [s["tokens_per_s"] / p["tokens_per_s"] for s, p in zip(spec, plain)],
            "generated_tokens": len(plain[0]["tokens"]),
            "same_tokens": all(r["tokens"] == plain[0]["tokens"] for r in spec + plain),
            "text": models[False].detokenize(plain[0]["tokens"]).decode("utf-8", "replace"),
        }
    print(json.dumps(result))


def bench_llamacpp(args, texts):
    config = {"model": str(args.model), "threads": args.threads, "reps": args.reps, "texts": texts,
              "max_tokens": args.max_tokens, "draft_max": args.draft_max}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(config, f)
    try:
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--llama-child", f.name],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"llama.cpp child failed:\n{proc.stderr[-3000:]}")
    finally:
        os.unlink(f.name)
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- report

def print_table(omni, llama):
    head = (f"{'workload':<10} {'tokens':>6} {'omnibus':>8} {'+ngram':>8} {'speedup':>8} {'accepted':>9} "
            f"{'steps':>6} {'llama':>7} {'+lookup':>8} {'speedup':>8} {'ngram/lookup':>13}")
    print(head)
    print("-" * len(head))
    for name, o in omni.items():
        l = llama[name]
        acc = f"{o['accepted_tokens']}/{o['drafted_tokens']}"
        print(f"{name:<10} {o['generated_tokens']:>6} {o['plain_tokens_per_s']:>8.1f} {o['draft_tokens_per_s']:>8.1f} "
              f"{median(o['speedups']):>7.2f}x {acc:>9} {o['decode_steps']:>6} {l['plain_tokens_per_s']:>7.1f} "
              f"{l['draft_tokens_per_s']:>8.1f} {median(l['speedups']):>7.2f}x "
              f"{o['draft_tokens_per_s'] / l['draft_tokens_per_s']:>12.2f}x")
    print("\ntokens/s are decode medians; speedup = median of each repetition's with/without pair; steps = forward "
          "calls after the prompt (one per token without guesses).")
    for name, o in omni.items():
        l = llama[name]
        print(f"{name}: omnibus same text with and without guesses: {o['same_text']}; "
              f"llama.cpp same tokens: {l['same_tokens']}; engines agree: {o['text'].strip() == l['text'].strip()}")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-m", "--model", type=Path, default=DEFAULT_MODEL)
    p.add_argument("-t", "--threads", type=int, default=os.cpu_count())
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--draft-max", type=int, default=8, help="guesses per step, both engines")
    p.add_argument("--draft-all", action="store_true",
                   help="omnibus runs every guess (default: only as many as its policy finds pay)")
    p.add_argument("--omnibus", type=Path, default=DEFAULT_OMNIBUS)
    p.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated subset")
    return p.parse_args()


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--llama-child":
        return llama_child(sys.argv[2])
    args = parse_args()
    texts = {name: chatml(WORKLOADS[name]) for name in args.workloads.split(",")}
    started = time.strftime("%Y%m%d-%H%M%S")
    omni = bench_omnibus(args, texts)
    llama = bench_llamacpp(args, texts)
    print_table(omni, llama)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    out = RESULTS_DIR / f"speculative_{started}.json"
    report = {"started": started, "model": str(args.model), "threads": args.threads, "reps": args.reps,
              "max_tokens": args.max_tokens, "draft_max": args.draft_max, "draft_all": args.draft_all,
              "omnibus": omni, "llama_cpp": llama}
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"\nwrote {out.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
