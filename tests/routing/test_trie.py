from __future__ import annotations

import random

import numpy as np
import pytest

from nexus_agent.backend.trie import NameTrie, TokenNameFSM

NAMES = ["list_issues", "list_issue_types", "list_branches", "get_me", "get_file_contents", "issue_read", "issue_write"]


def test_radix_trie_contains_complete_and_remove() -> None:
    t = NameTrie(NAMES)
    assert len(t) == len(NAMES)
    assert all(n in t for n in NAMES)
    assert "list_issue" not in t and "list" not in t
    assert t.complete("list_issue") == ["list_issue_types", "list_issues"]
    assert t.next_chars("list_issue") == {"_", "s"}
    assert t.next_chars("get_me") == {""}
    assert t.next_chars("zzz") == set()
    t.remove("list_issues")
    assert "list_issues" not in t and "list_issue_types" in t
    assert t.complete("list_") == ["list_branches", "list_issue_types"]
    with pytest.raises(KeyError):
        t.remove("list_issues")


def test_radix_trie_matches_set_model() -> None:
    rng = random.Random(0)
    alphabet = "ab_"
    model: set[str] = set()
    t = NameTrie()
    for _ in range(400):
        w = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5)))
        if w in model and rng.random() < 0.5:
            t.remove(w)
            model.discard(w)
        elif w not in model:
            t.insert(w)
            model.add(w)
        assert len(t) == len(model)
        p = w[: rng.randint(0, len(w))]
        assert t.complete(p) == sorted(x for x in model if x.startswith(p))


def _char_tok(s: str) -> list[int]:
    return [ord(c) for c in s]


def test_fsm_allows_only_real_names() -> None:
    fsm = TokenNameFSM(NAMES, _char_tok, end_tokens=[0])
    assert fsm.allowed([]) == sorted({ord(n[0]) for n in NAMES})
    assert fsm.allowed(_char_tok("list_issue")) == [ord("_"), ord("s")]
    assert fsm.allowed(_char_tok("get_me")) == [0]
    assert fsm.allowed(_char_tok("nope")) == []
    m = fsm.mask(_char_tok("issue_"), 256)
    assert m.sum() == 2 and m[ord("r")] and m[ord("w")]


def test_fsm_decode_follows_logits_and_stops_early() -> None:
    fsm = TokenNameFSM(NAMES, _char_tok, end_tokens=[0])
    calls: list[int] = []

    def logits(prefix: list[int]) -> np.ndarray:
        calls.append(len(prefix))
        lg = np.zeros(256, dtype=np.float32)
        lg[ord("z")] = 100.0  # a disallowed token the model "wants": must never be chosen
        lg[ord("i")] = 5.0
        lg[ord("w")] = 3.0
        return lg

    assert fsm.decode(logits) == "issue_write"
    # after "issue_" + "w" only one name is left, so no further model calls
    assert max(calls) == len("issue_")
