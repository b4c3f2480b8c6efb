"""The relevance judge: one two-way question to the local LLM, "does this request need a tool?", scored by logits.

Why a separate question: deciding *whether* a request needs a tool is far easier for a small model than picking
among twenty near-duplicates, and the embedding tests (``relevance.py``) cannot tell a question *about* a tool's
domain ("what does a TTL on a Redis key do?") from a request *for* it ("how long until session:42 expires?"): both
sit next to the same tools. The judge reads the request and a list of the connected servers only.

Cost: the instructions and worked examples are the same on every call, so they stay cached in the judge's own
engine sequence (``RELEVANCE``, pinned); a call decodes the request's ~30 tokens and reads one logit row.

The model answers with a letter (A: general, answer directly; B: needs a lookup or action). The score is the log-odds
``logsumexp(B) - logsumexp(A)`` over the answer's first token (with and without a leading space); the router turns
a request away when it is below ``RouterConfig.judge_threshold`` (docs/measurements.md#relevance-judge).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from nexus_agent.backend import RemoteBackend
from nexus_agent.registry import Tool
from nexus_agent.routing.rerank.llm import DecisionLLM

# The worked examples are written for the judge (never taken from an evaluation set): each pair contrasts a
# question about a domain with a request for the user's own data in it, the confusion the embeddings make. They are
# chat turns, not a list inside the instructions: measured on the tuning parts, qwen1.5b separates the two kinds
# with an AUC of 0.99 that way and 0.46 with the same examples inlined (docs/measurements.md#relevance-judge).
_SYSTEM = (
    "Decide if the user's request is a general question the assistant can answer on its own (explain a concept, "
    "how to do something, write or translate text, maths, facts, chit-chat), or a request about the user's specific "
    "data or a live system that needs a lookup or an action: reading or changing their repositories, files, "
    "databases, accounts, messages or pages, remembering or recalling facts for them, driving a web browser, "
    "generating images, or live information such as the current time. The assistant's tools, by service:\n"
    "{servers}\n"
    "Reply with one letter: A = general, answer directly; B = needs a lookup or action."
)
EXAMPLES: tuple[tuple[str, bool], ...] = (
    ("what is the difference between a merge and a rebase?", False),
    ("which branches of acme/api are not merged yet?", True),
    ("how does an expiry on a cache key work?", False),
    ("how long until the key user:17 expires?", True),
    ("write a short thank-you note to my team", False),
    ("post a thank-you note in #general", True),
    ("what does HTTP status 404 mean?", False),
    ("show me my open pull requests", True),
    ("thanks, that helped a lot!", False),
    ("any new failed payments since Monday?", True),
    ("how do I find which process is listening on a port?", False),
    ("remember that my dentist is Dr. Lee", True),
    ("give me three names for a bakery", False),
    ("what columns does our orders table have?", True),
    ("should lock files be committed to version control?", False),
    ("what time is it in Lima right now?", True),
    ("how do CSS selectors pick an element?", False),
    ("click the sign-in button on the page", True),
    ("what is 15% of 240?", False),
    ("draw me a lighthouse at dusk", True),
    ("explain what a foreign key is", False),
    ("what do you remember about the Q3 launch?", True),
)
GENERAL, LOOKUP = "A", "B"

# What makes a request concrete enough that general knowledge cannot answer it: a URL, a path, owner/repo, #N, an
# @handle, an e-mail, a named file (notes.md), or an identifier: a word with an inner ``_`` or ``:`` (cus_Nf83kQ,
# session:42) or with three digits in a row (INC-4521). Plain numbers are not ("what is 144 / 12", "chmod 640"), nor
# short letter-digit words ("ec2 vs s3"), nor quoted text ("rewrite this: '…'").
_CONCRETE = re.compile(
    r"https?://|(?<![\w/])[~.]{0,2}/[\w.-]+/|\b[\w.-]+/[\w.-]+\b|(?<!\w)#\d+|(?<!\w)@\w+|\b\S+@\S+\.\w+"
    r"|\b[\w-]+\.(?:md|txt|json|ya?ml|csv|tsv|py|js|ts|toml|ini|log|sql|parquet|pdf|png|jpe?g|docx?|xlsx?)\b"
    r"|\b[A-Za-z][\w-]*[_:][\w:-]*[A-Za-z0-9]\b|\b(?=[\w-]*[A-Za-z])[\w-]*\d{3}[\w-]*\b"
)


def names_concrete_object(query: str) -> bool:
    """Whether ``query`` names a concrete object of the user's (``_CONCRETE``): the judge is not asked then."""
    return bool(_CONCRETE.search(query))


