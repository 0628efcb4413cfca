"""Disaggregated prefill and decode (docs/plan-disaggregation.md): a prompt's
K/V exported by one server (POST /v1/kv/export) and imported by another
(POST /v1/kv/import, --kv-import) gives the second server the same greedy
text as the first, with the prompt's whole blocks served from its prefix
cache; imports are off by default, and a blob that does not fit is refused
with a message that says why."""
import e2e_util as u

PARAGRAPH = ("The city council met on Tuesday to discuss the new budget. Members agreed to increase funding for "
             "public parks and libraries, while reducing spending on road maintenance. ")
BODY = {"messages": [{"role": "user", "content": "Summarise the minutes:\n" + PARAGRAPH * 12}],
        "max_tokens": 24, "temperature": 0}
OCTETS = {"Content-Type": "application/octet-stream"}


def refused_early(server, path, body, headers):
    """POSTs a body the server refuses from its headers alone: it answers
    and closes without reading the body, so a client still sending may see
    the connection reset before it reads the answer (None then)."""
    try:
        return u.post(server.base_url, path, body, headers=headers)
    except (ConnectionResetError, BrokenPipeError):
        return None


def completion(server, body):
    r = u.post(server.base_url, "/v1/chat/completions", body)
    assert r.status == 200, r
    return r.json()


def test_decode_server_continues_from_the_exported_prompt(server_factory):
    prefill = server_factory("-c", "2048", name="prefill")
    decode = server_factory("-c", "2048", "--kv-import", name="decode")
    want = completion(prefill, BODY)

    exported = u.post(prefill.base_url, "/v1/kv/export", BODY)
    assert exported.status == 200, exported
    assert exported.headers["content-type"] == "application/octet-stream"
    tokens = int(exported.headers["x-kv-tokens"])
    prompt_tokens = want["usage"]["prompt_tokens"]
    # Whole 16-token blocks, short of the last prompt token (it is computed).
    assert tokens % 16 == 0 and prompt_tokens - 16 <= tokens < prompt_tokens

    imported = u.post(decode.base_url, "/v1/kv/import", exported.body, headers=OCTETS)
    assert imported.status == 200, imported
    assert imported.json() == {"imported_tokens": tokens}

    got = completion(decode, BODY)
    assert got["choices"][0]["message"]["content"] == want["choices"][0]["message"]["content"]
    # The same counts, but here the handed-over blocks were cached.
    assert got["usage"].pop("prompt_tokens_details") == {"cached_tokens": tokens}
    assert want["usage"].pop("prompt_tokens_details") == {"cached_tokens": 0}
    assert got["usage"] == want["usage"]
    samples = u.metrics(decode.base_url)
    assert u.metric(samples, "omnibus_prefix_cache_hit_tokens_total") == tokens


def test_imports_are_refused_unless_they_fit(server_factory):
    plain = server_factory("-c", "2048", name="plain")
    other_type = server_factory("-c", "2048", "--kv-import", "--kv-type", "q8_0", name="q8_0")
    blob = u.post(plain.base_url, "/v1/kv/export", BODY)
    assert blob.status == 200, blob

    # Import is off by default: a body within the usual limit gets a 403,
    # a larger one (this blob: ~23 KB a token) the body limit's 413.
    off = u.post(plain.base_url, "/v1/kv/import", blob.body[:1000], headers=OCTETS)
    assert u.assert_openai_error(off, 403)["code"] == "kv_import_disabled"
    too_big = u.post(plain.base_url, "/v1/kv/import", blob.body, headers=OCTETS)
    assert "--kv-import" in u.assert_openai_error(too_big, 413)["message"]
    wrong_type = u.post(other_type.base_url, "/v1/kv/import", blob.body, headers=OCTETS)
    assert "cache type" in u.assert_openai_error(wrong_type, 400)["message"]
    cut = u.post(other_type.base_url, "/v1/kv/import", blob.body[:-5], headers=OCTETS)
    assert "checksum" in u.assert_openai_error(cut, 400)["message"]
    junk = u.post(other_type.base_url, "/v1/kv/import", b"x" * 500, headers=OCTETS)
    assert "OMKV" in u.assert_openai_error(junk, 400)["message"]

    # With --kv-import only the import route reads large bodies: others
    # are refused from their headers.
    big = refused_early(other_type, "/v1/completions", b"x" * (9 << 20), {"Content-Type": "application/json"})
    assert big is None or "8388608 bytes" in u.assert_openai_error(big, 413)["message"]

    short = u.post(plain.base_url, "/v1/kv/export", {"prompt": "Hello", "max_tokens": 1})
    assert u.assert_openai_error(short, 400)["code"] == "prompt_too_short"
    bad = u.post(plain.base_url, "/v1/kv/export", {"prompt": 5})
    assert u.assert_openai_error(bad, 400)["param"] == "prompt"
    # Both servers still answer.
    assert completion(plain, BODY)["usage"]["completion_tokens"] == 24
    assert u.get(other_type.base_url, "/health").status == 200


def test_large_imports_need_the_key(server_factory):
    source = server_factory("-c", "2048", name="source")
    keyed = server_factory("-c", "2048", "--kv-import", "--api-key", "sekret", name="keyed")
    blob = u.post(source.base_url, "/v1/kv/export", BODY)
    assert blob.status == 200, blob
    assert len(blob.body) > 8 << 20  # past the usual body limit
    no_key = refused_early(keyed, "/v1/kv/import", blob.body, OCTETS)
    assert no_key is None or u.assert_openai_error(no_key, 401)
    assert u.get(keyed.base_url, "/health").status == 200
    with_key = u.post(keyed.base_url, "/v1/kv/import", blob.body,
                      headers={**OCTETS, "Authorization": "Bearer sekret"})
    assert with_key.status == 200, with_key
    assert with_key.json()["imported_tokens"] == int(blob.headers["x-kv-tokens"])


def test_broken_blobs_and_bodies_never_hurt_the_server(server_factory):
    import random
    rng = random.Random(5)
    decode = server_factory("-c", "2048", "--kv-import", name="victim")
    good = u.post(decode.base_url, "/v1/kv/export", BODY)
    assert good.status == 200, good
    blob = bytearray(good.body)
    for i in range(150):
        broken = bytearray(blob[: rng.randrange(len(blob))]) if i % 3 == 0 else bytearray(blob)
        for _ in range(rng.randrange(1, 8)):
            if broken:
                broken[rng.randrange(len(broken))] ^= 1 << rng.randrange(8)
        r = u.post(decode.base_url, "/v1/kv/import", bytes(broken), headers=OCTETS)
        assert r.status == 400, r
    for body in ([], "null", '{"prompt": []}', '{"messages": 5}', '{"prompt": "x", "max_tokens": -1}',
                 '{"prompt": [99999999]}', "{" * 100, b"\xff\xfe"):
        r = u.post(decode.base_url, "/v1/kv/export", body, headers={"Content-Type": "application/json"})
        assert 400 <= r.status < 500, (body, r)
    # The good blob still goes in, and the server still answers.
    assert u.post(decode.base_url, "/v1/kv/import", good.body, headers=OCTETS).status == 200
    assert completion(decode, BODY)["usage"]["completion_tokens"] == 24
