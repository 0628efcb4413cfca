#!/usr/bin/env python3
"""Machine limits and the model's cost per token: the two rooflines.

Decode reads every weight once per token, so
    decode tokens/s <= memory bandwidth / bytes of weights read per token.
Prefill is arithmetic, so
    prefill tokens/s <= FLOP/s / (2 x parameters of the matmul weights).

This module measures the bandwidth (numpy read and copy over a 512 MiB
array, split over the thread count) and the FLOP/s (numpy float32 matmul,
2048 x 2048, with BLAS limited to the thread count) in a child process, so
the BLAS thread settings are set before numpy loads, and reads the weight
sizes from the GGUF with the gguf package.

Run alone: python3 bench/roofline.py --model MODEL -t 2
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                    "MKL_NUM_THREADS", "BLIS_NUM_THREADS")


def model_costs(model_path):
    """Bytes read per decoded token and matmul parameters, from the GGUF.

    Counts every 2-D weight (the matmuls) except the token embedding, whose
    decode cost is one row; then adds the output projection, which is the
    embedding itself when the model ties them (counted once). Norm vectors
    and the KV cache are left out: together they are a few percent at short
    contexts, and the figure is a ceiling, not a prediction.
    """
    from gguf import GGUFReader
    reader = GGUFReader(str(model_path))
    tensors = {t.name: t for t in reader.tensors}
    matmul_bytes = matmul_params = 0
    for name, t in tensors.items():
        if name in ("token_embd.weight", "output.weight") or len(t.shape) < 2:
            continue
        matmul_bytes += int(t.n_bytes)
        matmul_params += int(t.n_elements)
    tied = "output.weight" not in tensors
    output = tensors["token_embd.weight" if tied else "output.weight"]
    matmul_bytes += int(output.n_bytes)
    matmul_params += int(output.n_elements)
    return {"bytes_per_token": matmul_bytes, "matmul_params": matmul_params,
            "output_tied_to_embedding": tied,
            "output_matrix_bytes": int(output.n_bytes)}


def _best_seconds(fn, reps):
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _measure_here(threads, mib, reps):
    """Runs in the child: BLAS thread variables are already set."""
    from concurrent.futures import ThreadPoolExecutor
    import numpy as np
    n = mib * 1024 * 1024 // 4
    src = np.arange(n, dtype=np.int32)  # touches every page: no lazy zeros
    dst = np.empty_like(src)
    parts = [slice(i * n // threads, (i + 1) * n // threads)
             for i in range(threads)]
    pool = ThreadPoolExecutor(threads)  # numpy drops the GIL in these loops

    def each(fn):
        list(pool.map(fn, parts))

    each(lambda s: src[s].max())  # warm up threads and caches
    read_s = _best_seconds(lambda: each(lambda s: src[s].max()), reps)
    copy_s = _best_seconds(lambda: each(lambda s: np.copyto(dst[s], src[s])),
                           reps)
    del src, dst
    size = 2048
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    a @ b
    mm_s = _best_seconds(lambda: a @ b, reps)
    nbytes = n * 4
    return {"threads": threads, "array_mib": mib, "reps": reps,
            "read_gb_per_s": nbytes / read_s / 1e9,
            "copy_gb_per_s": 2 * nbytes / copy_s / 1e9,  # read + write
            "matmul_size": size,
            "fp32_gflop_per_s": 2 * size ** 3 / mm_s / 1e9}


def measure_machine(threads, mib=512, reps=7):
    """Measures bandwidth and FLOP/s in a child limited to `threads`."""
    env = dict(os.environ)
    for var in BLAS_THREAD_VARS:
        env[var] = str(threads)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child",
           "-t", str(threads), "--mib", str(mib), "--reps", str(reps)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def rooflines(limits, costs):
    """Ceilings in tokens/s. Bandwidth is the read figure: decode reads."""
    return {
        "decode_tokens_per_s":
            limits["read_gb_per_s"] * 1e9 / costs["bytes_per_token"],
        "prefill_tokens_per_s":
            limits["fp32_gflop_per_s"] * 1e9 / (2 * costs["matmul_params"]),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="GGUF file (for the rooflines)")
    parser.add_argument("-t", "--threads", type=int, default=2)
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_measure_here(args.threads, args.mib, args.reps)))
        return
    result = {"limits": measure_machine(args.threads, args.mib, args.reps)}
    if args.model:
        result["model"] = model_costs(args.model)
        result["rooflines"] = rooflines(result["limits"], result["model"])
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
