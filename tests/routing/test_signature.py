from __future__ import annotations

from pathlib import Path

from nexus_agent.registry import Tool, load_registry
from nexus_agent.signature import SignatureOptions, signature


def test_real_tools_exact(registry_dir: Path) -> None:
    reg = load_registry(registry_dir)
    assert signature(reg.tools["github__create_repository"]) == (
        "create_repository(name: string, autoInit?: boolean, description?: string, organization?: string, "
        "private?: boolean)"
    )
    assert signature(reg.tools["filesystem__read_text_file"]) == (
        "read_text_file(path: string, tail?: number, head?: number)"
    )
    assert signature(reg.tools["terraform__create_run"]) == (
        'create_run(terraform_org_name: string, workspace_name: string, run_type?: "plan_and_apply"|'
        '"refresh_state"|"plan_only"|"allow_empty_apply", message?: string)'
    )
    # consolidated tool: the method enum comes first (required), nested objects are abbreviated
    sig = signature(reg.tools["github__actions_list"])
    assert sig.startswith('actions_list(method: "list_workflows"|"list_workflow_runs"|"list_workflow_jobs"|')
    assert "workflow_runs_filter?: {actor?, branch?, event?, …}" in sig


def _tool(schema: dict[str, object]) -> Tool:
    return Tool(server="s", name="f", description="Does f. More text here.", input_schema=schema)


def test_rules_on_synthetic_schema() -> None:
    schema = {
        "type": "object",
        "$defs": {"Mode": {"type": "string", "enum": ["a", "b", "c", "d", "e", "f", "g", "h"]}},
        "properties": {
            "opt": {"type": ["string", "null"], "description": "x" * 200},
            "mode": {"$ref": "#/$defs/Mode"},
            "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {}, "v": {}}, "required": ["k"]}},
            "n": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["mode"],
    }
    t = _tool(schema)
    assert signature(t) == ('f(mode: "a"|"b"|"c"|"d"|"e"|"f"|…, opt?: string, tags?: {k, v?}[], n?: integer)')
    long = signature(t, SignatureOptions(desc_chars=12, tool_desc_chars=40, max_params=2))
    assert long == 'f(mode: "a"|"b"|"c"|"d"|"e"|"f"|…, opt?: string /*xxxxxxxxxxx…*/, …) — Does f.'


def test_signature_is_much_shorter_than_schema(registry_dir: Path) -> None:
    import json

    reg = load_registry(registry_dir)
    ratio = [len(signature(t)) / len(json.dumps(t.to_mcp())) for t in reg.tools.values()]
    assert sorted(ratio)[len(ratio) // 2] < 0.3


def test_restating_descriptions_are_dropped_and_informative_ones_kept(registry_dir: Path) -> None:
    reg = load_registry(registry_dir)
    opts = SignatureOptions(desc_chars=48, skip_restating_desc=True)
    sig = signature(reg.tools["github__list_secret_scanning_alerts"], opts)
    # "Repository owner"-style text only repeats the name: dropped
    assert "page?: number," in sig and "owner: string," in sig
    # an enum's meaning or a format hint is information the name lacks: kept
    assert "secret_type?: string /*A comma-separated list of secret types" in sig
    full = signature(reg.tools["github__list_secret_scanning_alerts"], SignatureOptions(desc_chars=48))
    assert len(sig) < len(full)
