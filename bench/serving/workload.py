"""The "shared-system-prompt chat" workload: deterministic English text only.

A made-up company policy serves as the ~1,000-token system prompt. Variant 0
is the shared prompt every benchmark request carries; variants 1, 2, ... are
fresh prompts of about the same length that share nothing with it beyond the
chat template's first few tokens (each opens with a different company name),
used to measure TTFT without a cached prefix.
"""

import random
from typing import Callable, List, Optional, Tuple

_COMPANIES = [
    "Northwind Harbor Logistics", "Bluefield Orchard Cooperative", "Copperline Transit Works",
    "Silverbrook Dental Group", "Ashgrove Municipal Water", "Redfern Textile Mills",
    "Lakeshore Robotics Foundry", "Granite Peak Insurance", "Maple Hollow Printing House",
    "Eastgate Ferry Company", "Willowmere Seed Bank", "Ironbridge Clockmakers Guild",
]
_DEPARTMENTS = [
    "warehouse operations", "customer support", "finance", "fleet maintenance", "human resources",
    "information security", "procurement", "the legal office", "facilities", "quality assurance",
    "the night dispatch desk", "research and development",
]
_TOPICS = [
    ("expense reports", "submitted within thirty days of the purchase"),
    ("travel bookings", "made through the approved agency portal"),
    ("security badges", "worn visibly at all times inside the building"),
    ("customer records", "kept only as long as the retention schedule allows"),
    ("overtime hours", "approved in writing by a team lead beforehand"),
    ("laptop upgrades", "requested through the service desk with a business reason"),
    ("visitor passes", "issued at the front desk and returned before leaving"),
    ("shipping damage claims", "logged with photographs on the same working day"),
    ("remote work days", "agreed with the manager at least one week ahead"),
    ("software licences", "renewed only after the owner confirms they are still used"),
    ("vehicle inspections", "completed before the first trip of every shift"),
    ("training records", "updated in the learning system after each course"),
    ("supplier invoices", "matched against a purchase order before payment"),
    ("incident reports", "filed within four hours of the event"),
    ("parental leave", "planned with human resources at least eight weeks ahead"),
    ("public statements", "cleared by the communications team first"),
]
_REASONS = [
    "so that audits can be completed without delays",
    "because regulators may ask for the records at short notice",
    "to keep every employee and visitor safe",
    "which protects the company from avoidable losses",
    "so that customers always receive consistent answers",
    "because mistakes here are expensive to correct later",
    "to make sure budgets stay predictable across the year",
    "which keeps the workload fair between teams",
]
_EXCEPTIONS = [
    "Exceptions require written approval from a director.",
    "In an emergency, act first and document the decision within one day.",
    "Contractors follow the same rule unless their contract says otherwise.",
    "Questions about this rule go to the policy office by email.",
    "Repeated breaches are discussed in the annual performance review.",
    "New employees receive a short briefing on this rule during their first week.",
    "The rule is reviewed every spring and changes are announced on the intranet.",
    "Managers must remind their teams of this rule every quarter.",
]
_NUMBERS = ["two", "three", "five", "seven", "ten", "twelve", "fifteen", "twenty"]
_UNITS = ["working days", "weeks", "hours", "months"]

_QUESTION_SUBJECTS = [t for t, _ in _TOPICS]
_QUESTION_FORMS = [
    "What is the rule for {s}?",
    "Who approves {s}?",
    "Summarize the policy on {s} in one sentence.",
    "Can a contractor skip the rule on {s}?",
    "Why does the company care about {s}?",
    "What happens if I forget about {s}?",
    "Give me three tips about {s}.",
    "Is there a deadline for {s}?",
]


def _sentences(rng: random.Random, company: str):
    """An endless stream of policy sentences for one company."""
    section = 0
    deck = []
    while True:
        section += 1
        if not deck:  # every topic once before any repeats
            deck = rng.sample(_TOPICS, len(_TOPICS))
        dept = rng.choice(_DEPARTMENTS)
        topic, rule = deck.pop()
        yield f"Section {section}: {topic.capitalize()}."
        yield f"At {company}, {topic} must be {rule}, {rng.choice(_REASONS)}."
        yield (f"Staff in {dept} check compliance every {rng.choice(_NUMBERS)} "
               f"{rng.choice(_UNITS)} and report gaps to their manager.")
        yield rng.choice(_EXCEPTIONS)


def _render(header: str, sentences: List[str]) -> str:
    return header + "\n\n" + " ".join(sentences)


def build_system_prompt(variant: int, target_tokens: int, count_tokens: Callable[[str], int],
                        seed: int = 1234) -> Tuple[str, int]:
    """The policy text of `variant`, the fewest sentences reaching target_tokens.

    count_tokens may be an HTTP round trip, so the length is found by doubling
    then bisection over the number of sentences (about 2 log2(n) calls).
    Returns (text, token count).
    """
    rng = random.Random(seed * 7919 + variant)
    company = _COMPANIES[variant % len(_COMPANIES)]
    if variant >= len(_COMPANIES):
        company = f"{company} (branch {variant})"
    header = (f"You are the policy assistant of {company}. Answer employees' questions "
              f"briefly and only from the policy below. Policy revision {variant + 1}.")
    stream = _sentences(rng, company)
    pool: List[str] = []

    def tokens_for(n: int) -> int:
        while len(pool) < n:
            pool.append(next(stream))
        return count_tokens(_render(header, pool[:n]))

    hi = 16
    while tokens_for(hi) < target_tokens:
        hi *= 2
    lo = 0
    while hi - lo > 1:  # invariant: tokens_for(hi) >= target, lo short of it
        mid = (lo + hi) // 2
        if tokens_for(mid) >= target_tokens:
            hi = mid
        else:
            lo = mid
    text = _render(header, pool[:hi])
    return text, count_tokens(text)


def user_turns(count: int, seed: int) -> List[str]:
    """count short user questions, deterministic from seed."""
    rng = random.Random(seed)
    turns = []
    for _ in range(count):
        form = rng.choice(_QUESTION_FORMS)
        turns.append(form.format(s=rng.choice(_QUESTION_SUBJECTS)))
    return turns


def chat_messages(system_prompt: str, user_turn: str):
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": user_turn}]


def estimate_tokens(text: str) -> int:
    """Last-resort count when no tokenizer is reachable: this text runs at
    about 5.2 characters per token under SmolLM2's BPE."""
    return max(1, round(len(text) / 5.2))


PROMPT_WORDS = ("budget council river library station garden market winter summer engine signal harbor museum "
                "theory method sample result figure table measure process system network memory request answer "
                "quickly slowly carefully openly because although whenever during between across").split()


def prompt_of_tokens(tokens: int, rng: random.Random, count_tokens: Callable[[str], Optional[int]]) -> str:
    """Random words making at most `tokens` tokens, as `count_tokens` (a server's
    /tokenize) counts them, and close to it."""
    words = [rng.choice(PROMPT_WORDS) for _ in range(tokens)]
    while True:
        text = " ".join(words)
        n = count_tokens(text)
        if n is None:
            raise RuntimeError("counting the prompt's tokens (/tokenize) failed")
        if n <= tokens:
            return text
        words = words[: len(words) - (n - tokens) - 1]
