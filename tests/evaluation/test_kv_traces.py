"""The KV memory benchmark's trace set (data/eval/kv_traces/, bench/kv_traces.py): its shape, its split, questions
whose answers one turn alone states, and that the generator, run again on the real servers, gives the stored text."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TRACES = ROOT / "data" / "eval" / "kv_traces" / "traces.jsonl"
sys.path.insert(0, str(ROOT / "bench"))


def _traces() -> list[dict[str, Any]]:
    return [json.loads(x) for x in TRACES.read_text(encoding="utf-8").splitlines() if x.strip()]


def _text(turn: dict[str, Any]) -> str:
    calls = [json.dumps(c["arguments"]) + c["output"] for c in turn["calls"]]
    return " ".join([turn["request"], turn["answer"], *calls])


def test_forty_traces_of_8_to_20_turns_of_1_to_3_calls_split_in_half() -> None:
    traces = _traces()
    assert len(traces) >= 40
    assert Counter(t["split"] for t in traces) == {"tune": len(traces) // 2, "check": len(traces) // 2}
    assert len({t["id"] for t in traces}) == len(traces)
    servers = set()
    for t in traces:
        assert 8 <= len(t["turns"]) <= 20
        for turn in t["turns"]:
            assert 1 <= len(turn["calls"]) <= 3
            for c in turn["calls"]:
                assert c["output"] and not c["is_error"]
                servers.add(c["tool"].split("__")[0])
    assert servers == {"github", "filesystem"}


def test_three_questions_of_different_ages_each_answered_by_one_turn_only() -> None:
    ages = set()
    for t in _traces():
        qs = t["questions"]
        assert sorted(q["kind"] for q in qs) == ["file", "person", "search"]
        for q in qs:
            assert 1 <= q["fact_turn"] < q["after_turn"] <= len(t["turns"])
            ages.add(q["after_turn"] - q["fact_turn"])
            word = re.compile(rf"(?<![\w-]){re.escape(q['answer'])}(?![\w-])", re.I)
            for i, turn in enumerate(t["turns"], 1):
                said = word.search(_text(turn)) is not None
                assert said == (i == q["fact_turn"]), f"{t['id']} {q['kind']}: turn {i}"
        assert {q["fact_turn"] for q in qs if q["kind"] == "person"} == {1}
        assert {q["fact_turn"] for q in qs if q["kind"] == "file"} == {2}
    assert min(ages) <= 2 and max(ages) >= 8, "questions about recent and old facts"


def test_the_generator_gives_the_stored_trace_again() -> None:
    from kv_traces import FILESYSTEM_JS, make_trace

    if not FILESYSTEM_JS.exists():
        pytest.fail(f"the reference filesystem server is missing ({FILESYSTEM_JS}): run scripts/bootstrap.py --test")
    stored = _traces()[1]
    again = asyncio.run(make_trace(1, stored["seed"]))
    assert json.loads(json.dumps(asdict(again))) == stored
