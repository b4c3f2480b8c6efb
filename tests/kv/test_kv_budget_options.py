"""--kv-budget and --evict at the boundaries: a bad budget is a clear error naming the option, before any model
loads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from nexus_agent.agent.api import AgentConfig
from nexus_agent.cli import _register_all, app
from nexus_agent.kv.budget import KVBudget


def test_agent_config_takes_a_budget_and_a_policy() -> None:
    cfg = AgentConfig(kv_budget=1024, evict="snapkv")
    assert cfg.kv_budget == 1024 and cfg.evict == "snapkv"
    assert AgentConfig().kv_budget is None  # the 4-turn window stays the default


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"kv_budget": 16}, "greater than or equal"),
        ({"kv_budget": 1024, "evict": "none"}, "eviction policy"),
        ({"kv_budget": 6000, "n_ctx": 8192}, "half of n_ctx"),
        ({"kv_budget": 1024, "evict": "lru"}, "evict"),
    ],
)
def test_a_bad_budget_names_what_is_wrong(fields: dict[str, object], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        AgentConfig(**fields)  # type: ignore[arg-type]


def test_the_cli_refuses_a_bad_budget_before_loading_anything() -> None:
    if not app.registered_commands:
        _register_all()
    res = CliRunner().invoke(app, ["run", "--mcp", "github", "--kv-budget", "10", "-p", "hi"])
    assert res.exit_code == 2
    assert "kv_budget" in res.output
    res = CliRunner().invoke(app, ["run", "--mcp", "github", "--evict", "lru", "-p", "hi"])
    assert res.exit_code == 2 and "lru" in res.output


def test_the_smallest_budget_holds_the_sink_the_recent_window_and_room() -> None:
    assert KVBudget.min_tokens() == 128
    KVBudget(128)
    with pytest.raises(ValueError, match="too small"):
        KVBudget(127)


def test_every_registered_policy_is_offered_and_any_other_is_refused_by_name() -> None:
    """The choices come from the registry alone: whatever it holds is accepted everywhere, anything else is refused
    with the registry's list (the CLI, the API and the engine share one check)."""
    from nexus_agent.engine import EngineConfig
    from nexus_agent.kv.policies import EVICT_CHOICES, POLICIES

    assert set(EVICT_CHOICES) == {*POLICIES, "none"}
    for name in EVICT_CHOICES:
        assert AgentConfig(evict=name).evict == name and EngineConfig(evict=name).evict == name
    assert AgentConfig.model_json_schema()["properties"]["evict"]["enum"] == list(EVICT_CHOICES)
    with pytest.raises(ValidationError, match="unknown eviction policy 'lru'"):
        AgentConfig(evict="lru")
    with pytest.raises(ValueError, match="unknown eviction policy 'lru'"):
        EngineConfig(evict="lru")
    if not app.registered_commands:
        _register_all()
    res = CliRunner().invoke(app, ["run", "--mcp", "github", "-p", "hi", "--evict", "lru"])
    assert res.exit_code == 2 and "unknown eviction policy 'lru'" in res.output
    assert all(name in res.output for name in POLICIES)


def test_a_budget_is_cells_or_a_fraction_of_the_context() -> None:
    assert AgentConfig(kv_budget=0.25, n_ctx=8192).kv_cells == 2048
    assert AgentConfig(kv_budget=1024).kv_cells == 1024
    with pytest.raises(ValidationError, match="half of n_ctx"):
        AgentConfig(kv_budget=0.75, n_ctx=8192)
    with pytest.raises(ValidationError, match="number of cells or a fraction"):
        AgentConfig(kv_budget=1500.5)
    with pytest.raises(ValidationError, match="greater than"):
        AgentConfig(kv_budget=0.01, n_ctx=8192)  # 81 cells
    if not app.registered_commands:
        _register_all()
    res = CliRunner().invoke(app, ["run", "--mcp", "github", "-p", "hi", "--kv-policy", "lru"])
    assert res.exit_code == 2 and "unknown eviction policy 'lru'" in res.output


def test_a_budget_smaller_than_the_pins_at_start_is_refused_with_the_minimum() -> None:
    """The system prompt is pinned from the first turn: a budget that cannot hold it (with the recent window and a
    span of room) is refused when the model loads, naming the least it needs."""
    from nexus_agent.agent.api import KVBudgetError, NexusAgent

    agent = NexusAgent(AgentConfig(model="tiny-qwen2", n_ctx=4096, kv_budget=130, head_cache=False))
    with pytest.raises(KVBudgetError, match=r"smaller than the pins at start.*give at least (\d+)") as err:
        agent._open_local()
    need = int(str(err.value).rsplit(" ", 1)[-1])
    assert need > 130
    assert agent.engine is None  # nothing left half-open
    agent = NexusAgent(AgentConfig(model="tiny-qwen2", n_ctx=4096, kv_budget=need, head_cache=False))
    try:
        agent._open_local()
        assert agent.engine is not None and agent.engine.budget is not None and agent.engine.budget.manager
    finally:
        agent._close_engine()


def test_the_cli_stops_at_start_on_a_budget_smaller_than_the_pins_and_names_the_minimum(tmp_path: Path) -> None:
    from nexus_agent.sandbox.github import sandbox_mcp_config

    config = tmp_path / "mcp.json"
    config.write_text(json.dumps(sandbox_mcp_config(tmp_path / "gh")))
    if not app.registered_commands:
        _register_all()
    args = ["run", "--config", str(config), "--model", "tiny-qwen2", "--n-ctx", "4096", "--no-head-cache", "-p", "hi"]
    res = CliRunner().invoke(app, [*args, "--kv-budget", "130"])
    said = " ".join(res.output.split())  # the console wraps long lines
    assert res.exit_code == 2, said
    need = re.search(r"smaller than the pins at start: .* give at least (\d+)", said)
    assert need is not None, said
    assert int(need.group(1)) > 130
