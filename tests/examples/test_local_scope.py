"""A request that names a local path is routed among the tools asked for with one (``Router._in_scope``), and a
local write that takes its text from the files it acts on reads them first (``Router.reads_before``)."""

from __future__ import annotations

import pytest

from nexus_agent.examples import Example, ExampleSet
from nexus_agent.registry import Tool
from nexus_agent.routing.query import names_local_path, names_repository
from nexus_agent.routing.router import Router
from tests.examples.test_operations import _Words


@pytest.mark.parametrize(
    ("query", "path", "repo"),
    [
        ("Create a branch named spike/pdf-export in /home/ana/src/shop", True, False),
        ("check out feature/csv-export in ~/src/shop", True, False),
        ("Switch /home/ana/src/shop to the draft/dark-theme branch", True, False),
        ("Stage src/calc.py in /home/ana/src/shop", True, False),  # a file, not a repository
        ("list the open pull requests in acme/api", False, True),
        # a branch made *in* a repository: the repository is named (it had gone to git's git_create_branch)
        ("Make a release/0.2.0 branch in acme/api and bump its version", False, True),
        ("create the branch feature/tax-total", False, False),
        # a full stop ends the sentence, not a file's name (it had named no repository, and went to git)
        ("Make a new branch chore/deps off main in acme/web.", False, True),
        ("Stage notes/todo.md", False, False),
        ("Copy acme/api's README to /home/ana/api.md", True, True),
        ("read https://example.org/a/b", False, False),  # a URL's path is no local one
    ],
)
def test_local_paths_and_repositories_in_a_request(query: str, path: bool, repo: bool) -> None:
    assert names_local_path(query) is path
    assert names_repository(query) is repo


