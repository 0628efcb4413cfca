"""`omnibus advise` on the real model: it starts its own servers, runs a
trial per candidate, and recommends the trial with the best measured
goodput (checked against every trial's figures in its JSON)."""
import json
import subprocess

from conftest import BIN, MODEL


def test_advise_recommends_the_best_measured_trial(need_model, tmp_path):
    out = tmp_path / "advice.json"
    cmd = [str(BIN), "advise", "-m", str(MODEL), "-t", "2", "--quick", "-n", "4", "--warmup", "1", "--rate", "4",
           "--input-len", "16", "--output-len", "4", "--slo", "ttft=30s,tpot=5s", "--budget-min", "5",
           "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    doc = json.loads(out.read_text())
    trials = doc["trials"]
    assert len(trials) >= 3 and all(t["ok"] for t in trials), trials
    best = trials[doc["best"]]
    key = lambda t: (t["summary"]["goodput"], t["summary"]["slo_attainment"], -t["summary"]["ttft_ms"]["p90"])
    assert key(best) == max(key(t) for t in trials)
    assert best["setting"] in doc["recommended"]
    assert "recommended" in proc.stdout and best["setting"] in proc.stdout
    # A run with every request meeting a lax SLO: goodput is positive.
    assert best["summary"]["slo_attainment"] > 0


def test_advise_refuses_a_flood(need_model):
    proc = subprocess.run([str(BIN), "advise", "-m", str(MODEL), "--rate", "inf"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode != 0 and "--rate" in proc.stderr
