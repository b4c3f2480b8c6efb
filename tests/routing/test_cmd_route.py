"""``route`` / ``eval-routing`` flags → RouterOptions, with the bag-of-words embedder (no model needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_router import HashEmbedder
from typer.testing import CliRunner

from nexus_agent.cli import _register_all, app
from nexus_agent.registry import Tool
from nexus_agent.routing import router as router_module
from nexus_agent.routing.router import Router, RouterOptions


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[RouterOptions]:
    """The options each command builds its router from; the router itself uses the hashed embedder."""
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path / "home"))
    seen: list[RouterOptions] = []

    def fake(tools: list[Tool], options: RouterOptions, *args: Any, **kwargs: Any) -> Router:
        seen.append(options)
        return Router(tools, HashEmbedder(), options.config())

    monkeypatch.setattr(router_module, "build_router", fake)
    _register_all()
    return seen


def test_route_passes_every_flag(built: list[RouterOptions], registry_dir: Path) -> None:
    args = ["route", "list the gists of user octocat", "--registry", str(registry_dir), "--profile", "github_all"]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    assert built[-1] == RouterOptions()  # every flag's default is the options' default
    assert {"candidates", "decision", "tool", "margin", "tau"} <= json.loads(res.output).keys()
    flags = ["--embedder", "minilm", "--embedder-model", "m", "--reranker", "none", "--reranker-model", "r"]
    flags += ["--pool", "7", "--no-gate", "--no-synthetic", "--no-hybrid", "--threads", "1", "--splice", "off"]
    flags += ["--relevance", "exemplars"]
    res = CliRunner().invoke(app, [*args, *flags])
    assert res.exit_code == 0, res.output
    assert built[-1] == RouterOptions(
        embedder="minilm",
        embedder_model="m",
        reranker="none",
        reranker_model="r",
        pool=7,
        gate=False,
        synthetic=False,
        hybrid=False,
        threads=1,
        splice="off",
        relevance="exemplars",
    )
    assert "decision: " in res.output
    bad = CliRunner().invoke(app, [*args, "--splice", "sometimes"])
    assert bad.exit_code == 2 and "sometimes" in bad.output
    bad = CliRunner().invoke(app, [*args, "--relevance", "vibes"])
    assert bad.exit_code == 2 and "vibes" in bad.output


def test_eval_routing_writes_the_summary_keys(built: list[RouterOptions], registry_dir: Path, tmp_path: Path) -> None:
    items = tmp_path / "e.jsonl"
    items.write_text(json.dumps({"id": "a", "query": "list the gists of user octocat", "tool": "list_gists"}))
    out = tmp_path / "s.json"
    args = ["eval-routing", "--eval", str(items), "--registry", str(registry_dir), "--profile", "github_all"]
    res = CliRunner().invoke(app, [*args, "--json", str(out), "--reranker", "none", "--synthetic"])
    assert res.exit_code == 0, res.output
    assert built[-1] == RouterOptions(reranker="none", synthetic=True)
    summary = json.loads(out.read_text())
    assert {"tau", "n_tools", "embedder", "reranker", "profile", "seed", "splice", "decision_ms_p50"} <= summary.keys()
    assert summary["decision_ms_p50"] is None and summary["splice"] == "auto"  # no LLM decision was asked
    assert (summary["embedder"], summary["reranker"]) == ("minilm-tools", "none")
    assert summary["tool_turned_away_rate"] == 0.0 and summary["judge_ms_p50"] is None and summary["split"] is None
    assert summary["relevance"] == "llm"


def test_eval_routing_reads_one_split(built: list[RouterOptions], registry_dir: Path, tmp_path: Path) -> None:
    items = tmp_path / "e.jsonl"
    lines = [
        {"id": "a", "query": "list the gists of user octocat", "tool": "list_gists", "split": "tune"},
        {"id": "b", "query": "thanks, that's all", "tool": None, "split": "check"},
        {"id": "c", "query": "star the repo acme/api", "tool": "star_repository", "split": "check"},
    ]
    items.write_text("".join(json.dumps(x) + "\n" for x in lines))
    out = tmp_path / "s.json"
    args = ["eval-routing", "--eval", str(items), "--registry", str(registry_dir), "--profile", "github_all"]
    res = CliRunner().invoke(app, [*args, "--json", str(out), "--reranker", "none", "--split", "check"])
    assert res.exit_code == 0, res.output
    summary = json.loads(out.read_text())
    assert summary["n"] == 2 and summary["n_no_tool"] == 1 and summary["split"] == "check"
    assert "turned_away=" in res.output
    res = CliRunner().invoke(app, [*args, "--json", str(out), "--reranker", "none", "--split", "holdout"])
    assert res.exit_code == 2 and "holdout" in res.output


def test_the_embedder_help_lists_every_backend() -> None:
    _register_all()
    res = CliRunner().invoke(app, ["route", "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    listed = "minilm-tools, minilm, nomic, gemma, st"
    assert listed in res.output
    from nexus_agent.routing.embedders import EMBEDDERS

    assert set(listed.split(", ")) == set(EMBEDDERS)  # a new backend must be added to the help too
