"""Every way a client can get a request wrong gets the right HTTP status and
the OpenAI error body {"error": {"message", "type", "param", "code"}}, and
the server goes on answering correctly afterwards."""
import socket
import threading
import time

import openai
import pytest

import e2e_util as u
from conftest import MODEL_ID

CTX = 512
PROMPT = "The capital of France is"
MSGS = [{"role": "user", "content": "Hi"}]
CMPL, CHAT = "/v1/completions", "/v1/chat/completions"


def cmpl(**kw):
    return {"model": MODEL_ID, "prompt": PROMPT, "max_tokens": 2, **kw}


def chat(**kw):
    return {"model": MODEL_ID, "messages": MSGS, "max_tokens": 2, **kw}


@pytest.fixture(scope="module")
def srv(server_factory):
    return server_factory("-c", str(CTX), "--kv-cache-mib", "64", name="errors")


@pytest.fixture(scope="module")
def reference(srv):
    """A greedy answer taken before any bad request, to compare against after."""
    r = u.post(srv.base_url, CMPL, cmpl(max_tokens=8, temperature=0))
    assert r.status == 200, r
    return r.json()["choices"][0]["text"]


def check_still_serving(base_url, reference):
    r = u.post(base_url, CMPL, cmpl(max_tokens=8, temperature=0))
    assert r.status == 200, f"a normal request after the bad ones failed: {r!r}"
    assert r.json()["choices"][0]["text"] == reference


# (name, path, body, expected status, expected param or None)
BAD_REQUESTS = [
    # Not JSON, or not an object.
    ("invalid_json", CMPL, b'{"prompt": "hi",', 400, None),
    ("invalid_json_chat", CHAT, b'{"messages": [', 400, None),
    ("empty_body", CMPL, b"", 400, None),
    ("json_array", CMPL, b"[1, 2]", 400, None),
    ("json_string", CHAT, b'"hello"', 400, None),
    # Wrong types.
    ("max_tokens_string", CMPL, cmpl(max_tokens="5"), 400, "max_tokens"),
    ("prompt_number", CMPL, cmpl(prompt=5), 400, "prompt"),
    ("prompt_object", CMPL, cmpl(prompt={"text": "hi"}), 400, "prompt"),
    ("temperature_string", CMPL, cmpl(temperature="hot"), 400, "temperature"),
    ("stream_string", CMPL, cmpl(stream="yes"), 400, "stream"),
    ("stop_number", CMPL, cmpl(stop=5), 400, "stop"),
    ("seed_string", CMPL, cmpl(seed="x"), 400, "seed"),
    ("n_float", CMPL, cmpl(n=2.5), 400, "n"),
    ("echo_int", CMPL, cmpl(echo=1), 400, "echo"),
    ("model_number", CMPL, cmpl(model=7), 400, "model"),
    ("messages_string", CHAT, chat(messages="hi"), 400, "messages"),
    ("message_not_object", CHAT, chat(messages=["hi"]), 400, "messages[0]"),
    ("message_bad_role", CHAT, chat(messages=[{"role": "wizard", "content": "x"}]), 400, "messages[0].role"),
    ("message_no_content", CHAT, chat(messages=[{"role": "user"}]), 400, "messages[0].content"),
    ("message_content_number", CHAT, chat(messages=[{"role": "user", "content": 5}]), 400, "messages[0].content"),
    ("chat_logprobs_int", CHAT, chat(logprobs=2), 400, "logprobs"),
    # Out of range.
    ("temperature_5", CMPL, cmpl(temperature=5), 400, "temperature"),
    ("temperature_negative", CHAT, chat(temperature=-0.1), 400, "temperature"),
    ("top_p_above_1", CMPL, cmpl(top_p=1.5), 400, "top_p"),
    ("top_p_negative", CMPL, cmpl(top_p=-0.5), 400, "top_p"),
    ("n_0", CMPL, cmpl(n=0), 400, "n"),
    ("n_0_chat", CHAT, chat(n=0), 400, "n"),
    ("n_too_many", CMPL, cmpl(n=1000), 400, "n"),
    ("max_tokens_negative", CMPL, cmpl(max_tokens=-1), 400, "max_tokens"),
    ("chat_max_tokens_0", CHAT, chat(max_tokens=0), 400, "max_tokens"),
    ("presence_penalty_3", CMPL, cmpl(presence_penalty=3), 400, "presence_penalty"),
    ("completion_logprobs_6", CMPL, cmpl(logprobs=6), 400, "logprobs"),
    ("top_logprobs_21", CHAT, chat(logprobs=True, top_logprobs=21), 400, "top_logprobs"),
    ("top_logprobs_without_logprobs", CHAT, chat(top_logprobs=2), 400, "top_logprobs"),
    ("stop_five_strings", CMPL, cmpl(stop=["a", "b", "c", "d", "e"]), 400, "stop"),
    ("stream_options_without_stream", CMPL, cmpl(stream_options={"include_usage": True}), 400, "stream_options"),
    ("invalid_in_stream_request", CMPL, cmpl(stream=True, temperature=5), 400, "temperature"),
    # Empty.
    ("empty_prompt", CMPL, cmpl(prompt=""), 400, "prompt"),
    ("empty_token_prompt", CMPL, cmpl(prompt=[]), 400, "prompt"),
    ("no_prompt", CMPL, {"model": MODEL_ID, "max_tokens": 2}, 400, "prompt"),
    ("empty_messages", CHAT, chat(messages=[]), 400, "messages"),
    ("no_messages", CHAT, {"model": MODEL_ID}, 400, "messages"),
    # Token ids outside the vocabulary (checked against the model).
    ("token_outside_vocab", CMPL, cmpl(prompt=[999999]), 400, None),
    ("token_vocab_size", CMPL, cmpl(prompt=[1, u.VOCAB_SIZE]), 400, None),
    ("token_negative", CMPL, cmpl(prompt=[-1]), 400, None),
    ("logit_bias_outside_vocab", CMPL, cmpl(logit_bias={"999999": 1}), 400, None),
    ("logit_bias_outside_vocab_chat", CHAT, chat(logit_bias={"999999": 1}), 400, None),
    ("logit_bias_bad_key", CMPL, cmpl(logit_bias={"abc": 1}), 400, "logit_bias"),
    ("logit_bias_value_200", CMPL, cmpl(logit_bias={"5": 200}), 400, None),
    ("detokenize_outside_vocab", "/detokenize", {"tokens": [999999]}, 400, None),
    ("detokenize_not_list", "/detokenize", {"tokens": "abc"}, 400, None),
    ("tokenize_no_content", "/tokenize", {"text": "abc"}, 400, None),
    ("tokenize_content_number", "/tokenize", {"content": 5}, 400, None),
]


