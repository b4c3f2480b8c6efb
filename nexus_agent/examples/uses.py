"""Where the runtime uses examples (issue 54 measured each use on its own: bench/examples.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

# How argument writing sees examples: not at all; a fixed set per tool and operation (the same tokens every time, so
# their KV loads from disk behind the system prompt); or the few closest to the request (decoded every time).
ArgExamples = Literal["off", "static", "retrieved"]


@dataclass(frozen=True)
class ExampleUses:
    """Which choices read the examples.

    ``keys``: an example's request is one more key of its first tool in the routing index (max-sim over a tool's
    keys). ``decision``: each candidate the LLM decision lists comes with its closest example. ``operations``: each
    operation of a consolidated tool (``issue_write`` create / update) is a choice of its own in routing and the
    decision, described by its examples, and the argument grammar fixes the chosen value. ``arguments``: the
    argument writer's examples (``arg_examples`` of them when retrieved). ``next_step``: the next-step decision
    reads the closest multi-step examples. ``repair``: a write that failed on a parameter is rewritten once with
    the error and the tool's closest example. ``escalate_writes``: see the field."""

    keys: bool = True
    # with ``keys``: the tools of the first candidate's server are raised by ``match_weight`` times the cosine of
    # their closest example request (masked, routing.query.masked): the dense rows hold those requests too, but
    # unmasked, where a repository's name weighs as much as the verb. Only that server's: a bank covers some servers,
    # and raised everywhere, the examples pulled mixed_dev's requests for memory, fetch or GitLab to GitHub tools
    match_weight: float = 1.0
    # with ``keys``: a request whose closest example (masked) is at least this close goes to that example's first
    # write (its first call when it makes none) without the LLM decision, when retrieval offers it in the pool
    # (above 1, a cosine's bound, it never does)
    match_auto: float = 0.65
    decision: bool = True
    decision_examples: int = 4  # how many of the decision's candidates show their closest example
    # which: the ones whose closest examples are closest to the request, or the first places of the pool (the
    # candidates' own order; an operation's line then shows only its fixed examples)
    decision_examples_by: Literal["closest", "position"] = "closest"
    # a request for a change whose first ``write_pool`` candidates hold two or more tools that may write goes to the
    # decision (which reads the examples) whatever retrieval's margin: that margin, between two writes of one object
    # (assign a person / assign Copilot; an issue's update / create), says little about which is meant, and a wrong
    # write changes the wrong thing
    escalate_writes: bool = True
    write_pool: int = 5
    operations: bool = True
    arguments: ArgExamples = "static"
    arg_examples: int = 3
    # argument writing writes the keys of the tool's closest example (its request at least this close, masked;
    # above 1 never), and of the optional parameters only those the ``arg_keys_pool`` closest examples set or the
    # conversation names in full (examples/keys.py)
    arg_keys_from: float = 0.45
    arg_keys_pool: int = 5
    next_step: bool = True
    repair: bool = True

    def with_history(self, history: bool) -> ExampleUses:
        """The uses for a request with (or without) earlier turns: the fixed argument examples sit between the system
        prompt and the history, where their KV loads from disk; with a history they would push it out of the lane
        the next turn prefilled (decoded again, for the arguments and for the answer), so there they are off (the
        operation routing chose still fixes the grammar)."""
        return replace(self, arguments="off") if history and self.arguments == "static" else self

    @property
    def any(self) -> bool:
        return (
            self.keys
            or self.decision
            or self.operations
            or self.arguments != "off"
            or self.arg_keys_from <= 1.0
            or self.next_step
        )


_NONE = ExampleUses(
    keys=False, decision=False, operations=False, arguments="off", arg_keys_from=2.0, next_step=False, repair=False
)
# the arms bench/examples.py compares; ``AgentConfig.examples`` takes one of these names
ARMS: dict[str, ExampleUses] = {
    "all": ExampleUses(),
    "none": _NONE,
    "keys": replace(_NONE, keys=True),
    "arguments": replace(_NONE, arguments="static", arg_keys_from=ExampleUses.arg_keys_from),
    "retrieved": ExampleUses(arguments="retrieved"),
    # ablations of single uses from "all"
    "no-escalate": ExampleUses(escalate_writes=False),
    "no-operations": ExampleUses(operations=False),
    "no-arguments": ExampleUses(arguments="off"),
    "position-examples": ExampleUses(decision_examples_by="position"),
    "no-match": ExampleUses(match_weight=0.0, match_auto=2.0),
    "no-arg-keys": ExampleUses(arg_keys_from=2.0),
}


def example_uses(name: str) -> ExampleUses:
    """The uses an arm name stands for (a ValueError names the known ones)."""
    if name not in ARMS:
        raise ValueError(f"unknown examples setting {name!r}; known: {', '.join(ARMS)}")
    return ARMS[name]
