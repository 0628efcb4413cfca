#!/usr/bin/env python3
"""Disaggregated prefill and decode: what a KV handover costs and saves.

Starts two omnibus servers: a prefill instance and a decode instance (started
with --kv-import). For each prompt length it measures, on fresh prompts (so
no prefix cache helps where it should not):

  * recompute: the decode instance computes a never-seen prompt itself: the
    latency of a 1-token completion (its TTFT, plus one HTTP round trip);
  * handover: the prefill instance's POST /v1/kv/export (its prefill, then
    the copy out), the decode instance's POST /v1/kv/import, and then the
    1-token completion there, which finds the prompt's whole blocks cached;
  * the greedy text (--check-tokens tokens) of the prompt on both instances,
    which must be the same.

Prints a table, writes JSON under bench/results/. Both servers share this
machine's cores, so the figures show the handover's cost against a local
recompute, not a two-machine deployment (there the transfer would also
cross a network: the blob size is printed). Not a test; see bench/README.md.
"""

import argparse
import datetime
import json
import os
import random
import statistics
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from serving.client import Endpoint  # noqa: E402
from serving.servers import ServerProcess, free_port, omnibus_command  # noqa: E402
from serving.workload import prompt_of_tokens  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

def post(url, path, body, content_type="application/json", timeout=600):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, headers={"Content-Type": content_type})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            payload, status, headers = r.read(), r.status, dict(r.headers)
    except urllib.error.HTTPError as e:
        payload, status, headers = e.read(), e.code, dict(e.headers)
    return status, headers, payload, (time.perf_counter() - t0) * 1e3


def prompt_text(url, tokens, rng):
    """Text of about `tokens` tokens (checked with /tokenize), unique per call."""
    return prompt_of_tokens(tokens, rng, Endpoint(url).tokenize)


def completion(url, text, max_tokens):
    status, _, body, ms = post(url, "/v1/completions",
                               {"prompt": text, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True})
    if status != 200:
        raise SystemExit(f"completion failed ({status}): {body[:300]!r}")
    return json.loads(body), ms


def measure(args, prefill_url, decode_url, tokens, rng):
    rows = []
    for _ in range(args.reps):
        # Recompute on the decode instance (a fresh prompt).
        _, recompute_ms = completion(decode_url, prompt_text(decode_url, tokens, rng), 1)
        # Handover of another fresh prompt.
        text = prompt_text(prefill_url, tokens, rng)
        status, headers, blob, export_ms = post(prefill_url, "/v1/kv/export",
                                                {"prompt": text, "max_tokens": 1})
        if status != 200:
            raise SystemExit(f"export failed ({status}): {blob[:300]!r}")
        status, _, body, import_ms = post(decode_url, "/v1/kv/import", blob, "application/octet-stream")
        if status != 200:
            raise SystemExit(f"import failed ({status}): {body[:300]!r}")
        after, after_ms = completion(decode_url, text, 1)
        want, _ = completion(prefill_url, text, args.check_tokens)
        got, _ = completion(decode_url, text, args.check_tokens)
        rows.append({"prompt_tokens": after["usage"]["prompt_tokens"],
                     "handed_tokens": int(headers.get("X-KV-Tokens", headers.get("x-kv-tokens", 0))),
                     "blob_bytes": len(blob), "recompute_ms": recompute_ms, "export_ms": export_ms,
                     "import_ms": import_ms, "after_import_ms": after_ms,
                     "same_text": want["choices"][0]["text"] == got["choices"][0]["text"]})
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-m", "--model", default=os.path.join(REPO, "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    p.add_argument("--omnibus-bin", default=os.path.join(REPO, "build/src/cli/omnibus"))
    p.add_argument("-t", "--threads", type=int, default=2, help="threads of each server")
    p.add_argument("--kv-type", default="f16")
    p.add_argument("--lengths", default="256,512,1024,1536", help="prompt tokens, comma-separated")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--check-tokens", type=int, default=32)
    p.add_argument("--out-dir", default=os.path.join(REPO, "bench/results"))
    args = p.parse_args(argv)
    lengths = [int(x) for x in args.lengths.split(",")]
    rng = random.Random(7)
    os.makedirs(args.out_dir, exist_ok=True)
    common = f"-c 4096 --kv-type {args.kv_type} --no-machine-probe --kv-import-max-mib 256"
    pp, dp = free_port(), free_port()
    with ServerProcess("prefill", omnibus_command(args.omnibus_bin, args.model, args.threads, pp, common), pp,
                       os.path.join(args.out_dir, "disagg_prefill.log")) as prefill, \
         ServerProcess("decode", omnibus_command(args.omnibus_bin, args.model, args.threads, dp,
                                                 common + " --kv-import"), dp,
                       os.path.join(args.out_dir, "disagg_decode.log")) as decode:
        completion(prefill.endpoint.base_url, "Warm up.", 4)
        completion(decode.endpoint.base_url, "Warm up.", 4)
        results = {n: measure(args, prefill.endpoint.base_url, decode.endpoint.base_url, n, rng) for n in lengths}

    med = statistics.median
    print(f"KV handover, {args.kv_type} cache, {args.threads} threads per server, medians of {args.reps}")
    print(f"{'prompt':>7} {'handed':>7} {'blob MiB':>9} {'recompute ms':>13} {'export ms':>10} "
          f"{'import ms':>10} {'TTFT after ms':>14} {'same text':>10}")
    summary = []
    for n, rows in results.items():
        s = {"prompt_tokens": rows[0]["prompt_tokens"], "handed_tokens": rows[0]["handed_tokens"],
             "blob_mib": rows[0]["blob_bytes"] / 2**20,
             "recompute_ms": med(r["recompute_ms"] for r in rows), "export_ms": med(r["export_ms"] for r in rows),
             "import_ms": med(r["import_ms"] for r in rows),
             "after_import_ms": med(r["after_import_ms"] for r in rows),
             "same_text": all(r["same_text"] for r in rows)}
        summary.append(s)
        print(f"{s['prompt_tokens']:>7} {s['handed_tokens']:>7} {s['blob_mib']:>9.2f} {s['recompute_ms']:>13.1f} "
              f"{s['export_ms']:>10.1f} {s['import_ms']:>10.1f} {s['after_import_ms']:>14.1f} "
              f"{str(s['same_text']):>10}")
    print("recompute: the decode instance runs a fresh prompt itself (1-token completion); "
          "TTFT after: the same after an import")
    stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S")
    path = os.path.join(args.out_dir, f"disaggregated_{stamp}.json")
    with open(path, "w") as f:
        json.dump({"args": vars(args), "summary": summary, "runs": {str(k): v for k, v in results.items()}}, f,
                  indent=1)
    print(f"wrote {path}")
    return 0 if all(s["same_text"] for s in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
