"""Router pipeline with a deterministic bag-of-words embedder (no model needed)."""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from nexus_agent.evaluation.routing import EvalItem, ItemResult, evaluate, load_eval, sample_allowed, summarize
from nexus_agent.registry import Tool, load_registry, split_key
from nexus_agent.routing.docs import tool_document
from nexus_agent.routing.embedders.base import Embedder, Vectors
from nexus_agent.routing.followup import PreviousTurn
from nexus_agent.routing.lexical import BM25Index, tokenize
from nexus_agent.routing.options import GateConfig, NoToolConfig, RetrievalConfig
from nexus_agent.routing.rerank.base import Reranker, RerankResult
from nexus_agent.routing.router import Candidate, Decision, Router, RouterConfig, RouteResult


class HashEmbedder(Embedder):
    """Hashed bag of words: a deterministic stand-in with cosine ≈ word overlap."""

    name = "test-hash"
    dim = 256

    def _embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in tokenize(t):
                out[i, int(hashlib.md5(w.encode()).hexdigest(), 16) % self.dim] += 1.0
        return out + 1e-3


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path / "home"))  # SLB/τ caches only; no model is loaded here


def _tools(registry_dir: Path) -> list[Tool]:
    return load_registry(registry_dir).profile("github_all")


def test_route_add_remove_replace(registry_dir: Path) -> None:
    tools = _tools(registry_dir)
    r = Router(
        tools, HashEmbedder(), RouterConfig(retrieval=RetrievalConfig(synthetic=False), gate=GateConfig(tau=0.0))
    )
    res = r.route("list the gists of user octocat")
    assert res.tool == "github__list_gists"
    assert res.decision == "auto"
    assert res.candidates[0].key == "github__list_gists"
    assert len(res.candidates) == r.cfg.retrieval.pool
    r.remove_tools(["github__list_gists"])
    assert "github__list_gists" not in r.index.slb
    assert r.route("list the gists of user octocat").tool != "github__list_gists"
    gist = next(t for t in tools if t.name == "list_gists")
    r.add_tools([gist])
    assert r.route("list the gists of user octocat").tool == "github__list_gists"
    # replace: the same key with a new description is re-embedded
    renamed = Tool(gist.server, gist.name, "Water the office plants and feed the fish.", gist.input_schema)
    r.replace_tools([renamed])
    # one row set per tool, and per operation of a consolidated tool (issue_write create / update …)
    assert len(r.index.slb) == sum(max(1, len(t.operations())) for t in tools)
    assert {t.qualified_name for t in r.tools.values()} == {t.qualified_name for t in tools}
    assert r.route("water the plants and feed the fish").tool == "github__list_gists"


def test_gate_escalates_low_margin_and_relevance_floor(registry_dir: Path) -> None:
    tools = _tools(registry_dir)
    r = Router(
        tools,
        HashEmbedder(),
        RouterConfig(
            retrieval=RetrievalConfig(synthetic=False), gate=GateConfig(tau=10.0), no_tool=NoToolConfig(min_dense=0.0)
        ),
    )
    res = r.route("list the gists of user octocat")
    assert res.decision == "escalated" and res.escalated  # no margin can reach τ = 10
    assert res.tool == res.candidates[0].key  # without a reranker the retrieval top-1 stands
    r2 = Router(
        tools,
        HashEmbedder(),
        RouterConfig(
            retrieval=RetrievalConfig(synthetic=False), gate=GateConfig(tau=0.0), no_tool=NoToolConfig(min_dense=0.99)
        ),
    )
    res2 = r2.route("list the gists of user octocat")
    assert res2.decision == "no-tool" and res2.tool is None


def test_calibration_is_cached_and_percentile(registry_dir: Path) -> None:
    r = Router(_tools(registry_dir), HashEmbedder(), RouterConfig(retrieval=RetrievalConfig(synthetic=False)))
    cal = r.calibrate()
    assert cal["n_queries"] > 5
    assert cal["tau"] <= cal["margin_p50"]  # 20th percentile ≤ median
    assert r.calibration.gate is not None and r.calibration.gate.tau == pytest.approx(cal["tau"])
    assert r.calibrate() == cal  # second call reads the cache file


