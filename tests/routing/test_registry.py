from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexus_agent.registry import RegistryError, load_registry


def test_shared_registry_layout(registry_dir: Path) -> None:
    reg = load_registry(registry_dir)
    assert len(reg.tools) == 348
    assert len(reg.profile("github_all")) == 86
    assert len(reg.profile("desktop_all_plus_github")) == 317
    t = reg.find("issue_write", "github")
    assert t.qualified_name == "github__issue_write"
    assert reg.find("github/issue_write") is t
    assert "method" in t.input_schema["properties"]
    # metadata files are not tools
    assert not any(k.endswith("___toolsets") for k in reg.tools)


def _write(p: Path, obj: object) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(obj))


def _tool(name: str) -> dict[str, object]:
    return {
        "name": name,
        "description": f"does {name}",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
    }


def test_plain_folder_layout(tmp_path: Path) -> None:
    d = tmp_path / "mytools"
    _write(d / "alpha.json", _tool("alpha"))
    beta = {**_tool("beta"), "annotations": {"readOnlyHint": False, "destructiveHint": True}}
    gamma = {**_tool("gamma"), "annotations": {"readOnlyHint": True, "title": "Gamma"}}
    _write(d / "beta.json", {"tools": [beta, gamma]})  # a tools/list result
    reg = load_registry(d)
    assert sorted(reg.tools) == ["mytools__alpha", "mytools__beta", "mytools__gamma"]
    # the hint as declared; alpha declares none
    assert [t.read_only_hint for t in reg.profile(None)] == [None, False, True]
    assert [t.name for t in reg.profile(None)] == ["alpha", "beta", "gamma"]
    with pytest.raises(RegistryError, match="unknown profile"):
        reg.profile("nope")


@pytest.mark.parametrize(
    ("obj", "problem"),
    [
        ({"description": "x", "inputSchema": {"type": "object"}}, "name"),
        ({"name": "t", "inputSchema": {"type": "array"}}, "inputSchema.type must be 'object'"),
        ({"name": "t", "inputSchema": {"type": "object", "properties": []}}, "properties must be an object"),
        (
            {
                "name": "t",
                "inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
            },
            "unknown properties",
        ),
        (
            {"name": "t", "inputSchema": {"type": "object", "properties": {"a": {"type": 12}}}},
            "not a valid JSON Schema",
        ),
        ({"name": "t"}, "inputSchema"),
        ({"name": "t", "inputSchema": {"type": "object"}, "annotations": "read-only"}, "annotations"),
    ],
)
def test_malformed_schema_names_file_and_problem(tmp_path: Path, obj: dict[str, object], problem: str) -> None:
    _write(tmp_path / "srv" / "bad_tool.json", obj)
    with pytest.raises(RegistryError) as exc:
        load_registry(tmp_path)
    msg = str(exc.value)
    assert "bad_tool.json" in msg
    assert problem in msg


def test_invalid_json_reports_position(tmp_path: Path) -> None:
    (tmp_path / "srv").mkdir()
    (tmp_path / "srv" / "broken.json").write_text('{"name": "x",\n  oops}')
    with pytest.raises(RegistryError, match=r"broken\.json: invalid JSON at line 2"):
        load_registry(tmp_path)


def test_profile_with_unknown_tool(tmp_path: Path) -> None:
    _write(tmp_path / "srv" / "a.json", _tool("a"))
    _write(tmp_path / "profiles.json", {"p": {"tools": ["srv__a", "srv__missing"]}})
    reg = load_registry(tmp_path)
    with pytest.raises(RegistryError, match="srv__missing"):
        reg.profile("p")


def test_a_live_tool_keeps_its_declared_read_only_hint() -> None:
    from nexus_agent.mcp.tools import ToolInfo

    schema = {"type": "object", "properties": {}}
    hints = [
        ToolInfo("s", name, "d", schema, annotations).to_registry_tool().read_only_hint
        for name, annotations in [("a", {"readOnlyHint": True}), ("b", {"readOnlyHint": False}), ("c", None)]
    ]
    assert hints == [True, False, None]
