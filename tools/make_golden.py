#!/usr/bin/env python3
"""Write golden reference data from llama.cpp for omnibus's correctness tests.

The outputs are committed under tests/golden/, so the tests never need
llama.cpp. Three files are written (all small JSON, token ids as ints):

  teacher_forced.json  for each text in tools/golden_texts/NN_*.txt: its
                       tokens (at most 512) and, at every position i, the
                       argmax of the logits there (the predicted token i+1).
  perplexity.json      tools/golden_texts/perplexity.txt cut into chunks of
                       256 tokens, each evaluated from a fresh context; the
                       mean NLL per chunk and ppl = exp(mean NLL).
  greedy.json          20 prompts and exactly 64 greedy (argmax) tokens
                       each; EOS does not stop generation (like --ignore-eos).

Every file records the llama_cpp version, the model's sha256, n_threads
and the llama.cpp context settings used. They are llama.cpp's own defaults
on a CPU: f16 K and V cache, n_batch = n_ubatch = 512, and flash attention
"auto", which llama.cpp resolves to enabled on the CPU backend. (llama-cpp-
python would force it off unless asked, so the script asks for it on.)

Near ties: a correct engine's logits differ from llama.cpp's by a fraction
of a logit, so where the top two logits are close it may pick the other
token. Every argmax therefore comes with the gap between llama.cpp's top
two logits in thousandths of a logit (top2_gap_milli). Measured on these
4,023 teacher-forced positions, against two other correct evaluations
(llama.cpp with flash attention off; a float64 numpy forward pass over the
dequantized weights): 3.5-3.7% of argmaxes differ, always where the gap is
under 0.41 logits, and ppl differs by under 0.5%. Suggested checks:
  teacher forced: every position with top2_gap_milli >= 500 matches, and
                  at least 95% of all positions match;
  greedy:         compare until the first differing token; there, the gap
                  must be < 500 (a legitimate tie), after it stop. (Flash
                  attention off diverges within 64 tokens on 15 of the 20
                  prompts, at gaps of 0.008 to 0.29.)

Usage: python3 tools/make_golden.py [--model PATH] [--threads 2] [--out-dir DIR]
  Gemma 3: --model models/gemma-3-270m-q4_k_m.gguf --out-dir tests/golden/gemma3
  llama.cpp's q8_0 K/V cache (the reference for omnibus's --kv-type q8_0,
  whose scores quantize Q as llama.cpp's do):
           --kv-type q8_0 --out-dir tests/golden/kv_q8_0
  llama.cpp's q4_0 K/V cache (Hadamard-rotated, as omnibus's --kv-type q4_0):
           --kv-type q4_0 --out-dir tests/golden/kv_q4_0
           (Gemma 3: --out-dir tests/golden/gemma3/kv_q4_0; its
           perplexity.json and teacher_forced.json are committed)
"""

import argparse
import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = REPO_ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXTS_DIR = REPO_ROOT / "tools" / "golden_texts"
OUT_DIR = REPO_ROOT / "tests" / "golden"

MAX_SEQ_TOKENS = 512
PPL_CHUNK = 256
GREEDY_TOKENS = 64
N_CTX = 1024

SYSTEM_PROMPT = ("You are a helpful AI assistant named SmolLM, "
                 "trained by Hugging Face")