def test_eval_runner_keys_and_sampling(registry_dir: Path, tmp_path: Path, summary_keys: frozenset[str]) -> None:
    reg = load_registry(registry_dir)
    lines = [
        {"id": "a", "query": "list the gists of user octocat", "tool": "list_gists", "server": "github"},
        {
            "id": "b",
            "query": "star the repo octo/x",
            "tool": "star_repository",
            "server": "github",
            "alt_tools": ["github/fork_repository"],
        },
        {"id": "c", "query": "tell me a joke", "tool": None},
    ]
    f = tmp_path / "e.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in lines))
    items = load_eval(f, reg)
    assert items[1].gold == {"github__star_repository", "github__fork_repository"}
    assert items[2].gold == set()
    profile = [t.qualified_name for t in reg.profile("github_all")]
    allowed = sample_allowed(profile, items[1], 10, random.Random(0))
    assert allowed is not None and len(allowed) == 10 and items[1].gold <= allowed
    assert sample_allowed(profile, items[0], 500, random.Random(0)) is None
    r = Router(reg.profile("github_all"), HashEmbedder(), RouterConfig(retrieval=RetrievalConfig(synthetic=False)))
    s, res = evaluate(r, items, profile, n_tools=10, seed=1)
    assert summary_keys <= s.keys(), summary_keys - s.keys()
    assert s["n"] == 3 and len(res) == 3
    # at most the 10 sampled tools (each operation of a consolidated tool is a candidate of its own)
    assert all(len({split_key(c.key)[0] for c in x.result.candidates}) <= 10 for x in res)
    assert 0.0 <= s["accuracy_ci95"][0] <= s["accuracy"] <= s["accuracy_ci95"][1] <= 1.0


def test_no_tool_file_format() -> None:
    path = Path(__file__).parent / "data" / "no_tool_queries.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    assert len(rows) >= 30
    assert all(r["tool"] is None and r["query"] for r in rows)
    assert len({r["query"] for r in rows}) == len(rows)


def test_eval_item_dataclass() -> None:
    assert EvalItem("x", "q", set()).history == []


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        self.calls = 0

    def _embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += len(texts)
        return super()._embed(texts)


def test_slb_cache_file_skips_reembedding(registry_dir: Path, tmp_path: Path) -> None:
    from nexus_agent.paths import nexus_home

    tools = _tools(registry_dir)[:20]
    e1 = CountingEmbedder()
    r1 = Router(tools, e1, RouterConfig(retrieval=RetrievalConfig(synthetic=False)))
    assert e1.calls == len(r1.index.slb) == sum(max(1, len(t.operations())) for t in tools)  # one text per operation
    assert list((nexus_home() / "slb").glob("*.npz"))
    e2 = CountingEmbedder()
    r2 = Router(tools, e2, RouterConfig(retrieval=RetrievalConfig(synthetic=False)))
    assert e2.calls == 0  # loaded from $NEXUS_HOME/slb/<embedder>-<registry hash>.npz
    q = e1.embed_queries(["list gists"])[0]
    np.testing.assert_array_equal(r1.index.slb.scores(q), r2.index.slb.scores(q))
    # a changed tool set is a different key: only the new tool's text is embedded (text cache)
    r3 = Router(_tools(registry_dir)[:21], e2, RouterConfig(retrieval=RetrievalConfig(synthetic=False)))
    new = _tools(registry_dir)[20]
    assert e2.calls == max(1, len(new.operations())) and len(r3.index.slb) == len(r1.index.slb) + e2.calls


