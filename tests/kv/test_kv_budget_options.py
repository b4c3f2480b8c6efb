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


def test_the_cli_and_the_api_offer_exactly_the_registered_policies() -> None:
    from typing import get_args

    from nexus_agent.cli.cmd_run import Evict
    from nexus_agent.kv.policies import EVICT_CHOICES

    assert {e.value for e in Evict} == set(EVICT_CHOICES)
    assert set(get_args(AgentConfig.model_fields["evict"].annotation)) == set(EVICT_CHOICES)
