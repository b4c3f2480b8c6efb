"""The bank verification itself: it fails an example that changes the wrong thing, changes too much, reads too
little or takes a value no earlier call returned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nexus_agent.evaluation.bankcheck import Scratch, appears, change_problems, load_bank, run_banks, verify_of
from nexus_agent.evaluation.multistep import FILESYSTEM_JS
from nexus_agent.examples.bank import Example


def test_changes_must_be_exactly_the_stated_ones() -> None:
    before = {"issue o/r#1 state": "open", "issue o/r#1 title": "A", "comment o/r#1 4": "old"}
    after = {"issue o/r#1 state": "closed", "issue o/r#1 title": "A", "comment o/r#1 4": "old", "comment o/r#1 9": "Hi"}
    assert change_problems({"issue o/r#1 state": "closed", "comment o/r#1 *": "Hi"}, before, after) == []
    assert change_problems({"issue o/r#1 state": "*", "comment o/r#1 *": {"contains": "hi"}}, before, after) == []
    # a stated change that did not happen, a wrong value, an unstated change
    assert len(change_problems({"issue o/r#1 title": "B", "comment o/r#1 *": "Hi"}, before, after)) == 2
    assert len(change_problems({"issue o/r#1 state": "open", "comment o/r#1 *": "Hi"}, before, after)) == 1
    assert len(change_problems({"issue o/r#1 state": "closed"}, before, after)) == 1
    # a removal
    assert change_problems({"comment o/r#1 4": None}, before, {k: v for k, v in before.items() if "4" not in k}) == []


def test_a_value_from_an_earlier_result_must_be_in_it() -> None:
    assert appears(14, '{"items": [{"number": 14, "title": "x"}]}')
    assert not appears(4, '{"items": [{"number": 14, "created_at": "2025-04-01T10:04:00Z"}]}')
    assert appears("draft/dark-theme", "  draft/dark-theme\n* main")
    assert not appears("main", "* maintenance")
    assert appears("/home/x/a.md", '{"paths": ["/home/x/a.md"]}')


def _broken(ex: Example, **verify: Any) -> Example:
    return ex.model_copy(update={"id": f"{ex.id}-broken", "verify": {**(ex.verify or {}), **verify}})


@pytest.mark.asyncio
async def test_a_wrong_expectation_fails_the_run(tmp_path: Path) -> None:
    if not FILESYSTEM_JS.exists():
        pytest.fail(f"the reference filesystem server is not installed ({FILESYSTEM_JS}): run scripts/setup --test")
    by_id = {ex.id: ex for ex in load_bank("filesystem")}
    write, ls, copy = by_id["write-reminder"], by_id["ls-notes"], by_id["copy-todo"]
    took_nothing = copy.model_copy(
        update={
            "id": "copy-todo-made-up",
            "calls": [
                copy.calls[0],
                copy.calls[1].model_copy(
                    update={"arguments": {"path": "/home/beatriz/x.md", "content": "TODO: other"}}
                ),
            ],
        }
    )
    examples = [
        write,
        _broken(write, changes={}),  # the write is not stated
        _broken(write, files={"/home/beatriz/notes/kiln-reminder.txt": {"equals": "something else"}}),
        _broken(ls, reads={"0": ["no-such-file.md"]}),
        _broken(ls, changes={"file /home/beatriz/notes/ideas.md": None}),  # a stated change that does not happen
        took_nothing,
    ]
    record = await run_banks(Scratch(tmp_path), {"filesystem": examples})
    problems = {key.split(":", 1)[1]: run.problems for key, run in record.runs.items()}
    assert problems["write-reminder"] == []
    assert all(problems[ex.id] for ex in examples[1:]), problems
    assert "is not in the output of call 0" in problems["copy-todo-made-up"][0]


@pytest.mark.asyncio
async def test_a_reset_after_writes_gives_the_pristine_state_back(tmp_path: Path) -> None:
    """Only the repositories an example changed are copied back: after writes that create, fork, merge and commit,
    a reset still gives every server exactly its world's pristine state."""
    github = {ex.id: ex for ex in load_bank("github")}
    git = {ex.id: ex for ex in load_bank("git")}
    banks = {
        "github": [github[i] for i in ("repo-fork", "pr-merge", "repo-create-desc", "branch-create", "issue-close")],
        "git": [git[i] for i in ("commit-timeout", "checkout-jitter")],
    }
    scratch = Scratch(tmp_path)
    record = await run_banks(scratch, banks)
    assert all(run.problems == [] for run in record.runs.values())
    for server, examples in banks.items():
        world = verify_of(examples[0]).world
        assert scratch.snapshot(server) != scratch.pristine(server, world)
        scratch.reset(server, world)
        assert scratch.snapshot(server) == scratch.pristine(server, world)