def test_lexical_scores_are_normalised_within_the_allowed_subset(registry_dir: Path) -> None:
    tools = _tools(registry_dir)
    # "max" normalisation, where the reference is the best eligible score alone (the default also floors it at
    # half the query's known-word idf, tested below)
    r = Router(
        tools,
        HashEmbedder(),
        RouterConfig(retrieval=RetrievalConfig(synthetic=False, bm25_norm="max"), gate=GateConfig(tau=0.0)),
    )
    q = "list the gists of user octocat"
    full = {c.key: c for c in r.retrieve(q)}
    assert full["github__list_gists"].lexical == pytest.approx(1.0)  # the best lexical match overall
    allowed = {k for k in full if "gist" not in k}
    sub = r.retrieve(q, allowed)
    assert {c.key for c in sub} == allowed
    # without the gist tools, the best remaining lexical match is the new reference (1.0), not a fraction of
    # a score no eligible tool can reach
    assert max(c.lexical for c in sub) == pytest.approx(1.0)
    assert full[sub[0].key].lexical < 1.0


def test_relevance_floor_is_recomputed_for_an_allowed_subset(registry_dir: Path) -> None:
    tools = _tools(registry_dir)
    r = Router(
        tools, HashEmbedder(), RouterConfig(retrieval=RetrievalConfig(synthetic=False), gate=GateConfig(tau=0.0))
    )
    r.calibrate()
    assert r.calibration.min_dense is not None
    everything = set(r.index.slb.keys)
    # over the whole registry the subset statistic is the calibrated floor itself
    assert r.calibration.subset_floor(everything) == pytest.approx(r.calibration.min_dense, abs=1e-6)
    few = set(sorted(everything)[:5])
    assert r.calibration.subset_floor(few) <= r.calibration.min_dense  # fewer tools → weaker best matches → lower floor
    assert r.calibration.subset_floor(set()) == float("inf")
    assert r.calibration.floor(few) == r.calibration.subset_floor(few)
    assert r.calibration.floor() == r.calibration.min_dense


class Recording(Reranker):
    """A reranker that counts its calls and picks the first candidate (or, ``says_none``, finds none fits)."""

    def __init__(self, says_none: bool = False) -> None:
        self.calls = 0
        self.says_none = says_none

    def rerank(
        self,
        query: str,
        candidates: Sequence[Tool],
        history: Sequence[dict[str, str]] = (),
        previous: PreviousTurn | None = None,
        examples: Sequence[str] = (),
    ) -> RerankResult:
        self.calls += 1
        choice = None if self.says_none else candidates[0].key
        return RerankResult(scores=[0.0] * len(candidates), choice=choice)


def test_below_the_floor_the_reranker_is_asked_only_when_history_may_explain_the_request(registry_dir: Path) -> None:
    rr = Recording()
    r = Router(
        _tools(registry_dir),
        HashEmbedder(),
        RouterConfig(
            retrieval=RetrievalConfig(synthetic=False), gate=GateConfig(tau=10.0), no_tool=NoToolConfig(min_dense=0.99)
        ),
        rr,
    )
    res = r.route("tell me a joke about penguins")
    assert res.decision == "no-tool" and res.tool is None and rr.calls == 0
    hist = [{"role": "user", "content": "show acme/api"}, {"role": "assistant", "content": "done"}]
    res = r.route("and the gists there?", history=hist)
    assert rr.calls == 1 and res.tool is not None
    # small talk (a no-tool exemplar) stays no-tool even after a tool turn: the reranker is not asked
    res = r.route("good evening!", history=hist)
    assert res.decision == "no-tool" and rr.calls == 1


