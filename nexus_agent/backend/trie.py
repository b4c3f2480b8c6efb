"""Tool-name radix trie and the logit-mask FSM built on it.

Whenever the LLM names a tool, it must name a real one. :class:`NameTrie` is a radix (compressed) trie of the
names, for text-level questions (is this a name? which names continue this prefix?). :class:`TokenNameFSM`
works at the token level: each name is tokenised once with the model's own tokenizer, the token sequences
form a trie, and a state (the tokens generated so far) gives the set of allowed next tokens; an end token is
allowed exactly where a complete name ends. Masking logits to that set makes any other output impossible.

Using the canonical tokenisation of each name (rather than every byte-level spelling) keeps the per-step mask
O(branching), not O(vocabulary); the model can still only produce names from the list.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt


@dataclass
class _RNode:
    children: dict[str, _RNode] = field(default_factory=dict)  # edge label (non-empty string) → child
    terminal: bool = False


class NameTrie:
    """Radix trie over strings: edges carry substrings; no node has two edges with the same first char."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._root = _RNode()
        self._size = 0
        for n in names:
            self.insert(n)

    def __len__(self) -> int:
        return self._size

    def insert(self, name: str) -> None:
        if not name:
            raise ValueError("NameTrie: empty name")
        node, rest = self._root, name
        while True:
            edge = next((e for e in node.children if e[0] == rest[0]), None)
            if edge is None:
                node.children[rest] = _RNode(terminal=True)
                self._size += 1
                return
            common = _common_prefix_len(edge, rest)
            if common < len(edge):  # split the edge at the divergence point
                child = node.children.pop(edge)
                mid = _RNode(children={edge[common:]: child})
                node.children[edge[:common]] = mid
                edge = edge[:common]
            node, rest = node.children[edge], rest[common:]
            if not rest:
                if not node.terminal:
                    node.terminal = True
                    self._size += 1
                return

    def remove(self, name: str) -> None:
        """Remove ``name`` (KeyError if absent); merges a single-child node back into its parent edge."""
        path: list[tuple[_RNode, str]] = []
        node, rest = self._root, name
        while rest:
            edge = next((e for e in node.children if rest.startswith(e)), None)
            if edge is None:
                raise KeyError(name)
            path.append((node, edge))
            node, rest = node.children[edge], rest[len(edge) :]
        if not node.terminal:
            raise KeyError(name)
        node.terminal = False
        self._size -= 1
        parent, edge = path[-1]
        if not node.children:
            del parent.children[edge]
            # the parent may now be a non-terminal pass-through node: merge it with its only child
            if len(path) >= 2 and not parent.terminal and len(parent.children) == 1:
                gp, gedge = path[-2]
                ((cedge, child),) = parent.children.items()
                del gp.children[gedge]
                gp.children[gedge + cedge] = child
        elif len(node.children) == 1:
            ((cedge, child),) = node.children.items()
            del parent.children[edge]
            parent.children[edge + cedge] = child

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        node = self._locate(name)
        return node is not None and node[1] == "" and node[0].terminal

    def _locate(self, prefix: str) -> tuple[_RNode, str] | None:
        """The node reached by ``prefix`` and the unconsumed part of its incoming edge ('' = exactly at it)."""
        node, rest = self._root, prefix
        while rest:
            edge = next((e for e in node.children if e[0] == rest[0]), None)
            if edge is None:
                return None
            if rest.startswith(edge):
                node, rest = node.children[edge], rest[len(edge) :]
                continue
            if edge.startswith(rest):
                return node.children[edge], edge[len(rest) :]
            return None
        return node, ""

    def complete(self, prefix: str) -> list[str]:
        """All names starting with ``prefix``, sorted."""
        loc = self._locate(prefix)
        if loc is None:
            return []
        out: list[str] = []
        stack = [(loc[0], prefix + loc[1])]
        while stack:
            node, text = stack.pop()
            if node.terminal:
                out.append(text)
            stack.extend((c, text + e) for e, c in node.children.items())
        return sorted(out)

    def next_chars(self, prefix: str) -> set[str]:
        """Characters that may follow ``prefix`` on the way to a name ('' marks that ``prefix`` is a name)."""
        loc = self._locate(prefix)
        if loc is None:
            return set()
        node, pending = loc
        if pending:
            return {pending[0]}
        out = {e[0] for e in node.children}
        if node.terminal:
            out.add("")
        return out


