#!/usr/bin/env python3
"""Machine limits and the model's cost per token: the two rooflines.

Decode reads every weight once per token, so
    decode tokens/s <= memory bandwidth / bytes of weights read per token.
Prefill is arithmetic, so
    prefill tokens/s <= FLOP/s / (2 x parameters of the matmul weights).

This module measures the bandwidth (numpy read and copy over a 512 MiB
array, split over the thread count; and the read again over an array the
size of the weights, which may sit in a large last-level cache, so that
decode can beat the DRAM figure) and the FLOP/s (numpy float32 matmul,
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
    contexts, and the figure is a ceiling, not a prediction. Of a mixture-
    of-experts model's expert tensors (`*_exps`) a token reads its
    expert_used_count experts of expert_count.
    """
    from gguf import GGUFReader
    reader = GGUFReader(str(model_path))
    tensors = {t.name: t for t in reader.tensors}

    def metadata_int(key):
        field = reader.fields.get(key)
        return int(field.parts[field.data[0]][0]) if field is not None else 0

    arch_field = reader.fields["general.architecture"]
    arch = bytes(arch_field.parts[arch_field.data[0]]).decode()
    experts, used = metadata_int(f"{arch}.expert_count"), metadata_int(f"{arch}.expert_used_count")
    matmul_bytes = matmul_params = 0
    for name, t in tensors.items():
        if name in ("token_embd.weight", "output.weight") or len(t.shape) < 2:
            continue
        share = used / experts if experts and "_exps." in name else 1.0
        matmul_bytes += int(t.n_bytes) * share
        matmul_params += int(t.n_elements) * share
    tied = "output.weight" not in tensors
    output = tensors["token_embd.weight" if tied else "output.weight"]
    matmul_bytes += int(output.n_bytes)
    matmul_params += int(output.n_elements)
    return {"bytes_per_token": int(matmul_bytes), "matmul_params": int(matmul_params),
            "output_tied_to_embedding": tied, "output_params": int(output.n_elements),
            "output_matrix_bytes": int(output.n_bytes)}