# (kind, text). "chat" texts are wrapped in SmolLM2's ChatML template.
GREEDY_PROMPTS = [
    ("raw", "The capital of France is"),
    ("raw", "Once upon a time, in a small village by the sea,"),
    ("raw", "The three primary colours are"),
    ("raw", "Water boils at a temperature of"),
    ("raw", "1, 2, 3, 4, 5,"),
    ("raw", "The best way to learn a new language is"),
    ("raw", "Dear Sir or Madam,\n\nI am writing to"),
    ("code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
    ("code", "#include <stdio.h>\n\nint main(void) {\n"),
    ("code", "SELECT name, COUNT(*) AS orders\nFROM customers\n"),
    ("code", "// Sort an array of integers in JavaScript\nfunction sortNumbers(arr) {"),
    ("chat", "What is the capital of France?"),
    ("chat", "Write a haiku about autumn leaves."),
    ("chat", "Explain in two sentences what a CPU cache is."),
    ("chat", "Give me three tips for sleeping better."),
    ("chat", "How many legs does a spider have?"),
    ("chat", "Translate 'good morning' into Spanish and German."),
    ("chat", "Write a Python function that reverses a string."),
    ("chat", "What is 12 times 7?"),
    ("chat", "Hi!"),
]


def chatml(message):
    return (f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n"
            f"<|im_start|>user\n{message}<|im_end|>\n"
            f"<|im_start|>assistant\n")


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --kv-type names and their ggml type ids (llama_cpp.GGML_TYPE_*).
KV_TYPES = {"q8_0": 8, "q4_0": 2}


class Reference:
    """Wraps one llama_cpp.Llama; every evaluation starts from an empty KV."""

    def __init__(self, model_path, n_threads, flash_attn=True, kv_type=None):
        import llama_cpp
        self.version = llama_cpp.__version__
        cache = {} if kv_type is None else {"type_k": kv_type, "type_v": kv_type}
        self.llm = llama_cpp.Llama(model_path=str(model_path), n_ctx=N_CTX,
                                   n_batch=512, logits_all=True,
                                   flash_attn=flash_attn, **cache,
                                   n_threads=n_threads,
                                   n_threads_batch=n_threads,
                                   verbose=False, seed=0)
        flag = self.llm.metadata.get("tokenizer.ggml.add_bos_token", "false")
        self.add_bos = flag.lower() == "true"
        params = self.llm.context_params
        self.settings = {
            "n_threads": n_threads, "n_ctx": N_CTX,
            "n_batch": params.n_batch, "n_ubatch": params.n_ubatch,
            "type_k": int(params.type_k), "type_v": int(params.type_v),
            "flash_attn": int(params.flash_attn_type)
            == llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
            "add_bos": self.add_bos,
        }

    def tokenize(self, text):
        return self.llm.tokenize(text.encode("utf-8"), add_bos=self.add_bos,
                                 special=True)

    def logits(self, tokens):
        """float32 [len(tokens), vocab] logits from a fresh context."""
        self.llm.reset()  # eval() then drops every KV cell past n_tokens=0
        self.llm.eval(tokens)
        return np.array(self.llm.scores[:len(tokens)], dtype=np.float32)

    def greedy(self, prompt_tokens, n_new):
        """n_new argmax tokens and the top-2 gap (milli-logits) at each."""
        self.llm.reset()
        self.llm.eval(prompt_tokens)
        tokens, gaps = [], []
        for step in range(n_new):
            row = self.llm.scores[self.llm.n_tokens - 1]
            tokens.append(int(np.argmax(row)))
            gaps.append(top2_gap_milli(row[None, :])[0])
            if step + 1 < n_new:
                self.llm.eval([tokens[-1]])
        return tokens, gaps


def top2_gap_milli(logits):
    """Per row: (largest - second largest logit) * 1000, rounded to int."""
    top2 = np.partition(np.asarray(logits, dtype=np.float64), -2, axis=-1)
    gap = top2[:, -1] - top2[:, -2]
    return [int(round(g * 1000)) for g in gap]


def log_softmax64(logits):
    x = logits.astype(np.float64)
    x -= x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def teacher_forced(ref):
    sequences = []
    files = sorted(p for p in TEXTS_DIR.glob("[0-9][0-9]_*.txt"))
    for path in files:
        tokens = ref.tokenize(path.read_text(encoding="utf-8"))[:MAX_SEQ_TOKENS]
        logits = ref.logits(tokens)
        argmax = [int(i) for i in logits.argmax(axis=-1)]
        gaps = top2_gap_milli(logits)
        sequences.append({"name": path.stem, "tokens": tokens,
                          "argmax": argmax, "top2_gap_milli": gaps})
        close = sum(g < 100 for g in gaps)
        print(f"  {path.stem}: {len(tokens)} tokens, {close} gaps < 0.1")
    return {"sequences": sequences}


def perplexity(ref):
    text = (TEXTS_DIR / "perplexity.txt").read_text(encoding="utf-8")
    all_tokens = ref.tokenize(text)
    n_chunks = len(all_tokens) // PPL_CHUNK
    tokens = all_tokens[:n_chunks * PPL_CHUNK]
    chunk_nll = []
    for c in range(n_chunks):
        chunk = tokens[c * PPL_CHUNK:(c + 1) * PPL_CHUNK]
        logp = log_softmax64(ref.logits(chunk))
        targets = np.asarray(chunk[1:])
        nll = -logp[np.arange(PPL_CHUNK - 1), targets]
        chunk_nll.append(float(nll.mean()))
    # Every chunk scores the same count (255), so the mean of chunk means is
    # the mean over all scored tokens.
    ppl = math.exp(sum(chunk_nll) / n_chunks)
    print(f"  {n_chunks} chunks of {PPL_CHUNK}, ppl = {ppl:.4f}")
    return {"definition": ("tokens cut into chunks of chunk_size; each chunk "
                           "evaluated from a fresh context; NLL of token j+1 "
                           "from the logits at j, j = 0..chunk_size-2; "
                           "ppl = exp(mean NLL over all scored tokens)"),
            "chunk_size": PPL_CHUNK, "n_chunks": n_chunks,
            "dropped_tokens": len(all_tokens) - len(tokens),
            "tokens": tokens, "chunk_mean_nll": chunk_nll, "ppl": ppl}


def greedy(ref):
    prompts = []
    for kind, message in GREEDY_PROMPTS:
        text = chatml(message) if kind == "chat" else message
        prompt_tokens = ref.tokenize(text)
        generated, gaps = ref.greedy(prompt_tokens, GREEDY_TOKENS)
        prompts.append({"kind": kind, "text": text,
                        "prompt_tokens": prompt_tokens,
                        "generated_tokens": generated,
                        "top2_gap_milli": gaps})
    print(f"  {len(prompts)} prompts x {GREEDY_TOKENS} tokens")
    return {"n_generated": GREEDY_TOKENS, "stop_at_eos": False,
            "decoding": "argmax of the last logits row each step; "
                        "no sampling, no penalties; EOS does not stop",
            "prompts": prompts}


def dump_json(obj, indent=0):
    """JSON with lists of numbers on one line: compact and still diffable."""
    pad = " " * indent
    if isinstance(obj, dict):
        items = [f'{pad} {json.dumps(k)}: {dump_json(v, indent + 1).lstrip()}'
                 for k, v in obj.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(v, (dict, list)) for v in obj):
        items = [dump_json(v, indent + 1) for v in obj]
        return pad + "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return pad + json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(DEFAULT_MODEL))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out-dir", default=str(OUT_DIR))
    parser.add_argument("--kv-type", choices=sorted(KV_TYPES), default=None,
                        help="K and V cache type instead of llama.cpp's f16 "
                             "(q8_0: tests/golden/kv_q8_0, q4_0: "
                             "tests/golden/kv_q4_0; teacher forced "
                             "and perplexity only)")
    args = parser.parse_args()

    model = Path(args.model)
    if not model.is_file():
        sys.exit(f"model not found: {model}")
    kv_type = None if args.kv_type is None else KV_TYPES[args.kv_type]
    ref = Reference(model, args.threads, kv_type=kv_type)
    header = {"llama_cpp_version": ref.version,
              "model_file": model.name, "model_sha256": sha256_of(model),
              "llama_cpp_settings": ref.settings}

    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    builds = [("teacher_forced", teacher_forced), ("perplexity", perplexity)]
    if kv_type is None:
        builds.append(("greedy", greedy))
    for name, build in builds:
        print(f"{name}:")
        data = {**header, **build(ref)}
        path = out_dir / f"{name}.json"
        path.write_text(dump_json(data) + "\n", encoding="utf-8")
        print(f"  wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