def test_a_request_that_points_back_goes_to_the_reranker_when_there_is_history(registry_dir: Path) -> None:

    from nexus_agent.routing.query import refers_back

    assert refers_back("reopen it") and refers_back("any similar reports in That repo?")
    assert not refers_back("list the open issues in acme/api") and not refers_back("italic items")
    rr = Recording()
    cfg = RouterConfig(
        retrieval=RetrievalConfig(synthetic=False),
        gate=GateConfig(tau=0.0),
        no_tool=NoToolConfig(min_dense=0.0, exemplars=False),
    )  # the margin never escalates
    r = Router(_tools(registry_dir), HashEmbedder(), cfg, rr)
    hist = [{"role": "user", "content": "close issue 1 in acme/api"}, {"role": "assistant", "content": "Closed."}]
    res = r.route("reopen it", history=hist)
    assert rr.calls == 1 and res.decision == "escalated" and res.escalated
    assert r.route("reopen it").escalated is False and rr.calls == 1  # nothing earlier to point at
    assert r.route("list the open issues in acme/api", history=hist).escalated is False and rr.calls == 1
    r = Router(
        _tools(registry_dir),
        HashEmbedder(),
        cfg.tuned(gate={"escalate_back_references": False}, followups={"escalate": False}),
        rr,
    )
    assert r.route("reopen it", history=hist).escalated is False and rr.calls == 1
    r = Router(
        _tools(registry_dir), HashEmbedder(), cfg.tuned(gate={"enabled": False}), rr
    )  # --no-gate: top-1 is final
    assert r.route("reopen it", history=hist).escalated is False and rr.calls == 1


def test_a_request_nearer_a_no_tool_exemplar_than_any_tool_gets_no_tool(registry_dir: Path) -> None:
    from nexus_agent.routing.relevance import no_tool_exemplars

    small_talk = "how do I tie a tie?"
    assert small_talk in no_tool_exemplars()
    tools = _tools(registry_dir)
    r = Router(
        tools,
        HashEmbedder(),
        RouterConfig(
            retrieval=RetrievalConfig(synthetic=False), gate=GateConfig(tau=0.0), no_tool=NoToolConfig(min_dense=0.0)
        ),
    )  # floor off
    res = r.route(small_talk)
    assert res.decision == "no-tool" and res.tool is None
    assert res.exemplar_similarity == pytest.approx(1.0, abs=1e-2)
    assert r.route("list the gists of user octocat").tool == "github__list_gists"
    off = Router(
        tools,
        HashEmbedder(),
        RouterConfig(
            retrieval=RetrievalConfig(synthetic=False),
            gate=GateConfig(tau=0.0),
            no_tool=NoToolConfig(min_dense=0.0, exemplars=False),
        ),
    )
    res_off = off.route(small_talk)
    assert res_off.tool is not None and res_off.exemplar_similarity is None


def test_a_tool_whose_own_requests_read_like_small_talk_keeps_them(registry_dir: Path) -> None:
    # "what is 7 times 8?" is a no-tool exemplar; a calculator-like tool whose own example request is the same
    # question must still be routed to, and only while that tool is one routing may pick
    q = "what is 7 times 8?"
    tools = _tools(registry_dir)
    cfg = RouterConfig(
        retrieval=RetrievalConfig(synthetic=False), gate=GateConfig(tau=0.0), no_tool=NoToolConfig(min_dense=0.0)
    )
    assert Router(tools, HashEmbedder(), cfg).route(q).tool is None
    r = Router(tools, HashEmbedder(), cfg, synthetic={"github__list_gists": [q]})
    assert r.route(q).tool is not None
    reqs, owners = r.calibration.tool_requests()
    owner_keys = {r.index.slb.keys[i] for i in owners}
    assert len(reqs) == len(owners) and q in r.index.synthetic["github__list_gists"]
    assert "github__list_gists" in owner_keys
    without = {k for k in r.tools if k != "github__list_gists"}
    assert r.route(q, allowed=without).tool is None
    # a tool change rebuilds the tool side of the test
    r.remove_tools(["github__list_gists"])
    assert "github__list_gists" not in {r.index.slb.keys[i] for i in r.calibration.tool_requests()[1]}
    assert r.route(q).tool is None


