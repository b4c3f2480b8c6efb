"""The relevance judge reads yes/no logits through the backend's ``Decider``, and the router acts on it only where
asked."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from test_decision_llm import CharLLM, decider
from test_router import HashEmbedder

from nexus_agent.registry import Tool, load_registry
from nexus_agent.routing.followup import PreviousTurn
from nexus_agent.routing.judge import RelevanceJudge, _servers_line, names_concrete_object
from nexus_agent.routing.options import GateConfig, NoToolConfig, RetrievalConfig
from nexus_agent.routing.router import Router, RouterConfig


class WordLLM(CharLLM):
    """One token per character, except the answer letters (with and without a space), one token each; after any
    prompt the logits put B ("needs a lookup") at ``yes_logit`` and A ("general") at 0."""

    WORDS = ("B", " B", "A", " A")

    def __init__(self, yes_logit: float) -> None:
        super().__init__(answer="")
        self.yes_logit = yes_logit
        self.prompts: list[str] = []

    def render(self, messages: list[dict[str, str]]) -> list[int]:
        self.prompts.append("".join(f"<{m['role']}>{m['content']}" for m in messages))
        return super().render(messages)

    def logits_after(self, tokens: Sequence[int]) -> npt.NDArray[np.float32]:
        out = np.zeros(0x11000, dtype=np.float32)
        out[0x10000 : 0x10000 + 2] = self.yes_logit  # the two spellings of B
        return out

    def tokenize(self, text: str) -> list[int]:
        if text in self.WORDS:
            return [0x10000 + self.WORDS.index(text)]
        return super().tokenize(text)


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path / "home"))


def _tools(registry_dir: Path) -> list[Tool]:
    return load_registry(registry_dir).profile("github_all")


def test_the_judge_scores_yes_over_no_behind_its_instructions(registry_dir: Path) -> None:
    tools = _tools(registry_dir)[:5]
    llm = WordLLM(yes_logit=2.0)
    judge = RelevanceJudge(decider(llm))
    j = judge.judge("list my gists", tools)
    # two spellings of each letter: logsumexp(2 × 2.0) - logsumexp(2 × 0.0) = 2.0
    assert j.log_odds == pytest.approx(2.0, abs=1e-6) and j.ms >= 0.0
    head = llm.prompts[-1][: judge.head_tokens(_servers_line(tools))]
    assert head.endswith("<user>") and "list my gists" not in head  # the instructions and the worked examples
    assert "by service:\n- github: " in head and "add_comment_to_pending_review" in head
    assert RelevanceJudge(decider(WordLLM(yes_logit=-3.0))).judge("hi", tools).log_odds == pytest.approx(-3.0, abs=1e-6)


def test_a_vocabulary_without_one_token_answers_is_refused() -> None:
    class Chars(WordLLM):
        def tokenize(self, text: str) -> list[int]:
            return [ord(c) for c in text] + [0]  # no answer letter is one token

    with pytest.raises(ValueError, match="tell"):
        RelevanceJudge(decider(Chars(0.0)))


def _router(registry_dir: Path, yes_logit: float, **judge: object) -> tuple[Router, WordLLM]:
    llm = WordLLM(yes_logit)
    base = RouterConfig(
        retrieval=RetrievalConfig(synthetic=False),
        gate=GateConfig(tau=0.0),
        no_tool=NoToolConfig(min_dense=0.0, exemplars=False),
    )
    r = Router(_tools(registry_dir), HashEmbedder(), base.tuned(judge=judge), judge=RelevanceJudge(decider(llm)))
    return r, llm


def test_the_router_turns_a_request_away_when_the_judge_says_no(registry_dir: Path) -> None:
    r, _ = _router(registry_dir, yes_logit=-2.0)
    res = r.route("what is the difference between a gist and a repository")
    assert res.tool is None and res.decision == "no-tool"
    assert res.judge_log_odds == pytest.approx(-2.0, abs=1e-6) and res.judge_ms is not None
    assert res.candidates  # the list is still reported
    # a yes keeps retrieval's answer, and records the verdict
    r, _ = _router(registry_dir, yes_logit=2.0)
    res = r.route("list the gists of user octocat please")
    assert res.tool == "github__list_gists" and res.judge_log_odds == pytest.approx(2.0, abs=1e-6)
    # the threshold is the config's
    r, _ = _router(registry_dir, yes_logit=0.5, threshold=1.0)
    assert r.route("list the gists of user octocat please").tool is None


def test_the_judge_is_not_asked_where_it_is_not_needed(registry_dir: Path) -> None:
    r, llm = _router(registry_dir, yes_logit=-5.0)
    # a request naming a concrete object (owner/repo, a path, #N, an identifier) is for a tool
    res = r.route("list the open issues in acme/api")
    assert res.tool is not None and res.judge_log_odds is None and llm.prompts == []
    # unless it is asked always
    r2, _ = _router(registry_dir, yes_logit=-5.0, ask="always")
    assert r2.route("list the open issues in acme/api").tool is None
    # a follow-up: the judge does not see the conversation it leans on
    hist = [{"role": "user", "content": "list the gists of user octocat"}, {"role": "assistant", "content": "3 gists"}]
    res = r.route("and the second one?", hist, previous=PreviousTurn("list the gists", "github__list_gists"))
    assert res.judge_log_odds is None
    # switched off
    r3, _ = _router(registry_dir, yes_logit=-5.0, enabled=False)
    res = r3.route("what is a gist")
    assert res.tool is not None and res.judge_log_odds is None


@pytest.mark.parametrize(
    ("query", "concrete"),
    [
        ("list the issues in acme/api", True),
        ("how long until session:42 expires", True),
        ("refund customer cus_Nf83kQ", True),
        ("read /etc/hosts", True),
        ("what is in ~/notes/todo.md", True),
        ("open README.md", True),
        ("https://example.com is down?", True),
        ("close #12", True),
        ("ping @alice", True),
        ("mail bob@acme.io", True),
        ("status of INC-4521", True),
        ("what is 144 divided by 12", False),
        ("what does chmod 640 mean", False),
        ("ec2 vs s3", False),
        ('rewrite this: "see you at 5"', False),
        ("python 3.12 features", False),
        ("list my gists", False),
    ],
)
def test_what_counts_as_a_concrete_object(query: str, concrete: bool) -> None:
    assert names_concrete_object(query) is concrete
