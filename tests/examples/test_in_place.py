"""A tool that overwrites, held on a file the turn read, gives way to the write of its server that changes part of
a file (``Router.in_place``): ``edit_file`` for ``write_file``, chosen by schema, description and examples."""

from __future__ import annotations

from nexus_agent.examples import Example, ExampleSet
from nexus_agent.registry import Tool
from nexus_agent.routing.router import Router
from tests.examples.test_local_scope import READ, WRITE
from tests.examples.test_operations import _Words

EDITS = {"type": "array", "items": {"type": "object"}}
EDIT = Tool(
    "fs",
    "edit_file",
    "Make line-based edits to a text file.",
    {"type": "object", "properties": {"path": {"type": "string"}, "edits": EDITS}, "required": ["path", "edits"]},
)
MKDIR = Tool(
    "fs", "create_directory", "Create a directory.", {"type": "object", "properties": {"path": {"type": "string"}}}
)
TOOLS = [WRITE, EDIT, MKDIR, READ]


def _ex(tool: Tool, request: str) -> Example:
    return Example(request=request, calls=[{"tool": tool.name, "arguments": {"path": "/home/kai/a.txt"}}], server="fs")


def _bank(edit_after_read: bool) -> ExampleSet:
    rows = [
        _ex(WRITE, "Write 'hello' to /home/kai/notes/a.txt"),
        _ex(EDIT, "in /home/kai/a.txt change 'x' to 'y'"),
        _ex(MKDIR, "make the folder /home/kai/photos"),
        _ex(READ, "show /home/kai/a.txt"),
    ]
    if edit_after_read:
        rows.append(
            Example(
                request="tick off 'milk' in /home/kai/list.md",
                calls=[
                    {"tool": READ.name, "arguments": {"path": "/home/kai/list.md"}},
                    {"tool": EDIT.name, "arguments": {"path": "/home/kai/list.md", "edits": []}},
                ],
                server="fs",
            )
        )
    return ExampleSet(rows, {t.qualified_name: t for t in TOOLS})


def test_the_write_that_changes_part_of_a_file_takes_the_same_object_and_is_read_before() -> None:
    r = Router(TOOLS, _Words(), examples=_bank(edit_after_read=True))
    # not create_directory (it takes a path too, but no example reads before it), not write_file itself
    assert r.in_place(WRITE.qualified_name, ["path"]) == EDIT.qualified_name
    # a parameter no other write takes: nothing to give way to
    assert r.in_place(WRITE.qualified_name, ["content"]) is None


def test_without_an_example_that_reads_before_it_nothing_gives_way() -> None:
    r = Router(TOOLS, _Words(), examples=_bank(edit_after_read=False))
    assert r.in_place(WRITE.qualified_name, ["path"]) is None