def test_no_tool_exemplars_share_no_request_with_the_test_or_eval_sets(registry_dir: Path) -> None:
    from nexus_agent.routing.relevance import no_tool_exemplars

    def norm(s: str) -> str:
        # BM25's words plus the numbers it drops: "what is 256 divided by 16?" is not "what's 144 divided by 12"
        return " ".join(tokenize(s)) + " | " + " ".join(re.findall(r"\d+", s))

    ex = {norm(q) for q in no_tool_exemplars()}
    assert len(ex) >= 90
    test_file = Path(__file__).parent / "data" / "no_tool_queries.jsonl"
    files = [test_file, *sorted((registry_dir.parent / "eval").glob("*.jsonl"))]
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                assert norm(json.loads(line)["query"]) not in ex, (f.name, line)


def test_embedding_cache_rewrites_its_file_only_when_it_learned_something(tmp_path: Path) -> None:
    from nexus_agent.routing.index import EmbeddingCache

    path = tmp_path / "texts.npz"
    cache = EmbeddingCache(HashEmbedder())
    docs = cache.documents(["list gists", "star a repository"])
    cache.save(path)
    stamp = path.stat().st_mtime_ns
    path.touch()  # a rewrite would change this stamp again
    stamp = path.stat().st_mtime_ns
    again = EmbeddingCache(HashEmbedder())
    again.load(path)
    np.testing.assert_array_equal(again.documents(["star a repository", "list gists"]), docs[::-1])
    again.queries([])  # nothing new: no rewrite
    again.save(path)
    assert path.stat().st_mtime_ns == stamp
    q = again.queries(["list gists"])  # query-side texts are their own entries
    assert q.shape == (1, HashEmbedder.dim)
    again.save(path)
    third = EmbeddingCache(HashEmbedder())
    third.load(path)
    assert len(third._docs) == 3


def test_bare_numbers_are_no_lexical_evidence(registry_dir: Path) -> None:
    tools = {t.qualified_name: t for t in _tools(registry_dir)}
    keys = ["github__add_issue_comment", "github__issue_write"]
    idx = BM25Index(keys, [tool_document(tools[k]) for k in keys])
    # add_issue_comment offers the "+1" reaction; the "1" of "issue 1" is an id, and must not favour it
    with_id, without = idx.scores("close issue 1 in acme/api"), idx.scores("close issue in acme/api")
    assert np.array_equal(with_id, without)
    assert tokenize("issue 12 of acme/api, ipv4 and +1") == ["issue", "acme", "api", "ipv4"]


def test_one_weak_lexical_match_is_not_stretched_to_full_evidence(registry_dir: Path) -> None:
    tools = _tools(registry_dir)
    q = "is there a newer version of hashicorp/terraform than 1.9?"  # only "version" is a word some tool has

    def lexical(cfg: RouterConfig, query: str) -> dict[str, float]:
        return {c.key: c.lexical for c in Router(tools, HashEmbedder(), cfg).retrieve(query)}

    stretched = lexical(
        RouterConfig(retrieval=RetrievalConfig(synthetic=False, bm25_norm="max"), gate=GateConfig(tau=0.0)), q
    )
    matched = [k for k, v in stretched.items() if v > 0]
    assert matched == ["github__create_or_update_file"]
    assert stretched[matched[0]] == pytest.approx(1.0)
    known = lexical(
        RouterConfig(retrieval=RetrievalConfig(synthetic=False), gate=GateConfig(tau=0.0)), q
    )  # the default: "known", share 0.5
    assert 0 < known[matched[0]] < 0.75
    # a request whose words one tool matches well keeps its full lexical evidence
    assert max(
        lexical(
            RouterConfig(retrieval=RetrievalConfig(synthetic=False), gate=GateConfig(tau=0.0)),
            "list the gists of user octocat",
        ).values()
    ) == (pytest.approx(1.0))


def test_known_idf_counts_only_words_some_tool_has(registry_dir: Path) -> None:
    tools = _tools(registry_dir)
    idx = BM25Index([t.qualified_name for t in tools], [tool_document(t) for t in tools])
    # "s" (of "what's") is no word; hashicorp and terraform are in no tool document
    assert idx.known_idf("what's the version of hashicorp/terraform") == pytest.approx(idx.known_idf("version"))
    assert idx.known_idf("version") > 0
    assert idx.known_idf("hashicorp terraform") == 0
    assert np.array_equal(idx.scores("what's the version"), idx.scores("what the version"))