@pytest.mark.parametrize("name,path,body,status,param", BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS])
def test_bad_request(srv, reference, name, path, body, status, param):
    r = u.post(srv.base_url, path, body)
    u.assert_openai_error(r, status, param)
    assert r.headers.get("content-type", "").startswith("application/json"), r.headers


def test_openai_client_sees_bad_request(srv):
    c = srv.client()
    with pytest.raises(openai.BadRequestError) as e:
        c.completions.create(model=MODEL_ID, prompt=PROMPT, max_tokens=2, temperature=5)
    assert e.value.status_code == 400


@pytest.mark.parametrize("path,body", [
    (CMPL, cmpl(max_tokens=600)),
    (CHAT, chat(max_tokens=600)),
])
def test_context_exceeded_names_the_numbers(srv, path, body):
    r = u.post(srv.base_url, path, body)
    err = u.assert_openai_error(r, 400)
    msg = err["message"]
    assert str(CTX) in msg and "600" in msg, f"the message should give the context and max_tokens: {msg!r}"
    if path == CMPL:
        n_prompt = len(u.tokenize(srv.base_url, PROMPT))
        assert str(n_prompt) in msg, f"the message should give the prompt's {n_prompt} tokens: {msg!r}"


def test_prompt_alone_exceeds_context(srv):
    long_prompt = "word " * (CTX + 50)
    r = u.post(srv.base_url, CHAT, {"model": MODEL_ID, "messages": [{"role": "user", "content": long_prompt}]})
    err = u.assert_openai_error(r, 400)
    assert str(CTX) in err["message"], err


@pytest.mark.parametrize("path,field", [(CMPL, "prompt"), (CHAT, "messages"), ("/tokenize", "content")])
def test_megabytes_of_text_are_refused_unread(srv, reference, path, field):
    # 6 MB of one letter: tokenizing it would take seconds and hundreds of
    # MB; the server refuses it from its length (no token covers more than
    # the vocabulary's longest text) and stays quick for everyone else.
    text = "a" * (6 << 20)
    body = {"model": MODEL_ID, "prompt": text, "max_tokens": 1} if path == CMPL else \
        {"model": MODEL_ID, "messages": [{"role": "user", "content": text}]} if path == CHAT else {"content": text}
    r = u.post(srv.base_url, path, body)
    err = u.assert_openai_error(r, 400)
    assert err["code"] == "context_length_exceeded", err
    assert err["param"] == field, err
    assert "bytes" in err["message"] and str(CTX) in err["message"], err
    check_still_serving(srv.base_url, reference)


@pytest.mark.parametrize("path", [CMPL, CHAT])
def test_unknown_model_is_404(srv, path):
    body = cmpl(model="gpt-4-turbo") if path == CMPL else chat(model="gpt-4-turbo")
    u.assert_openai_error(u.post(srv.base_url, path, body), 404)


@pytest.mark.parametrize("method,path", [
    ("GET", "/v1/nope"), ("POST", "/v1/engines/x/completions"), ("POST", "/v2/completions"), ("GET", "/metricsx"),
])
def test_unknown_route_is_404(srv, method, path):
    body = cmpl() if method == "POST" else None
    u.assert_openai_error(u.request(srv.base_url, method, path, body), 404)


def test_unknown_model_id_route_is_404(srv):
    u.assert_openai_error(u.get(srv.base_url, "/v1/models/gpt-4"), 404)
    assert u.get(srv.base_url, f"/v1/models/{MODEL_ID}").status == 200


