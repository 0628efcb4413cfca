#!/usr/bin/env python3
"""Golden data for any GGUF file of a model whose golden data is committed,
from llama.cpp's library directly (for machines without llama-cpp-python).

Runs llama_golden (llama_golden.cpp beside this file) on the token
sequences of an existing golden directory (the file must share its
tokenizer: a requantization of SmolLM2 or Gemma 3) and writes
teacher_forced.json, perplexity.json and (unless NO_GREEDY=1) greedy.json
in tools/make_golden.py's format to OUT_DIR. golden_test then checks
omnibus against them when run from a directory whose tests/golden (or
tests/golden/gemma3) is OUT_DIR. docs/correctness.md ("Q2_K, Q3_K, IQ4_NL
and IQ4_XS against llama.cpp") has the commands.

Build llama_golden against a llama.cpp source tree L built in L/build
(libllama and ggml; e.g. after building llama-quantize there):
  g++ -O2 -std=c++17 -I$L/include -I$L/ggml/include llama_golden.cpp \
      -o /tmp/llama_golden $L/build/src/libllama.a $L/build/ggml/src/libggml.a \
      $L/build/ggml/src/libggml-cpu.a $L/build/ggml/src/libggml-base.a -fopenmp -lpthread -ldl

Usage: LLG_BIN=/tmp/llama_golden python3 make_golden_lib.py MODEL SRC_GOLDEN_DIR OUT_DIR
(LLG_FA_OFF=1: llama.cpp with flash attention off, to see its own noise.)
"""
import json
import math
import os
import subprocess
import sys
from pathlib import Path


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model, src_dir, out_dir = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    out_dir.mkdir(parents=True, exist_ok=True)
    tf = json.load(open(src_dir / "teacher_forced.json"))
    pp = json.load(open(src_dir / "perplexity.json"))
    gr = json.load(open(src_dir / "greedy.json"))
    greedy = os.environ.get("NO_GREEDY") != "1"
    lines = ["T " + s["name"] + " " + " ".join(map(str, s["tokens"])) for s in tf["sequences"]]
    cs = pp["chunk_size"]
    lines += ["P " + " ".join(map(str, pp["tokens"][c * cs:(c + 1) * cs])) for c in range(pp["n_chunks"])]
    if greedy:
        lines += [f"G p{i} " + " ".join(map(str, p["prompt_tokens"])) for i, p in enumerate(gr["prompts"])]
    binary = os.environ.get("LLG_BIN", "/tmp/llama_golden")
    out = subprocess.run([binary, model], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True).stdout.splitlines()
    it = iter(out)

    def numbers(kind):
        fields = next(it).split()
        assert fields[0] == kind, (kind, fields[:2])
        return fields[1:]

    for s in tf["sequences"]:
        s["argmax"] = list(map(int, numbers("A")))
        s["top2_gap_milli"] = list(map(int, numbers("GAP")))
    pp["chunk_mean_nll"] = [float(numbers("NLL")[0]) for _ in range(pp["n_chunks"])]
    pp["ppl"] = math.exp(sum(pp["chunk_mean_nll"]) / pp["n_chunks"])
    if greedy:
        for p in gr["prompts"]:
            p["generated_tokens"] = list(map(int, numbers("GEN")))
            p["top2_gap_milli"] = list(map(int, numbers("GAP")))
    settings = "llama.cpp linked directly (llama_golden.cpp)" + (", flash attention off" if os.environ.get("LLG_FA_OFF") else "")
    for d in (tf, pp, gr):
        d["model_file"] = Path(model).name
        d["llama_cpp_version"] = settings
    json.dump(tf, open(out_dir / "teacher_forced.json", "w"))
    json.dump(pp, open(out_dir / "perplexity.json", "w"))
    if greedy:
        json.dump(gr, open(out_dir / "greedy.json", "w"))
    print(f"{Path(model).name}: llama.cpp ppl {pp['ppl']:.4f}")


if __name__ == "__main__":
    main()
