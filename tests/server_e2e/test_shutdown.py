"""SIGTERM drains: /health turns 503, new requests get 503 with Retry-After,
the running stream still finishes whole, and the process exits 0."""
import signal

import e2e_util as u
from conftest import MODEL_ID

BODY = {"model": MODEL_ID, "prompt": "Count slowly: one, two,", "max_tokens": 48, "temperature": 0,
        "logit_bias": u.NO_EOS}


def test_sigterm_drains_then_exits_cleanly(server_factory):
    s = server_factory("-c", "1024", "--kv-cache-mib", "64", name="drain")
    ref = u.post(s.base_url, "/v1/completions", BODY)
    assert ref.status == 200, ref
    want = ref.json()["choices"][0]["text"]

    conn, resp = u.open_stream(s.base_url, "/v1/completions", {**BODY, "stream": True})
    assert resp.status == 200
    events = u.sse_events(resp)
    first = next(events)
    s.proc.send_signal(signal.SIGTERM)

    health = u.wait_for(lambda: (lambda r: r if r.status == 503 else None)(u.get(s.base_url, "/health")), 5, 0.02)
    assert health, "/health still 200 after SIGTERM while a request runs"
    u.assert_openai_error(health, 503)
    refused = u.post(s.base_url, "/v1/completions", {**BODY, "max_tokens": 2})
    u.assert_openai_error(refused, 503)
    assert refused.headers.get("retry-after", "").strip().isdigit(), refused.headers

    text = first["choices"][0]["text"]
    reason = first["choices"][0]["finish_reason"]
    for ev in events:
        assert "error" not in ev, f"the running stream was cut by the drain: {ev}"
        for c in ev["choices"]:
            text += c.get("text") or ""
            reason = c.get("finish_reason") or reason
    conn.close()
    assert text == want and reason == "length", "the running stream did not finish whole during the drain"

    try:
        code = s.proc.wait(timeout=20)
    finally:
        s.stop()
    assert code == 0, f"exit code {code} after a drain:\n{s.tail()}"
