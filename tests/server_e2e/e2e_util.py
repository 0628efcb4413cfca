"""Helpers shared by the end-to-end server tests: raw HTTP, SSE, metrics.

The `openai` client covers the happy paths; error cases, malformed bytes and
hang-ups need raw http.client / sockets, which live here.
"""
import http.client
import json
import re
import socket
import time
from urllib.parse import urlparse

# The real model's end-of-generation tokens (<|endoftext|>, <|im_end|>).
# Banning them with logit_bias makes a request run exactly max_tokens.
NO_EOS = {"0": -100, "2": -100}
VOCAB_SIZE = 49152


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers  # lower-cased names
        self.body = body

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return f"<{self.status} {self.body[:300]!r}>"


def host_port(base_url):
    u = urlparse(base_url)
    return u.hostname, u.port


def request(base_url, method, path, body=None, headers=None, timeout=120):
    """One request on a fresh connection. `body`: dict/list (sent as JSON),
    str or bytes (sent as is)."""
    host, port = host_port(base_url)
    hdrs = dict(headers or {})
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    elif isinstance(body, str):
        body = body.encode()
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        data = resp.read()
        return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
    finally:
        conn.close()


def post(base_url, path, body, **kw):
    return request(base_url, "POST", path, body, **kw)


def get(base_url, path, **kw):
    return request(base_url, "GET", path, **kw)


def assert_openai_error(resp, status=None, param=None):
    """The body is {"error": {"message", "type", "param", "code"}} with a
    non-empty message; returns the inner error object."""
    if status is not None:
        assert resp.status == status, f"expected HTTP {status}, got {resp!r}"
    assert 400 <= resp.status < 600, resp
    try:
        doc = resp.json()
    except ValueError:
        raise AssertionError(f"error body is not JSON: {resp!r}")
    assert isinstance(doc, dict) and isinstance(doc.get("error"), dict), f"not the OpenAI error shape: {doc}"
    err = doc["error"]
    for key in ("message", "type", "param", "code"):
        assert key in err, f"error object lacks '{key}': {doc}"
    assert isinstance(err["message"], str) and err["message"], doc
    assert isinstance(err["type"], str) and err["type"], doc
    if param is not None:
        assert err["param"] == param, f"expected param {param!r}: {doc}"
    return err


def open_stream(base_url, path, body, timeout=120):
    """Starts a streaming request; returns (conn, resp) with the headers read."""
    host, port = host_port(base_url)
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    conn.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    return conn, conn.getresponse()


def sse_events(resp):
    """Yields each `data:` payload of an SSE response (parsed JSON), stopping
    at [DONE] or the end of the stream."""
    while True:
        line = resp.fp.readline()
        if not line:
            return
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if payload == b"[DONE]":
            return
        yield json.loads(payload)


def hard_close(conn, resp=None):
    """Hangs up the way a killed client does."""
    sock = conn.sock
    try:
        if sock is not None:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    if resp is not None:
        resp.close()
    conn.close()


_METRIC_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def read_until_closed(sock):
    """Everything the peer sends until it closes. Returns (data, timed_out);
    a reset counts as a close."""
    data = b""
    try:
        while True:
            part = sock.recv(65536)
            if not part:
                return data, False
            data += part
    except ConnectionResetError:
        return data, False
    except socket.timeout:
        return data, True


def parse_metrics(text):
    """{(name, frozenset(labels.items())): value} for every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _METRIC_LINE.match(line)
        assert m, f"not a Prometheus sample line: {line!r}"
        labels = frozenset(_LABEL.findall(m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def metrics(base_url):
    r = get(base_url, "/metrics", timeout=30)
    assert r.status == 200, r
    return parse_metrics(r.body.decode())


def metric(samples, name, **labels):
    key = (name, frozenset(labels.items()))
    assert key in samples, f"/metrics lacks {name}{labels or ''}"
    return samples[key]


def wait_for(predicate, timeout, interval=0.1):
    """Polls until predicate() is truthy; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def tokenize(base_url, text):
    r = post(base_url, "/tokenize", {"content": text})
    assert r.status == 200, r
    tokens = r.json()["tokens"]
    assert isinstance(tokens, list) and all(isinstance(t, int) for t in tokens), tokens
    return tokens


def chat_text(resp):
    return resp.choices[0].message.content or ""


def joined_completion_stream(stream, n=1):
    """Joins streamed completion text per choice index; also returns the
    finish reasons and the chunks."""
    texts, reasons, chunks = [""] * n, [None] * n, []
    for chunk in stream:
        chunks.append(chunk)
        for c in chunk.choices:
            texts[c.index] += c.text or ""
            if c.finish_reason is not None:
                assert reasons[c.index] is None, f"choice {c.index} finished twice"
                reasons[c.index] = c.finish_reason
    return texts, reasons, chunks


def joined_chat_stream(stream, n=1):
    texts, reasons, chunks = [""] * n, [None] * n, []
    for chunk in stream:
        chunks.append(chunk)
        for c in chunk.choices:
            texts[c.index] += c.delta.content or ""
            if c.finish_reason is not None:
                assert reasons[c.index] is None, f"choice {c.index} finished twice"
                reasons[c.index] = c.finish_reason
    return texts, reasons, chunks
