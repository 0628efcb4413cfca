"""What OpenAI clients expect beyond the basics, on the real model: the
routes without /v1 (a base URL without it), usage.prompt_tokens_details.
cached_tokens from the prefix cache, a stream's finish_reason in a last
chunk of its own (chat: "delta": {}; completions: "text": ""), the context
length in /v1/models, and CORS (--cors-origin) for browser clients."""
import json
import subprocess
import uuid

import openai
import pytest

import e2e_util as u
from conftest import BIN, MODEL

CONTEXT = 1024
ORIGIN = "http://localhost:3000"
KEY = "sk-parity"
# Long enough for whole 16-token KV blocks, so a repeat finds them cached.
FILLER = ("The museum's east wing holds maps, clocks and letters from the city's first century; "
          "the west wing holds paintings of its harbour, its bridges and its markets. ")


def unique_prompt():
    """A prompt whose first block no other request shares (a fresh cache miss)."""
    return f"[{uuid.uuid4().hex}] {FILLER * 2}Summarise the above in one sentence:"


def sse_payloads(body):
    """The JSON payloads of a whole SSE body, [DONE] left out."""
    out = []
    for line in body.decode().splitlines():
        if line.startswith("data: ") and line[6:] != "[DONE]":
            out.append(json.loads(line[6:]))
    return out


@pytest.fixture(scope="module")
def bare_client(server):
    """The openai client on a base URL without /v1."""
    return openai.OpenAI(base_url=server.base_url, api_key="sk-unused", max_retries=0, timeout=120)


# ---- routes without /v1 ----------------------------------------------------

def test_routes_without_v1_behave_like_v1(server, client, bare_client, model_id):
    assert [m.id for m in bare_client.models.list().data] == [model_id]
    assert bare_client.models.retrieve(model_id).id == model_id
    with pytest.raises(openai.NotFoundError):
        bare_client.models.retrieve("gpt-4")

    prompt = "The capital of France is"
    a = bare_client.completions.create(model=model_id, prompt=prompt, max_tokens=8, temperature=0)
    b = client.completions.create(model=model_id, prompt=prompt, max_tokens=8, temperature=0)
    assert a.choices[0].text == b.choices[0].text and a.usage.completion_tokens == b.usage.completion_tokens

    chat = [{"role": "user", "content": "What is the capital of France?"}]
    a = bare_client.chat.completions.create(model=model_id, messages=chat, max_tokens=8, temperature=0)
    b = client.chat.completions.create(model=model_id, messages=chat, max_tokens=8, temperature=0)
    assert a.choices[0].message.content == b.choices[0].message.content
    streamed, reasons, _ = u.joined_chat_stream(
        bare_client.chat.completions.create(model=model_id, messages=chat, max_tokens=8, temperature=0, stream=True))
    assert streamed[0] == a.choices[0].message.content and reasons[0] == a.choices[0].finish_reason


# ---- /v1/models --------------------------------------------------------------

def test_models_carry_the_context_length(server, model_id):
    for path in ("/v1/models", "/models"):
        entry = u.get(server.base_url, path).json()["data"][0]
        assert entry["context_length"] == CONTEXT and entry["max_model_len"] == CONTEXT, entry
        assert entry["id"] == model_id and entry["object"] == "model" and entry["owned_by"] == "omnibus"
    one = u.get(server.base_url, f"/v1/models/{model_id}").json()
    assert one["context_length"] == CONTEXT, one


# ---- usage.prompt_tokens_details.cached_tokens -------------------------------

def cached(usage):
    return usage.prompt_tokens_details.cached_tokens


def unique_chat():
    """Messages whose first block is new: without a system message of its
    own, the template's default one would start every chat prompt alike."""
    return [{"role": "system", "content": unique_prompt()}, {"role": "user", "content": "Go on."}]


def test_cached_tokens_chat_second_request_hits_the_prefix_cache(client, model_id):
    messages = unique_chat()
    first = client.chat.completions.create(model=model_id, messages=messages, max_tokens=4, temperature=0)
    second = client.chat.completions.create(model=model_id, messages=messages, max_tokens=4, temperature=0)
    assert cached(first.usage) == 0, first.usage
    assert 16 <= cached(second.usage) < second.usage.prompt_tokens, second.usage
    assert first.usage.prompt_tokens == second.usage.prompt_tokens
    assert first.choices[0].message.content == second.choices[0].message.content


def test_cached_tokens_completions_streaming_usage_chunk(client, model_id):
    prompt = unique_prompt()
    counts = []
    for _ in range(2):
        stream = client.completions.create(model=model_id, prompt=prompt, max_tokens=4, temperature=0, stream=True,
                                           stream_options={"include_usage": True})
        usage = [c.usage for c in stream if c.usage is not None]
        assert len(usage) == 1, usage
        counts.append((cached(usage[0]), usage[0].prompt_tokens))
    (first, prompt_tokens), (second, _) = counts
    assert first == 0 and 16 <= second < prompt_tokens, counts
    # And without streaming, on the completions route.
    again = client.completions.create(model=model_id, prompt=prompt, max_tokens=4, temperature=0)
    assert cached(again.usage) == second, again.usage


def test_cached_tokens_chat_streaming(client, model_id):
    messages = unique_chat()
    seen = []
    for _ in range(2):
        stream = client.chat.completions.create(model=model_id, messages=messages, max_tokens=4, temperature=0,
                                                stream=True, stream_options={"include_usage": True})
        seen.append([cached(c.usage) for c in stream if c.usage is not None])
    assert seen[0] == [0] and len(seen[1]) == 1 and seen[1][0] >= 16, seen