# Bytes per cached K or V value, by --kv-type (q8_0: 34 bytes per 32).
KV_VALUE_BYTES = {"f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}


def kv_values_per_position(model_path):
    """K and V values one context position adds to a decode step's reads:
    every layer's K and V vectors of every KV head (times KV_VALUE_BYTES of
    the cache type for bytes). A model with a sliding window (Gemma 3)
    reads fewer at long context, so for it this is an upper bound (the
    "sliding_window" key says so)."""
    from gguf import GGUFReader
    reader = GGUFReader(str(model_path))

    def value(key):
        field = reader.fields.get(key)
        return None if field is None else field.parts[field.data[0]][0].item()

    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    layers = value(f"{arch}.block_count")
    heads = value(f"{arch}.attention.head_count")
    kv_heads = value(f"{arch}.attention.head_count_kv") or heads
    embd = value(f"{arch}.embedding_length")
    k_dim = value(f"{arch}.attention.key_length") or embd // heads
    v_dim = value(f"{arch}.attention.value_length") or embd // heads
    return {"kv_values_per_position": layers * kv_heads * (k_dim + v_dim),
            "sliding_window": value(f"{arch}.attention.sliding_window") is not None}


def _best_seconds(fn, reps):
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _bandwidth(threads, mib, reps, with_copy):
    """Best read (and copy) GB/s over an int32 array of `mib` MiB."""
    from concurrent.futures import ThreadPoolExecutor
    import numpy as np
    n = mib * 1024 * 1024 // 4
    src = np.arange(n, dtype=np.int32)  # touches every page: no lazy zeros
    parts = [slice(i * n // threads, (i + 1) * n // threads)
             for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:  # numpy drops the GIL here
        def each(fn):
            list(pool.map(fn, parts))

        each(lambda s: src[s].max())  # warm up threads and caches
        read_s = _best_seconds(lambda: each(lambda s: src[s].max()), reps)
        result = {"read_gb_per_s": n * 4 / read_s / 1e9}
        if with_copy:
            dst = np.empty_like(src)
            copy_s = _best_seconds(
                lambda: each(lambda s: np.copyto(dst[s], src[s])), reps)
            result["copy_gb_per_s"] = 2 * n * 4 / copy_s / 1e9  # read + write
    return result


def _measure_here(threads, mib, reps, model_mib):
    """Runs in the child: BLAS thread variables are already set."""
    import numpy as np
    result = {"threads": threads, "array_mib": mib, "reps": reps}
    result.update(_bandwidth(threads, mib, reps, with_copy=True))
    if model_mib:
        small = _bandwidth(threads, model_mib, reps, with_copy=False)
        result["model_sized_array_mib"] = model_mib
        result["read_gb_per_s_model_sized"] = small["read_gb_per_s"]
    size = 2048
    rng = np.random.default_rng(0)
    a = rng.standard_normal((size, size), dtype=np.float32)
    b = rng.standard_normal((size, size), dtype=np.float32)
    a @ b
    mm_s = _best_seconds(lambda: a @ b, reps)
    result.update(matmul_size=size,
                  fp32_gflop_per_s=2 * size ** 3 / mm_s / 1e9)
    return result


def measure_machine(threads, mib=512, reps=7, model_mib=0):
    """Measures bandwidth and FLOP/s in a child limited to `threads`.

    model_mib > 0 adds a read over an array of that size (the weights').
    """
    env = dict(os.environ)
    for var in BLAS_THREAD_VARS:
        env[var] = str(threads)
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child",
           "-t", str(threads), "--mib", str(mib), "--reps", str(reps),
           "--model-mib", str(model_mib)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def rooflines(limits, costs):
    """Ceilings in tokens/s. Bandwidth is the read figure: decode reads."""
    result = {
        "decode_tokens_per_s":
            limits["read_gb_per_s"] * 1e9 / costs["bytes_per_token"],
        "prefill_tokens_per_s":
            limits["fp32_gflop_per_s"] * 1e9 / (2 * costs["matmul_params"]),
    }
    if "read_gb_per_s_model_sized" in limits:
        result["decode_tokens_per_s_model_sized"] = (
            limits["read_gb_per_s_model_sized"] * 1e9
            / costs["bytes_per_token"])
    return result


def probe_read_gb_per_s(threads, mib=256, reps=3):
    """Read bandwidth now: a short probe (best of `reps` reads over `mib` MiB
    on `threads` threads, about half a second with the child's start-up),
    in a child process so the caller's peak RSS stays its own. The bench
    takes one right before and one right after each timed decode run: on a
    shared VM the bandwidth drifts by tens of percent within minutes, and a
    decode run set against the best of a separate probe minutes earlier
    reads low for reasons that are not the engine's."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--probe",
           "-t", str(threads), "--mib", str(mib), "--reps", str(reps)]
    out = subprocess.run(cmd, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["read_gb_per_s"]


def between_probes(run, threads):
    """(run(), [read GB/s probed right before, right after]): one timed
    decode run bracketed as paired_share wants it."""
    before = probe_read_gb_per_s(threads)
    result = run()
    return result, [before, probe_read_gb_per_s(threads)]


def paired_share(tokens_per_s, gb_per_s_around, bytes_per_token):
    """Decode tok/s as a share of the bandwidth roofline of its own moment:
    tok/s x bytes per token / the mean of the probes around the run."""
    bw = sum(gb_per_s_around) / len(gb_per_s_around)
    return tokens_per_s * bytes_per_token / (bw * 1e9)


def model_mib(costs):
    """Size in MiB of the weights read per token, rounded up."""
    return -(-costs["bytes_per_token"] // (1024 * 1024))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="GGUF file (for the rooflines)")
    parser.add_argument("-t", "--threads", type=int, default=2)
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--model-mib", type=int, default=0,
                        help="also read an array this big (0: model size)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(_bandwidth(args.threads, args.mib, args.reps,
                                    with_copy=False)))
        return
    if args.child:
        print(json.dumps(_measure_here(args.threads, args.mib, args.reps,
                                       args.model_mib)))
        return
    costs = model_costs(args.model) if args.model else None
    size = args.model_mib or (model_mib(costs) if costs else 0)
    result = {"limits": measure_machine(args.threads, args.mib, args.reps,
                                        size)}
    if costs:
        result["model"] = costs
        result["rooflines"] = rooflines(result["limits"], costs)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
