#!/usr/bin/env python3
"""Golden tokenizations from llama.cpp (through llama-cpp-python).

Reads tests/golden/tokenizer_corpus.jsonl (one JSON string per line) and
writes two files that src/tokenizer/tokenizer_golden_test.cpp compares our
tokenizer with (it loads the same model from the env var OMNIBUS_MODEL):

tests/golden/tokenizer_golden_smollm2.jsonl, one object per string:
  {"text", "ids", "ids_plain", "pieces_hex"}
  ids         llama_tokenize(text, add_special=False, parse_special=True)
  ids_plain   llama_tokenize(text, add_special=False, parse_special=False)
  pieces_hex  llama_token_to_piece(id, special=True) of every id of `ids`,
              joined, in hex

tests/golden/tokenizer_golden_variants.jsonl, the same corpus through
vocabularies derived from the model, to cover the other tokenizer paths:
  {"variant", "text", "ids", "ids_plain", "decoded_hex"}
  variant      "llama-bpe", "qwen2", "gpt-2", "default", "gpt-4o": the model's BPE
               vocabulary with tokenizer.ggml.pre replaced;
               "spm": a SentencePiece ("llama") vocabulary built from the
               model's tokens (see spm_vocabulary below; the C++ test builds
               the same one)
  ids          llama_tokenize(text, add_special=True, parse_special=True)
  ids_plain    llama_tokenize(text, add_special=False, parse_special=False)
  decoded_hex  llama_detokenize(ids, remove_special=False, unparse_special=False)

Usage:
  python3 tools/make_tokenizer_golden.py MODEL.gguf [--corpus ...] [--out-dir tests/golden]
  Without llama-cpp-python, some variants' records from llama.cpp's library
  through tools/llamacpp_golden/llama_tokenize.cpp (compiled as its header
  says), the other variants' records kept:
  python3 tools/make_tokenizer_golden.py MODEL.gguf --llama-tokenize /tmp/llama_tokenize --only gpt-4o
  The probe data of src/tokenizer/pretokenizer_probe_test.cpp (also through
  the C++ tool; MODEL gives only the file's other metadata):
  python3 tools/make_tokenizer_golden.py MODEL.gguf --llama-tokenize /tmp/llama_tokenize --probe gpt-4o
  Gemma 3 (a real SentencePiece vocabulary; writes tokenizer_golden_gemma3.jsonl only):
  python3 tools/make_tokenizer_golden.py models/gemma-3-270m-q4_k_m.gguf --name gemma3 --no-variants \
      --out-dir tests/golden/gemma3
"""

import argparse
import ctypes
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRE_VARIANTS = ["llama-bpe", "qwen2", "gpt-2", "default", "gpt-4o"]