def test_a_question_lowers_only_the_tools_that_declare_they_change_things(registry_dir: Path) -> None:
    tools = _tools(registry_dir)
    hint = {t.qualified_name: t.read_only_hint for t in tools}
    assert {True, False} <= set(hint.values())
    base = Router(
        tools,
        HashEmbedder(),
        RouterConfig(retrieval=RetrievalConfig(synthetic=False, question_write_penalty=0.0), gate=GateConfig(tau=0.0)),
    )
    pen = Router(
        tools,
        HashEmbedder(),
        RouterConfig(retrieval=RetrievalConfig(synthetic=False, question_write_penalty=0.15), gate=GateConfig(tau=0.0)),
    )
    for q, asks in (("is acme/api#12 still open?", True), ("can you close acme/api#12?", False)):
        before = {c.key: c.score for c in base.retrieve(q)}
        after = {c.key: c.score for c in pen.retrieve(q)}
        for k, score in before.items():
            drop = 0.15 if asks and hint[split_key(k)[0]] is False else 0.0
            assert after[k] == pytest.approx(score - drop, abs=1e-6), (q, k)


def test_a_question_whose_top_tool_the_penalty_replaced_is_escalated_with_retrievals_own_margin(
    registry_dir: Path,
) -> None:
    tools = _tools(registry_dir)
    base = Router(
        tools,
        HashEmbedder(),
        RouterConfig(retrieval=RetrievalConfig(synthetic=False, question_write_penalty=0.0), gate=GateConfig(tau=0.0)),
    )
    pen = Router(
        tools, HashEmbedder(), RouterConfig(retrieval=RetrievalConfig(synthetic=False), gate=GateConfig(tau=0.0))
    )
    q = "is acme/api#12 closed?"
    before, after = base.route(q), pen.route(q)
    assert (before.tool, before.decision) == ("github__update_pull_request", "auto")
    assert after.decision == "escalated" and after.tool == split_key(after.candidates[0].key)[0] != before.tool
    assert after.margin == pytest.approx(before.margin)  # the gate reads the ranking before the penalty
    # a command keeps its ranking and its decision
    cmd = "close acme/api#12"
    assert (base.route(cmd).tool, base.route(cmd).decision) == (pen.route(cmd).tool, pen.route(cmd).decision)


def test_summary_splits_accuracy_between_the_gate_and_the_decision() -> None:
    def item(gold: set[str], pool: list[str], tool: str | None, escalated: bool) -> ItemResult:
        cands = [Candidate(k, 1.0 - i / 10, 0.0, 0.0) for i, k in enumerate(pool)]
        decision: Decision = "escalated" if escalated else ("auto" if tool else "no-tool")
        return ItemResult(
            EvalItem("i", "q", gold), RouteResult(cands, decision, tool, 0.0, 1.0, escalated=escalated), 0
        )

    results = [
        item({"a"}, ["a", "b"], "a", False),  # auto, right
        item({"a"}, ["b", "a"], "b", False),  # auto, wrong: a perfect decision never sees it
        item({"a"}, ["b", "a"], "b", True),  # escalated, wrong, gold in the pool: the decision's miss
        item({"a"}, ["b", "c"], "b", True),  # escalated, gold not in the pool: retrieval's miss
        item(set(), ["b"], "b", True),  # escalated no-tool request answered with a tool: the decision's miss
    ]
    s = summarize(results, pool=2)
    assert s["accuracy"] == pytest.approx(1 / 5)
    assert s["accuracy_ceiling"] == pytest.approx(3 / 5)
    assert s["accuracy_auto"] == pytest.approx(1 / 2)
    assert s["accuracy_escalated"] == pytest.approx(0.0)


