"""Bursts are admitted by room, not by arrival order (issue 35, point 2):
`--max-queue` counts requests waiting while the running set is full, so a
burst that fits in `--max-seqs` is admitted whole, and a burst beyond
max-seqs + max-queue gets 429s with Retry-After while every request still
ends as a full answer or a clear refusal."""
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

import e2e_util as u
from conftest import MODEL_ID

CMPL = "/v1/completions"
MAX_SEQS = 64
MAX_QUEUE = 8


@pytest.fixture(scope="module")
def srv(server_factory):
    return server_factory("-c", "1024", "--max-seqs", str(MAX_SEQS), "--max-queue", str(MAX_QUEUE), name="admission")


def burst(base_url, count, max_tokens):
    """`count` completions released at once (a barrier), each on its own
    connection; returns the responses in order."""
    gate = threading.Barrier(count)

    def one(i):
        body = {"model": MODEL_ID, "prompt": f"Item {i}: the colour of the sky is", "max_tokens": max_tokens,
                "temperature": 0, "logit_bias": u.NO_EOS}
        gate.wait(timeout=60)
        return u.post(base_url, CMPL, body, timeout=300)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(one, range(count)))


def check_completed(r, max_tokens):
    assert r.status == 200, r
    doc = r.json()
    assert doc["usage"]["completion_tokens"] == max_tokens, doc
    assert doc["choices"][0]["finish_reason"] == "length", doc


def test_a_burst_within_max_seqs_is_admitted_whole(srv):
    # 40 at once with a queue of 8: all run (the old rule let about 9 in).
    results = burst(srv.base_url, 40, max_tokens=4)
    for r in results:
        check_completed(r, 4)


def test_a_burst_beyond_max_seqs_and_queue_gets_429_and_loses_nothing(srv):
    before = u.metrics(srv.base_url)
    # Long enough that the first 64 are still running when the burst has
    # arrived: 64 take the seats, 8 wait, the rest are refused at once.
    total, max_tokens = 120, 16
    results = burst(srv.base_url, total, max_tokens=max_tokens)
    ok = [r for r in results if r.status == 200]
    refused = [r for r in results if r.status != 200]
    assert refused, "a burst over max-seqs + max-queue should see some 429s"
    assert len(ok) >= MAX_SEQS + MAX_QUEUE, f"only {len(ok)} admitted; {MAX_SEQS} seats + {MAX_QUEUE} queue were free"
    for r in ok:
        check_completed(r, max_tokens)
    for r in refused:
        err = u.assert_openai_error(r, 429)
        assert "--max-queue" in err["message"], err
        assert r.headers.get("retry-after", "").strip().isdigit(), r.headers
    # Nothing lost: the engine completed exactly the admitted ones and
    # counted exactly the refused ones.
    after = u.metrics(srv.base_url)

    def delta(outcome):
        return (u.metric(after, "omnibus_requests_total", outcome=outcome)
                - u.metric(before, "omnibus_requests_total", outcome=outcome))

    assert delta("completed") == len(ok)
    assert delta("rejected") == len(refused)
    assert u.metric(after, "omnibus_kv_blocks_used") == 0
    # And the server takes a full burst again.
    for r in burst(srv.base_url, 40, max_tokens=2):
        check_completed(r, 2)