REMOTE = Tool(
    "hub",
    "create_branch",
    "Create a branch in a repository.",
    {
        "type": "object",
        "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "branch": {"type": "string"}},
        "required": ["owner", "repo", "branch"],
    },
)
LOCAL = Tool(
    "git",
    "git_create_branch",
    "Create a branch in a local repository.",
    {
        "type": "object",
        "properties": {"repo_path": {"type": "string"}, "branch_name": {"type": "string"}},
        "required": ["repo_path", "branch_name"],
    },
)
WRITE = Tool(
    "fs",
    "write_file",
    "Create or overwrite a file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)
MOVE = Tool(
    "fs",
    "move_file",
    "Move a file.",
    {
        "type": "object",
        "properties": {"source": {"type": "string"}, "destination": {"type": "string"}},
        "required": ["source", "destination"],
    },
)
READ = Tool(
    "fs",
    "read_file",
    "Read a file.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    read_only_hint=True,
)
TOOLS = [REMOTE, LOCAL, WRITE, MOVE, READ]


def _ex(tool: Tool, request: str) -> Example:
    return Example(request=request, calls=[{"tool": tool.name, "arguments": {}}], server=tool.server)


BANK = ExampleSet(
    [
        _ex(REMOTE, "create a branch docs/usage in acme/web"),
        _ex(REMOTE, "new branch release/1.0 in octo/tools"),
        _ex(LOCAL, "Create a branch docs/usage in /home/kai/src/tallow"),
        _ex(LOCAL, "make a branch release/0.3 in /home/kai/src/ferrule"),
        _ex(WRITE, "Write 'hello' to /home/kai/notes/a.txt"),
        _ex(WRITE, "save 'x' in /home/kai/b.txt"),
        _ex(MOVE, "mv /home/kai/a.txt /home/kai/b.txt"),
        _ex(MOVE, "Rename /home/kai/c.txt to d.txt"),
        _ex(READ, "show /home/kai/a.txt"),
        _ex(READ, "read /home/kai/notes/b.txt"),
        Example(
            request="copy the first line of /home/kai/a.txt into /home/kai/b.txt",
            calls=[
                {"tool": READ.name, "arguments": {"path": "/home/kai/a.txt"}},
                {"tool": WRITE.name, "arguments": {"path": "/home/kai/b.txt", "content": "x"}},
            ],
            server="fs",
        ),
        # a move, then a read: the read is after it, not before
        Example(
            request="move /home/kai/a.txt to /home/kai/c.txt and show it",
            calls=[
                {"tool": MOVE.name, "arguments": {"source": "/home/kai/a.txt", "destination": "/home/kai/c.txt"}},
                {"tool": READ.name, "arguments": {"path": "/home/kai/c.txt"}},
            ],
            server="fs",
        ),
    ],
    {t.qualified_name: t for t in TOOLS},
)


def test_the_tools_asked_for_with_a_local_path() -> None:
    local = Router(TOOLS, _Words(), examples=BANK).examples.path_tools
    assert local == {t.qualified_name for t in TOOLS if t is not REMOTE}


def test_a_request_naming_one_side_keeps_its_tools() -> None:
    r = Router(TOOLS, _Words(), examples=BANK)
    query = "Create a branch named spike/pdf-export in /home/ana/src/shop"
    cands = r.retrieve(query)
    assert REMOTE.key in {c.key for c in cands}
    assert REMOTE.key not in {c.key for c in r._in_scope(query, cands)}
    # a repository named too (a GitHub file saved locally): every tool stays
    both = "save the README of acme/web to /home/ana/readme.md"
    assert r._in_scope(both, cands) == cands
    # a repository and no local path: the local tools go
    remote = "create a branch chore/deps in acme/web from main"
    assert {c.key for c in r._in_scope(remote, cands)} == {REMOTE.key}
    # neither: every tool stays
    assert r._in_scope("create a branch called chore/deps", cands) == cands
    # none of the pool's tools is local: the pool stays as it was, never empty
    remote_only = [c for c in cands if c.key == REMOTE.key]
    assert r._in_scope(query, remote_only) == remote_only


def test_a_local_write_of_text_reads_first_a_move_does_not() -> None:
    r = Router(TOOLS, _Words(), examples=BANK)
    assert r.reads_before(WRITE.qualified_name)  # an example reads before it
    assert not r.reads_before(MOVE.qualified_name)  # read after, never before
    assert not r.reads_before(READ.qualified_name)  # a read
    assert not r.reads_before(REMOTE.qualified_name)  # not asked for with a local path


def test_a_request_naming_a_path_of_the_users_is_for_a_tool_when_a_local_tool_is_in_the_pool() -> None:
    """ "Double the rice in my risotto recipe in /…/recipes" read as small talk (cooking): a local path the tools
    can read makes it a request for them; without a local tool in the pool, or without a path, nothing changes."""
    r = Router(TOOLS, _Words(), examples=BANK)
    query = "Double the rice in my risotto recipe in /home/ana/recipes."
    cands = r.retrieve(query)
    assert r._names_own_path(query, cands)
    assert not r._names_own_path(query, [c for c in cands if c.key == REMOTE.key])
    assert not r._names_own_path("Double the rice in my risotto recipe.", cands)
    assert not r._names_own_path("see https://example.com/a/b", cands)


def test_a_change_in_a_repository_the_request_names_is_for_a_tool_that_takes_one() -> None:
    """A reworded tune request, "Create branch feature/rate-limit-per-client in acme/api, based on the rate limiting
    pull request's branch", fell below the relevance floor and was answered with no call: a change asked for in an
    owner/repo is for a tool that takes ``owner`` and ``repo``; a question, no repository, or no such tool in the
    pool is not."""
    r = Router(TOOLS, _Words(), examples=BANK)
    query = "Create branch feature/rate-limit-per-client in acme/api, based on the rate limiting PR's branch."
    cands = r.retrieve(query)
    assert r._names_own_repository(query, cands)
    assert not r._names_own_repository(query, [c for c in cands if c.key != REMOTE.key])
    assert not r._names_own_repository("Create a branch called feature/rate-limit-per-client", cands)
    assert not r._names_own_repository("what does acme/api do?", cands)


def test_the_branches_a_request_names() -> None:
    from nexus_agent.routing.query import branches_named

    assert branches_named("Switch /h/repo to the feature/csv-export branch.") == ["feature/csv-export"]
    assert branches_named("check out feature/csv-export in ~/src/shop") == ["feature/csv-export"]
    assert branches_named("Check out the branch about PDF export in /h/repo.") == []
    assert branches_named("list the open pull requests in acme/api") == []