def test_a_tool_change_drops_the_calibration_and_the_next_route_makes_it_again(registry_dir: Path) -> None:
    tools = _tools(registry_dir)
    cfg = RouterConfig(retrieval=RetrievalConfig(synthetic=False))
    r = Router(tools, HashEmbedder(), cfg)
    assert (
        r.calibration.gate is None and r.calibration.min_dense is None
    )  # lazy: nothing calibrated before the first route
    r.calibrate()
    bm25 = r.index.bm25
    r.remove_tools(["no__such_tool"])  # nothing changed: nothing dropped
    assert r.calibration.gate is not None and r.index.bm25 is bm25
    r.remove_tools(["github__list_gists"])
    assert r.calibration.gate is None and r.calibration.min_dense is None and r.index.bm25 is not bm25
    r.route("list the gists of user octocat")
    assert r.calibration.gate is not None and r.calibration.min_dense is not None
    # the same as a router built over the new tool set from the start
    fresh = Router([t for t in tools if t.name != "list_gists"], HashEmbedder(), cfg)
    assert r.calibrate() == fresh.calibrate()
    assert r.calibration.subset_floor({"github__get_me"}) == fresh.calibration.subset_floor({"github__get_me"})


def test_build_router_reads_the_options_and_sets_them_on_the_tuning(registry_dir: Path) -> None:
    from nexus_agent import defaults
    from nexus_agent.routing.router import RouterOptions, build_router, create_decision

    tools = _tools(registry_dir)[:30]
    assert RouterOptions().config() == RouterConfig()  # the options' defaults are the pipeline's
    assert (RouterOptions().embedder, RouterOptions().reranker) == (defaults.EMBEDDER, defaults.RERANKER)
    opts = RouterOptions(reranker="none", pool=7, gate=False, synthetic=False, hybrid=False)
    r = build_router(
        tools,
        opts,
        embedder=HashEmbedder(),
        tuning=RouterConfig(gate=GateConfig(tau=0.0), retrieval=RetrievalConfig(bm25_weight=0.5, pool=99)),
    )
    assert r.reranker is None and (
        r.cfg.retrieval.pool,
        r.cfg.gate.enabled,
        r.cfg.retrieval.synthetic,
        r.cfg.retrieval.hybrid,
    ) == (7, False, False, False)
    assert (r.cfg.gate.tau, r.cfg.retrieval.bm25_weight) == (0.0, 0.5)
    rr = Recording()  # an already loaded decision is used for the reranker the options name, and only then
    with_rr = build_router(tools, RouterOptions(synthetic=False), embedder=HashEmbedder(), reranker=rr)
    assert with_rr.reranker is rr
    assert build_router(tools, opts, embedder=HashEmbedder(), reranker=rr).reranker is None
    with pytest.raises(ValueError, match="reranker-model"):  # a cross-encoder gets the model path, no LLM
        create_decision(RouterOptions(reranker="cross-encoder"))
    with pytest.raises(KeyError, match="unknown reranker"):
        create_decision(RouterOptions(reranker="coin-flip"))


