"""BM25 over tool documents (``bm25s``), the lexical half of hybrid retrieval.

Why: terse developer queries often share a rare word with exactly one tool ("blame", "dependabot", "gist")
that dense embeddings blur; BM25 catches those. Identifiers are split into words before indexing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from nexus_agent.routing.docs import split_identifier

_WORD = re.compile(r"[a-z0-9]+")
STOP_WORDS = frozenset(
    """
    a an the of to in on for and or is are be it this that with by from at as me my i you your we
    our can could would please pls do does what whats which who how any some there here all get
    """.split()  # noqa: SIM905 - a word list reads better as text
)


def tokenize(text: str) -> list[str]:
    """Lower-cased words of ``text`` with identifiers split, stop-words and bare numbers dropped, light plural
    stemming."""
    out = []
    for w in _WORD.findall(split_identifier(text)):
        # a bare number is an id or an amount ("issue 1", "top 5"), not vocabulary: it matched the "+1"
        # reaction option of every reaction tool ("close issue 1" → add_issue_comment)
        if w in STOP_WORDS or w.isdigit():
            continue
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
            w = w[:-1]
        out.append(w)
    return out


class BM25Index:
    """BM25 scores of a query against a fixed list of documents (one per tool, same order as ``keys``)."""

    def __init__(self, keys: Sequence[str], documents: Sequence[str], k1: float = 1.2, b: float = 0.75) -> None:
        import bm25s

        self.keys = list(keys)
        self._docs = [tokenize(d) for d in documents]
        self._k1, self._b = k1, b
        self._retriever = bm25s.BM25(k1=k1, b=b)
        # bm25s takes pre-split token lists and builds its own vocabulary from them.
        self._retriever.index(self._docs, show_progress=False)
        self._df: dict[str, int] = {}
        for d in self._docs:
            for t in set(d):
                self._df[t] = self._df.get(t, 0) + 1

    def _idf(self, token: str) -> float:
        # Lucene BM25 idf (bm25s' default); a token no document has gets the df = 0 value.
        n = len(self._docs)
        df = self._df.get(token, 0)
        return float(np.log(1.0 + (n - df + 0.5) / (df + 0.5)))

    def _query_terms(self, query: str) -> list[str]:
        # a one-letter word is the tail of a contraction ("what's" → "what", "s") or an initial, not vocabulary:
        # "s" matched the possessives of five tool documents
        return [t for t in tokenize(query) if len(t) > 1]

    def scores(self, query: str) -> npt.NDArray[np.float32]:
        """float32 ``[len(keys)]``; 0 for documents sharing no term with the query."""
        toks = [t for t in self._query_terms(query) if t in self._retriever.vocab_dict]
        if not toks:
            return np.zeros(len(self.keys), dtype=np.float32)
        return np.asarray(self._retriever.get_scores(toks), dtype=np.float32)

    def normalized_scores(self, query: str) -> npt.NDArray[np.float32]:
        """BM25 divided by the sum of the idf of *all* query terms, roughly in [0, 1].

        One occurrence of a term in an average-length document scores idf / (1 + k1), so a document matching
        every query term once scores ~0.45, and a query whose words mostly appear in no tool ("tell me a joke
        about cats") stays low instead of being stretched to 1 by per-query max normalisation.
        """
        toks = list(dict.fromkeys(self._query_terms(query)))
        denom = sum(self._idf(t) for t in toks)
        raw = self.scores(query)
        return (raw / denom).astype(np.float32) if denom > 0 else raw

    def known_idf(self, query: str) -> float:
        """Sum of the idf of the query's distinct terms that some document has. bm25s' Lucene scoring gives one
        occurrence in an average-length document idf / (1 + k1) ≈ 0.45 idf, so half this sum is about the score
        of a tool that has each of those words once. Words no tool has (owner and repository names, "terraform")
        are left out, so they do not dilute a real match."""
        return sum(self._idf(t) for t in dict.fromkeys(self._query_terms(query)) if t in self._df)
