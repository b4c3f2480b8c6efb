"""--kv-budget and --evict at the boundaries: a bad budget is a clear error naming the option, before any model
loads."""

from __future__ import annotations

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
