"""Nothing is silently ignored (issue 35, point 6), on the real model: a list
of prompts gets one choice set per prompt with `index` in prompt order (as
OpenAI does), streaming and not, each prompt's choices what it gets alone;
fields that would change the answer and are not implemented are a 400 that
names them (structured output's fields are implemented: accepted here,
tested in test_structured_output.py); fields that only tune or annotate are
accepted and change nothing; completions `logprobs` is 0-5 as
docs/serving.md says."""
import openai
import pytest

import e2e_util as u
from conftest import MODEL_ID

CMPL, CHAT = "/v1/completions", "/v1/chat/completions"
PROMPTS = ["The capital of France is", "Once upon a time", "def fibonacci(n):"]
MSGS = [{"role": "user", "content": "Name a fruit."}]


def alone_response(client, prompt, **kw):
    return client.completions.create(model=MODEL_ID, prompt=prompt, **kw)


def alone(client, prompt, **kw):
    r = alone_response(client, prompt, **kw)
    return [c.text for c in sorted(r.choices, key=lambda c: c.index)]


# ---- a list of prompts -----------------------------------------------------

def test_list_of_prompts_greedy_is_each_prompt_alone(client):
    kw = dict(max_tokens=8, temperature=0, logit_bias=u.NO_EOS)
    r = client.completions.create(model=MODEL_ID, prompt=PROMPTS, **kw)
    assert [c.index for c in r.choices] == [0, 1, 2]
    prompt_tokens = 0
    for p, prompt in enumerate(PROMPTS):
        one = alone_response(client, prompt, **kw)
        assert r.choices[p].text == one.choices[0].text, prompt
        assert r.choices[p].finish_reason == "length"
        prompt_tokens += one.usage.prompt_tokens
    assert r.usage.prompt_tokens == prompt_tokens  # each prompt once
    assert r.usage.completion_tokens == 3 * 8


def test_list_of_prompts_with_n_numbers_choices_prompt_by_prompt(client):
    # Seeded sampling: choice i of prompt p samples with seed + i, as p alone.
    kw = dict(max_tokens=8, temperature=0.9, seed=77, n=2, logit_bias=u.NO_EOS)
    r = client.completions.create(model=MODEL_ID, prompt=PROMPTS, **kw)
    assert [c.index for c in r.choices] == list(range(6))
    for p, prompt in enumerate(PROMPTS):
        assert [r.choices[2 * p].text, r.choices[2 * p + 1].text] == alone(client, prompt, **kw), prompt

    stream = client.completions.create(model=MODEL_ID, prompt=PROMPTS, stream=True, **kw)
    texts, reasons, _ = u.joined_completion_stream(stream, n=6)
    assert texts == [c.text for c in r.choices]
    assert reasons == ["length"] * 6


def test_list_of_token_id_prompts_and_echo(server, client):
    ids = [u.tokenize(server.base_url, p) for p in PROMPTS[:2]]
    r = client.completions.create(model=MODEL_ID, prompt=ids, max_tokens=4, temperature=0, echo=True)
    assert len(r.choices) == 2
    for p, prompt in enumerate(PROMPTS[:2]):
        assert r.choices[p].text.startswith(prompt), r.choices[p].text
        assert r.choices[p].text == prompt + alone(client, prompt, max_tokens=4, temperature=0)[0]


def test_too_many_choices_and_a_bad_prompt_are_400(server):
    many = u.post(server.base_url, CMPL, {"model": MODEL_ID, "prompt": ["x"] * 33, "n": 2, "max_tokens": 1})
    err = u.assert_openai_error(many, 400, "prompt")
    assert "66 choices" in err["message"], err
    bad = u.post(server.base_url, CMPL, {"model": MODEL_ID, "prompt": [[1, 2], [3, u.VOCAB_SIZE]], "max_tokens": 1})
    u.assert_openai_error(bad, 400, "prompt[1][1]")
    empty = u.post(server.base_url, CMPL, {"model": MODEL_ID, "prompt": ["a", ""], "max_tokens": 1})
    u.assert_openai_error(empty, 400, "prompt[1]")
    # A KV handover carries one prompt's blocks.
    export = u.post(server.base_url, "/v1/kv/export", {"model": MODEL_ID, "prompt": PROMPTS[:2]})
    u.assert_openai_error(export, 400, "prompt")


