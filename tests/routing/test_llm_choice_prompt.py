"""The LLM decision's prompt (no model needed): which candidates carry a description."""

from __future__ import annotations

from pathlib import Path

from nexus_agent.registry import load_registry
from nexus_agent.routing.rerank.llm_choice import NONE, build_messages


def test_only_the_first_ten_candidates_are_described(registry_dir: Path) -> None:
    tools = load_registry(registry_dir).profile("github_all")[:14]
    user = build_messages("list my gists", tools, [])[1]["content"]
    listed = [line for line in user.splitlines() if line.startswith("- ") and not line.startswith(f"- {NONE} ")]
    assert [line[2:].split("(")[0] for line in listed] == [t.name for t in tools]  # every candidate, in order
    described = [t.name for t, line in zip(tools, listed, strict=True) if " — " in line]
    assert described == [t.name for t in tools[:10] if t.description.strip()]
    assert all(line.endswith(" [github]") for line in listed)
    assert f"- {NONE} — no tool needed" in user
