"""Structured output (issue 39, point 1) on the real model, through the
official `openai` client: JSON mode answers a JSON object, a strict JSON
schema answers JSON the schema accepts (streaming and not, greedy and
seeded sampling, n choices), a GBNF grammar (llama-server's `grammar`) and
vLLM's `guided_choice` answer one of their sentences; a bad schema or
grammar is a 400 naming the field; a small max_tokens cuts the JSON with
finish_reason "length"."""
import json

import openai
import pytest

import e2e_util as u
from conftest import MODEL_ID

CMPL, CHAT = "/v1/completions", "/v1/chat/completions"
# Prompts a 135M model answers briefly: JSON mode cannot bound what it
# writes, and greedy decoding of an open request ("describe a person") runs
# on adding keys until max_tokens.
ASK_JSON = [{"role": "user", "content": 'Give a JSON object with keys "city" and "country" for Paris.'}]
ASK_PERSON = [{"role": "user", "content": "Invent a person: their name, age, favourite colour and hobbies, as JSON."}]
ASK_YES_NO = [{"role": "user", "content": "Is the sky blue? Answer yes or no."}]

# The brief's schema, with bounds on the free parts (string lengths, the
# age) so that a 135M model cannot write a string or a number forever and
# every run ends with "stop".
PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "color": {"enum": ["red", "green", "blue"]},
        "hobbies": {"type": "array", "items": {"type": "string", "maxLength": 30}, "maxItems": 3},
    },
    "required": ["name", "age", "color", "hobbies"],
    "additionalProperties": False,
}
PERSON_FORMAT = {"type": "json_schema", "json_schema": {"name": "person", "strict": True, "schema": PERSON}}


def check_person(text):
    """Parses and validates against PERSON (by hand: no jsonschema
    dependency); returns the object."""
    doc = json.loads(text)
    assert isinstance(doc, dict), text
    assert list(doc) == ["name", "age", "color", "hobbies"], text  # all required, in the schema's order
    assert isinstance(doc["name"], str) and 1 <= len(doc["name"]) <= 40, text
    assert isinstance(doc["age"], int) and not isinstance(doc["age"], bool) and 0 <= doc["age"] <= 150, text
    assert doc["color"] in ("red", "green", "blue"), text
    hobbies = doc["hobbies"]
    assert isinstance(hobbies, list) and len(hobbies) <= 3, text
    assert all(isinstance(h, str) and len(h) <= 30 for h in hobbies), text
    return doc


def chat(client, stream, **kw):
    """(texts, finish_reasons) of a chat request, one per choice, streamed
    or not."""
    n = kw.get("n", 1)
    if stream:
        texts, reasons, _ = u.joined_chat_stream(client.chat.completions.create(stream=True, **kw), n=n)
        return texts, reasons
    r = client.chat.completions.create(**kw)
    choices = sorted(r.choices, key=lambda c: c.index)
    return [c.message.content or "" for c in choices], [c.finish_reason for c in choices]


# ---- JSON mode -------------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True])
def test_json_object_is_an_object(client, stream):
    texts, reasons = chat(client, stream, model=MODEL_ID, messages=ASK_JSON, max_tokens=300, temperature=0,
                          response_format={"type": "json_object"})
    assert reasons == ["stop"], (texts, reasons)
    assert isinstance(json.loads(texts[0]), dict), texts


def test_json_object_on_completions(client):
    # The client's completions.create has no response_format: extra_body.
    r = client.completions.create(model=MODEL_ID, prompt="A person, as JSON: ", max_tokens=300, temperature=0,
                                  extra_body={"response_format": {"type": "json_object"}})
    assert r.choices[0].finish_reason == "stop", r
    assert isinstance(json.loads(r.choices[0].text), dict), r.choices[0].text


# ---- JSON schema -------------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("temperature,seed", [(0, None), (1.0, 1234)], ids=["greedy", "seeded"])
def test_json_schema_is_followed(client, stream, temperature, seed):
    kw = dict(model=MODEL_ID, messages=ASK_PERSON, max_tokens=300, temperature=temperature, n=2,
              response_format=PERSON_FORMAT)
    if seed is not None:
        kw["seed"] = seed
    texts, reasons = chat(client, stream, **kw)
    assert reasons == ["stop", "stop"], (texts, reasons)
    docs = [check_person(t) for t in texts]
    if temperature == 0:
        assert docs[0] == docs[1], texts  # greedy: both choices alike


def test_json_schema_stream_matches_whole_with_a_seed(client):
    kw = dict(model=MODEL_ID, messages=ASK_PERSON, max_tokens=300, temperature=1.0, seed=99,
              response_format=PERSON_FORMAT)
    assert chat(client, True, **kw) == chat(client, False, **kw)


