"""The eval-args checker (BFCL-style rules) and the eval files both evaluation runners share."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from nexus_agent.evaluation.args import check_arguments, expected_names, load_items, today_of, values_match
from nexus_agent.evaluation.files import read_jsonl, write_json
from nexus_agent.evaluation.routing import load_eval
from nexus_agent.registry import Registry, load_registry


@pytest.fixture(scope="module")
def reg(registry_dir: Path) -> Registry:
    return load_registry(registry_dir)


def test_checker_matches_bfcl_rules(reg: Registry) -> None:
    tool = reg.find("issue_read", "github")
    item = {
        "tool": "issue_read",
        "server": "github",
        "arguments": {"owner": "acme-corp", "repo": "web", "issue_number": 301, "method": "get_comments"},
    }
    good = {"owner": "Acme-Corp", "repo": "web", "issue_number": 301.0, "method": "get_comments"}
    assert check_arguments(tool, good, item) == []
    assert check_arguments(tool, {**good, "extra": 1}, item) == ["unknown parameter extra"]
    assert "missing required issue_number" in check_arguments(
        tool, {k: v for k, v in good.items() if k != "issue_number"}, item
    )
    contains = {**item, "arguments": {}, "arg_contains": {"repo": ["we"]}}
    assert check_arguments(tool, good, contains) == []
    assert values_match({"a": "x"}, {"a": "X", "b": 2})
    assert not values_match([1, 2], [2])
    assert expected_names({"tool": "t", "server": "s", "alt_tools": ["u", "g/v"]}) == {"s__t", "s__u", "g__v"}


def test_an_absent_optional_value_must_stay_out_and_now_sets_today(reg: Registry) -> None:
    tool = reg.find("issue_read", "github")
    item = {"tool": "issue_read", "server": "github", "arguments": {"issue_number": 3}, "arg_absent": ["page"]}
    args = {"owner": "a", "repo": "b", "issue_number": 3, "method": "get_comments"}
    assert check_arguments(tool, args, item) == []
    assert check_arguments(tool, {**args, "page": 1}, item) == ["page=1 not asked for"]
    assert today_of({"now": "2026-12-03"}) == dt.date(2026, 12, 3) and today_of({}) is None


def test_the_argument_values_set_is_split_and_valid(reg: Registry, shared_dir: Path) -> None:
    items = load_items(shared_dir / "eval" / "arg_values.jsonl")
    assert len(items) >= 150 and {it["split"] for it in items} == {"tune", "check"}
    assert len({it["id"] for it in items}) == len(items)
    for it in items:
        tool = reg.find(it["tool"], it["server"])
        props = tool.input_schema.get("properties") or {}
        assert set(it["arguments"]) | set(it.get("arg_absent") or []) <= set(props), it["id"]
        assert not set(it["arguments"]) & set(it.get("arg_absent") or []), it["id"]


def test_read_jsonl_numbers_lines_from_one_counting_blank_ones(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text('{"query": "a"}\n\n{"query": "b"}\n', encoding="utf-8")
    assert read_jsonl(path) == [(1, {"query": "a"}), (3, {"query": "b"})]
    path.write_text('{"query": "a"}\n{"query": \n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"set\.jsonl:2: invalid JSON"):
        read_jsonl(path)


def test_both_runners_read_the_same_lines(tmp_path: Path, reg: Registry) -> None:
    path = tmp_path / "set.jsonl"
    lines = [
        {"id": "x1", "query": "show issue 3 in acme/web", "tool": "issue_read", "server": "github"},
        {},
        {"query": "what's the weather like", "tool": None},
    ]
    path.write_text("\n".join(json.dumps(x) if x else "" for x in lines) + "\n", encoding="utf-8")
    assert load_items(path) == [lines[0], lines[2]]
    items = load_eval(path, reg)
    assert [(it.id, it.query, it.gold) for it in items] == [
        ("x1", "show issue 3 in acme/web", {"github__issue_read"}),
        ("line3", "what's the weather like", set()),
    ]


def test_write_json_keeps_each_reports_format(tmp_path: Path) -> None:
    data = {"n": 1, "query": "café", "ci": [0.5, 1.0]}
    routing = tmp_path / "deep" / "routing.json"
    write_json(routing, data)  # eval-routing: indent 2, ASCII, final newline
    assert routing.read_text(encoding="utf-8") == json.dumps(data, indent=2) + "\n"
    args = tmp_path / "args.json"
    write_json(args, data, indent=1, ensure_ascii=False, end="")  # eval-args
    assert args.read_text(encoding="utf-8") == json.dumps(data, indent=1, ensure_ascii=False)
