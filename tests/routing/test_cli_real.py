"""The two CLI commands end to end on the real MiniLM embedder (the LLM reranker is off to keep this fast)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nexus_agent.cli import _register_all, app

pytestmark = pytest.mark.real_model


@pytest.fixture(scope="module")
def runner() -> CliRunner:
    _register_all()
    return CliRunner()


def test_route_prints_candidates_and_decision(runner: CliRunner, registry_dir: Path) -> None:
    res = runner.invoke(
        app,
        [
            "route",
            "fork the repository octo/widgets to my account",
            "--registry",
            str(registry_dir),
            "--profile",
            "github_all",
            "--reranker",
            "none",
            "--top",
            "5",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "github__fork_repository" in res.output
    assert any(f"decision: {d}" in res.output for d in ("auto", "escalated", "no-tool"))
    res = runner.invoke(
        app,
        [
            "route",
            "fork octo/widgets",
            "--registry",
            str(registry_dir),
            "--profile",
            "github_all",
            "--reranker",
            "none",
            "--json",
        ],
    )
    out = json.loads(res.output)
    assert out["decision"] in ("auto", "escalated", "no-tool") and out["candidates"]
    assert isinstance(out["exemplar_similarity"], float)
    # small talk: the exemplar test says no tool, and the line says why
    args = ["route", "good evening, how was your day?", "--registry", str(registry_dir), "--profile", "github_all"]
    res = runner.invoke(app, [*args, "--reranker", "none"])
    assert res.exit_code == 0, res.output
    assert "decision: no-tool  tool: -" in res.output and "no-tool exemplar=" in res.output


def test_eval_routing_writes_all_keys(
    runner: CliRunner, registry_dir: Path, tmp_path: Path, summary_keys: frozenset[str]
) -> None:
    ev = tmp_path / "e.jsonl"
    ev.write_text(
        "\n".join(
            json.dumps(x)
            for x in [
                {
                    "id": "1",
                    "query": "fork octo/widgets into my account",
                    "tool": "fork_repository",
                    "server": "github",
                },
                {"id": "2", "query": "list the gists of octocat", "tool": "list_gists", "server": "github"},
                {"id": "3", "query": "what is the capital of Peru?", "tool": None},
            ]
        )
    )
    out = tmp_path / "out.json"
    res = runner.invoke(
        app,
        [
            "eval-routing",
            "--eval",
            str(ev),
            "--registry",
            str(registry_dir),
            "--profile",
            "desktop_all_plus_github",
            "--n-tools",
            "50",
            "--seed",
            "3",
            "--json",
            str(out),
            "--reranker",
            "none",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "accuracy=" in res.output and len(res.output.strip().splitlines()) == 1
    s = json.loads(out.read_text())
    assert summary_keys <= s.keys(), summary_keys - s.keys()
    assert s["n"] == 3 and s["n_tools"] == 50