# ---- refused fields ----------------------------------------------------------

REFUSED = [
    ("tools", [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]),
    ("tool_choice", "required"),
    ("tool_choice", "auto"),
    ("functions", [{"name": "get_weather", "parameters": {"type": "object"}}]),
    ("function_call", "auto"),
    ("suffix", " and that is all."),
    ("best_of", 3),
    ("audio", {"voice": "alloy", "format": "wav"}),
    ("modalities", ["text", "audio"]),
    ("reasoning_effort", "high"),
    ("min_tokens", 4),
    ("guided_regex", "[a-z]+"),
    ("structured_outputs", {"json": {"type": "object"}}),
    ("n_predict", 4),
]


# Tool calling is implemented on chat (test_tool_calling.py): its fields
# are refused on completions only.
REFUSED_CASES = [(path, field, value) for path in (CMPL, CHAT) for field, value in REFUSED
                 if not (field.startswith("tool") and path == CHAT)]


@pytest.mark.parametrize("path,field,value", REFUSED_CASES,
                         ids=[f"{p.rsplit('/', 1)[-1]}-{f}-{i}" for i, (p, f, _) in enumerate(REFUSED_CASES)])
def test_fields_that_change_the_answer_are_refused(server, path, field, value):
    body = {"model": MODEL_ID, "max_tokens": 2, field: value}
    body.update({"prompt": "Hi"} if path == CMPL else {"messages": MSGS})
    err = u.assert_openai_error(u.post(server.base_url, path, body), 400, field)
    assert err["code"] == "unsupported_parameter", err
    assert "not supported" in err["message"], err


def test_openai_client_sees_accepted_tools_and_json_mode(client):
    # Tools are implemented on chat (test_tool_calling.py has the calls).
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    r = client.chat.completions.create(model=MODEL_ID, messages=MSGS, max_tokens=2, tools=tools)
    assert r.choices[0].finish_reason in ("stop", "length", "tool_calls"), r
    # JSON mode and JSON schemas are implemented: accepted, the output an
    # object from its first character (cut here by max_tokens).
    for response_format in ({"type": "json_object"},
                            {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}):
        r = client.chat.completions.create(model=MODEL_ID, messages=MSGS, max_tokens=2,
                                           response_format=response_format)
        assert u.chat_text(r).startswith("{"), (response_format, r)
    # A history with tool calls and results is written by the template.
    history = [{"role": "user", "content": "Weather?"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "c1", "content": "sunny"}]
    r = client.chat.completions.create(model=MODEL_ID, messages=history, max_tokens=2)
    assert r.choices[0].finish_reason in ("stop", "length"), r


def test_neutral_and_tuning_fields_change_nothing(client):
    base = dict(model=MODEL_ID, messages=MSGS, max_tokens=8, temperature=0)
    plain = u.chat_text(client.chat.completions.create(**base))
    tuned = client.chat.completions.create(
        **base, user="u-1", metadata={"team": "a"}, store=False, service_tier="auto", tool_choice="none",
        response_format={"type": "text"}, parallel_tool_calls=False,
        prediction={"type": "content", "content": "An apple."}, extra_body={"prompt_cache_key": "k"})
    assert u.chat_text(tuned) == plain
    c_plain = alone(client, PROMPTS[0], max_tokens=8, temperature=0)
    c_tuned = alone(client, PROMPTS[0], max_tokens=8, temperature=0, user="u", suffix="", best_of=1)
    assert c_tuned == c_plain


# ---- logprobs range ----------------------------------------------------------

def test_completion_logprobs_range_is_0_to_5(server, client):
    r = client.completions.create(model=MODEL_ID, prompt=PROMPTS[0], max_tokens=3, temperature=0, logprobs=5)
    tops = r.choices[0].logprobs.top_logprobs
    # A dict per token: two alternatives with the same text would share a key.
    assert len(tops) == 3 and all(1 <= len(top) <= 5 for top in tops) and any(len(top) == 5 for top in tops), tops
    body = {"model": MODEL_ID, "prompt": PROMPTS[0], "max_tokens": 3, "logprobs": 6}
    err = u.assert_openai_error(u.post(server.base_url, CMPL, body), 400, "logprobs")
    assert "5" in err["message"], err
