"""Follow-up dialogues: multi-turn eval items whose last request leans on the earlier turns.

A line of ``data/eval/followups.jsonl`` is an eval line (``id``, ``query``, ``tool``, ``server``, ``arguments``,
``arg_contains``, ``alt_tools``, as in ``data/eval/README.md``) plus:

- ``turns``: 1–3 earlier turns, oldest first, each ``{"user", "tool", "arguments", "result", "answer"}``; ``tool``
  is a qualified name (``server__name``) or null for a turn without a tool (small talk), ``result`` the short text
  the tool returned;
- ``kind``: what the last request leans on (:data:`KINDS`); ``no-tool`` (with ``tool`` null) marks a follow-up
  the conversation answers without a tool (``followups_no_tool.jsonl``: what follow-up handling must not call);
- ``split``: ``tune`` or ``check``, drawn once by ``evaluation.splits`` (seeded): tuning reads only ``tune``.

The turns are replayed through the agent's own :class:`~nexus_agent.agent.history.Conversation`, so routing and
argument writing see exactly the window (surrogates included) that a live session would have given them.

``python -m nexus_agent.evaluation.dialogues check FILE`` validates a file against the registry;
``… split FILE`` writes the ``split`` field (once: it refuses to redraw an existing split).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from nexus_agent.agent.history import Conversation, Turn, surrogate
from nexus_agent.evaluation.files import read_jsonl
from nexus_agent.evaluation.splits import main as split_main
from nexus_agent.registry import Registry, load_registry

PROFILE = "desktop_realistic"
Kind = Literal["pronoun", "ordinal", "same", "undo", "before", "switch", "smalltalk", "detail", "no-tool"]
KINDS: tuple[str, ...] = get_args(Kind)


class DialogueTurn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: str
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    result: str | None = None
    answer: str = ""


class DialogueLine(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    query: str
    tool: str | None  # None: the request needs no tool (kind "no-tool")
    server: str | None = None
    kind: Kind
    turns: list[DialogueTurn] = Field(min_length=1, max_length=3)
    arguments: dict[str, Any] = Field(default_factory=dict)
    arg_contains: dict[str, list[str]] | None = None
    alt_tools: list[str] | None = None
    split: Literal["tune", "check"] | None = None


@dataclass
class Dialogue:
    """One item, its earlier turns as the agent's conversation."""

    line: DialogueLine
    conversation: Conversation

    @property
    def item(self) -> dict[str, Any]:
        """The eval-line dict ``eval-args`` reads (``history`` left out: :attr:`conversation` replaces it)."""
        return self.line.model_dump(exclude={"turns"})


def conversation_of(turns: list[DialogueTurn]) -> Conversation:
    """The earlier turns as the agent would have recorded them: tool output kept only as its surrogate."""
    convo = Conversation()
    for t in turns:
        convo.turns.append(
            Turn(
                user=t.user,
                tool=t.tool,
                arguments=t.arguments if t.tool else None,
                tool_result=surrogate(t.result) if t.tool and t.result is not None else None,
                answer=t.answer,
            )
        )
    return convo


def load_dialogues(path: Path, split: str | None = None) -> list[Dialogue]:
    """The file's dialogues (only ``split``'s when given); :class:`ValueError` names a line that does not parse."""
    out = []
    for lineno, raw in read_jsonl(path):
        try:
            line = DialogueLine.model_validate(raw)
        except ValueError as e:
            raise ValueError(f"{path}:{lineno}: {e}") from e
        if split is None or line.split == split:
            out.append(Dialogue(line, conversation_of(line.turns)))
    return out


def _check_args(tool_name: str, args: dict[str, Any], registry: Registry, where: str) -> list[str]:
    tool = registry.tools[tool_name]
    props = tool.input_schema.get("properties") or {}
    problems = []
    for k, v in args.items():
        if k not in props:
            problems.append(f"{where}: {tool_name} has no parameter {k!r}")
            continue
        # the parameter's schema inside the root one, so a "$ref" to the tool's shared definitions resolves
        one = {**tool.input_schema, "properties": {k: props[k]}, "required": [], "additionalProperties": True}
        try:
            jsonschema.validate({k: v}, one)
        except jsonschema.ValidationError as e:
            problems.append(f"{where}: {tool_name}.{k}={json.dumps(v)[:60]}: {e.message}")
    return problems


def check_file(path: Path, registry: Registry, profile: str = PROFILE) -> list[str]:
    """Every problem in ``path`` (empty: valid): unknown or unexposed tools, arguments that the tool's schema
    rejects, a turn's required arguments missing, duplicate ids or requests, a dialogue without a tool turn."""
    exposed = set(registry.profiles[profile])
    problems: list[str] = []
    ids: Counter[str] = Counter()
    queries: Counter[str] = Counter()
    for lineno, raw in read_jsonl(path):
        where = f"{path.name}:{lineno}"
        try:
            line = DialogueLine.model_validate(raw)
        except ValueError as e:
            problems.append(f"{where}: {e}")
            continue
        ids[line.id] += 1
        queries[line.query.strip().lower()] += 1
        if (line.tool is None) != (line.kind == "no-tool"):
            problems.append(f"{where}: a no-tool item has kind 'no-tool' and tool null, and only it")
        gold = [] if line.tool is None else [f"{line.server}__{line.tool}"]
        gold += [a.replace("/", "__") if "/" in a else f"{line.server}__{a}" for a in line.alt_tools or []]
        for g in gold:
            if g not in exposed:
                problems.append(f"{where}: expected tool {g} is not in profile {profile}")
        if gold and gold[0] in exposed:
            problems += _check_args(gold[0], line.arguments, registry, where)
        if not any(t.tool for t in line.turns):
            problems.append(f"{where}: no earlier turn calls a tool")
        for i, t in enumerate(line.turns):
            if t.tool is None:
                continue
            if t.tool not in exposed:
                problems.append(f"{where}: turn {i} tool {t.tool} is not in profile {profile}")
                continue
            problems += _check_args(t.tool, t.arguments or {}, registry, f"{where} turn {i}")
            for req in registry.tools[t.tool].input_schema.get("required") or []:
                if req not in (t.arguments or {}):
                    problems.append(f"{where} turn {i}: {t.tool} lacks required {req!r}")
            if t.result is None:
                problems.append(f"{where} turn {i}: a tool turn needs its result")
    problems += [f"{path.name}: id {k!r} appears {n} times" for k, n in ids.items() if n > 1]
    problems += [f"{path.name}: request {k!r} appears {n} times" for k, n in queries.items() if n > 1]
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nexus_agent.evaluation.dialogues")
    ap.add_argument("command", choices=["check", "split"])
    ap.add_argument("file", type=Path)
    ap.add_argument("--registry", type=Path, default=Path(__file__).resolve().parents[2] / "data" / "mcp-registry")
    a = ap.parse_args(argv)
    if a.command == "check":
        problems = check_file(a.file, load_registry(a.registry))
        for p in problems:
            print(p, file=sys.stderr)
        rows = [r for _, r in read_jsonl(a.file)]
        kinds = Counter(r.get("kind") for r in rows)
        servers = Counter(r.get("server") for r in rows)
        print(f"{len(rows)} dialogues, {len(problems)} problems; kinds {dict(kinds)}; servers {dict(servers)}")
        return 1 if problems else 0
    return split_main([str(a.file)])  # the seeded split every evaluation set takes (evaluation/splits.py)


if __name__ == "__main__":
    sys.exit(main())