def _servers_line(tools: Iterable[Tool], per_server: int = 8) -> str:
    """One line per server: its name and its first ``per_server`` tool names (sorted), so the judge knows what the
    tools reach (a "knowledge graph" is the memory server's; "the page" is a browser's)."""
    by_server: dict[str, list[str]] = {}
    for t in tools:
        by_server.setdefault(t.server, []).append(t.name)
    lines = []
    for server, names in sorted(by_server.items()):
        names.sort()
        more = ", …" if len(names) > per_server else ""
        lines.append(f"- {server}: {', '.join(names[:per_server])}{more}")
    return "\n".join(lines)


class Judge(Protocol):
    """What the router asks: :class:`RelevanceJudge` (local logits) or :class:`RemoteRelevanceJudge`."""

    def judge(self, query: str, tools: Iterable[Tool]) -> Judgement: ...


@dataclass
class Judgement:
    """The judge's answer: ``log_odds`` of "needs a tool" over "general" (nats) and the call's wall time (ms)."""

    log_odds: float
    ms: float


class RelevanceJudge:
    """Asks ``llm`` whether a request needs a tool (see module docstring). ``llm`` should run on a sequence of its
    own: the pinned instructions survive the routing decision's prompts."""

    def __init__(self, llm: DecisionLLM) -> None:
        self.llm = llm
        self._yes = self._first_tokens((LOOKUP, " " + LOOKUP))
        self._no = self._first_tokens((GENERAL, " " + GENERAL))
        if not self._yes or not self._no or set(self._yes) & set(self._no):
            raise ValueError(f"the model's vocabulary does not tell {LOOKUP!r} from {GENERAL!r} in one token")
        self._heads: dict[str, int] = {}  # servers line -> tokens of the instructions and examples

    def head_tokens(self, servers: str) -> int:
        """How many tokens every prompt for ``servers`` starts with: where two prompts with other requests part."""
        if servers not in self._heads:
            a, b = (self.llm.render(self.messages(x, servers)) for x in ("a", "b"))
            n = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            self._heads[servers] = n
        return self._heads[servers]

    def _first_tokens(self, words: Iterable[str]) -> list[int]:
        """The ids of the spellings that are one token each (a spelling split in two is not an answer token)."""
        return sorted({ids[0] for w in words if len(ids := self.llm.tokenize(w)) == 1})

    @staticmethod
    def messages(query: str, servers: str) -> list[dict[str, str]]:
        """The judge's chat: the instructions naming the connected servers, the worked examples as turns, then
        the request."""
        msgs = [{"role": "system", "content": _SYSTEM.format(servers=servers)}]
        for example, lookup in EXAMPLES:
            msgs += [
                {"role": "user", "content": example},
                {"role": "assistant", "content": LOOKUP if lookup else GENERAL},
            ]
        return [*msgs, {"role": "user", "content": query}]

    def judge(self, query: str, tools: Iterable[Tool]) -> Judgement:
        """How strongly the model says ``query`` needs one of ``tools`` (their servers are what it is shown)."""
        t0 = time.perf_counter()
        servers = _servers_line(tools)
        toks = self.llm.render(self.messages(query, servers))
        logits = np.asarray(self.llm.logits_after(toks), dtype=np.float64)
        yes = float(np.logaddexp.reduce(logits[self._yes]))
        no = float(np.logaddexp.reduce(logits[self._no]))
        return Judgement(yes - no, (time.perf_counter() - t0) * 1e3)


# Without logprobs, the letter the model writes stands for this many nats either way: beyond the threshold, so the
# letter decides, and no stronger than a clear logit answer.
LETTER_ODDS = 5.0


class RemoteRelevanceJudge:
    """The judge's question to a remote server (``nexus_agent.backend.RemoteBackend``): the same messages; the log-odds
    from the first token's top log-probabilities (a letter outside them counts at the lowest one returned, its upper
    bound), or, on a server without logprobs, the letter it writes, as ±``LETTER_ODDS``."""

    def __init__(self, backend: RemoteBackend) -> None:
        self.backend = backend

    def judge(self, query: str, tools: Iterable[Tool]) -> Judgement:
        t0 = time.perf_counter()
        msgs = RelevanceJudge.messages(query, _servers_line(tools))
        top = self.backend.first_token_logprobs(msgs)
        if top:
            floor = min(top.values())
            yes = [v for t, v in top.items() if t.strip() == LOOKUP] or [floor]
            no = [v for t, v in top.items() if t.strip() == GENERAL] or [floor]
            odds = float(np.logaddexp.reduce(yes) - np.logaddexp.reduce(no))
        else:
            odds = LETTER_ODDS if self.backend.choose(msgs, [GENERAL, LOOKUP]) == LOOKUP else -LETTER_ODDS
        return Judgement(odds, (time.perf_counter() - t0) * 1e3)
