"""Recall tasks for the KV-cache eviction benchmark: each asks a small chat model (Qwen2.5-Coder-0.5B-Instruct) for
one thing stated early in a long context, after part of that context's KV cache may have been evicted.

Two generated tasks (synthetic, written here in the style of the long-context suites; no text is taken from
RULER or LongBench):

- ``needle``: passkey retrieval. One sentence "The secret passkey is N. Remember it: N." (N a random 5-digit
  number) sits at a random depth between 10% and 90% of a haystack of plain filler prose.
- ``vt``: variable tracking, as in RULER's VT but in words (the 0.5B model cannot follow ``VAR B = VAR A``): a
  chain "the access code of room A is N", "the code of room B is the same as room A's", ... at increasing random
  depths of the same kind of haystack; the question names only the chain's last room.

The multi-turn agent traces are recorded from real servers instead (``bench/kv_traces.py``,
``data/eval/kv_traces/``).

Every generator is deterministic in ``seed`` (one ``random.Random(seed)``), and token budgets are measured with the
caller's ``count`` (the model's tokenizer: text → number of tokens). Scoring: the reply is correct when it contains
``Sample.answer``, case-insensitively. Standard library only.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

__all__ = ["CountTokens", "Sample", "needle", "variable_tracking"]

CountTokens = Callable[[str], int]  # the model's tokenizer: text -> token count


@dataclass(frozen=True)
class Sample:
    """One recall item. ``task`` is ``"needle"`` or ``"vt"``; the prompt is ``system``, then ``context``, then
    ``question``. Correct when ``answer`` (case-insensitive) is a substring of the model's reply."""

    task: str
    system: str
    context: str
    question: str
    answer: str
    seed: int


# --------------------------------------------------------------------------------------------------------------
# Haystack
# --------------------------------------------------------------------------------------------------------------

# Plain sentences with no digits, no all-caps words and nothing a question could ask for.
FILLER: tuple[str, ...] = (
    "The morning fog lifted slowly from the valley as the sun climbed over the hills.",
    "A light rain fell through the afternoon, and the streets smelled of wet stone.",
    "By evening the wind had turned cold, so most people walked home with their collars up.",
    "The forecast promised a dry weekend, which pleased everyone who had planned a picnic.",
    "Thunder rolled somewhere far to the west, but the storm never reached the town.",
    "Snow settled quietly on the rooftops overnight and melted before lunch.",
    "The tomatoes in the back garden ripened late this year because of the cool summer.",
    "She planted a row of lavender along the fence to attract bees and butterflies.",
    "The old apple tree produced more fruit than the family could possibly eat.",
    "Every spring he turned the soil, added compost and sowed beans along the wall.",
    "Weeds grew quickly between the paving stones whenever nobody was paying attention.",
    "The roses by the gate needed pruning, but nobody could find the good shears.",
    "The night train to the coast left the station a few minutes behind schedule.",
    "Passengers crowded onto the platform as the announcement echoed under the glass roof.",
    "The conductor walked the length of the carriage, checking tickets with a tired smile.",
    "From the window of the train the fields rolled past in shades of green and gold.",
    "A small branch line still runs through the valley, carrying mostly hikers in summer.",
    "The station cafe sold strong coffee and slightly stale pastries to early travellers.",
    "He simmered the onions gently until they were soft and sweet before adding the stock.",
    "The bread dough rose twice on the kitchen counter while the oven warmed up.",
    "A pinch of salt and a squeeze of lemon brought the whole soup to life.",
    "She roasted the vegetables with olive oil and rosemary until the edges were crisp.",
    "The recipe called for fresh basil, so they picked a handful from the windowsill.",
    "Leftover rice made an excellent fried breakfast with a couple of eggs.",
    "The library on the corner stayed open late on weekdays during the exam season.",
    "A stray cat had adopted the bookshop and slept every afternoon in the front window.",
    "The market square filled with stalls selling cheese, honey and handmade candles.",
    "Children raced their bicycles along the riverside path after school.",
    "The museum reopened its east wing after a long and careful restoration.",
    "An old fisherman mended his nets on the harbour wall while the gulls watched.",
    "The hiking trail climbed steeply through pine woods before opening onto a ridge.",
    "From the top of the ridge you could see the lake shining in the distance.",
    "The village held a music festival each summer on the green behind the church.",
    "Someone had left a bunch of wildflowers on the bench by the bus stop.",
    "The painter set up her easel near the bridge to catch the late afternoon light.",
    "A long queue formed outside the bakery before it opened its doors.",
    "The neighbours argued politely about whose turn it was to trim the hedge.",
    "He spent the quiet evening repairing a wooden chair that had wobbled for years.",
    "The river ran high after the spring rains and covered part of the footpath.",
    "They finished the day with tea on the porch, listening to the crickets.",
)

