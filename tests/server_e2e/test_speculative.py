"""Speculative decoding in the server (--draft ngram): the same text as a
server without it, for greedy and seeded requests, one at a time and
concurrently, streamed or not; /metrics counts the guesses."""
import concurrent.futures

import e2e_util as u
from conftest import MODEL_ID

PARAGRAPH = ("The city council met on Tuesday to discuss the new budget. Members agreed to increase funding for "
             "public parks and libraries, while reducing spending on road maintenance.")
REQUESTS = [
    {"messages": [{"role": "user", "content": f"Here is a paragraph:\n\n\"{PARAGRAPH}\"\n\nRepeat it exactly."}],
     "max_tokens": 48, "temperature": 0},
    {"messages": [{"role": "user", "content": "List the days of the week, twice."}], "max_tokens": 40,
     "temperature": 0},
    {"messages": [{"role": "user", "content": f"Summarise: {PARAGRAPH}"}], "max_tokens": 32, "temperature": 0.7,
     "seed": 11, "frequency_penalty": 0.2},
    {"messages": [{"role": "user", "content": "Write a short poem about rain."}], "max_tokens": 32,
     "temperature": 0.9, "top_p": 0.9, "seed": 3},
]


def chat(server, body):
    return u.chat_text(server.client().chat.completions.create(model=MODEL_ID, **body))


def test_draft_ngram_gives_the_same_text(server_factory):
    plain = server_factory("-c", "1024", name="plain")
    want = [chat(plain, b) for b in REQUESTS]
    spec = server_factory("-c", "1024", "--draft", "ngram", "--draft-max", "6", name="spec")
    assert [chat(spec, b) for b in REQUESTS] == want
    samples = u.metrics(spec.base_url)
    assert u.metric(samples, "omnibus_speculative_accepted_tokens_total") >= 10
    assert u.metric(samples, "omnibus_speculative_guessed_tokens_total") >= \
        u.metric(samples, "omnibus_speculative_accepted_tokens_total")
    # Concurrently (guesses ride along while at most --draft-max-seqs decode).
    with concurrent.futures.ThreadPoolExecutor(len(REQUESTS)) as pool:
        together = list(pool.map(lambda b: chat(spec, b), REQUESTS))
    assert together == want
    # Streamed: the pieces join to the same text.
    stream = spec.client().chat.completions.create(model=MODEL_ID, stream=True, **REQUESTS[0])
    texts, reasons, _ = u.joined_chat_stream(stream)
    assert texts[0] == want[0] and reasons[0] in ("stop", "length")


def test_bad_draft_flags_stop_the_server_with_a_message(server_factory):
    import subprocess
    from conftest import BIN, MODEL
    r = subprocess.run([str(BIN), "serve", "-m", str(MODEL), "--draft", "ngram", "--ngram-min", "5",
                        "--ngram-max", "3", "--port", "0"], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "--ngram-max" in r.stderr
