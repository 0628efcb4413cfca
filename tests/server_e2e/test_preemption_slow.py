"""A KV pool too small for every running request: the scheduler preempts
(frees a sequence's blocks, recomputes it later), and every request still
completes with exactly the text it gives alone."""
from concurrent.futures import ThreadPoolExecutor

import pytest

import e2e_util as u
from conftest import MODEL_ID

pytestmark = pytest.mark.slow

# K/V per token: 30 layers x 192 (kv_dim) x 2 (K, V) x 2 bytes (f16) = 23,040
# bytes; a 16-token block is 368,640 bytes, so 2 MiB holds 5 blocks (80 tokens): one
# request (~8 prompt tokens + 24) fits, three running at once do not.
KV_MIB = 2
POOL_TOKENS = (KV_MIB << 20) // (23040 * 16) * 16
MAX_TOKENS = 24
PROMPTS = ["The history of the printing press begins in", "A recipe for bread: first, take",
           "The rules of chess say that a bishop", "In the deep ocean, strange fish",
           "My grandmother's garden was full of", "The first law of thermodynamics states that",
           "When the train left the station, the", "Our quarterly report shows that revenue"]


def complete(base_url, prompt):
    r = u.post(base_url, "/v1/completions", {"model": MODEL_ID, "prompt": prompt, "max_tokens": MAX_TOKENS,
                                             "temperature": 0, "logit_bias": u.NO_EOS}, timeout=300)
    assert r.status == 200, r
    c = r.json()["choices"][0]
    assert c["finish_reason"] == "length", c
    return c["text"], r.json()["usage"]["prompt_tokens"]


def test_preemption_keeps_every_text(server_factory):
    s = server_factory("-c", "1024", "--kv-cache-mib", str(KV_MIB), name="tiny-kv")
    m0 = u.metrics(s.base_url)
    assert u.metric(m0, "omnibus_kv_blocks_total") * 16 == POOL_TOKENS, "the pool is not the size this test assumes"
    alone = [complete(s.base_url, p) for p in PROMPTS]
    need = [n + MAX_TOKENS for _, n in alone]
    assert max(need) <= POOL_TOKENS < sum(need), f"pool {POOL_TOKENS} tokens vs requests {need}"
    assert u.metric(u.metrics(s.base_url), "omnibus_preemptions_total") == 0, "one request at a time preempted"

    with ThreadPoolExecutor(max_workers=len(PROMPTS)) as pool:
        together = list(pool.map(lambda p: complete(s.base_url, p), PROMPTS))

    bad = [f"{p!r}: alone {a[0]!r}, under preemption {t[0]!r}"
           for p, a, t in zip(PROMPTS, alone, together) if a != t]
    assert not bad, "\n".join(bad)
    m = u.metrics(s.base_url)
    assert u.metric(m, "omnibus_preemptions_total") > 0, "the pool was too small yet nothing was preempted"
    assert u.metric(m, "omnibus_requests_total", outcome="completed") - \
        u.metric(m0, "omnibus_requests_total", outcome="completed") == 2 * len(PROMPTS)
    assert u.wait_for(lambda: u.metric(u.metrics(s.base_url), "omnibus_kv_blocks_used") == 0, 5)
    assert s.stop(), f"no clean exit on SIGTERM (exit code {s.proc.returncode}):\n{s.tail()}"
