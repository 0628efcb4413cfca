"""`omnibus bench` against `omnibus serve` on the real model: every workload
and load shape runs, the counts in its JSON agree with what the server says
(usage, /metrics), the HTML report is self-contained, a sweep reports each
rate, and bad flags or an unreachable server fail with a clear message.
Also: /metrics exports the roofline gauges (MBU, MFU) once steps have run."""
import json
import re
import subprocess

import pytest

import e2e_util as u
from conftest import BIN, MODEL_ID


@pytest.fixture(scope="module")
def bench_server(server_factory):
    return server_factory("-c", "2048", name="bench")


def run_bench(server, tmp_path, *flags, check=True):
    out = tmp_path / "bench.json"
    cmd = [str(BIN), "bench", "--url", server.base_url + "/v1", "-q", "--json", str(out), *flags]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if check:
        assert proc.returncode == 0, f"{cmd}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
        return proc, json.loads(out.read_text())
    return proc, None


def test_random_workload_counts_match_the_server(bench_server, tmp_path):
    before = u.metrics(bench_server.base_url)
    proc, doc = run_bench(bench_server, tmp_path, "-n", "6", "--concurrency", "3", "--input-len", "40",
                          "--output-len", "12", "--ignore-eos", "--slo", "ttft=60s,tpot=10s")
    assert doc["model"] == MODEL_ID and doc["token_counts_from_server"] is True
    run = doc["runs"][0]
    assert run["summary"]["completed"] == 6 and run["summary"]["failed"] == 0
    assert run["summary"]["slo_attainment"] == 1.0
    for r in run["requests"]:
        assert r["ok"] and r["usage_from_server"]
        assert r["output_tokens"] == 12, r  # ignore_eos: exactly max_tokens
        # One chunk per token, unless the HTTP thread fell behind the engine
        # and sent what had piled up as one chunk.
        assert 1 <= len(r["chunk_times_s"]) <= 12
        assert r["ttft_ms"] > 0 and r["tpot_ms"] > 0 and r["e2e_ms"] >= r["ttft_ms"]
        # 40 tokens of user text plus the chat template's wrapping (SmolLM2's
        # adds a default system prompt of ~25 tokens)
        assert 40 <= r["input_tokens"] <= 80, r
    after = u.metrics(bench_server.base_url)
    generated = u.metric(after, "omnibus_generation_tokens_total") - u.metric(before, "omnibus_generation_tokens_total")
    assert generated == 6 * 12
    for name in ("TTFT", "TPOT", "ITL", "E2E", "goodput:"):
        assert name in proc.stdout, proc.stdout


@pytest.mark.parametrize("workload,flags,expected_requests", [
    ("shared-prefix", ["--num-prefixes", "2", "--prefix-len", "200", "--input-len", "20"], 4),
    ("multi-turn", ["--turns", "2", "--input-len", "20"], 8),
    ("long-doc", ["--doc-len", "300", "--input-len", "20"], 4),
    ("code", ["--input-len", "150", "--api", "completions"], 4),
])
def test_each_workload_runs(bench_server, tmp_path, workload, flags, expected_requests):
    _, doc = run_bench(bench_server, tmp_path, "--workload", workload, "-n", "4", "--rate", "20",
                       "--output-len", "6", *flags)
    reqs = doc["runs"][0]["requests"]
    assert len(reqs) == expected_requests and all(r["ok"] for r in reqs), reqs
    if workload == "multi-turn":
        # The second turn carries the first turn and its answer: a longer prompt.
        by_conv = {}
        for r in reqs:
            by_conv.setdefault(r["conversation"], {})[r["turn"]] = r["input_tokens"]
        for turns in by_conv.values():
            assert turns[1] > turns[0] + 20, turns


def test_jsonl_dataset(bench_server, tmp_path):
    data = tmp_path / "prompts.jsonl"
    data.write_text('{"prompt": "Name three colours.", "max_tokens": 5}\n'
                    '{"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4}\n')
    _, doc = run_bench(bench_server, tmp_path, "--workload", "jsonl", "--dataset", str(data), "-n", "4",
                       "--ignore-eos")
    outs = sorted(r["output_tokens"] for r in doc["runs"][0]["requests"])
    assert outs == [4, 4, 5, 5]


def test_sweep_and_html_report(bench_server, tmp_path):
    html = tmp_path / "report.html"
    proc, doc = run_bench(bench_server, tmp_path, "--sweep-rate", "2,50", "-n", "3", "--input-len", "16",
                          "--output-len", "4", "--slo", "ttft=60s", "--html", str(html))
    assert [r["summary"]["offered_rate"] for r in doc["runs"]] == [2, 50]
    assert doc["best_rate"] == 50
    assert "highest rate meeting the SLO" in proc.stdout
    page = html.read_text()
    assert page.count("<svg") >= 7  # sweep chart + 3 CDFs + 2 over-time + throughput
    for fetch in ("<script", "src=", "href=", "url("):
        assert fetch not in page, f"the report fetches something: {fetch}"


def test_closed_loop_flood_and_bursty_shapes(bench_server, tmp_path):
    for flags in (["--rate", "inf"], ["--rate", "10", "--burstiness", "0.3"], ["--concurrency", "2"]):
        _, doc = run_bench(bench_server, tmp_path, "-n", "3", "--input-len", "16", "--output-len", "3", *flags)
        assert doc["runs"][0]["summary"]["completed"] == 3, flags


def test_bad_flags_and_unreachable_server_fail_clearly(bench_server, tmp_path):
    proc, _ = run_bench(bench_server, tmp_path, "--slo", "latency=5ms", check=False)
    assert proc.returncode != 0 and "unknown SLO 'latency'" in proc.stderr
    proc, _ = run_bench(bench_server, tmp_path, "--workload", "jsonl", check=False)
    assert proc.returncode != 0 and "--dataset" in proc.stderr
    proc = subprocess.run([str(BIN), "bench", "--url", "http://127.0.0.1:1", "-q", "-n", "1"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "error" in proc.stderr.lower(), proc.stderr
    proc, _ = run_bench(bench_server, tmp_path, "--model", "no-such-model", "-n", "2", check=False)
    assert proc.returncode != 0 and "404" in proc.stdout + proc.stderr


def test_metrics_export_roofline_gauges(bench_server, tmp_path):
    run_bench(bench_server, tmp_path, "-n", "2", "--input-len", "16", "--output-len", "4")
    m = u.metrics(bench_server.base_url)
    assert u.metric(m, "omnibus_machine_memory_bandwidth_bytes_per_second") > 1e8
    assert u.metric(m, "omnibus_machine_peak_flops") > 1e9
    assert u.metric(m, "omnibus_step_memory_bytes_per_second") > 0
    mbu = u.metric(m, "omnibus_model_bandwidth_utilization")
    mfu = u.metric(m, "omnibus_model_flops_utilization")
    assert 0 < mbu < 5 and 0 < mfu < 5, (mbu, mfu)
