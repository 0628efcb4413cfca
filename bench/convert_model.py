#!/usr/bin/env python3
"""Make Q4_0 and Q8_0 variants of a GGUF model with llama.cpp's quantizer
(through llama-cpp-python), for the side-by-side speed benchmark
(issue 3, point 2: "the same model converted to Q4_0 and to Q8_0").

The default model ships only as Q4_1, so the variants are *requantized*
from it (llama.cpp's --allow-requantize): the weights are Q4_1's values
rounded again. That costs quality, not speed: each file has exactly the
layout and size of a Q4_0 or Q8_0 model of this shape, which is what a
speed comparison needs. Quality figures (perplexity, golden agreement) are
only ever quoted for the original Q4_1 file.

    python3 bench/convert_model.py                      # both types, next to the model
    python3 bench/convert_model.py --types q8_0 -m other.gguf
    python3 bench/convert_model.py --types q4_k_m,q5_k_m  # K-quant mixes

Existing outputs are kept (delete them to remake). Needs llama-cpp-python
(scripts/setup.sh --bench).
"""
import argparse
import ctypes
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = REPO / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
# llama_ftype values (llama.h): the "mostly" file types. The K-quant mixes
# put K-quants only where a matrix's row length is a multiple of 256 (in
# SmolLM2-135M, hidden size 576: ffn_down); llama.cpp picks a legacy type
# for the rest. They exercise the K-quant kernels on a real model's weights.
FTYPES = {"q4_0": 2, "q8_0": 7, "q4_k_m": 15, "q5_k_m": 17}


def output_path(model: Path, kind: str) -> Path:
    stem = model.name[: -len(".gguf")] if model.name.endswith(".gguf") else model.name
    for suffix in (".Q4_1", ".Q4_0", ".Q8_0", ".Q4_K_M", ".Q5_K_M", ".F16", ".F32"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    return model.with_name(f"{stem}.{kind.upper()}.gguf")


def convert(model: Path, kind: str, threads: int) -> Path:
    import llama_cpp
    out = output_path(model, kind)
    if out.exists():
        print(f"{out} exists; keeping it", file=sys.stderr)
        return out
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FTYPES[kind]
    params.allow_requantize = True
    params.nthread = threads
    tmp = out.with_suffix(".gguf.part")
    print(f"quantizing {model.name} -> {out.name} ({kind}, requantized)", file=sys.stderr)
    rc = llama_cpp.llama_model_quantize(str(model).encode(), str(tmp).encode(), ctypes.byref(params))
    if rc != 0 or not tmp.exists():
        tmp.unlink(missing_ok=True)
        raise SystemExit(f"llama_model_quantize failed ({rc}) for {kind}")
    tmp.rename(out)
    print(f"wrote {out} ({out.stat().st_size / 2**20:.1f} MiB)", file=sys.stderr)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-m", "--model", type=Path, default=DEFAULT_MODEL)
    p.add_argument("--types", default="q4_0,q8_0", help="comma-separated: " + ", ".join(FTYPES))
    p.add_argument("-t", "--threads", type=int, default=2)
    args = p.parse_args()
    if not args.model.exists():
        raise SystemExit(f"no model at {args.model} (scripts/fetch_model.sh fetches the default one)")
    kinds = [k.strip().lower() for k in args.types.split(",") if k.strip()]
    for k in kinds:
        if k not in FTYPES:
            raise SystemExit(f"unknown type '{k}' (know: {', '.join(FTYPES)})")
    for k in kinds:
        print(convert(args.model, k, args.threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