def test_llama_server_and_vllm_schema_spellings(client):
    schema = {"type": "object", "properties": {"zeta": {"type": "integer", "minimum": 0, "maximum": 9},
                                               "alpha": {"type": "boolean"}},
              "required": ["zeta", "alpha"]}
    for extra in ({"response_format": {"type": "json_object", "schema": schema}},  # llama-server
                  {"json_schema": schema},  # llama-server
                  {"guided_json": schema},  # vLLM
                  {"guided_json": json.dumps(schema)}):  # vLLM, as text
        r = client.chat.completions.create(model=MODEL_ID, messages=ASK_JSON, max_tokens=50, temperature=0,
                                           extra_body=extra)
        text = u.chat_text(r)
        doc = json.loads(text)
        assert list(doc) == ["zeta", "alpha"], (extra, text)  # the schema's order, not sorted
        assert isinstance(doc["zeta"], int) and isinstance(doc["alpha"], bool), (extra, text)


# ---- grammars and choices ------------------------------------------------------

def test_gbnf_grammar_answers_a_sentence(client):
    grammar = 'root ::= ("yes" | "no")'
    for temperature, seed in ((0, None), (1.0, 7)):
        kw = dict(model=MODEL_ID, messages=ASK_YES_NO, max_tokens=10, temperature=temperature, n=2,
                  extra_body={"grammar": grammar})
        if seed is not None:
            kw["seed"] = seed
        texts, reasons = chat(client, False, **kw)
        assert all(t in ("yes", "no") for t in texts), texts
        assert reasons == ["stop", "stop"], reasons
    r = client.completions.create(model=MODEL_ID, prompt="Is the sky blue? Answer:", max_tokens=10, temperature=0,
                                  extra_body={"guided_grammar": grammar})
    assert r.choices[0].text in ("yes", "no"), r.choices[0].text


def test_guided_choice_answers_one_choice(client):
    choices = ["red", "green", 'a "blue" one']
    texts, _ = chat(client, True, model=MODEL_ID, messages=ASK_YES_NO, max_tokens=10, temperature=1.0, seed=3, n=3,
                    extra_body={"guided_choice": choices})
    assert all(t in choices for t in texts), texts


# ---- errors -------------------------------------------------------------------

@pytest.mark.parametrize("path", [CMPL, CHAT])
def test_bad_schemas_and_grammars_are_400_naming_the_field(server, path):
    cases = [
        ({"response_format": {"type": "json_schema", "json_schema": {
            "name": "x", "schema": {"type": "object", "patternProperties": {"^a": {}}}}}},
         "response_format.json_schema.schema", "patternProperties"),
        ({"response_format": {"type": "json_schema"}}, "response_format.json_schema", None),
        ({"response_format": {"type": "yaml"}}, "response_format.type", None),
        ({"grammar": "root ::= answer"}, "grammar", "undefined rule 'answer'"),
        ({"grammar": "root ::= (\"a\""}, "grammar", None),
        ({"guided_json": "{not json"}, "guided_json", None),
        ({"guided_choice": []}, "guided_choice", None),
        ({"grammar": 'root ::= "a"', "response_format": {"type": "json_object"}}, "grammar", "both constrain"),
    ]
    for fields, param, words in cases:
        body = {"model": MODEL_ID, "max_tokens": 4, **fields}
        body.update({"prompt": "Hi"} if path == CMPL else {"messages": ASK_JSON})
        err = u.assert_openai_error(u.post(server.base_url, path, body), 400, param)
        if words:
            assert words in err["message"], err


def test_openai_client_raises_bad_request(client):
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL_ID, messages=ASK_JSON, max_tokens=4, response_format={
            "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "string", "pattern": "(?=a)"}}})
    assert e.value.status_code == 400 and "response_format.json_schema.schema" in str(e.value)
    # The server still answers after.
    r = client.chat.completions.create(model=MODEL_ID, messages=ASK_JSON, max_tokens=4,
                                       response_format={"type": "json_object"})
    assert u.chat_text(r).startswith("{")


# ---- cut by max_tokens -----------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True])
def test_small_max_tokens_cuts_the_json(client, stream):
    texts, reasons = chat(client, stream, model=MODEL_ID, messages=ASK_PERSON, max_tokens=5, temperature=0,
                          response_format=PERSON_FORMAT)
    assert reasons == ["length"], (texts, reasons)
    # A prefix of what the schema allows (whitespace between tokens may vary).
    compact = "".join(texts[0].split())
    assert compact.startswith('{"name":') or '{"name":'.startswith(compact), texts
