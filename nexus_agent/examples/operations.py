"""One consolidated tool as several choices: each value of its operation parameter (``issue_write``'s ``method``:
create, update) becomes a tool of its own for routing and the decision, described by what its schema says of that
value and by its examples, with the value fixed in its schema.

A small model reads ``issue_write(method, owner, repo, issue_number?, state?, labels? …)`` as one tool that
"creates issues" and writes ``{"method": "create", "issue_number": 7}`` for "reopen #7"; listed as
``issue_write.update — updates an existing issue; e.g. "reopen issue 9 …"; "tag issue 8 as …"`` the operation is
what it picks, and the argument grammar then writes nothing else.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from nexus_agent.examples.sets import ExampleSet
from nexus_agent.registry import Tool
from nexus_agent.signature import first_sentence

# an option line of an operation parameter's description: "- 'create' - creates a new issue." or "2. get_comments -
# Get issue comments."
_OPTION = re.compile(r"^\s*(?:[-*]|\d+[.)])\s*['\"`]?(?P<value>[\w-]+)['\"`]?\s*[-–:]\s*(?P<desc>\S.*)$", re.M)
SHOWN = 2  # example requests in an operation's description
MAX_SETS = 4  # fields an operation's description names
COMMON = 0.8  # a field that many of a tool's calls set says nothing about one operation


def operation_descriptions(tool: Tool) -> dict[str, str]:
    """What the operation parameter's description says of each value (its first sentence), where it lists them."""
    key = tool.operation_param
    if key is None:
        return {}
    text = str((tool.input_schema.get("properties") or {}).get(key, {}).get("description", ""))
    values = set(tool.operations())
    return {m["value"]: first_sentence(m["desc"]) for m in _OPTION.finditer(text) if m["value"] in values}


def operation_tools(tool: Tool, examples: ExampleSet | None = None) -> list[Tool]:
    """``tool`` as routing ranks it: one tool per operation of a consolidated tool (``operation`` set, the value
    fixed in the schema, described by the value's own description and its first examples), else ``[tool]``."""
    key = tool.operation_param
    if key is None:
        return [tool]
    said = operation_descriptions(tool)
    base = first_sentence(tool.description)
    props = dict(tool.input_schema.get("properties") or {})
    every = examples.usages(tool.qualified_name) if examples else []
    counts = Counter(a for u in every for a in u.arguments)
    common = {a for a, n in counts.items() if n >= COMMON * len(every)} | set(tool.input_schema.get("required") or [])
    out = []
    for op in tool.operations():
        usages = examples.usages(tool.qualified_name, op) if examples else []
        # what the operation's calls set, beyond what most calls of the tool name (owner, repo): "state, title,
        # labels, assignees"
        sets = [a for a in dict.fromkeys(a for u in usages for a in u.arguments) if a not in common][:MAX_SETS]
        requests = [u.request for u in (examples.diverse(tool.qualified_name, op, SHOWN) if examples else [])]
        shown = "; ".join(f'"{r}"' for r in requests if r)
        what = said.get(op, "").rstrip(".") or f"{key} {op}"
        # "as in", not "e.g.": a description is cut at its first sentence's end in other views
        description = (
            what
            + (f" (sets {', '.join(sets)})" if sets else "")
            + (f", as in {shown}" if shown else "")
            + (f" ({tool.name}: {base})" if base else "")
        )
        schema = {**tool.input_schema, "properties": {**props, key: {**props[key], "enum": [op]}}}
        out.append(replace(tool, operation=op, description=description, input_schema=schema))
    return out
