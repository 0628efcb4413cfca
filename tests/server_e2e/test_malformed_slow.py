"""1,000 malformed requests (fixed seed): random bytes, truncated JSON, wrong
types, huge numbers, deep nesting, invalid UTF-8, random field mixes, wrong
content types, broken HTTP. Each must get a 4xx with a JSON error body (a
closed connection is tolerated only for broken HTTP), the process must stay
up, and a normal request must still get its usual answer."""
import json
import random
import socket
from concurrent.futures import ThreadPoolExecutor

import pytest

import e2e_util as u
from conftest import MODEL_ID

pytestmark = pytest.mark.slow

COUNT = 1000
SEED = 20250611
ENDPOINTS = ["/v1/completions", "/v1/chat/completions"]
ALL_POSTS = ENDPOINTS + ["/tokenize", "/detokenize"]

# Values that are wrong for the field whatever else the request holds.
INVALID = {
    "prompt": [5, True, {"a": 1}, [1.5], ["a", 1], [[1, 2], []], "", [], [-1], [10 ** 12], [2 ** 31],
               [[[1]]], [u.VOCAB_SIZE]],
    "messages": ["hi", [], [1], [{"role": "user"}], [{"role": "bot", "content": "x"}], [{"role": "user",
                 "content": 5}], [{"role": "user", "content": [{"type": "image_url"}]}], [{"content": "x"}],
                 [{"role": 5, "content": "x"}], [{"role": "user", "content": [{"type": "text", "text": 5}]}]],
    "max_tokens": ["5", 5.5, True, [], {}, -1, 10 ** 30, 2 ** 63, 1e308, -1e308, 2 ** 40, 10 ** 7, 900000],
    "temperature": ["hot", True, [], {}, -1, 2.5, 1e308, 5],
    "top_p": ["x", [], -0.1, 1.01, 1e300],
    "top_k": ["x", 2 ** 40, -5, 1.5],
    "min_p": [-1, 2, "x"],
    "n": ["3", 2.5, True, 0, -3, 17, 10 ** 9, 2 ** 31, 10 ** 20],
    "stream": ["yes", 1, [], {}],
    "stop": [5, [1], {"a": "b"}, ["a", "b", "c", "d", "e"], ["x" * 300]],
    "logit_bias": [[], "x", {"abc": 1}, {"5": "x"}, {"-1": 1}, {"5": 1000}, {"999999": 1}, {"1e3": 1}],
    "seed": ["x", 1.5, [], {}, 1e30],
    "presence_penalty": [3, -3, "x"],
    "frequency_penalty": [2.5, "x", []],
    "repetition_penalty": [0, -1, 101],
    "model": [5, [], {}, "no-such-model"],
    "stream_options": ["x", 5, {"include_usage": "yes"}],
}
COMPLETION_ONLY_INVALID = {"logprobs": ["x", 6, -1, True, 10 ** 20], "echo": ["yes", 1, []]}
CHAT_ONLY_INVALID = {"top_logprobs": [21, -1, "x"], "logprobs": [2, "x"], "max_completion_tokens": [0, "x", -4]}
# Valid values to mix in around the invalid one.
VALID = {"temperature": [0, 0.5, 1.0], "top_p": [0.9, 1], "max_tokens": [1, 2], "seed": [1, 42, -7],
         "stop": ["\n", ["a", "b"]], "user": ["u1"], "n": [1, 2], "logit_bias": [{"5": 1}], "presence_penalty": [0.5],
         "top_k": [0, 40], "min_p": [0.05], "unknown_field": [1, "x", None], "stream": [False]}


