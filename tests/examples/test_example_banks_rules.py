"""The shipped example banks hold what the runtime needs (every tool, every operation value, multi-step examples of
each pattern, no near-duplicate requests), load as the runtime loads them, and share no name with the evaluation
data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexus_agent.evaluation.bankcheck import (
    SERVERS,
    load_bank,
    load_world,
    server_tools,
    verify_of,
    world_names,
    world_path,
)
from nexus_agent.evaluation.bankrules import (
    bank_names,
    coverage_problems,
    evaluation_corpus,
    forbidden_uses,
)
from nexus_agent.examples.bank import Example, load_examples, shipped_bank_files


@pytest.fixture(scope="module")
def corpus() -> str:
    return evaluation_corpus()


def test_every_server_has_a_shipped_bank() -> None:
    assert set(shipped_bank_files()) == set(SERVERS)


@pytest.mark.parametrize("server", SERVERS)
def test_the_bank_loads_and_names_real_tools_and_worlds(server: str) -> None:
    examples = load_examples(shipped_bank_files()[server], server)
    tools = server_tools(server)
    assert examples
    for ex in examples:
        assert ex.id, ex.source
        assert [c.tool for c in ex.calls if c.tool not in tools] == [], ex.source
        spec = verify_of(ex)
        assert world_path(server, spec.world).is_file(), ex.source
        if ex.multi_step:
            assert spec.pattern is not None, f"{ex.source}: a multi-step example names its pattern"
        assert all(0 <= i < len(ex.calls) for i in spec.reads), ex.source


@pytest.mark.parametrize("server", SERVERS)
def test_the_bank_covers_every_tool_and_operation(server: str) -> None:
    assert coverage_problems(server, load_bank(server), server_tools(server)) == []


@pytest.mark.parametrize("server", SERVERS)
def test_the_bank_shares_no_name_with_the_evaluation_data(server: str, corpus: str) -> None:
    worlds = [load_world(server, name) for name in world_names(server)]
    names = bank_names(server, load_bank(server), worlds)
    assert names.by_kind, "no names extracted"
    assert forbidden_uses(names, corpus) == []


def _example(request: str, tool: str, arguments: dict[str, object]) -> Example:
    return Example.model_validate(
        {"id": "x", "request": request, "calls": [{"tool": tool, "arguments": arguments}], "server": "github"}
    )


def test_a_name_from_the_evaluation_data_is_caught(corpus: str) -> None:
    world = {
        "me": "ingrid-v",
        "users": [{"login": "ingrid-v"}],
        "repos": [
            {
                "owner": "ingrid-v",
                "name": "scratchpad",
                "labels": [{"name": "starter-task", "color": "ededed"}],
                "issues": [{"number": 3, "title": "Sketch the cron parser", "author": "ingrid-v"}],
            }
        ],
    }
    clean = _example("Close ingrid-v/scratchpad#3", "issue_write", {"owner": "ingrid-v", "repo": "scratchpad"})
    assert forbidden_uses(bank_names("github", [clean], [world]), corpus) == []

    seeded = _example("Close acme/api#2", "issue_write", {"owner": "acme", "repo": "api", "issue_number": 2})
    found = forbidden_uses(bank_names("github", [seeded], [world]), corpus)
    assert {"owner 'acme'", "repo 'api'", "pair 'acme/api#2'"} <= set(found)

    labelled = json.loads(json.dumps(world))
    labelled["repos"][0]["labels"].append({"name": "Good First Issue", "color": "7057ff"})
    labelled["repos"][0]["issues"][0]["title"] = "Login fails after password reset"
    found = forbidden_uses(bank_names("github", [clean], [labelled]), corpus)
    assert set(found) == {"label 'Good First Issue'", "title 'Login fails after password reset'"}

    fs = {"root": "/home/ingrid", "files": {"notes/README.md": "x"}}
    assert forbidden_uses(bank_names("filesystem", [], [fs]), corpus) == ["file 'README.md'"]


def test_the_corpus_is_the_seed_and_the_evaluation_data(corpus: str) -> None:
    root = Path(__file__).resolve().parents[2]
    assert "octo-dev" in corpus
    assert (root / "data" / "eval" / "multistep" / "fixtures.json").read_text()[:200].lower() in corpus
