"""Where a session's examples come from: the file format's errors, the sources in order, tools a server lacks, a
tool's ``_meta``, and a config entry's ``"examples"`` path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexus_agent.examples import ExamplesError, gather, load_examples
from nexus_agent.mcp.config import load_config
from nexus_agent.registry import Tool

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _tool(name: str, server: str = "box", meta: dict[str, object] | None = None) -> Tool:
    return Tool(server, name, f"{name} things", SCHEMA, meta=meta)


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_a_malformed_file_names_its_file_line_and_reason(tmp_path: Path) -> None:
    ok = {"request": "open box 3", "calls": [{"tool": "open_box", "arguments": {"n": 3}}]}
    cases = {
        "not json": ('{"request": "x", "calls": [}', 2, "not valid JSON"),
        "no calls": (json.dumps({"request": "x", "calls": []}), 2, "calls"),
        "unknown key": (json.dumps({**ok, "tool": "x"}), 2, "tool"),
        "forward flow": (
            json.dumps({"request": "x", "calls": [{"tool": "a", "from": {"n": 0}}]}),
            2,
            "not an earlier one",
        ),
        "empty request": (json.dumps({**ok, "request": ""}), 2, "request"),
    }
    for label, (bad, line, reason) in cases.items():
        path = _write(tmp_path / f"{label}.jsonl", [ok, bad])
        with pytest.raises(ExamplesError) as e:
            load_examples(path, "box")
        assert (e.value.path, e.value.line) == (str(path), line), label
        assert reason in e.value.reason and str(path) in str(e.value), label
    dup = _write(tmp_path / "dup.jsonl", [{**ok, "id": "a"}, "// a comment", "", {**ok, "id": "a"}])
    with pytest.raises(ExamplesError, match=r"dup.jsonl:4: id 'a' is used again \(first on line 1\)"):
        load_examples(dup, "box")


def test_sources_come_in_order_and_a_refused_file_loses_only_itself(tmp_path: Path) -> None:
    tools = [
        _tool("open_box"),
        _tool("shut_box", meta={"examples": [{"request": "shut box 9", "arguments": {"n": 9}}]}),
    ]
    own = _write(
        tmp_path / "own.jsonl",
        [
            {"request": "open box 1", "calls": [{"tool": "open_box", "arguments": {"n": 1}}]},
            {"request": "paint box 2", "calls": [{"tool": "paint_box", "arguments": {"n": 2}}]},
            {"request": "wrap box 4", "calls": [{"tool": "wrap_box", "arguments": {"n": 4}}]},
        ],
    )
    shipped = _write(
        tmp_path / "box.examples.jsonl",
        [{"request": "open box 7", "calls": [{"tool": "open_box", "arguments": {"n": 7}}]}],
    )
    warnings: list[str] = []
    got = gather(tools, {"box": str(own)}, warnings.append, banks={"box": shipped})
    assert [ex.request for ex in got.examples] == ["open box 1", "open box 7", "shut box 9"]
    assert [u.request for u in got.usages("box__open_box")] == ["open box 1", "open box 7"]
    # one line for the file's two examples that name tools the server lacks
    assert len(warnings) == 1 and "2 examples" in warnings[0] and "paint_box" in warnings[0]
    assert "wrap_box" in warnings[0]
    # a malformed user file is refused with its place; the shipped bank and _meta still serve
    _write(own, ["{oops"])
    warnings.clear()
    got = gather(tools, {"box": str(own)}, warnings.append, banks={"box": shipped})
    assert [ex.request for ex in got.examples] == ["open box 7", "shut box 9"]
    assert len(warnings) == 1 and f"{own}:1" in warnings[0] and "not valid JSON" in warnings[0]


def test_a_shipped_bank_serves_a_server_of_another_name_by_its_tools(tmp_path: Path) -> None:
    bank = _write(
        tmp_path / "box.examples.jsonl",
        [{"request": f"open box {i}", "calls": [{"tool": t, "arguments": {"n": i}}]} for i, t in enumerate("abc")],
    )
    offers_most = [_tool(t, server="crate") for t in "ab"] + [_tool("z", server="crate")]
    assert gather(offers_most, {}, lambda _: None, banks={"box": bank}).usages("crate__a")
    offers_few = [_tool("a", server="other"), _tool("y", server="other"), _tool("z", server="other")]
    assert len(gather(offers_few, {}, lambda _: None, banks={"box": bank})) == 0


def test_meta_examples_in_both_shapes_and_a_bad_entry_is_skipped() -> None:
    meta = {
        "examples": [{"request": "open box 5", "arguments": {"n": 5}}, "not an object"],
        "input_examples": [{"n": 6}],
    }
    got = gather([_tool("open_box", meta=meta)], {}, lambda _: None, banks={})
    rows = got.usages("box__open_box")
    assert [(u.request, u.arguments) for u in rows] == [("open box 5", {"n": 5}), ("", {"n": 6})]
    assert not got.first_calls()[1:]  # arguments only: no request to route by


def test_a_config_entry_names_its_examples_file_relative_to_the_config(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    cfg = tmp_path / "conf" / "mcp.json"
    cfg.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "box": {"command": "box-server", "examples": "box.jsonl"},
                    "web": {"url": "http://127.0.0.1:9/mcp", "examples": "/abs/web.jsonl"},
                    "plain": {"command": "x"},
                }
            }
        )
    )
    servers = load_config(cfg).servers
    assert servers["box"].examples == str(tmp_path / "conf" / "box.jsonl")
    assert servers["web"].examples == "/abs/web.jsonl"
    assert servers["plain"].examples is None


def test_examples_check_names_a_malformed_line_and_exits_2(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from nexus_agent.cli import _register_all, app

    _register_all()
    bad = _write(tmp_path / "bad.jsonl", [{"request": "open box 1", "calls": [{"tool": "a"}]}, "{oops"])
    out = CliRunner().invoke(app, ["examples", "check", str(bad), "--server", "box"])
    said = "".join(out.output.split())  # the terminal wraps long lines
    assert out.exit_code == 2 and f"{bad}:2" in said and "notvalidJSON" in said
    good = _write(tmp_path / "good.jsonl", [{"request": "open box 1", "calls": [{"tool": "a"}]}])
    out = CliRunner().invoke(app, ["examples", "check", str(good), "--server", "box"])
    assert out.exit_code == 0 and "1 examples, well formed" in out.output
