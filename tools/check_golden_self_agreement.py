#!/usr/bin/env python3
"""How far llama.cpp disagrees with its own golden data: the noise floor of
the teacher-forced argmax check.

Evaluates the texts of a teacher_forced.json (written by make_golden.py with
flash attention on) again with flash attention off, a second correct
evaluation that sums in another order, and prints the agreement and the
largest top-2 gap at which an argmax flipped. The golden tests' per-model
"confident gap" bar (tests/golden_test.cpp) sits above that gap.

Usage: python3 tools/check_golden_self_agreement.py MODEL.gguf GOLDEN_DIR/teacher_forced.json
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import make_golden  # noqa: E402  (the same llama.cpp settings)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    golden = json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
    ref = make_golden.Reference(sys.argv[1], 2, flash_attn=False)
    flipped_gaps, positions = [], 0
    for seq in golden["sequences"]:
        argmax = ref.logits(seq["tokens"]).argmax(axis=-1)
        for got, want, gap in zip(argmax, seq["argmax"], seq["top2_gap_milli"]):
            positions += 1
            if int(got) != want:
                flipped_gaps.append(gap)
    print(f"positions {positions}, flipped {len(flipped_gaps)}, "
          f"agreement {1 - len(flipped_gaps) / positions:.4f}, "
          f"largest gap of a flip {max(flipped_gaps, default=0) / 1000:.3f}, "
          f"flips at gap >= 0.5: {sum(g >= 500 for g in flipped_gaps)}")


if __name__ == "__main__":
    main()
