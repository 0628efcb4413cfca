"""100 clients start a stream, read a chunk or two and hang up. The engine
must cancel every one of them, free all their KV blocks, and serve the next
request promptly."""
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import e2e_util as u
from conftest import MODEL_ID

pytestmark = pytest.mark.slow

STREAMS = 100


def stream_and_hang_up(base_url, i):
    body = {"model": MODEL_ID, "prompt": f"Story number {i}: once upon a time", "max_tokens": 400,
            "temperature": 0.7, "seed": i, "logit_bias": u.NO_EOS, "stream": True}
    conn, resp = u.open_stream(base_url, "/v1/completions", body, timeout=120)
    try:
        assert resp.status == 200, resp.read()
        got = 0
        for ev in u.sse_events(resp):
            assert "error" not in ev, ev
            got += 1
            if got == 1 + i % 2:
                break
        return got
    finally:
        u.hard_close(conn, resp)


def test_hung_up_streams_are_cancelled_and_freed(server_factory):
    s = server_factory("-c", "1024", name="cancel")
    fresh = {"model": MODEL_ID, "prompt": "Hello", "max_tokens": 4, "temperature": 0, "logit_bias": u.NO_EOS}
    start = time.monotonic()
    assert u.post(s.base_url, "/v1/completions", fresh).status == 200
    baseline = time.monotonic() - start  # allows for a machine slowed by other work
    m0 = u.metrics(s.base_url)
    with ThreadPoolExecutor(max_workers=STREAMS) as pool:
        got = list(pool.map(lambda i: stream_and_hang_up(s.base_url, i), range(STREAMS)))
    assert all(g >= 1 for g in got)

    start = time.monotonic()
    r = u.post(s.base_url, "/v1/completions", fresh, timeout=60)
    took = time.monotonic() - start
    assert r.status == 200, r
    assert r.json()["usage"]["completion_tokens"] == 4
    # 100 abandoned streams still running would take far longer than this.
    limit = 5.0 + 3 * baseline
    assert took < limit, f"a fresh request took {took:.1f} s (> {limit:.1f} s) after the hang-ups: cancelled work " \
        "still running?"

    def settled():
        m = u.metrics(s.base_url)
        return m if (u.metric(m, "omnibus_kv_blocks_used") == 0 and
                     u.metric(m, "omnibus_num_requests_running") == 0 and
                     u.metric(m, "omnibus_num_requests_waiting") == 0) else None

    m = u.wait_for(settled, 5)
    assert m, f"KV blocks or sequences still held 5 s after every client left: {u.metrics(s.base_url)}"
    key = "omnibus_requests_total"
    cancelled = u.metric(m, key, outcome="cancelled") - u.metric(m0, key, outcome="cancelled")
    completed = u.metric(m, key, outcome="completed") - u.metric(m0, key, outcome="completed")
    # Each stream asked for 400 tokens and was dropped after a chunk or two:
    # none can have finished, so every one must be counted cancelled.
    assert cancelled == STREAMS, f"{cancelled} cancelled, {completed} completed of {STREAMS} hung-up streams"
    assert completed == 1  # the fresh request
    assert s.stop(), f"no clean exit on SIGTERM (exit code {s.proc.returncode}):\n{s.tail()}"