def random_json_value(rng, depth=0):
    kind = rng.randrange(7 if depth < 3 else 5)
    if kind == 0:
        return rng.randint(-10 ** 6, 10 ** 6)
    if kind == 1:
        return rng.uniform(-1e6, 1e6)
    if kind == 2:
        return "".join(chr(rng.randrange(32, 0x3000)) for _ in range(rng.randrange(12)))
    if kind == 3:
        return rng.choice([True, False, None])
    if kind == 4:
        return rng.choice([10 ** 40, -10 ** 40, 1e308, 2 ** 64])
    if kind == 5:
        return [random_json_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{rng.randrange(99)}": random_json_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def base_body(path):
    if path.endswith("chat/completions"):
        return {"model": MODEL_ID, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
    if path == "/tokenize":
        return {"content": "hello"}
    if path == "/detokenize":
        return {"tokens": [19556]}
    return {"model": MODEL_ID, "prompt": "Hi", "max_tokens": 2}


def with_one_invalid(rng, path, body):
    table = dict(INVALID)
    table.update(CHAT_ONLY_INVALID if "chat" in path else COMPLETION_ONLY_INVALID)
    if "chat" in path:
        table.pop("prompt")
    else:
        table.pop("messages")
    field = rng.choice(sorted(table))
    body = dict(body)
    if field == "stream_options":
        body["stream"] = rng.choice([True, False])
    body[field] = rng.choice(table[field])
    return body, field


def http_case(path, body, content_type="application/json"):
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogatepass")
    elif not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return ("http", path, body, content_type)


def gen_case(rng, i):
    kind = i % 12
    path = rng.choice(ENDPOINTS)
    if kind == 0:  # random bytes
        return http_case(rng.choice(ALL_POSTS), bytes(rng.randrange(256) for _ in range(rng.randrange(300))))
    if kind == 1:  # truncated JSON
        full = json.dumps(with_one_invalid(rng, path, base_body(path))[0] if rng.random() < 0.3
                          else base_body(path)).encode()
        return http_case(path, full[: rng.randrange(1, len(full))])
    if kind in (2, 3):  # one wrong-typed or out-of-range field
        return http_case(path, with_one_invalid(rng, path, base_body(path))[0])
    if kind == 4:  # huge numbers
        field = rng.choice(["max_tokens", "n", "temperature", "top_k", "logprobs" if "chat" not in path else "n"])
        body = dict(base_body(path))
        body[field] = rng.choice([10 ** 30, 2 ** 64, 2 ** 63, 10 ** 19, 1e308, -10 ** 30])
        text = json.dumps(body)
        if rng.random() < 0.3:  # a literal beyond double range
            text = text.replace('"max_tokens": 2', '"max_tokens": 1e400')
            if "1e400" not in text:
                text = text[:-1] + ', "n": 1e400}'
        return http_case(path, text)
    if kind == 5:  # deep nesting
        depth = rng.choice([100, 1000, 100000])
        shape = rng.randrange(4)
        if shape == 0:
            return http_case(path, "[" * depth)
        if shape == 1:
            return http_case(path, '{"a":' * depth + "1" + "}" * depth)
        if shape == 2:
            return http_case(path, '{"model": "%s", "prompt": %s1%s}' % (MODEL_ID, "[" * depth, "]" * depth))
        return http_case(path, '{"model": "%s", "messages": %s}' % (MODEL_ID, "[" * depth))
    if kind == 6:  # invalid UTF-8 / bad escapes inside strings
        bad = rng.choice([b"\xff\xfe", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80", b"\xe2\x82",
                          b"\\ud800", b"\\udc00x", b"\\uZZZZ", b"\x00"])
        if "chat" in path:
            body = b'{"model": "%s", "messages": [{"role": "user", "content": "ab%scd"}]}' % (MODEL_ID.encode(), bad)
        else:
            body = b'{"model": "%s", "prompt": "ab%scd", "max_tokens": 2}' % (MODEL_ID.encode(), bad)
        return http_case(path, body)
    if kind == 7:  # huge n / max_tokens
        body = dict(base_body(path))
        if rng.random() < 0.5:
            body["n"] = rng.choice([17, 100, 10 ** 6, 2 ** 31 - 1, 2 ** 32])
        else:
            body["max_tokens"] = rng.choice([10 ** 7, 2 ** 31, 2 ** 40, 900000, 9000])
        return http_case(path, body)
    if kind == 8:  # random mix of fields around one invalid value
        body = dict(base_body(path))
        for _ in range(rng.randrange(1, 6)):
            k = rng.choice(sorted(VALID))
            body[k] = rng.choice(VALID[k])
        for _ in range(rng.randrange(3)):
            body[f"x_{rng.randrange(1000)}"] = random_json_value(rng)
        body, _ = with_one_invalid(rng, path, body)
        return http_case(path, body)
    if kind == 9:  # a random JSON document that is not a valid request
        doc = random_json_value(rng)
        if isinstance(doc, dict):
            doc.pop("prompt", None)
            doc.pop("messages", None)
        return http_case(path, doc)
    if kind == 10:  # wrong content type, body not JSON
        ct = rng.choice(["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x",
                         "application/xml"])
        body = rng.choice([b"prompt=hi&max_tokens=2", b"<request><prompt>hi</prompt></request>", b"hello",
                           b"--x\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nhi\r\n--x--\r\n"])
        return http_case(rng.choice(ALL_POSTS), body, ct)
    return ("raw", gen_raw(rng))


def gen_raw(rng):
    """Broken HTTP, sent over a bare socket."""
    choice = rng.randrange(10)
    if choice == 0:
        return b"GARBAGE\r\n\r\n"
    if choice == 1:
        return b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n"
    if choice == 2:
        return b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n{}"
    if choice == 3:
        return b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n{}"
    if choice == 4:
        return b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
    if choice == 5:
        return b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nthis header has no colon\r\n\r\n"
    if choice == 6:
        # A 404 route: refused for its size or not, the answer is a 4xx.
        return b"GET /v1/nope HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * rng.choice([70000, 300000]) + b"\r\n\r\n"
    if choice == 7:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))) + b"\r\n\r\n"
    if choice == 8:
        return b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 9\r\n\r\n{}"
    return ("POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + "X-H: y\r\n" * 5000 + "\r\n").encode()


def send_http(base_url, case):
    _, path, body, ct = case
    try:
        r = u.post(base_url, path, body, headers={"Content-Type": ct}, timeout=60)
    except (ConnectionResetError, BrokenPipeError) as e:
        return f"{path} {body[:80]!r}: connection dropped ({e})"
    if not 400 <= r.status < 500:
        return f"{path} {body[:120]!r} ({ct}): HTTP {r.status}, want 4xx: {r.body[:200]!r}"
    try:
        u.assert_openai_error(r)
    except AssertionError as e:
        return f"{path} {body[:120]!r} ({ct}): {e}"
    return None


def send_raw(base_url, payload):
    host, port = u.host_port(base_url)
    data = b""
    with socket.create_connection((host, port), timeout=30) as s:
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data, timed_out = u.read_until_closed(s)
        if timed_out and not data:
            return f"raw {payload[:80]!r}: no answer and no close within 30 s"
    if not data:
        return None  # closed without an answer: tolerated for broken HTTP
    status_line, _, rest = data.partition(b"\r\n")
    parts = status_line.split()
    if len(parts) < 2 or not parts[1].isdigit() or not 400 <= int(parts[1]) < 500:
        return f"raw {payload[:80]!r}: want a 4xx status line, got {status_line[:100]!r}"
    body = rest.partition(b"\r\n\r\n")[2]
    if body:
        try:
            u.assert_openai_error(u.Response(int(parts[1]), {}, body))
        except AssertionError as e:
            return f"raw {payload[:80]!r}: {e}"
    return None


def test_thousand_malformed_requests(server_factory):
    s = server_factory("-c", "1024", "--kv-cache-mib", "64", name="malformed")
    ref = u.post(s.base_url, "/v1/completions", {"model": MODEL_ID, "prompt": "The capital of France is",
                                                  "max_tokens": 8, "temperature": 0})
    assert ref.status == 200, ref
    rng = random.Random(SEED)
    cases = [gen_case(rng, i) for i in range(COUNT)]

    def run(case):
        try:
            return send_http(s.base_url, case) if case[0] == "http" else send_raw(s.base_url, case[1])
        except Exception as e:  # a timeout or refused connection is a finding, not a crash of the test
            return f"{case[:2]!r}: {type(e).__name__}: {e}"

    with ThreadPoolExecutor(max_workers=4) as pool:
        failures = [f for f in pool.map(run, cases) if f]

    assert s.alive(), f"the server died under malformed input:\n{s.tail()}"
    assert not failures, f"{len(failures)} of {COUNT} malformed requests were mishandled:\n" + "\n".join(failures[:40])
    after = u.post(s.base_url, "/v1/completions", {"model": MODEL_ID, "prompt": "The capital of France is",
                                                    "max_tokens": 8, "temperature": 0})
    assert after.status == 200, after
    assert after.json()["choices"][0]["text"] == ref.json()["choices"][0]["text"]
    m = u.metrics(s.base_url)
    assert u.metric(m, "omnibus_kv_blocks_used") == 0
    assert u.metric(m, "omnibus_requests_total", outcome="completed") == 2, "a malformed request was served"
    assert s.stop(), f"no clean exit on SIGTERM (exit code {s.proc.returncode}):\n{s.tail()}"
