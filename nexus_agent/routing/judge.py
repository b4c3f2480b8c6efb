"""The relevance judge: one two-way question to the chat model, "does this request need a tool?", scored by logits.

Why a separate question: deciding *whether* a request needs a tool is far easier for a small model than picking
among twenty near-duplicates, and the embedding tests (``relevance.py``) cannot tell a question *about* a tool's
domain ("what does a TTL on a Redis key do?") from a request *for* it ("how long until session:42 expires?"): both
sit next to the same tools. The judge reads the request and a list of the connected servers only.

Cost: the instructions and worked examples are the same on every call, so they stay cached in the judge's own
engine lane (``RELEVANCE``); a call decodes the request's ~30 tokens and reads one logit row.

The model answers with a letter (A: general, answer directly; B: needs a lookup or action). The score is the log-odds
``logsumexp(B) - logsumexp(A)`` over the answer's first token (with and without a leading space), asked through the
backend's :class:`~nexus_agent.backend.decision.Decider` (in-process logits, or a server's first-token
log-probabilities); the router turns a request away when it is below the judge's threshold
(docs/measurements.md#relevance-judge).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass

from nexus_agent.backend import RELEVANCE, Decider
from nexus_agent.registry import Tool

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
# the answer's first token, spelt with and without a leading space
_YES, _NO = (LOOKUP, " " + LOOKUP), (GENERAL, " " + GENERAL)

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


@dataclass
class Judgement:
    """The judge's answer: ``log_odds`` of "needs a tool" over "general" (nats) and the call's wall time (ms)."""

    log_odds: float
    ms: float


class RelevanceJudge:
    """Asks ``decider`` whether a request needs a tool (see module docstring), in the ``RELEVANCE`` lane, so its
    instructions survive the routing decision's prompts. ValueError when the model's vocabulary cannot answer with
    one token per letter."""

    def __init__(self, decider: Decider) -> None:
        if not decider.separable(_YES, _NO):
            raise ValueError(f"the model's vocabulary does not tell {LOOKUP!r} from {GENERAL!r} in one token")
        self.decider = decider
        self._heads: dict[str, int] = {}  # servers line -> tokens of the instructions and examples

    def head_tokens(self, servers: str) -> int:
        """How many tokens every prompt for ``servers`` starts with: where two prompts with other requests part."""
        if servers not in self._heads:
            self._heads[servers] = self.decider.head([self.messages(x, servers) for x in ("a", "b")])
        return self._heads[servers]

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

    def warm(self, tools: Iterable[Tool]) -> None:
        """Hold the instructions and examples for ``tools``' servers in the judge's lane now (from disk when a
        process decoded them before)."""
        servers = _servers_line(tools)
        self.decider.warm([self.messages(x, servers) for x in ("a", "b")], lane=RELEVANCE)

    def judge(self, query: str, tools: Iterable[Tool]) -> Judgement:
        """How strongly the model says ``query`` needs one of ``tools`` (their servers are what it is shown)."""
        t0 = time.perf_counter()
        tools = list(tools)
        self.warm(tools)  # never decoded with the request: the same head, whether loaded or decoded
        odds = self.decider.log_odds(self.messages(query, _servers_line(tools)), _YES, _NO, lane=RELEVANCE)
        return Judgement(odds, (time.perf_counter() - t0) * 1e3)