def gpt2_byte_decoder():
    """GPT-2 byte-level alphabet: stand-in character -> byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    codes = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, codes)}


def spm_vocabulary(tokens, token_types):
    """A SentencePiece vocabulary from a byte-level one: <unk> <s> </s>, the
    256 <0xXX> byte tokens, then every normal token whose bytes are valid
    UTF-8 without NUL, with spaces as U+2581 and score -(original id), then
    <|im_start|> <|im_end|> as control tokens."""
    decoder = gpt2_byte_decoder()
    out = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    scores = [0.0] * len(out)
    seen = set(out)
    for i, (text, ty) in enumerate(zip(tokens, token_types)):
        if ty != 1:
            continue
        try:
            raw = bytes(decoder[c] for c in text).decode("utf-8")
        except (KeyError, UnicodeDecodeError):
            continue
        piece = raw.replace(" ", "\u2581")
        if not piece or "\x00" in piece or piece in seen:
            continue
        seen.add(piece)
        out.append(piece)
        types.append(1)
        scores.append(-float(i))
    out += ["<|im_start|>", "<|im_end|>"]
    types += [3, 3]
    scores += [0.0, 0.0]
    return out, types, scores


def field_value(field, value_type):
    if field.types[0] == value_type.ARRAY:
        if field.types[1] == value_type.STRING:
            return [bytes(field.parts[i]).decode("utf-8") for i in field.data], field.types[1]
        return [field.parts[i][0].item() for i in field.data], field.types[1]
    if field.types[0] == value_type.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8"), None
    return field.parts[field.data[0]][0].item(), None


def probe_merges(texts):
    """The probe vocabulary's merges: for each text, in order, a chain that
    builds it whole from its characters ((text[:k], text[k]) for each k),
    pairs already present skipped. A pre-tokenizer that keeps a text in one
    piece gives it one token; one that cuts it shows where by the tokens."""
    merges, seen = [], set()
    for text in texts:
        for k in range(1, len(text)):
            pair = (text[:k], text[k])
            if pair not in seen:
                seen.add(pair)
                merges.append(pair)
    return merges


def gpt2_byte_encoder():
    return {b: c for c, b in gpt2_byte_decoder().items()}


def probe_vocabulary(texts):
    """tokens (GPT-2 byte alphabet: ids 0-255 the bytes, then each merge's
    result in merge order, once), types and merges, as C++'s
    testing_vocabs::byte_level_vocab builds them."""
    enc = gpt2_byte_encoder()

    def gpt2(raw):
        return "".join(enc[b] for b in raw.encode("utf-8"))

    tokens = [enc[b] for b in range(256)]
    merges = []
    for left, right in probe_merges(texts):
        merges.append(gpt2(left) + " " + gpt2(right))
        if gpt2(left + right) not in tokens:
            tokens.append(gpt2(left + right))
    return tokens, [1] * len(tokens), merges


def write_vocab_only_gguf(model_path, out_path, variant, probe_texts=None):
    """The model's metadata (no tensors) with the tokenizer keys of `variant`."""
    from gguf import GGUFReader, GGUFValueType as T, GGUFWriter

    reader = GGUFReader(model_path)
    values = {k: field_value(f, T) + (f.types[0],) for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    overrides = {}
    drop = set()
    if variant == "spm":
        tokens, types, scores = spm_vocabulary(values["tokenizer.ggml.tokens"][0], values["tokenizer.ggml.token_type"][0])
        overrides = {
            "tokenizer.ggml.model": ("llama", None, T.STRING),
            "tokenizer.ggml.tokens": (tokens, T.STRING, T.ARRAY),
            "tokenizer.ggml.token_type": (types, T.INT32, T.ARRAY),
            "tokenizer.ggml.scores": (scores, T.FLOAT32, T.ARRAY),
            "tokenizer.ggml.bos_token_id": (1, None, T.UINT32),
            "tokenizer.ggml.eos_token_id": (2, None, T.UINT32),
            "tokenizer.ggml.unknown_token_id": (0, None, T.UINT32),
            "tokenizer.ggml.padding_token_id": (0, None, T.UINT32),
            "tokenizer.ggml.add_bos_token": (True, None, T.BOOL),
            "tokenizer.ggml.add_space_prefix": (True, None, T.BOOL),
        }
        drop = {"tokenizer.ggml.merges", "tokenizer.ggml.pre"}
    elif probe_texts is not None:
        tokens, types, merges = probe_vocabulary(probe_texts)
        overrides = {
            "tokenizer.ggml.pre": (variant, None, T.STRING),
            "tokenizer.ggml.tokens": (tokens, T.STRING, T.ARRAY),
            "tokenizer.ggml.token_type": (types, T.INT32, T.ARRAY),
            "tokenizer.ggml.merges": (merges, T.STRING, T.ARRAY),
        }
        drop = {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
                "tokenizer.ggml.padding_token_id", "tokenizer.chat_template"}
    else:
        overrides = {"tokenizer.ggml.pre": (variant, None, T.STRING)}
    writer = GGUFWriter(out_path, values["general.architecture"][0])
    for key, (value, sub_type, value_type) in {**values, **overrides}.items():
        if key == "general.architecture" or key in drop:
            continue
        writer.add_key_value(key, value, value_type, sub_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def token_bytes(vocab, token):
    import llama_cpp

    size = 64
    while True:
        buf = (ctypes.c_char * size)()
        n = llama_cpp.llama_token_to_piece(vocab, token, buf, size, 0, True)
        if n >= 0:
            return bytes(buf[:n])
        size = -n


def detokenize(vocab, ids):
    import llama_cpp

    arr = (llama_cpp.llama_token * len(ids))(*ids)
    size = 256
    while True:
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, size, False, False)
        if n >= 0:
            return buf.raw[:n]
        size = -n


def rewrite_variants(args) -> int:
    """--llama-tokenize: the records of --only's variants from the C++ tool;
    every other variant's records are kept as they are, in their order."""
    import subprocess

    only = [v for v in (args.only or "").split(",") if v]
    unknown = [v for v in only if v not in PRE_VARIANTS + ["spm"]]
    if not only or unknown:
        print(f"--only needs variants from {PRE_VARIANTS + ['spm']}", file=sys.stderr)
        return 1
    path = Path(args.out_dir) / "tokenizer_golden_variants.jsonl"
    kept = [line for line in path.read_text(encoding="utf-8").splitlines()
            if line and json.loads(line)["variant"] not in only]
    fresh = {}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in only:
            vocab = str(Path(tmp) / f"{variant}.gguf")
            write_vocab_only_gguf(args.model, vocab, variant)
            out = subprocess.run([args.llama_tokenize, vocab, args.corpus, variant], check=True,
                                 capture_output=True, text=True).stdout
            # Python's key order, as main() writes them (the tool's JSON sorts keys).
            keys = ("variant", "text", "ids", "ids_plain", "decoded_hex")
            fresh[variant] = [json.dumps({k: json.loads(line)[k] for k in keys}, separators=(",", ":"))
                              for line in out.split("\n") if line]
    # Variants in PRE_VARIANTS + spm order, as main() writes them.
    by_variant = {}
    for line in kept:
        by_variant.setdefault(json.loads(line)["variant"], []).append(line)
    by_variant.update(fresh)
    with open(path, "w", encoding="utf-8") as out:
        for variant in PRE_VARIANTS + ["spm"]:
            for line in by_variant.get(variant, []):
                out.write(line + "\n")
    print(f"rewrote {', '.join(only)} in {path}")
    return 0


def write_probe(args) -> int:
    """--probe PRE: llama.cpp's ids (no BOS, no special parsing) for each
    probe text through the probe vocabulary with pre-tokenizer PRE
    (src/tokenizer/pretokenizer_probe_test.cpp builds the same vocabulary)."""
    import subprocess

    corpus = Path(args.out_dir) / "pretokenizer_probe_corpus.jsonl"
    texts = [json.loads(line) for line in corpus.read_text(encoding="utf-8").split("\n") if line]
    out_path = Path(args.out_dir) / f"pretokenizer_probe_{args.probe}.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        vocab = str(Path(tmp) / "probe.gguf")
        write_vocab_only_gguf(args.model, vocab, args.probe, probe_texts=texts)
        out = subprocess.run([args.llama_tokenize, vocab, str(corpus), args.probe], check=True, capture_output=True,
                             text=True).stdout
    with open(out_path, "w", encoding="utf-8") as f:
        for line in out.split("\n"):
            if line:
                r = json.loads(line)
                f.write(json.dumps({"text": r["text"], "ids": r["ids_plain"]}, separators=(",", ":")) + "\n")
    print(f"wrote {len(texts)} probe texts to {out_path}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="GGUF model file (SmolLM2-135M-Instruct)")
    ap.add_argument("--corpus", default=str(ROOT / "tests/golden/tokenizer_corpus.jsonl"))
    ap.add_argument("--out-dir", default=str(ROOT / "tests/golden"))
    ap.add_argument("--name", default="smollm2", help="the model's file: tokenizer_golden_NAME.jsonl")
    ap.add_argument("--no-variants", action="store_true", help="skip the derived vocabularies")
    ap.add_argument("--llama-tokenize", help="tools/llamacpp_golden/llama_tokenize built: use it for --only's variants")
    ap.add_argument("--only", help="with --llama-tokenize: the variants to (re)write, comma-separated")
    ap.add_argument("--probe", help="with --llama-tokenize: write tests/golden/pretokenizer_probe_PRE.jsonl for "
                    "this tokenizer.ggml.pre name (the probe vocabulary over pretokenizer_probe_corpus.jsonl)")
    args = ap.parse_args()
    if args.llama_tokenize and args.probe:
        return write_probe(args)
    if args.llama_tokenize:
        return rewrite_variants(args)
    try:
        import llama_cpp
    except ImportError:
        print("llama-cpp-python is not installed (pip install llama-cpp-python)", file=sys.stderr)
        return 1

    texts = [json.loads(line) for line in Path(args.corpus).read_text(encoding="utf-8").splitlines() if line]
    out_dir = Path(args.out_dir)

    llm = llama_cpp.Llama(model_path=args.model, vocab_only=True, verbose=False)
    with open(out_dir / f"tokenizer_golden_{args.name}.jsonl", "w", encoding="utf-8") as out:
        for text in texts:
            data = text.encode("utf-8")
            ids = llm.tokenize(data, add_bos=False, special=True)
            ids_plain = llm.tokenize(data, add_bos=False, special=False)
            pieces = b"".join(token_bytes(llm._model.vocab, t) for t in ids)
            record = {"text": text, "ids": ids, "ids_plain": ids_plain, "pieces_hex": pieces.hex()}
            out.write(json.dumps(record, separators=(",", ":")) + "\n")
    if args.no_variants:
        print(f"wrote {len(texts)} strings to {out_dir / f'tokenizer_golden_{args.name}.jsonl'}")
        return 0

    with tempfile.TemporaryDirectory() as tmp, open(out_dir / "tokenizer_golden_variants.jsonl", "w") as out:
        for variant in PRE_VARIANTS + ["spm"]:
            path = str(Path(tmp) / f"{variant}.gguf")
            write_vocab_only_gguf(args.model, path, variant)
            v = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
            for text in texts:
                data = text.encode("utf-8")
                ids = v.tokenize(data, add_bos=True, special=True)
                ids_plain = v.tokenize(data, add_bos=False, special=False)
                decoded = detokenize(v._model.vocab, ids)
                record = {"variant": variant, "text": text, "ids": ids, "ids_plain": ids_plain,
                          "decoded_hex": decoded.hex()}
                out.write(json.dumps(record, separators=(",", ":")) + "\n")
            del v
    print(f"wrote {len(texts)} strings x {1 + len(PRE_VARIANTS) + 1} vocabularies to {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