_FIRST_CHUNK = 20  # sentences in the first measured chunk of a haystack
_FILL_TOLERANCE = 0.02  # stop trimming a haystack within this fraction (2%) above its token goal
_MAX_COUNT_CALLS = 32  # bound on tokenizer calls while sizing one haystack


class _Deck:
    """Filler sentences in seeded random order: each pass shuffles all of ``FILLER``, and no sentence follows
    itself across passes."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._cards: list[str] = []
        self._last = ""

    def draw(self) -> str:
        if not self._cards:
            cards = list(FILLER)
            self._rng.shuffle(cards)
            if cards[-1] == self._last:  # cards are popped from the end
                cards[0], cards[-1] = cards[-1], cards[0]
            self._cards = cards
        self._last = self._cards.pop()
        return self._last


def _join(sentences: list[str]) -> str:
    return " ".join(sentences)


def _filler(rng: random.Random, goal_tokens: int, count: CountTokens) -> list[str]:
    """Filler sentences whose joined text is ``goal_tokens`` tokens (by ``count``) to within ~2%, never fewer than
    one sentence. Grows in big measured chunks (first ``_FIRST_CHUNK`` sentences, then as many as the measured
    tokens-per-sentence says are missing) and trims the overshoot the same way, so it takes a few ``count`` calls,
    not one per sentence."""
    deck = _Deck(rng)
    sentences = [deck.draw() for _ in range(_FIRST_CHUNK)]
    n_tokens = count(_join(sentences))
    calls = 1
    while n_tokens < goal_tokens and calls < _MAX_COUNT_CALLS:
        per_sentence = max(n_tokens / len(sentences), 1.0)
        missing = math.ceil((goal_tokens - n_tokens) / per_sentence)
        sentences.extend(deck.draw() for _ in range(max(missing, 1)))
        n_tokens = count(_join(sentences))
        calls += 1
    while n_tokens > goal_tokens * (1 + _FILL_TOLERANCE) and len(sentences) > 1 and calls < _MAX_COUNT_CALLS:
        per_sentence = max(n_tokens / len(sentences), 1.0)
        surplus = min(int((n_tokens - goal_tokens) / per_sentence), len(sentences) - 1)
        if surplus < 1:
            break  # one sentence more than the tolerance allows: closer to the goal than one sentence fewer
        del sentences[-surplus:]
        n_tokens = count(_join(sentences))
        calls += 1
    return sentences


def _depth_index(rng: random.Random, n: int) -> int:
    """Sentence index (insert before it) at a uniform random depth between 10% and 90% of ``n`` sentences."""
    return round(rng.uniform(0.1, 0.9) * n)


def _five_digits(rng: random.Random, taken: set[str]) -> str:
    """A random 5-digit number (10000–99999) as a string, not in ``taken``; adds it to ``taken``."""
    while True:
        value = str(rng.randint(10000, 99999))
        if value not in taken:
            taken.add(value)
            return value


# --------------------------------------------------------------------------------------------------------------
# needle
# --------------------------------------------------------------------------------------------------------------


def needle(target_tokens: int, seed: int, count: CountTokens) -> Sample:
    """Passkey retrieval: a haystack of about ``target_tokens`` tokens (context, needle included, measured with
    ``count``; within ~5% for targets of a few hundred tokens and up) with one passkey sentence at a random depth
    between 10% and 90%. The answer is the 5-digit passkey."""
    rng = random.Random(seed)
    passkey = _five_digits(rng, set())
    needle_text = f"The secret passkey is {passkey}. Remember it: {passkey}."
    sentences = _filler(rng, max(target_tokens - count(needle_text), 1), count)
    sentences.insert(_depth_index(rng, len(sentences)), needle_text)
    return Sample(
        task="needle",
        system="You are a helpful assistant.",
        context=_join(sentences),
        question="What is the secret passkey mentioned in the text above? Answer with the number only.",
        answer=passkey,
        seed=seed,
    )


# --------------------------------------------------------------------------------------------------------------
# variable tracking
# --------------------------------------------------------------------------------------------------------------

_ROOMS = (
    "red", "blue", "green", "yellow", "orange", "purple", "silver", "golden", "white", "black", "amber", "violet",
    "crimson", "ivory", "teal", "copper",
)  # fmt: skip


def variable_tracking(target_tokens: int, seed: int, count: CountTokens, hops: int = 2, distractors: int = 0) -> Sample:
    """Variable tracking (RULER VT style), in words: a haystack of about ``target_tokens`` tokens (context,
    statements included, measured with ``count``) holding the chain "The access code of the A room is N.", "The
    access code of the B room is the same as the access code of the A room.", ... of ``hops`` + 1 statements at
    increasing random depths between 10% and 90%, and ``distractors`` chains of the same shape with other rooms and
    values. The question names only the chain's last room; the answer is the first statement's 5-digit value.

    Why words and no distractor chains by default: Qwen2.5-Coder-0.5B-Instruct, dense, answered RULER's
    ``VAR B = VAR A`` form right 0 times in 8 (1-2 hops, 0-2 distractor chains), and this form with one distractor
    chain 1 time in 8 (bench/eviction.py's notes, docs/measurements.md#kv-eviction); the chain alone it answers. An
    eviction policy must still keep the value statement, which the question's tokens do not name."""
    if hops < 0:
        raise ValueError(f"hops must be >= 0, got {hops}")
    rng = random.Random(seed)
    n_chains = 1 + distractors
    if n_chains * (hops + 1) > len(_ROOMS):
        raise ValueError(f"{n_chains} chains of {hops + 1} rooms need more than the {len(_ROOMS)} room names")
    names = rng.sample(_ROOMS, n_chains * (hops + 1))
    values: set[str] = set()
    chains: list[list[str]] = []  # chains[0] is the true chain
    chain_values: list[str] = []
    for c in range(n_chains):
        chain_names = names[c * (hops + 1) : (c + 1) * (hops + 1)]
        chain_values.append(_five_digits(rng, values))
        statements = [f"The access code of the {chain_names[0]} room is {chain_values[-1]}."]
        statements += [
            f"The access code of the {b} room is the same as the access code of the {a} room."
            for a, b in pairwise(chain_names)
        ]
        chains.append(statements)
    answer, last_var = chain_values[0], names[hops]

    statements_text = _join([s for chain in chains for s in chain])
    sentences = _filler(rng, max(target_tokens - count(statements_text), 1), count)
    n = len(sentences)
    inserts: list[tuple[int, int, str]] = []  # (insert before sentence index, order among ties, statement)
    for chain in chains:
        positions = sorted(_depth_index(rng, n) for _ in chain)
        for pos, text in zip(positions, chain, strict=True):
            inserts.append((pos, len(inserts), text))
    # back to front, so the indices still to insert at stay valid; at one index, the later statement goes in first
    for pos, _, text in sorted(inserts, reverse=True):
        sentences.insert(pos, text)
    return Sample(
        task="vt",
        system="You are a helpful assistant.",
        context=_join(sentences),
        question=f"What is the access code of the {last_var} room? Answer with the number only.",
        answer=answer,
        seed=seed,
    )
