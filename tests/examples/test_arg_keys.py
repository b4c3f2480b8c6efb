"""The keys argument writing writes, from the closest examples (examples/keys.py), and the tools a request must
name (``ExampleSet.own_words``)."""

from __future__ import annotations

from nexus_agent.agent.args import arg_view, with_operation
from nexus_agent.agent.schema import constraint_for
from nexus_agent.examples import Example, ExampleSet, gather
from nexus_agent.examples.keys import ArgKeys, arg_keys
from nexus_agent.examples.sets import Usage
from nexus_agent.registry import Tool
from nexus_agent.routing.examples import ExampleIndex
from nexus_agent.routing.index import EmbeddingCache
from tests.examples.test_operations import _Words

ISSUE = Tool(
    "tracker",
    "issue_write",
    "Create or update an issue.",
    {
        "type": "object",
        "properties": {
            "method": {"type": "string", "enum": ["create", "update"]},
            "number": {"type": "integer"},
            "state": {"type": "string", "enum": ["open", "closed"]},
            "title": {"type": "string"},
            "type": {"type": "string"},
            "assignees": {"type": "array", "items": {"type": "string"}},
            "labels": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["method"],
    },
)


def _ex(request: str, **args: object) -> Example:
    return Example(request=request, calls=[{"tool": "issue_write", "arguments": args}], server="tracker")


BANK = ExampleSet(
    [
        _ex("assign issue 4 to ann", method="update", number=4, assignees=["ann"]),
        _ex("close issue 5", method="update", number=5, state="closed"),
        _ex("rename issue 6 to Slow", method="update", number=6, title="Slow"),
        _ex("make issue 7 a Chore type", method="update", number=7, type="Chore"),
    ],
    {ISSUE.qualified_name: ISSUE},
)


def _usage(i: int) -> Usage:
    return BANK.usages(ISSUE.qualified_name)[i]


def test_the_closest_examples_keys_are_forced_and_the_pools_allowed() -> None:
    keys = arg_keys([(_usage(0), 0.7), (_usage(1), 0.5), (_usage(2), 0.4)], threshold=0.45, pool=2)
    assert keys is not None
    assert keys.forced == {"method", "number", "assignees"}
    assert keys.allowed == {"method", "number", "assignees", "state"}  # the pool of 2: not the title
    # under the threshold: nothing from the examples
    assert arg_keys([(_usage(0), 0.44)], threshold=0.45, pool=2) is None
    assert arg_keys([], threshold=0.45, pool=2) is None
    # two examples about as close: only the keys both set are forced
    tie = arg_keys([(_usage(0), 0.7), (_usage(1), 0.68)], threshold=0.45, pool=2)
    assert tie is not None and tie.forced == {"method", "number"}


def test_the_view_requires_the_forced_keys_and_leaves_out_what_nothing_sets() -> None:
    update = with_operation(ISSUE, "update")
    keys = ArgKeys(frozenset({"method", "number", "assignees"}), frozenset({"method", "number", "assignees"}))
    request = "assign the pagination bug to bob"
    plain = arg_view(update, request)
    view = arg_view(update, request, keys)
    props = view.input_schema["properties"]
    # without the keys, the view offers `type` (a plain string a small model fills with "bug") and leaves
    # `assignees` optional; with them, `assignees` is required and `type` is gone
    assert "type" in plain.input_schema["properties"]
    assert "assignees" not in (plain.input_schema.get("required") or [])
    assert set(props) == {"method", "number", "assignees"}
    assert view.input_schema["required"] == ["method", "number", "assignees"]
    # the grammar follows the view: it cannot close the object without the assignees
    grammar = constraint_for(view)
    assert grammar.schema is not None and "assignees" in grammar.schema["required"]
    assert "assignees" in grammar.gbnf and "type" not in constraint_for(view).schema["properties"]
    # a parameter the request names in full stays, optional, though no example sets it
    named = arg_view(update, "assign it to bob and set its title to Slow", keys)
    assert "title" in named.input_schema["properties"] and "title" not in named.input_schema["required"]
    # the full schema still validates: the view changes what is written, not what is allowed
    assert "type" in update.input_schema["properties"]
    # but not one that names an existing object: a create no example numbers is not numbered for "the issue's number"
    create = with_operation(ISSUE, "create")
    made = ArgKeys(frozenset({"method", "title"}), frozenset({"method", "title"}))
    said = "open an issue 'Slow' and mention the new issue's number on #3"
    assert "number" not in arg_view(create, said, made).input_schema["properties"]
    assert "number" in arg_view(create, said).input_schema["properties"]


def test_the_index_scores_every_call_of_a_tool_closest_first() -> None:
    idx = ExampleIndex(BANK, EmbeddingCache(_Words()))
    ranked = idx.scored(idx.vector("close issue 12"), ISSUE.qualified_name, "update", k=2)
    assert [u.request for u, _ in ranked] == ["close issue 5", "assign issue 4 to ann"]
    assert ranked[0][1] > ranked[1][1]


def test_a_tool_named_for_something_the_request_does_not_say_is_not_offered() -> None:
    from nexus_agent.registry import tool_from_mcp
    from nexus_agent.sandbox.github.tools import ToolCatalog

    tools = [tool_from_mcp(d, "github") for d in ToolCatalog.load().definitions.values()]
    bank = gather(tools, {}, lambda *a: None)
    own = bank.own_words
    # every example of assigning Copilot says "Copilot", and no other tool's example does
    assert own["github__assign_copilot_to_issue"] == {"copilot"}
    # words that other tools' examples say too are no tool's own: "issue", "branch"
    assert "github__issue_write" not in own and "github__create_branch" not in own
    assert all(len(w) >= 4 for ws in own.values() for w in ws)


def test_the_pool_leaves_out_a_tool_whose_own_word_the_request_does_not_say() -> None:
    from nexus_agent.routing.router import Router

    robot = Tool("tracker", "assign_robot_to_issue", "Assign the robot to an issue.", {"type": "object"})
    note = Tool("tracker", "post_note", "Post a note.", {"type": "object"})
    bank = ExampleSet(
        [
            *BANK.examples,
            # "issue" is said by another tool's examples too: no tool's own word
            Example(request="note on issue 3: done", calls=[{"tool": note.name, "arguments": {}}], server="tracker"),
            Example(request="post a note to issue 2", calls=[{"tool": note.name, "arguments": {}}], server="tracker"),
            Example(
                request="let the robot fix issue 8", calls=[{"tool": robot.name, "arguments": {}}], server="tracker"
            ),
            Example(request="robot, take issue 9", calls=[{"tool": robot.name, "arguments": {}}], server="tracker"),
        ],
        {ISSUE.qualified_name: ISSUE, robot.qualified_name: robot, note.qualified_name: note},
    )
    assert bank.own_words == {robot.qualified_name: {"robot"}, note.qualified_name: {"note"}}
    r = Router([ISSUE, robot, note], _Words(), examples=bank)
    pool = r.retrieve("assign issue 4 to ann")
    assert robot.key in {c.key for c in pool}
    assert robot.key not in {c.key for c in r._said("assign issue 4 to ann", pool)}
    assert robot.key in {c.key for c in r._said("assign the robot to issue 4", pool)}
    # never an empty pool
    only = [c for c in pool if c.key == robot.key]
    assert r._said("assign issue 4 to ann", only) == only
