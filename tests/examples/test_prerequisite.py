"""A write that ran and failed for want of another write ("No changes staged for commit. Use git_add …") gets that
write next, when its error names it and the examples make it first (``Router._prerequisite``), then runs again."""

from __future__ import annotations

from nexus_agent.examples import Example, ExampleSet
from nexus_agent.registry import Tool
from nexus_agent.routing.followup import CallSoFar
from nexus_agent.routing.router import Router
from tests.examples.test_operations import _Words


def _tool(name: str, read_only: bool = False) -> Tool:
    props = {"repo_path": {"type": "string"}, "files": {"type": "array", "items": {"type": "string"}}}
    return Tool(
        "git", name, f"{name} in a local repository.", {"type": "object", "properties": props}, read_only_hint=read_only
    )


STAGE, COMMIT, STATUS, RESET = _tool("git_add"), _tool("git_commit"), _tool("git_status", True), _tool("git_reset")
TOOLS = [STAGE, COMMIT, STATUS, RESET]
STAGED = "Error: No changes staged for commit. Use git_add to stage changes first; git_status shows what is staged."
BANK = ExampleSet(
    [
        Example(request="stage a.py in /home/kai/r", calls=[{"tool": "git_add", "arguments": {}}], server="git"),
        Example(request="commit /home/kai/r as 'x'", calls=[{"tool": "git_commit", "arguments": {}}], server="git"),
        Example(request="unstage all in /home/kai/r", calls=[{"tool": "git_reset", "arguments": {}}], server="git"),
        Example(
            request="stage a.py in /home/kai/r and commit it as 'x'",
            calls=[{"tool": "git_add", "arguments": {}}, {"tool": "git_commit", "arguments": {}}],
            server="git",
        ),
    ],
    {t.qualified_name: t for t in TOOLS},
)
ASK = "Commit my changes to src/invoice.py in /home/ana/shop with the message 'Fix invoice'."


def _failed(error: str) -> CallSoFar:
    return CallSoFar(
        COMMIT.qualified_name, {"repo_path": "/home/ana/shop", "message": "Fix invoice"}, error, failed=True
    )


def test_the_write_the_error_names_and_the_examples_make_first_comes_next_then_the_write_again() -> None:
    r = Router(TOOLS, _Words(), examples=BANK)
    assert r.examples.made_before(COMMIT.qualified_name) == {STAGE.qualified_name}
    out = r.next_step(ASK, [], [_failed(STAGED)])
    assert out.decision == "auto" and [c.key for c in out.candidates] == [STAGE.key]
    staged = CallSoFar(STAGE.qualified_name, {"files": ["src/invoice.py"]}, "Files staged", wrote=True)
    again = r.next_step(ASK, [], [_failed(STAGED), staged])
    assert again.decision == "auto" and [c.key for c in again.candidates] == [COMMIT.key]


def test_an_error_alone_or_the_examples_alone_plan_no_write() -> None:
    r = Router(TOOLS, _Words(), examples=BANK)
    # the error names a write the examples never make before a commit: no write is planned (the lookup instead)
    out = r.next_step(ASK, [], [_failed("Nothing to commit. Use git_reset to start over.")])
    assert [c.key for c in out.candidates] == [STATUS.key]
    # the examples stage before a commit, but the error does not ask for it: the lookup, as before
    out = r.next_step(ASK, [], [_failed("fatal: not a git repository")])
    assert [c.key for c in out.candidates] == [STATUS.key]
    # a write refused before it ran carries no error of the server's
    refused = CallSoFar(COMMIT.qualified_name, {}, f"not run: {STAGED}", failed=True, ran=False)
    assert [c.key for c in r.next_step(ASK, [], [refused]).candidates] == [STATUS.key]
