"""The OpenAI API surface of `omnibus serve` on the real model: streaming and
not, both endpoints, seeds, n, logprobs, stop strings, usage, echo, and the
utility routes (/v1/models, /health, /metrics, /tokenize, /detokenize)."""
import http.client
import json
import math

import pytest

import e2e_util as u

PROMPT = "The capital of France is"
CHAT = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def greedy16(client, model_id):
    """The greedy 16-token completion of PROMPT, with EOS banned."""
    r = client.completions.create(model=model_id, prompt=PROMPT, max_tokens=16, temperature=0, logit_bias=u.NO_EOS)
    text = r.choices[0].text
    assert len(text.strip()) >= 8, f"too little text to work with: {text!r}"
    return text


# ---- streaming vs not ------------------------------------------------------

def test_completion_stream_matches_non_stream(client, model_id):
    r = client.completions.create(model=model_id, prompt=PROMPT, max_tokens=16, temperature=0)
    assert r.object == "text_completion" and r.id.startswith("cmpl")
    assert r.model == model_id
    assert len(r.choices) == 1 and r.choices[0].index == 0
    text = r.choices[0].text
    assert text.strip(), r
    assert r.choices[0].finish_reason in ("stop", "length")

    texts, reasons, chunks = u.joined_completion_stream(
        client.completions.create(model=model_id, prompt=PROMPT, max_tokens=16, temperature=0, stream=True))
    assert texts[0] == text
    assert reasons[0] == r.choices[0].finish_reason
    assert len(chunks) >= 2, "a 16-token answer came in one chunk: not streamed"
    assert all(c.object == "text_completion" and c.id == chunks[0].id for c in chunks)


