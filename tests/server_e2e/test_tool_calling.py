"""Tool calling (issue 39, point 3) on the real model (SmolLM2, a ChatML
template written as Qwen2.5's with tools), through the official `openai`
client: tool_choice "required" and a named function force a call whose
arguments parse and validate against the tool's schema (streaming and not);
parallel calls each validate; an agent loop (a call, the tool's result sent
back as a role "tool" message, an answer) is accepted; bad tools and
tool_choice values are 400s naming the field; completions refuse tools."""
import json

import jsonschema
import openai
import pytest

import e2e_util as u
from conftest import MODEL_ID

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                # Bounded so a 135M model cannot write a string forever.
                "city": {"type": "string", "minLength": 1, "maxLength": 30},
                "unit": {"enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "The local time in a timezone.",
        "parameters": {
            "type": "object",
            "properties": {"timezone": {"type": "string", "minLength": 1, "maxLength": 30}},
            "required": ["timezone"],
            "additionalProperties": False,
        },
    },
}
TOOLS = [WEATHER, TIME]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
ASK = [{"role": "user", "content": "What is the weather in Paris right now?"}]


def check_call(call, names=tuple(SCHEMAS)):
    """A call's shape, and its arguments parse and validate; returns them."""
    assert call.type == "function", call
    assert call.id.startswith("call_") and len(call.id) > 5, call
    assert call.function.name in names, call
    args = json.loads(call.function.arguments)
    jsonschema.validate(args, SCHEMAS[call.function.name])
    return args


def streamed(client, **kw):
    """(content, tool calls as dicts, finish_reason) of a streamed chat request,
    the tool_calls deltas put together by index as a client does."""
    content, calls, finish = "", {}, None
    for chunk in client.chat.completions.create(stream=True, **kw):
        if not chunk.choices:
            continue
        c = chunk.choices[0]
        content += c.delta.content or ""
        for d in c.delta.tool_calls or []:
            call = calls.setdefault(d.index, {"id": None, "type": None, "name": "", "arguments": ""})
            call["id"] = d.id or call["id"]
            call["type"] = d.type or call["type"]
            if d.function:
                call["name"] += d.function.name or ""
                call["arguments"] += d.function.arguments or ""
        finish = c.finish_reason or finish
    return content, [calls[i] for i in sorted(calls)], finish


def test_required_forces_a_valid_call(client):
    r = client.chat.completions.create(model=MODEL_ID, messages=ASK, tools=TOOLS, tool_choice="required",
                                       parallel_tool_calls=False, temperature=0, max_tokens=200)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls", r
    assert choice.message.content is None, r
    assert len(choice.message.tool_calls) == 1, r
    check_call(choice.message.tool_calls[0])


def test_required_streaming_gives_the_same_call(client):
    kw = dict(model=MODEL_ID, messages=ASK, tools=TOOLS, tool_choice="required", parallel_tool_calls=False,
              temperature=0, max_tokens=200)
    whole = client.chat.completions.create(**kw).choices[0].message.tool_calls[0]
    content, calls, finish = streamed(client, **kw)
    assert finish == "tool_calls" and content == "", (content, calls, finish)
    assert len(calls) == 1, calls
    call = calls[0]
    assert call["type"] == "function" and call["id"].startswith("call_"), call
    assert call["name"] == whole.function.name and call["arguments"] == whole.function.arguments, (call, whole)
    jsonschema.validate(json.loads(call["arguments"]), SCHEMAS[call["name"]])


def test_named_function_is_called(client):
    for stream in (False, True):
        kw = dict(model=MODEL_ID, messages=ASK, tools=TOOLS, temperature=0, max_tokens=200,
                  tool_choice={"type": "function", "function": {"name": "get_time"}})
        if stream:
            _, calls, finish = streamed(client, **kw)
            names = [c["name"] for c in calls]
            for c in calls:
                jsonschema.validate(json.loads(c["arguments"]), SCHEMAS["get_time"])
        else:
            choice = client.chat.completions.create(**kw).choices[0]
            finish = choice.finish_reason
            names = [check_call(c, names=("get_time",)) and c.function.name for c in choice.message.tool_calls]
        assert names and all(n == "get_time" for n in names), names
        assert finish in ("tool_calls", "length"), finish


def test_parallel_calls_each_validate(client):
    ask = [{"role": "user", "content": "Weather in Paris and in Rome, and the time in Tokyo?"}]
    r = client.chat.completions.create(model=MODEL_ID, messages=ask, tools=TOOLS, tool_choice="required",
                                       seed=3, temperature=0.7, max_tokens=300)
    choice = r.choices[0]
    assert choice.message.tool_calls, r
    ids = [c.id for c in choice.message.tool_calls]
    assert len(set(ids)) == len(ids), ids
    for c in choice.message.tool_calls:
        check_call(c)
    # 1..n calls; max_tokens may cut the next one (then it stays content).
    assert choice.finish_reason in ("tool_calls", "length"), r


def test_agent_loop_sends_the_result_back(client):
    first = client.chat.completions.create(model=MODEL_ID, messages=ASK, tools=TOOLS, tool_choice="required",
                                           parallel_tool_calls=False, temperature=0, max_tokens=200)
    message = first.choices[0].message
    call = message.tool_calls[0]
    history = ASK + [
        message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temperature": 18, "sky": "clear"})},
    ]
    second = client.chat.completions.create(model=MODEL_ID, messages=history, tools=TOOLS, temperature=0,
                                            max_tokens=24)
    choice = second.choices[0]
    assert choice.finish_reason in ("stop", "length", "tool_calls"), second
    assert choice.message.content or choice.message.tool_calls, second
    # Without tools the same history is still accepted (its calls are written).
    third = client.chat.completions.create(model=MODEL_ID, messages=history, max_tokens=4)
    assert third.choices[0].finish_reason in ("stop", "length"), third


def test_auto_and_none_are_accepted(client):
    for choice in ("auto", "none"):
        r = client.chat.completions.create(model=MODEL_ID, messages=ASK, tools=TOOLS, tool_choice=choice,
                                           temperature=0, max_tokens=40)
        c = r.choices[0]
        if c.message.tool_calls:
            assert choice == "auto" and c.finish_reason == "tool_calls", r
            for call in c.message.tool_calls:
                assert call.function.name in SCHEMAS, r
        else:
            assert isinstance(c.message.content, str), r


def test_bad_tools_are_400s_naming_the_field(server, client):
    cases = [
        ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}},
         "tool_choice.function.name"),
        ({"tools": [WEATHER, WEATHER]}, "tools[1].function.name"),
        ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"not": {}}}}]},
         "tools[0].function.parameters"),
        ({"tool_choice": "required"}, "tool_choice"),
        ({"tools": TOOLS, "tool_choice": "required", "response_format": {"type": "json_object"}}, "tool_choice"),
    ]
    for extra, param in cases:
        body = {"model": MODEL_ID, "messages": ASK, "max_tokens": 2, **extra}
        u.assert_openai_error(u.post(server.base_url, "/v1/chat/completions", body), 400, param)
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=MODEL_ID, prompt="Hi", max_tokens=2, extra_body={"tools": TOOLS})
    assert "tools" in str(e.value)
