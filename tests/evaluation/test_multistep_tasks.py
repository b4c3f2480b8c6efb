"""The multi-step task set against the real MCP servers: every task's gold calls, replayed on fresh state, pass
its checks and write nothing else; doing nothing fails every task that has a target; a write to another object is
caught as an extra write.

One set of server processes (GitHub sandbox, reference filesystem and git servers) serves the module; the
workspace puts their state back in place before each task.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from nexus_agent.evaluation.multistep import (
    FILESYSTEM_JS,
    Task,
    Workspace,
    evaluate,
    load_tasks,
    lookup,
    replay,
    result_text,
    validate,
)
from nexus_agent.mcp import MCPConfig, MultiServerClient

TASKS = load_tasks()
BY_ID = {t.id: t for t in TASKS}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    if not FILESYSTEM_JS.exists():
        pytest.fail(f"the reference filesystem server is not installed ({FILESYSTEM_JS}): run scripts/setup --test")
    ws = Workspace(tmp_path_factory.mktemp("multistep"))
    ws.build()
    return ws


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def hub(ws: Workspace) -> AsyncIterator[MultiServerClient]:
    async with MultiServerClient.from_config(MCPConfig(servers=dict(ws.server_configs()))) as h:
        yield h


def test_the_set_is_valid_and_split() -> None:
    assert list(validate(TASKS)) == []
    assert len(TASKS) >= 120
    kinds = Counter(t.kind for t in TASKS)
    assert kinds["multi"] >= 60 and kinds["single"] >= 15 and kinds["absent"] >= 15
    assert {s for t in TASKS for s in t.servers} == {"github", "filesystem", "git"}
    splits = Counter(t.split for t in TASKS)
    assert set(splits) == {"tune", "check"} and abs(splits["tune"] - splits["check"]) <= 1


def _state_only(task: Task) -> Task:
    """The task without the answer check an answer alone can pass (a replay has results, not an answer)."""
    kept = [c for c in task.answer_checks if c["type"] != "answer_says_absent"]
    return task.model_copy(update={"answer_checks": kept})


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("task_id", list(BY_ID))
async def test_gold_replay_passes_and_doing_nothing_fails(task_id: str, ws: Workspace, hub: MultiServerClient) -> None:
    task = BY_ID[task_id].filled(ws.values())

    ws.reset()
    nothing = evaluate(task, ws, answer="")
    assert nothing.changed == []
    if task.kind != "absent":
        assert not nothing.ok, "the checks hold before anything ran"

    results = await replay(task, hub)
    texts = [result_text(r) for r in results]
    errors = [(c.tool, t[:300]) for c, r, t in zip(task.gold, results, texts, strict=True) if r.is_error]
    if task.kind != "absent":  # an absent target's lookup may fail (404, ENOENT): that is how it is found absent
        assert errors == []
    for c in task.gold:
        for arg, src, value in c.flows():
            assert value in texts[src], f"{c.tool}.{arg}={lookup(c.arguments, arg)!r}: {value!r} not in result {src}"
    outcome = evaluate(_state_only(task), ws, answer="\n".join(texts), results=texts)
    assert outcome.failed == {}
    assert outcome.extra_writes == []
    if task.kind == "absent":
        assert outcome.changed == []


@pytest.mark.asyncio(loop_scope="module")
async def test_a_write_to_the_wrong_object_is_an_extra_write(ws: Workspace, hub: MultiServerClient) -> None:
    task = BY_ID["gh-comment-rate-limit"].filled(ws.values())
    ws.reset()
    # the issue's own failure: the comment went to #5 (the pull request the text names), not to issue #2
    result = await hub.call_tool(
        "github__add_issue_comment", {"owner": "acme", "repo": "api", "issue_number": 5, "body": "Handled in #5"}
    )
    assert not result.is_error
    outcome = evaluate(task, ws)
    assert not outcome.ok
    assert outcome.extra_writes and all(k.startswith("comment acme/api#5 ") for k in outcome.extra_writes)
    assert "0:gh_comment" in outcome.failed


def test_fresh_state_is_the_same_every_time(ws: Workspace, tmp_path: Path) -> None:
    other = Workspace(tmp_path / "again")
    other.build()
    assert other.pristine == ws.pristine


def test_the_bench_counts_claims_in_prose_and_matches_calls_by_qualified_name() -> None:
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "_multistep_bench", Path(__file__).parents[2] / "bench" / "multistep.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)

    assert bench.claims_write("The issue has been closed.")
    assert not bench.claims_write("The issue was not closed.")
    # quoted tool data is not a claim
    assert not bench.claims_write('Nothing was changed. Found: {"number": 3, "state": "closed"}.')
    assert not bench.claims_write("Nothing was changed. What I found: git_diff_staged returned `Staged changes: a`.")
    # the error of a failed write is quoted as data too
    assert not bench.claims_write("Nothing was changed: git_commit failed: `git_status shows what is staged`.")
    task = next(t for t in load_tasks() if t.servers[0] == "github" and t.kind == "multi")
    write = "github__add_issue_comment"
    ran = [{"name": "add_issue_comment", "arguments": {}, "is_error": False}]  # a bare name, as older rows hold
    # the write ran: saying so is no claim of an unrun action
    assert "claims unrun action" not in bench.classify(task, ran, "I added the comment.", False, {write})
    failed = [{"name": write, "arguments": {}, "is_error": True}]
    assert "claims unrun action" in bench.classify(task, failed, "I added the comment.", False, {write})


def test_the_reworded_split_is_tune_tasks_in_other_words() -> None:
    """``split="reworded"``: tune tasks asked in other words, each with its tune task's checks and worlds."""
    tune = {t.id: t for t in load_tasks(split="tune")}
    reworded = load_tasks(split="reworded")
    assert len(reworded) == len({t.id for t in reworded}) >= 40
    for t in reworded:
        assert t.id in tune and t.request != tune[t.id].request
        assert t.checks == tune[t.id].checks and t.kind == tune[t.id].kind and t.split == "tune"