def test_chat_stream_matches_non_stream(client, model_id):
    r = client.chat.completions.create(model=model_id, messages=CHAT, max_tokens=16, temperature=0)
    assert r.object == "chat.completion" and r.id.startswith("chatcmpl")
    msg = r.choices[0].message
    assert msg.role == "assistant"
    assert msg.content and msg.content.strip()
    assert "<|im_" not in msg.content, "chat template tokens leaked into the answer"

    stream = client.chat.completions.create(model=model_id, messages=CHAT, max_tokens=16, temperature=0, stream=True)
    texts, reasons, chunks = u.joined_chat_stream(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert texts[0] == msg.content
    assert reasons[0] == r.choices[0].finish_reason


# ---- seeds and n -----------------------------------------------------------

def test_same_seed_same_text_and_seeds_differ(client, model_id):
    def sample(seed, stream=False):
        kw = dict(model=model_id, prompt="Once upon a time", max_tokens=12, temperature=0.8, seed=seed,
                  logit_bias=u.NO_EOS)
        if stream:
            return u.joined_completion_stream(client.completions.create(stream=True, **kw))[0][0]
        return client.completions.create(**kw).choices[0].text

    a, b = sample(1234), sample(1234)
    assert a == b and a.strip()
    assert sample(1234, stream=True) == a, "streaming changed a seeded sample"
    others = {sample(s) for s in (1, 2, 3, 4)}
    assert len(others | {a}) > 1, f"five seeds gave one text: {a!r}"


def test_chat_same_seed_same_text(client, model_id):
    def sample(seed):
        return u.chat_text(client.chat.completions.create(model=model_id, messages=CHAT, max_tokens=12,
                                                          temperature=0.8, seed=seed))
    a = sample(99)
    assert a == sample(99)
    assert len({a} | {sample(s) for s in (5, 6, 7)}) > 1


def test_n3_choices(server, client, model_id, greedy16):
    r = client.completions.create(model=model_id, prompt=PROMPT, n=3, max_tokens=8, temperature=0.8, seed=7,
                                  logit_bias=u.NO_EOS)
    assert sorted(c.index for c in r.choices) == [0, 1, 2]
    assert all(c.finish_reason == "length" for c in r.choices)
    assert r.usage.completion_tokens == 24
    assert r.usage.prompt_tokens == len(u.tokenize(server.base_url, PROMPT)), \
        "OpenAI counts the prompt once however many choices"
    by_index = {c.index: c.text for c in r.choices}
    # The same seeded request streamed gives each choice the same text.
    texts, reasons, _ = u.joined_completion_stream(client.completions.create(
        model=model_id, prompt=PROMPT, n=3, max_tokens=8, temperature=0.8, seed=7, logit_bias=u.NO_EOS, stream=True),
        n=3)
    assert texts == [by_index[0], by_index[1], by_index[2]]
    assert reasons == ["length"] * 3

    # Greedy: every choice is the n=1 greedy text.
    g = client.completions.create(model=model_id, prompt=PROMPT, n=3, max_tokens=16, temperature=0,
                                  logit_bias=u.NO_EOS)
    assert [c.text for c in sorted(g.choices, key=lambda c: c.index)] == [greedy16] * 3


def test_chat_n3(client, model_id):
    r = client.chat.completions.create(model=model_id, messages=CHAT, n=3, max_tokens=6, temperature=0.8, seed=3)
    assert sorted(c.index for c in r.choices) == [0, 1, 2]
    assert all(c.message.role == "assistant" for c in r.choices)


# ---- logprobs --------------------------------------------------------------

def test_completion_logprobs(client, model_id):
    # No logit_bias here: whether logprobs see it is not what this checks.
    r = client.completions.create(model=model_id, prompt=PROMPT, max_tokens=6, temperature=0, logprobs=2)
    c = r.choices[0]
    lp = c.logprobs
    assert lp is not None, "logprobs=2 returned no logprobs"
    n = r.usage.completion_tokens
    assert n >= 3 and (n == 6 or c.finish_reason == "stop"), r
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == n
    assert "".join(lp.tokens) == c.text
    assert all(b >= a for a, b in zip(lp.text_offset, lp.text_offset[1:])), lp.text_offset
    for tok, chosen, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert chosen <= 0.0 and math.isfinite(chosen)
        # Two alternatives (one if both decode to the same text).
        assert 1 <= len(top) <= 2, top
        assert all(v <= 0.0 for v in top.values()), top
        # Greedy: the chosen token is the likeliest one.
        assert tok in top, f"greedy token {tok!r} not among the top alternatives {top}"
        assert top[tok] == pytest.approx(chosen, abs=1e-4)
        assert chosen == pytest.approx(max(top.values()), abs=1e-4)
    assert sum(math.exp(v) for v in lp.top_logprobs[0].values()) <= 1.0 + 1e-4


def test_chat_logprobs(client, model_id):
    r = client.chat.completions.create(model=model_id, messages=CHAT, max_tokens=6, temperature=0, logprobs=True,
                                       top_logprobs=2)
    c = r.choices[0]
    assert c.logprobs is not None and c.logprobs.content is not None, "logprobs=True returned none"
    content = c.logprobs.content
    assert len(content) == r.usage.completion_tokens >= 3
    assert "".join(t.token for t in content) == c.message.content
    for t in content:
        assert t.logprob <= 0.0 and math.isfinite(t.logprob)
        assert t.bytes == list(t.token.encode("utf-8"))
        assert len(t.top_logprobs) == 2, t
        assert t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob
        assert all(a.logprob <= 0.0 for a in t.top_logprobs)
        assert t.top_logprobs[0].token == t.token
        assert t.top_logprobs[0].logprob == pytest.approx(t.logprob, abs=1e-4)


def test_chat_logprobs_off_by_default(client, model_id):
    r = client.chat.completions.create(model=model_id, messages=CHAT, max_tokens=3, temperature=0)
    assert r.choices[0].logprobs is None


# ---- stop strings ----------------------------------------------------------

def _stop_inside(text):
    """A stop string whose first occurrence in `text` is at k >= 3, with the
    text before it non-blank."""
    for k in range(3, len(text) - 3):
        s = text[k:k + 3]
        if text.find(s) == k and text[:k].strip():
            return s, k
    pytest.fail(f"no usable stop string in {text!r}")


def test_completion_stop_string(client, model_id, greedy16):
    stop, k = _stop_inside(greedy16)
    kw = dict(model=model_id, prompt=PROMPT, max_tokens=16, temperature=0, logit_bias=u.NO_EOS, stop=[stop])
    r = client.completions.create(**kw)
    assert r.choices[0].text == greedy16[:k], f"stop={stop!r}"
    assert r.choices[0].finish_reason == "stop"
    texts, reasons, _ = u.joined_completion_stream(client.completions.create(stream=True, **kw))
    assert texts[0] == greedy16[:k], f"stream, stop={stop!r}"
    assert reasons[0] == "stop"


def test_stop_string_across_token_boundary(client, model_id, greedy16):
    r = client.completions.create(model=model_id, prompt=PROMPT, max_tokens=16, temperature=0, logprobs=0,
                                  logit_bias=u.NO_EOS)
    toks = r.choices[0].logprobs.tokens
    assert "".join(toks) == greedy16
    offset = 0
    for a, b in zip(toks, toks[1:]):
        offset += len(a)
        if len(a) >= 2 and len(b) >= 2 and offset >= 3:
            stop = a[-2:] + b[:2]
            k = greedy16.find(stop)
            if greedy16[:k].strip():
                break
    else:
        pytest.fail(f"no two adjacent multi-character tokens in {toks}")
    r = client.completions.create(model=model_id, prompt=PROMPT, max_tokens=16, temperature=0, logit_bias=u.NO_EOS,
                                  stop=stop)
    assert r.choices[0].text == greedy16[:k], f"stop={stop!r}"
    assert r.choices[0].finish_reason == "stop"


def test_chat_stop_string(client, model_id):
    full = u.chat_text(client.chat.completions.create(model=model_id, messages=CHAT, max_tokens=16, temperature=0,
                                                      logit_bias=u.NO_EOS))
    stop, k = _stop_inside(full)
    stream = client.chat.completions.create(model=model_id, messages=CHAT, max_tokens=16, temperature=0,
                                            logit_bias=u.NO_EOS, stop=[stop, "never-appears-xyz"], stream=True)
    texts, reasons, _ = u.joined_chat_stream(stream)
    assert texts[0] == full[:k] and reasons[0] == "stop", f"stop={stop!r}"


# ---- usage, include_usage, echo, length ------------------------------------

def test_completion_usage_counts(server, client, model_id):
    r = client.completions.create(model=model_id, prompt=PROMPT, max_tokens=10, temperature=0, logit_bias=u.NO_EOS)
    assert r.usage.prompt_tokens == len(u.tokenize(server.base_url, PROMPT))
    assert r.usage.completion_tokens == 10
    assert r.usage.total_tokens == r.usage.prompt_tokens + 10
    # Tokens streamed (counted through per-token logprobs) == completion_tokens.
    stream = client.completions.create(model=model_id, prompt=PROMPT, max_tokens=10, temperature=0, logprobs=0,
                                       logit_bias=u.NO_EOS, stream=True, stream_options={"include_usage": True})
    streamed, usage = 0, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            if c.logprobs is not None:
                streamed += len(c.logprobs.tokens)
    assert usage is not None
    assert streamed == usage.completion_tokens == 10
    assert usage.prompt_tokens == r.usage.prompt_tokens


def test_chat_usage(server, client, model_id):
    r = client.chat.completions.create(model=model_id, messages=CHAT, max_tokens=5, temperature=0,
                                       logit_bias=u.NO_EOS)
    content_tokens = len(u.tokenize(server.base_url, CHAT[0]["content"]))
    assert r.usage.prompt_tokens > content_tokens, "chat usage must count the templated prompt"
    assert r.usage.completion_tokens == 5
    assert r.usage.total_tokens == r.usage.prompt_tokens + 5


@pytest.mark.parametrize("chat", [False, True])
def test_include_usage_final_chunk(client, model_id, chat):
    common = dict(model=model_id, max_tokens=7, temperature=0, logit_bias=u.NO_EOS, stream=True,
                  stream_options={"include_usage": True})
    if chat:
        chunks = list(client.chat.completions.create(messages=CHAT, **common))
    else:
        chunks = list(client.completions.create(prompt=PROMPT, **common))
    last = chunks[-1]
    assert last.choices == [], "the usage chunk must have no choices"
    assert last.usage is not None
    assert last.usage.completion_tokens == 7
    assert last.usage.total_tokens == last.usage.prompt_tokens + 7
    assert all(c.usage is None for c in chunks[:-1]), "only the last chunk carries usage"


def test_no_usage_chunk_without_include_usage(client, model_id):
    chunks = list(client.completions.create(model=model_id, prompt=PROMPT, max_tokens=4, temperature=0, stream=True))
    assert all(c.choices for c in chunks)
    assert all(getattr(c, "usage", None) is None for c in chunks)


def test_echo_prepends_prompt(client, model_id, greedy16):
    r = client.completions.create(model=model_id, prompt=PROMPT, max_tokens=16, temperature=0, echo=True,
                                  logit_bias=u.NO_EOS)
    assert r.choices[0].text == PROMPT + greedy16
    texts, _, _ = u.joined_completion_stream(client.completions.create(
        model=model_id, prompt=PROMPT, max_tokens=16, temperature=0, echo=True, logit_bias=u.NO_EOS, stream=True))
    assert texts[0] == PROMPT + greedy16


def test_token_prompt_same_as_text_prompt(server, client, model_id, greedy16):
    ids = u.tokenize(server.base_url, PROMPT)
    r = client.completions.create(model=model_id, prompt=ids, max_tokens=16, temperature=0, logit_bias=u.NO_EOS)
    assert r.choices[0].text == greedy16


@pytest.mark.parametrize("chat", [False, True])
def test_max_tokens_gives_length(client, model_id, chat):
    if chat:
        r = client.chat.completions.create(model=model_id, messages=CHAT, max_tokens=3, temperature=0,
                                           logit_bias=u.NO_EOS)
    else:
        r = client.completions.create(model=model_id, prompt=PROMPT, max_tokens=3, temperature=0,
                                      logit_bias=u.NO_EOS)
    assert r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 3


def test_completions_default_max_tokens_is_16(client, model_id):
    r = client.completions.create(model=model_id, prompt=PROMPT, temperature=0, logit_bias=u.NO_EOS)
    assert r.usage.completion_tokens == 16 and r.choices[0].finish_reason == "length"


# ---- utility routes --------------------------------------------------------

def test_models_lists_the_model(client, model_id):
    models = client.models.list()
    ids = [m.id for m in models.data]
    assert ids == [model_id]
    assert models.data[0].object == "model"
    assert client.models.retrieve(model_id).id == model_id


def test_health(server):
    r = u.get(server.base_url, "/health")
    assert r.status == 200


def test_metrics_count_requests_and_prefix_hits(server, client, model_id):
    before = u.metrics(server.base_url)
    # ~200 tokens: many full KV blocks for the prefix cache to hold.
    long_prompt = "In the beginning there was a small village by the sea. " * 16
    a = client.completions.create(model=model_id, prompt=long_prompt, max_tokens=2, temperature=0)
    b = client.completions.create(model=model_id, prompt=long_prompt, max_tokens=2, temperature=0)
    assert a.choices[0].text == b.choices[0].text
    after = u.metrics(server.base_url)
    done = "omnibus_requests_total"
    assert u.metric(after, done, outcome="completed") - u.metric(before, done, outcome="completed") == 2
    hits = "omnibus_prefix_cache_hit_tokens_total"
    gained = u.metric(after, hits) - u.metric(before, hits)
    assert gained >= a.usage.prompt_tokens // 2, f"second identical prompt hit only {gained} cached tokens"
    for name in ("omnibus_kv_blocks_used", "omnibus_kv_blocks_total", "omnibus_preemptions_total",
                 "omnibus_num_requests_running", "omnibus_num_requests_waiting"):
        u.metric(after, name)
    assert u.metric(after, "omnibus_kv_blocks_total") > 0
    r = u.get(server.base_url, "/metrics")
    assert r.headers.get("content-type", "").startswith("text/plain"), r.headers
    assert "# TYPE omnibus_requests_total counter" in r.body.decode()


@pytest.mark.parametrize("text", ["Hello world", "naïve café, 日本語 🙂 tabs\tand\nnewlines", " x"])
def test_tokenize_detokenize_round_trip(server, text):
    tokens = u.tokenize(server.base_url, text)
    assert tokens and all(0 <= t < u.VOCAB_SIZE for t in tokens)
    r = u.post(server.base_url, "/detokenize", {"tokens": tokens})
    assert r.status == 200, r
    assert r.json()["content"] == text


def test_tokenize_known_ids(server):
    # Token ids of the model's own vocabulary: "Hello" is one token.
    assert len(u.tokenize(server.base_url, "Hello")) == 1
    assert len(u.tokenize(server.base_url, "Hello world, this is a test.")) > 4


def test_alias_names_the_model(server_factory):
    s = server_factory("-c", "512", "--alias", "tiny-chat", "--kv-cache-mib", "64", name="alias")
    c = s.client()
    assert [m.id for m in c.models.list().data] == ["tiny-chat"]
    r = c.completions.create(model="tiny-chat", prompt=PROMPT, max_tokens=2, temperature=0)
    assert r.model == "tiny-chat" and r.usage.completion_tokens >= 1
    bad = u.post(s.base_url, "/v1/completions", {"model": "not-this-one", "prompt": PROMPT, "max_tokens": 2})
    u.assert_openai_error(bad, 404)
    assert s.stop(), f"no clean exit on SIGTERM (exit code {s.proc.returncode})"


# ---- HTTP details ----------------------------------------------------------

def test_chunked_body_and_keep_alive_across_a_bad_request(server, model_id, greedy16):
    """A chunked request body is read whole, and one connection carries a
    good request, a bad one and a good one again."""
    host, port = u.host_port(server.base_url)
    body = json.dumps({"model": model_id, "prompt": PROMPT, "max_tokens": 16, "temperature": 0,
                       "logit_bias": u.NO_EOS}).encode()
    conn = http.client.HTTPConnection(host, port, timeout=120)
    try:
        conn.request("POST", "/v1/completions", body=iter([body[:7], body[7:30], body[30:]]),
                     headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"},
                     encode_chunked=True)
        r = conn.getresponse()
        assert r.status == 200
        assert json.loads(r.read())["choices"][0]["text"] == greedy16
        conn.request("POST", "/v1/completions", body=b'{"prompt": [', headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        u.assert_openai_error(u.Response(r.status, {}, r.read()), 400)
        conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 200
        assert json.loads(r.read())["choices"][0]["text"] == greedy16
    finally:
        conn.close()


def test_model_field_may_be_omitted(server, greedy16):
    r = u.post(server.base_url, "/v1/completions", {"prompt": PROMPT, "max_tokens": 16, "temperature": 0,
                                                    "logit_bias": u.NO_EOS})
    assert r.status == 200, r
    assert r.json()["choices"][0]["text"] == greedy16


def test_echo_with_max_tokens_0_returns_the_prompt(server, model_id):
    r = u.post(server.base_url, "/v1/completions", {"model": model_id, "prompt": PROMPT, "max_tokens": 0,
                                                    "echo": True})
    assert r.status == 200, r
    doc = r.json()
    assert doc["choices"][0]["text"] == PROMPT
    assert doc["usage"]["completion_tokens"] == 0
