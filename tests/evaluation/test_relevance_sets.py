"""The relevance sets: valid against the registry, split once by seed, and kept apart from what the router reads."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from nexus_agent.evaluation.files import read_jsonl
from nexus_agent.evaluation.routing import load_eval
from nexus_agent.evaluation.splits import assign_splits, main
from nexus_agent.registry import load_registry
from nexus_agent.routing.judge import EXAMPLES
from nexus_agent.routing.lexical import tokenize
from nexus_agent.routing.relevance import no_tool_exemplars


def _rows(path: Path) -> list[dict[str, object]]:
    return [r for _, r in read_jsonl(path)]


def test_the_fresh_no_tool_set_is_as_wide_as_the_issue_asks(shared_dir: Path) -> None:
    rows = _rows(shared_dir / "eval" / "no_tool.jsonl")
    assert len(rows) >= 100 and all(r["tool"] is None for r in rows)
    styles = Counter(r["style"] for r in rows)
    assert {"domain", "howto", "writing", "maths", "trivia", "smalltalk", "other_language"} <= set(styles)
    # conceptual questions about every connected server's domain (desktop_realistic's servers)
    reg = load_registry(shared_dir / "mcp-registry")
    servers = {t.server for t in reg.profile("desktop_realistic")}
    asked = Counter(r["server_domain"] for r in rows if r["style"] == "domain")
    assert servers <= set(asked), servers - set(asked)
    splits = Counter(r["split"] for r in rows)
    assert splits["check"] >= len(rows) // 3 - 1 and splits["tune"] + splits["check"] == len(rows)


@pytest.mark.parametrize("name", ["github_dev", "mixed_dev", "tool_questions", "no_tool"])
def test_every_set_is_split_once_and_loads(shared_dir: Path, name: str) -> None:
    path = shared_dir / "eval" / f"{name}.jsonl"
    reg = load_registry(shared_dir / "mcp-registry")
    tune, check = load_eval(path, reg, "tune"), load_eval(path, reg, "check")
    assert tune and check and len(tune) + len(check) == len(load_eval(path, reg))
    assert not {it.id for it in tune} & {it.id for it in check}
    with pytest.raises(ValueError, match="drawn once"):
        assign_splits(_rows(path))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no line has split"):
        load_eval(path, reg, "holdout")


def test_the_split_is_seeded_and_refuses_to_draw_twice(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps({"id": f"x{i}", "query": f"q{i}"}) + "\n" for i in range(30)))
    copy = tmp_path / "copy.jsonl"
    copy.write_text(path.read_text())
    assert main([str(path), "--tune-share", "0.667"]) == 0 and main([str(copy), "--tune-share", "0.667"]) == 0
    assert path.read_text() == copy.read_text()  # the same seed draws the same split
    assert Counter(r["split"] for r in _rows(path)) == {"tune": 20, "check": 10}
    assert main([str(path)]) == 2


def test_the_tool_questions_name_tools_of_the_profile(shared_dir: Path) -> None:
    reg = load_registry(shared_dir / "mcp-registry")
    exposed = {t.qualified_name for t in reg.profile("desktop_realistic")}
    items = load_eval(shared_dir / "eval" / "tool_questions.jsonl", reg)
    assert len(items) >= 60 and all(it.gold and it.gold <= exposed for it in items)
    assert len({next(iter(it.gold)).split("__")[0] for it in items}) >= 15


def test_nothing_the_router_reads_is_an_evaluation_request(shared_dir: Path) -> None:
    """The judge's worked examples and the no-tool exemplars were written for the router: none is a request of an
    evaluation set (a check part must stay unseen)."""

    def norm(s: str) -> str:
        # BM25's words, or the whole text where it has none (a request in Japanese)
        return " ".join(tokenize(s)) or s.strip().lower()

    packaged = {norm(q) for q, _ in EXAMPLES} | {norm(q) for q in no_tool_exemplars()}
    files = [*sorted((shared_dir / "eval").glob("*.jsonl"))]
    for f in files:
        for row in _rows(f):
            assert norm(str(row["query"])) not in packaged, (f.name, row["query"])
