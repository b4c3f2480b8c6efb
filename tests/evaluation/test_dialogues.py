"""The follow-up dialogue set: valid against the registry, split once by seed, replayed as the agent records turns."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from nexus_agent.evaluation.args import replay
from nexus_agent.evaluation.dialogues import (
    check_file,
    conversation_of,
    load_dialogues,
    main,
)
from nexus_agent.evaluation.files import read_jsonl
from nexus_agent.evaluation.splits import assign_splits
from nexus_agent.registry import load_registry


@pytest.fixture(scope="module")
def dialogues_file(shared_dir: Path) -> Path:
    return shared_dir / "eval" / "followups.jsonl"


def test_the_dialogue_set_is_valid_and_as_wide_as_the_issue_asks(dialogues_file: Path, registry_dir: Path) -> None:
    assert check_file(dialogues_file, load_registry(registry_dir)) == []
    rows = [r for _, r in read_jsonl(dialogues_file)]
    assert len(rows) >= 120
    assert len({r["server"] for r in rows}) >= 8
    kinds = Counter(r["kind"] for r in rows)
    assert min(kinds.values()) >= 4 and len(kinds) == 8
    assert all(1 <= len(r["turns"]) <= 3 for r in rows)


def test_the_split_is_the_seeded_draw_and_both_parts_are_used(dialogues_file: Path) -> None:
    rows = [r for _, r in read_jsonl(dialogues_file)]
    fresh = [{k: v for k, v in r.items() if k != "split"} for r in rows]
    assign_splits(fresh)
    assert [r["split"] for r in fresh] == [r["split"] for r in rows]  # nobody moved an item after the draw
    assert Counter(r["split"] for r in rows) == {"tune": len(rows) // 2, "check": len(rows) - len(rows) // 2}
    with pytest.raises(ValueError, match="drawn once"):
        assign_splits(rows)


def test_turns_replay_as_the_agent_records_them() -> None:
    payload = json.dumps([{"number": i, "title": f"issue {i}", "body": "x" * 200} for i in range(1, 9)])
    turns = [
        {
            "user": "open issues in a/b?",
            "tool": "github__list_issues",
            "arguments": {"owner": "a", "repo": "b"},
            "result": payload,
            "answer": "Eight.",
        },
        {"user": "thanks!", "answer": "You're welcome."},
    ]
    item = {"query": "close the second one", "turns": turns}
    window, previous = replay(item)
    assert previous is not None and previous.tool == "github__list_issues" and previous.request == "open issues in a/b?"
    first_reply = window[1]["content"]
    assert first_reply.startswith('(used list_issues {"owner": "a", "repo": "b"})')
    assert "8 items" in first_reply and len(first_reply) < len(payload)  # the surrogate, not the payload
    assert window[-1] == {"role": "assistant", "content": "You're welcome."}
    # plain history: the window as given, the router finds the previous turn
    plain = {"query": "q", "history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}
    assert replay(plain) == (plain["history"], None)
    assert conversation_of([]).previous_tool_turn() is None


def test_check_reports_what_is_wrong_and_where(tmp_path: Path, registry_dir: Path, dialogues_file: Path) -> None:
    line = json.loads(dialogues_file.read_text().splitlines()[0])
    bad = [
        {**line, "id": "x1", "tool": "no_such_tool"},
        {**line, "id": "x2", "query": "another", "turns": [{"user": "hi", "answer": "hello"}]},
        {**line, "id": "x1", "query": "third", "kind": "vague"},
    ]
    f = tmp_path / "d.jsonl"
    f.write_text("".join(json.dumps(b) + "\n" for b in bad))
    problems = check_file(f, load_registry(registry_dir))
    assert any("d.jsonl:1" in p and "not in profile" in p for p in problems)
    assert any("d.jsonl:2" in p and "no earlier turn calls a tool" in p for p in problems)
    assert any("d.jsonl:3" in p and "kind" in p for p in problems)
    assert main(["check", str(f), "--registry", str(registry_dir)]) == 1
    assert main(["split", str(dialogues_file)]) == 2  # the shipped file keeps its draw
    assert len(load_dialogues(dialogues_file, "check")) + len(load_dialogues(dialogues_file, "tune")) == len(
        load_dialogues(dialogues_file)
    )


def _scalars(v: object) -> list[object]:
    if isinstance(v, dict):
        return [x for y in v.values() for x in _scalars(y)]
    if isinstance(v, list):
        return [x for y in v for x in _scalars(y)]
    return [v]


def test_what_a_follow_up_takes_from_earlier_results_survives_their_summaries(dialogues_file: Path) -> None:
    """The history keeps tool output only as a summary: every expected argument value the earlier turns state
    (in a request, a call or a result) must still be in the window the follow-up is routed and written with."""
    lost = []
    for d in load_dialogues(dialogues_file):
        window = json.dumps(d.conversation.window(4), ensure_ascii=False).lower()
        raw = json.dumps([t.model_dump() for t in d.line.turns], ensure_ascii=False).lower()
        for k, v in d.line.arguments.items():
            for x in _scalars(v):
                s = json.dumps(x, ensure_ascii=False).strip('"').lower()
                if not isinstance(x, bool) and s in raw and s not in window and s not in d.line.query.lower():
                    lost.append((d.line.id, k, s))
    assert lost == []