# ---- the stream's last chunk ----------------------------------------------

def test_chat_stream_ends_with_an_empty_delta_chunk(client, model_id):
    chat = [{"role": "user", "content": "Name three colours."}]
    chunks = list(client.chat.completions.create(model=model_id, messages=chat, max_tokens=12, temperature=0,
                                                 stream=True, logit_bias=u.NO_EOS))
    choices = [c.choices[0] for c in chunks]
    assert all(c.finish_reason is None for c in choices[:-1]), choices
    last = choices[-1]
    assert last.finish_reason == "length"
    assert last.delta.content is None and last.delta.role is None, last
    # Every token's text came before, in chunks of their own.
    assert "".join(c.delta.content or "" for c in choices[:-1]).strip()


def test_chat_stream_final_chunk_raw(server, model_id):
    body = {"model": model_id, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "stream": True,
            "n": 2, "logit_bias": u.NO_EOS}
    ended = []
    for p in sse_payloads(u.post(server.base_url, "/v1/chat/completions", body).body):
        choice = p["choices"][0]
        assert choice["index"] not in ended, f"a chunk after choice {choice['index']}'s last: {p}"
        if choice["finish_reason"] is not None:
            assert choice["delta"] == {} and choice["finish_reason"] == "length" and choice["logprobs"] is None, p
            ended.append(choice["index"])
    assert sorted(ended) == [0, 1]


def test_completion_stream_ends_with_an_empty_text_chunk(client, model_id):
    prompt = "The capital of France is"
    whole = client.completions.create(model=model_id, prompt=prompt, max_tokens=8, temperature=0,
                                      logit_bias=u.NO_EOS)
    chunks = list(client.completions.create(model=model_id, prompt=prompt, max_tokens=8, temperature=0, stream=True,
                                            logit_bias=u.NO_EOS))
    choices = [c.choices[0] for c in chunks]
    assert choices[-1].text == "" and choices[-1].finish_reason == "length", choices[-1]
    assert all(c.finish_reason is None for c in choices[:-1])
    assert "".join(c.text for c in choices) == whole.choices[0].text


# ---- CORS ------------------------------------------------------------------

@pytest.fixture(scope="module")
def cors_server(server_factory):
    return server_factory("-c", "512", "--kv-cache-mib", "64", "--api-key", KEY,
                          "--cors-origin", f"http://other.example, {ORIGIN}", name="cors")


def test_cors_preflight_needs_no_key(cors_server):
    r = u.request(cors_server.base_url, "OPTIONS", "/v1/chat/completions",
                  headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST",
                           "Access-Control-Request-Headers": "authorization, content-type, x-stainless-lang"})
    assert r.status == 204 and r.body == b"", r
    assert r.headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in r.headers["access-control-allow-methods"]
    allowed = [h.strip() for h in r.headers["access-control-allow-headers"].split(",")]
    assert {"authorization", "content-type", "x-stainless-lang"} <= set(allowed), allowed
    assert int(r.headers["access-control-max-age"]) > 0
    # An origin not listed gets no preflight: the key is asked for as before.
    other = u.request(cors_server.base_url, "OPTIONS", "/v1/chat/completions",
                      headers={"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
    assert other.status == 401 and "access-control-allow-origin" not in other.headers, other


def test_cors_requests_still_need_the_key_and_carry_the_header(cors_server):
    body = {"model": cors_server.model_id, "prompt": "Hello", "max_tokens": 3}
    no_key = u.post(cors_server.base_url, "/v1/completions", body, headers={"Origin": ORIGIN})
    u.assert_openai_error(no_key, 401)
    assert no_key.headers.get("access-control-allow-origin") == ORIGIN
    auth = {"Origin": ORIGIN, "Authorization": f"Bearer {KEY}"}
    ok = u.post(cors_server.base_url, "/v1/completions", body, headers=auth)
    assert ok.status == 200, ok
    assert ok.headers["access-control-allow-origin"] == ORIGIN and ok.headers["vary"] == "Origin"
    streamed = u.post(cors_server.base_url, "/chat/completions",
                      {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3, "stream": True}, headers=auth)
    assert streamed.status == 200 and streamed.headers["content-type"].startswith("text/event-stream"), streamed
    assert streamed.headers["access-control-allow-origin"] == ORIGIN
    assert streamed.body.rstrip().endswith(b"data: [DONE]")


def test_without_cors_flag_no_cors_headers(server):
    r = u.get(server.base_url, "/v1/models", headers={"Origin": ORIGIN})
    assert r.status == 200 and "access-control-allow-origin" not in r.headers and "vary" not in r.headers
    pre = u.request(server.base_url, "OPTIONS", "/v1/models",
                    headers={"Origin": ORIGIN, "Access-Control-Request-Method": "GET"})
    u.assert_openai_error(pre, 405)


@pytest.mark.parametrize("origin", ["localhost:3000", "http://a.example/path", "null"])
def test_bad_cors_origin_is_a_clear_error(need_model, origin):
    r = subprocess.run([str(BIN), "serve", "-m", str(MODEL), "--port", "0", "--cors-origin", origin],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "--cors-origin" in r.stderr and origin in r.stderr, r.stderr