def test_a_follow_up_pulls_the_previous_tools_siblings_into_the_pool_and_asks_the_decision(registry_dir: Path) -> None:

    tools = load_registry(registry_dir).profile("desktop_realistic")
    rr = Recording()
    cfg = RouterConfig(
        retrieval=RetrievalConfig(synthetic=False, pool=5),
        gate=GateConfig(tau=0.0),
        no_tool=NoToolConfig(min_dense=0.0, exemplars=False),
    )
    r = Router(tools, HashEmbedder(), cfg, rr)
    hist = [
        {"role": "user", "content": "latest releases of acme/api?"},
        {"role": "assistant", "content": '(used list_releases {"owner": "acme", "repo": "api"}) → 2 items'},
    ]
    prev = PreviousTurn("latest releases of acme/api?", "github__list_releases")
    query = "and the ones before that?"
    plain = [c.key for c in r.retrieve(query)]
    followed = [c.key for c in r.retrieve(query, previous=prev, history=hist)]
    assert followed.index("github__list_releases") < plain.index("github__list_releases")
    res = r.route(query, hist, previous=prev)
    pool = [c.key for c in res.candidates]
    assert len(pool) == 5 and "github__list_releases" in pool and "github__get_release_by_tag" in pool
    assert res.escalated and rr.calls == 1
    # without history nothing is a follow-up, whatever the caller passes: a first request is routed as before
    assert not r.follow_up(query, [], prev)
    assert [c.key for c in r.route(query, [], previous=prev).candidates] == plain[:5]
    # the same request with no cue word is no follow-up: nothing is added, the ranking is retrieval's own
    standalone = "list the releases of acme/web"
    assert not r.follow_up(standalone, hist, prev)
    assert [c.key for c in r.route(standalone, hist, previous=prev).candidates] == [
        c.key for c in r.route(standalone).candidates
    ]
    # listed first, the previous tool and its siblings are the ones the decision reads described
    first = Router(tools, HashEmbedder(), cfg.tuned(followups={"related_first": True}), rr)
    head = [c.key for c in first.route(query, hist, previous=prev).candidates]
    related = {"github__list_releases", *first._siblings(first.tools["github__list_releases"])}
    n = sum(k in related for k in head)
    assert n >= 2 and set(head[:n]) <= related and sorted(head) == sorted(pool)
    # switched off, the follow-up is routed as before this existed
    off = Router(tools, HashEmbedder(), cfg.tuned(followups={"enabled": False}), rr)
    assert [c.key for c in off.route(query, hist, previous=prev).candidates] == plain[:5]


def test_without_a_record_of_calls_the_router_finds_the_previous_tool_turn_itself(registry_dir: Path) -> None:
    tools = load_registry(registry_dir).profile("desktop_realistic")
    r = Router(
        tools,
        HashEmbedder(),
        RouterConfig(
            retrieval=RetrievalConfig(synthetic=False),
            gate=GateConfig(tau=0.0),
            no_tool=NoToolConfig(min_dense=0.0, exemplars=False),
        ),
    )
    noted = [
        {"role": "user", "content": "alerts in acme/api?"},
        {"role": "assistant", "content": '(used list_dependabot_alerts {"owner": "acme", "repo": "api"}) → 1 item'},
        {"role": "user", "content": "thanks!"},
        {"role": "assistant", "content": "You're welcome."},
    ]
    prev = r.previous_of(noted)
    assert prev is not None and prev.tool == "github__list_dependabot_alerts"
    # prose only: the tool retrieval picks for the earlier request
    prose = [
        {"role": "user", "content": "list the dependabot alerts of acme/api"},
        {"role": "assistant", "content": "There is one critical alert."},
    ]
    prev = r.previous_of(prose)
    assert prev is not None and prev.request == "list the dependabot alerts of acme/api"
    assert prev.tool == r.retrieve("list the dependabot alerts of acme/api")[0].key


def test_a_follow_up_the_decision_gives_no_tool_keeps_the_head_of_its_list(registry_dir: Path) -> None:

    tools = load_registry(registry_dir).profile("desktop_realistic")
    cfg = RouterConfig(
        retrieval=RetrievalConfig(synthetic=False),
        gate=GateConfig(tau=0.0, always_escalate=True),
        no_tool=NoToolConfig(min_dense=0.0, exemplars=False),
    )
    hist = [{"role": "user", "content": "releases of acme/api?"}, {"role": "assistant", "content": "Two."}]
    prev = PreviousTurn("releases of acme/api?", "github__list_releases")
    r = Router(tools, HashEmbedder(), cfg, Recording(says_none=True))
    res = r.route("and the ones before that?", hist, previous=prev)
    assert res.tool == res.candidates[0].key and res.decision == "escalated"
    assert r.route("list the releases of acme/web", hist, previous=prev).tool is None  # no follow-up: "none" holds
    off = Router(tools, HashEmbedder(), cfg.tuned(followups={"none_fallback": False}), Recording(says_none=True))
    assert off.route("and the ones before that?", hist, previous=prev).tool is None
