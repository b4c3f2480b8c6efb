"""Retrieval over a session's examples: the ones closest to a request, for a tool (and one operation of a
consolidated tool), or among the multi-step examples of a server.

Requests are compared as queries (both sides with the embedder's query prefix: an example's request is a request
like the user's), with the names of their objects masked on both sides (:func:`~nexus_agent.routing.query.masked`:
an example teaches how a tool is used, not on what), through the index's embedding memo, so an example is embedded
once per process. ``qvec`` below is :meth:`ExampleIndex.vector` of the request.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence

import numpy as np

from nexus_agent.examples import Example, ExampleSet, Usage
from nexus_agent.routing.index import F32, EmbeddingCache
from nexus_agent.routing.query import kinds_named, masked, names_local_path


class ExampleIndex:
    """The closest examples to a request by cosine of the requests' embeddings (unit vectors, so a dot product)."""

    def __init__(self, examples: ExampleSet, cache: EmbeddingCache) -> None:
        self.examples = examples
        self.cache = cache

    def __len__(self) -> int:
        return len(self.examples)

    @functools.cached_property
    def path_tools(self) -> frozenset[str]:
        """The tools whose examples are asked for with a local path (``names_local_path``): git's and the
        filesystem's, which a request naming one means (:meth:`Router._in_scope`)."""
        return self.examples.tools_whose_requests(names_local_path)

    @functools.cached_property
    def kinds(self) -> dict[tuple[str, str | None], frozenset[str]]:
        """The kinds of object (``query.KINDS``) every example request of a tool (of one operation) names
        (:meth:`ExampleSet.common_to_requests`): what a request names when it means that tool (``Router._of_kind``)."""
        return self.examples.common_to_requests(kinds_named)

    def vector(self, query: str) -> F32:
        """The unit vector ``[dim]`` a request is compared with examples by: its masked text's."""
        return self.vectors([query])[0]

    def vectors(self, requests: Sequence[str]) -> F32:
        """:meth:`vector` of each of ``requests``, ``[len(requests), dim]``."""
        return self.cache.queries([masked(r) for r in requests])

    def _rank(self, qvec: F32 | None, requests: Sequence[str]) -> list[int]:
        """Indices of ``requests``, closest to ``qvec`` first (stable: a tie keeps the bank's order; without a
        vector, the bank's order)."""
        if qvec is None or not requests:
            return list(range(len(requests)))
        sims = self.vectors(requests) @ qvec
        return [int(i) for i in np.argsort(-sims, kind="stable")]

    def similarity(self, qvec: F32, request: str) -> float:
        """Cosine between an example request's vector and ``qvec`` (unit vectors)."""
        return float(self.vectors([request])[0] @ qvec)

    def closest(
        self, qvec: F32 | None, qualified: str, operation: str | None = None, k: int = 3, alone: bool = True
    ) -> list[Usage]:
        """Up to ``k`` calls of ``qualified`` (of ``operation`` when given), closest first; ``alone``: only
        examples that make this one call (their request asks for nothing else). Examples without a request
        (arguments only, from a tool's ``_meta``) come after the others."""
        rows = [u for u in self.examples.usages(qualified, operation) if u.alone or not alone]
        with_request = [u for u in rows if u.request]
        order = self._rank(qvec, [u.request for u in with_request])
        ranked = [with_request[i] for i in order] + [u for u in rows if not u.request]
        return _distinct(ranked)[:k]

    def scored(self, qvec: F32, qualified: str, operation: str | None = None, k: int = 3) -> list[tuple[Usage, float]]:
        """Up to ``k`` calls of ``qualified`` (of ``operation``) in examples with a request, a later step of a
        multi-step example too, with their cosine to ``qvec``, closest first."""
        rows = [u for u in self.examples.usages(qualified, operation) if u.request]
        if not rows:
            return []
        sims = self.vectors([u.request for u in rows]) @ qvec
        order = np.argsort(-sims, kind="stable")[:k]
        return [(rows[i], float(sims[i])) for i in order]

    def fixed(self, qualified: str, operation: str | None = None, k: int = 5) -> list[Usage]:
        """The static examples of a tool (and operation): :meth:`ExampleSet.diverse`, the same whatever the
        request, so their tokens, and their KV, never change."""
        return self.examples.diverse(qualified, operation, k)

    def multi_step(self, qvec: F32 | None, server: str, k: int = 2) -> list[Example]:
        """Up to ``k`` multi-step examples of ``server``, closest to the request first."""
        rows = self.examples.multi_step(server)
        return [rows[i] for i in self._rank(qvec, [ex.request for ex in rows])][:k]

    def nearest(self, qvec: F32, servers: set[str]) -> tuple[Example, float] | None:
        """The example of one of ``servers`` whose request is closest to ``qvec``, with its cosine; None when
        none has a request."""
        rows = [ex for ex in self.examples.examples if ex.server in servers and ex.request]
        if not rows:
            return None
        sims = self.vectors([ex.request for ex in rows]) @ qvec
        i = int(np.argmax(sims))
        return rows[i], float(sims[i])

    def lookup_for(self, qvec: F32 | None, qualified: str, allowed: set[str], params: Sequence[str] = ()) -> str | None:
        """How the examples find the object a call of ``qualified`` changes: in the multi-step example closest to
        the request among those that call ``qualified`` after something else, the call before it whose tool is in
        ``allowed`` (qualified names); None when no example shows one. ``params``: the identifiers the call lacks
        (``issue_number``); then only the call an example says one of them comes from (its ``from``) counts.

        Why ``params``: with the requests masked, "assign the pagination bug to bob-kim" is closest to "assign
        #48 to our release manager (look them up)", whose first call finds the person (``search_users``), not the
        issue the write lacks."""
        rows = [u for u in self.examples.usages(qualified) if u.index > 0 and u.request]
        for i in self._rank(qvec, [u.request for u in rows]):
            u = rows[i]
            before = u.example.calls[: u.index]
            if params:
                sources = [src for p, src in u.example.calls[u.index].from_.items() if p in params]
                before = [before[src] for src in sources]
            found = [q for c in before if (q := f"{u.example.server}__{c.tool}") in allowed]
            if found:
                return found[0]
        return self._source_of(qvec, params, allowed) if params else None

    def made_before(self, qualified: str) -> frozenset[str]:
        """The tools (qualified names) that a multi-step example calls before a call of ``qualified``: what the
        bank does first when it makes this call as a later step (``git_add`` before ``git_commit``)."""
        return frozenset(
            f"{u.example.server}__{c.tool}" for u in self.examples.usages(qualified) for c in u.example.calls[: u.index]
        )

    def _source_of(self, qvec: F32 | None, params: Sequence[str], allowed: set[str]) -> str | None:
        """The tool in ``allowed`` that the closest multi-step example of any tool takes one of ``params`` from
        (no example of the write itself shows it: "mark the dark mode PR ready" has no example that finds a pull
        request for ``update_pull_request``, but merges find theirs with ``search_pull_requests``)."""
        rows = [
            (ex, found)
            for ex in self.examples.multi_step()
            for c in ex.calls
            for p, src in c.from_.items()
            if p in params and (found := f"{ex.server}__{ex.calls[src].tool}") in allowed
        ]
        order = self._rank(qvec, [ex.request for ex, _ in rows])
        return rows[order[0]][1] if order else None


def _distinct(rows: list[Usage]) -> list[Usage]:
    """One usage per example and arguments (a shipped and a user's copy of one example count once)."""
    seen: set[str] = set()
    out = []
    for u in rows:
        key = f"{u.request}\x00{json.dumps(u.arguments, sort_keys=True)}"
        if key not in seen:
            seen.add(key)
            out.append(u)
    return out
