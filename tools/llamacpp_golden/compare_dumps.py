#!/usr/bin/env python3
"""Per-tensor comparison of omnibus's and llama.cpp's intermediate tensors
for the same tokens: the relative L2 error ||omnibus - llama.cpp|| /
||llama.cpp|| of every tensor both wrote, layer by layer.

omnibus writes its tensors with OMNIBUS_DUMP_DIR set, in a build with
omnibus_tensor_dump.patch (beside this file; `git apply` it to a scratch
copy of the tree: it adds src/backends/cpu/tensor_dump.h and the calls in
forward.cpp), llama.cpp with dump_tensors.cpp beside this file, on the
same token ids (one step of at most 512 tokens), e.g.:

  OMNIBUS_DUMP_DIR=/tmp/d/omni build/src/cli/omnibus perplexity -m MODEL \\
      -f tools/golden_texts/perplexity.txt --chunk 256   # the last chunk stays
  python3 -c "import json; p = json.load(open('tests/golden/gemma3/perplexity.json')); \\
      print(*p['tokens'][2560:2816])" | /tmp/llama_dump MODEL /tmp/d/llama
  python3 tools/llamacpp_golden/compare_dumps.py /tmp/d/omni /tmp/d/llama [BASE_OMNI BASE_LLAMA]

With a second pair of directories (e.g. the shipped file's dumps) it
prints that pair's error beside each tensor's and the ratio, to find the
first tensor whose error jumps above the baseline's.
"""
import math
import re
import sys
from pathlib import Path

import numpy as np

# Stage order within a layer, as the forward pass runs them.
ORDER = ["attn_norm", "mm.attn_q", "mm.attn_k", "Vcur", "Qcur_normed", "Kcur_normed", "Qcur", "Kcur", "kqv_out",
         "mm.attn_output", "attn_post_norm", "sa_out", "ffn_norm", "mm.ffn_gate", "mm.ffn_up", "ffn_geglu", "ffn_out",
         "ffn_post_norm", "l_out"]


def llama_name(name, layer):
    # llama.cpp's eval callback sees the matrix product itself under these.
    if name == "ffn_out":
        name = "mm.ffn_down"
    if name == "result_output":
        return "mm.token_embd.weight"
    if name.startswith("mm."):
        return f"mm.blk.{layer}.{name[3:]}.weight"
    return name if layer < 0 else f"{name}-{layer}"


def errors(omni_dir, llama_dir):
    out = {}
    for f in Path(omni_dir).glob("*.f32"):
        m = re.fullmatch(r"(.+?)-(-?\d+)\.f32", f.name)
        name, layer = m.group(1), int(m.group(2))
        g = Path(llama_dir) / (llama_name(name, layer) + ".f32")
        if not g.exists():
            continue
        a = np.fromfile(f, dtype=np.float32).astype(np.float64)
        b = np.fromfile(g, dtype=np.float32).astype(np.float64)
        if a.size != b.size:
            out[(layer, name)] = (math.nan, f"sizes {a.size} / {b.size}")
            continue
        out[(layer, name)] = (np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30), "")
    return out


def key(k):
    layer, name = k
    return (layer if layer >= 0 else (10**6 if name != "inp_scaled" else -1),
            ORDER.index(name) if name in ORDER else len(ORDER), name)


def main():
    if len(sys.argv) not in (3, 5):
        sys.exit(__doc__)
    e = errors(sys.argv[1], sys.argv[2])
    base = errors(sys.argv[3], sys.argv[4]) if len(sys.argv) == 5 else None
    for k in sorted(e, key=key):
        err, note = e[k]
        line = f"{k[0]:3d} {k[1]:16s} {err:10.3e}"
        if base is not None and k in base:
            b = base[k][0]
            line += f"   base {b:10.3e}   x{err / b if b > 0 else math.inf:7.2f}"
        print(line + (" " + note if note else ""))


if __name__ == "__main__":
    main()