def _common_prefix_len(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@dataclass
class _TNode:
    children: dict[int, _TNode] = field(default_factory=dict)
    name: str | None = None  # set where a complete name ends


class TokenNameFSM:
    """Logit-mask FSM over the canonical token sequences of ``names``.

    ``tokenize(name) -> list[int]`` must be the generating model's tokenizer (no BOS); ``end_tokens`` are the
    ids that may close a name (e.g. end-of-turn, newline).
    """

    def __init__(self, names: Sequence[str], tokenize: Callable[[str], list[int]], end_tokens: Sequence[int]) -> None:
        if not end_tokens:
            raise ValueError("TokenNameFSM needs at least one end token")
        self.end_tokens = list(end_tokens)
        self._root = _TNode()
        self.token_seqs: dict[str, list[int]] = {}
        for n in names:
            toks = list(tokenize(n))
            if not toks:
                raise ValueError(f"name {n!r} tokenises to nothing")
            node = self._root
            for t in toks:
                node = node.children.setdefault(t, _TNode())
            node.name = n
            self.token_seqs[n] = toks

    def _walk(self, prefix: Sequence[int]) -> _TNode | None:
        node = self._root
        for t in prefix:
            nxt = node.children.get(t)
            if nxt is None:
                return None
            node = nxt
        return node

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        """Token ids allowed after ``prefix`` (the generated name tokens so far); [] if ``prefix`` is invalid."""
        node = self._walk(prefix)
        if node is None:
            return []
        out = sorted(node.children)
        if node.name is not None:
            out += self.end_tokens
        return out

    def mask(self, prefix: Sequence[int], n_vocab: int) -> npt.NDArray[np.bool_]:
        """Boolean mask ``[n_vocab]``: True where a token is allowed next."""
        m = np.zeros(n_vocab, dtype=bool)
        m[self.allowed(prefix)] = True
        return m

    def names_under(self, prefix: Sequence[int]) -> list[str]:
        """Names whose token sequence starts with ``prefix``."""
        node = self._walk(prefix)
        if node is None:
            return []
        out, stack = [], [node]
        while stack:
            n = stack.pop()
            if n.name is not None:
                out.append(n.name)
            stack.extend(n.children.values())
        return sorted(out)

    def finished(self, prefix: Sequence[int]) -> str | None:
        """The name ``prefix`` spells completely, if any."""
        node = self._walk(prefix)
        return node.name if node is not None else None

    def decode(self, next_logits: Callable[[list[int]], npt.NDArray[np.float32]], max_steps: int = 64) -> str:
        """Greedy constrained decoding: returns the chosen name.

        ``next_logits(prefix)`` gives the logits for the token after ``prefix``. Decoding stops as soon as only
        one name remains reachable (its remaining tokens are forced, so they need no model call) or an end
        token wins at a complete name.
        """
        prefix: list[int] = []
        for _ in range(max_steps):
            under = self.names_under(prefix)
            if len(under) == 1:
                return under[0]
            logits = next_logits(prefix)
            allowed = self.allowed(prefix)
            best = max(allowed, key=lambda t: float(logits[t]))
            if best in self.end_tokens:
                done = self.finished(prefix)
                assert done is not None  # end tokens are only allowed at complete names
                return done
            prefix.append(best)
        raise RuntimeError("TokenNameFSM.decode: no name finished within max_steps")
