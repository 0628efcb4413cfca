"""32 greedy requests at once give exactly the text each gives alone, whatever
the batching: default flags, prefix cache off, and a tiny and a large
per-step token budget (chunked prefill). By batch invariance (DESIGN.md)
this holds token for token, so the comparison is exact."""
from concurrent.futures import ThreadPoolExecutor

import pytest

import e2e_util as u
from conftest import MODEL_ID

pytestmark = pytest.mark.slow

MAX_TOKENS = 12
SHARED = ("You are a careful assistant. Read the following notes about the town of Eldermere before answering. "
          "Eldermere lies in a valley between two rivers. Its market opens at dawn on weekdays and sells fish, "
          "bread, wool and copper pots. The mayor is elected every four years. The old bridge was rebuilt in "
          "stone after the great flood, and the library keeps maps of every farm in the valley. "
          # Long enough (over 256 tokens) that decode rows sharing it attend to
          # whole softmax chunks of cached prefix together (attention_rows_shared_prefix).
          "The school has three teachers and forty pupils, who learn reading, arithmetic, geography and music. "
          "In spring the northern river floods the lower meadows, so the farmers move their sheep to the hills "
          "until the water falls. The blacksmith shoes horses on Tuesdays and mends ploughs on Thursdays. "
          "A ferry crosses the southern river twice a day, at nine in the morning and at four in the afternoon, "
          "and costs two copper coins for a person and five for a cart. The inn by the bridge has six rooms, "
          "a stable for ten horses and a garden where travellers eat in summer. Every autumn the town holds a "
          "harvest fair with a ploughing contest, a cheese market and a dance in the square that lasts until "
          "midnight. The oldest building is the mill, built of grey stone three hundred years ago, which still "
          "grinds wheat and barley for the whole valley. The doctor lives next to the chapel and visits the "
          "outlying farms on Mondays. Letters arrive by coach from the capital once a week, on Friday evenings, "
          "and the postmaster reads the news aloud in the square on Saturday mornings. ")
QUESTIONS = ["Question: when does the market open? Answer:", "Question: what does the market sell? Answer:",
             "Question: how often is the mayor elected? Answer:", "Question: what was rebuilt? Answer:",
             "Question: what does the library keep? Answer:", "Question: where is Eldermere? Answer:",
             "Question: what happened after the flood? Answer:", "Summary of the notes:",
             "Question: name one thing sold at the market. Answer:", "The most important fact here is"]
SHORT = ["The capital of France is", "def fibonacci(n):", "1, 2, 3, 4, 5,", "Once upon a time", "Water boils at",
         "The quick brown fox", "import numpy as np\n", "My favourite colour is", "Le chat est",
         "SELECT name FROM users WHERE", "Dear Sir or Madam,", "The three primary colours are", "In 1969,",
         "Roses are red,"]
CHATS = ["What is 2+2?", "Name a fruit.", "Say hello in French.", "What colour is the sky?",
         "Write one word that rhymes with cat.", "What is the largest planet?", "Give me a number between 1 and 9.",
         SHARED + "Which rivers are mentioned?"]


def make_requests():
    reqs = []
    for q in QUESTIONS:
        reqs.append(("cmpl", SHARED + q))
    for p in SHORT:
        reqs.append(("cmpl", p))
    for c in CHATS:
        reqs.append(("chat", c))
    assert len(reqs) == 32
    return reqs


REQUESTS = make_requests()


def run_one(base_url, kind, text, stream):
    path = "/v1/completions" if kind == "cmpl" else "/v1/chat/completions"
    body = {"model": MODEL_ID, "max_tokens": MAX_TOKENS, "temperature": 0, "logit_bias": u.NO_EOS}
    if kind == "cmpl":
        body["prompt"] = text
    else:
        body["messages"] = [{"role": "user", "content": text}]
    if not stream:
        r = u.post(base_url, path, body, timeout=300)
        assert r.status == 200, r
        c = r.json()["choices"][0]
        return c["text"] if kind == "cmpl" else c["message"]["content"]
    body["stream"] = True
    conn, resp = u.open_stream(base_url, path, body, timeout=300)
    try:
        assert resp.status == 200, resp.read()
        out = ""
        for ev in u.sse_events(resp):
            assert "error" not in ev, ev
            for c in ev["choices"]:
                out += (c.get("text") if kind == "cmpl" else c["delta"].get("content")) or ""
        return out
    finally:
        conn.close()


@pytest.fixture(scope="module")
def alone(server_factory):
    """Each request run alone, one after another, on a default server."""
    s = server_factory("-c", "1024", name="reference")
    texts = [run_one(s.base_url, kind, text, stream=False) for kind, text in REQUESTS]
    assert sum(bool(t.strip()) for t in texts) >= 30, texts
    yield s, texts
    assert s.stop(), f"no clean exit on SIGTERM (exit code {s.proc.returncode})"


def run_concurrently(base_url):
    # Odd ones stream, even ones do not: both paths under load.
    with ThreadPoolExecutor(max_workers=len(REQUESTS)) as pool:
        futures = [pool.submit(run_one, base_url, kind, text, i % 2 == 1) for i, (kind, text) in enumerate(REQUESTS)]
        return [f.result() for f in futures]


def compare(got, want, label):
    bad = [f"#{i} {REQUESTS[i][0]} {REQUESTS[i][1][-40:]!r}: alone {w!r}, concurrent {g!r}"
           for i, (g, w) in enumerate(zip(got, want)) if g != w]
    assert not bad, f"{label}: {len(bad)} of {len(want)} differ:\n" + "\n".join(bad)


def test_concurrent_default(alone):
    s, want = alone
    compare(run_concurrently(s.base_url), want, "default flags")
    m = u.metrics(s.base_url)
    assert u.metric(m, "omnibus_prefix_cache_hit_tokens_total") > 0, "the shared prefix was never reused"
    # The alone runs cached SHARED, so the concurrent ones decode over the same
    # blocks: some steps pair their rows over its whole softmax chunks.
    assert u.metric(m, "omnibus_attention_shared_prefix_units_total") > 0, "no shared-prefix attention pairs"
    assert u.wait_for(lambda: u.metric(u.metrics(s.base_url), "omnibus_kv_blocks_used") == 0, 5)


CONFIGS = [
    (("--no-prefix-cache",), "no-prefix-cache"),
    (("--max-batched-tokens", "16"), "max-batched-tokens-16"),
    (("--max-batched-tokens", "512"), "max-batched-tokens-512"),
]


@pytest.mark.parametrize("flags,label", CONFIGS, ids=[c[1] for c in CONFIGS])
def test_concurrent_other_flags(server_factory, alone, flags, label):
    _, want = alone
    s = server_factory("-c", "1024", *flags, name=label)
    got = run_concurrently(s.base_url)
    m = u.metrics(s.base_url)
    if "--no-prefix-cache" in flags:
        assert u.metric(m, "omnibus_prefix_cache_hit_tokens_total") == 0
    if got != want:
        # Tell a batching fault from a config one: what does this server give alone?
        solo = [run_one(s.base_url, kind, text, stream=False) if g != w else g
                for (kind, text), g, w in zip(REQUESTS, got, want)]
        compare(solo, want, f"{label}, each request alone (this config differs from the default)")
        compare(got, solo, f"{label}, concurrent vs alone on the same server")
    assert s.stop(), f"{label}: no clean exit on SIGTERM (exit code {s.proc.returncode}):\n{s.tail()}"