def test_wrong_method_is_4xx(srv):
    r = u.get(srv.base_url, CMPL)
    assert r.status in (404, 405), r
    u.assert_openai_error(r)


def _raw_exchange(base_url, head, body_chunks, timeout=30):
    """Sends `head` then the body chunks (stopping if the server hangs up)
    and returns the raw response bytes."""
    host, port = u.host_port(base_url)
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(head)
        # A server may refuse on the headers alone: read that before sending
        # a body it will never read (a reset would lose its answer).
        s.settimeout(1.0)
        try:
            data = s.recv(65536)
        except socket.timeout:
            data = b""
        s.settimeout(timeout)
        if data:
            body_chunks = []
        try:
            for chunk in body_chunks:
                s.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered early and closed: read what it said
        data += u.read_until_closed(s)[0]
    return data


def test_oversized_body_is_413(srv):
    size = 9 << 20
    filler = b"a" * (1 << 20)
    chunks = [b'{"model": "' + MODEL_ID.encode() + b'", "prompt": "'] + [filler] * 9 + [b'"}']
    total = sum(len(c) for c in chunks)
    assert total > size
    head = (f"POST {CMPL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Content-Length: {total}\r\nConnection: close\r\n\r\n").encode()
    data = _raw_exchange(srv.base_url, head, chunks)
    assert data, "no response to an oversized body"
    status_line, _, rest = data.partition(b"\r\n")
    assert b" 413 " in status_line + b" ", status_line
    body = rest.partition(b"\r\n\r\n")[2]
    u.assert_openai_error(u.Response(413, {}, body), 413)


def test_server_still_serving_after_errors(srv, reference):
    check_still_serving(srv.base_url, reference)
    m = u.metrics(srv.base_url)
    assert u.metric(m, "omnibus_requests_total", outcome="rejected") > 0
    assert u.metric(m, "omnibus_kv_blocks_used") == 0


# ---- API key ---------------------------------------------------------------

KEY = "sk-e2e-test-key-123"


@pytest.fixture(scope="module")
def keyed(server_factory):
    return server_factory("-c", str(CTX), "--kv-cache-mib", "64", "--api-key", KEY, name="api-key")


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong-key"}, {"Authorization": "Bearer "},
                                     {"Authorization": KEY}, {"Authorization": f"Basic {KEY}"}],
                         ids=["missing", "wrong", "empty", "no_bearer", "basic"])
@pytest.mark.parametrize("method,path", [("POST", CMPL), ("POST", CHAT), ("GET", "/v1/models")])
def test_bad_api_key_is_401(keyed, headers, method, path):
    body = (cmpl() if path == CMPL else chat()) if method == "POST" else None
    u.assert_openai_error(u.request(keyed.base_url, method, path, body, headers=headers), 401)


def test_good_api_key_and_open_health(keyed):
    assert u.get(keyed.base_url, "/health").status == 200, "/health must not need the key"
    ok = keyed.client().completions.create(model=MODEL_ID, prompt=PROMPT, max_tokens=2, temperature=0)
    assert ok.usage.completion_tokens >= 1
    with pytest.raises(openai.AuthenticationError):
        keyed.client(api_key="sk-wrong").completions.create(model=MODEL_ID, prompt=PROMPT, max_tokens=2)


# ---- queue full ------------------------------------------------------------

def test_queue_full_is_429_with_retry_after(server_factory):
    s = server_factory("-c", "1024", "--kv-cache-mib", "64", "--max-seqs", "1", "--max-queue", "1", name="queue")
    reference = u.post(s.base_url, CMPL, cmpl(max_tokens=8, temperature=0)).json()["choices"][0]["text"]
    # A long request holds the only running slot.
    conn, resp = u.open_stream(s.base_url, CMPL, cmpl(max_tokens=600, temperature=0, stream=True,
                                                      logit_bias=u.NO_EOS, prompt="Count: 1, 2, 3,"))
    assert resp.status == 200, resp.read()
    next(u.sse_events(resp))  # running now
    results = [None] * 8

    def one(i):
        results[i] = u.post(s.base_url, CMPL, cmpl(max_tokens=2, temperature=0), timeout=120)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    # The refusals come back at once; the queued one waits for the slot.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and sum(r is not None for r in results) < len(results) - 1:
        time.sleep(0.05)
    u.hard_close(conn, resp)  # frees the slot
    for t in threads:
        t.join(timeout=120)
    assert all(r is not None for r in results), "a request got no answer"
    refused = [r for r in results if r.status != 200]
    assert len(refused) >= len(results) - 1, f"with one queue slot at most one may wait: {results}"
    for r in refused:
        assert r.status in (429, 503), r
        u.assert_openai_error(r)
        assert r.headers.get("retry-after", "").strip(), f"no Retry-After header: {r.headers}"
        assert r.headers["retry-after"].strip().isdigit(), r.headers["retry-after"]
    for r in results:
        if r.status == 200:
            assert r.json()["choices"][0]["text"] == reference[: len(r.json()["choices"][0]["text"])]
    check_still_serving(s.base_url, reference)
    assert s.stop(), f"no clean exit on SIGTERM (exit code {s.proc.returncode})"
