"""The examples a session uses: every source gathered, bound to the tools its servers offer.

Sources, in order (:func:`gather`): a server entry's own ``"examples": FILE`` (a user's examples come first), the
shipped bank for that server (``data/<server>.examples.jsonl``, matched by the server's name or, for a server
named otherwise, by the tools it offers), then examples a tool carries in its MCP ``_meta``. An example whose tools
the server does not have is skipped, with one warning line per source; a malformed file is refused whole, with its
file, line and reason, and the server runs without it.

An :class:`ExampleSet` answers what the runtime asks: the examples of one tool (and one operation of a consolidated
tool), as :class:`Usage` rows, and the multi-step examples of a server.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexus_agent.examples.bank import Example, ExamplesError, load_examples, shipped_bank_files
from nexus_agent.registry import Tool
from nexus_agent.signature import mentioned, words

log = logging.getLogger(__name__)

# a shipped bank serves a server of another name when the server offers at least this share of the bank's tools
BANK_MATCH = 0.6
# keys of a tool's ``_meta`` that may hold examples: our own list of {request, arguments}, or Anthropic's
# ``input_examples`` (arguments only; they teach argument writing, not routing)
META_KEYS = ("examples", "io.nexus-agent/examples")
META_INPUT_KEYS = ("input_examples", "inputExamples")


@dataclass(frozen=True)
class Usage:
    """One call of an example, as an example of its tool: ``example.calls[index]`` on ``qualified``
    (``server__tool``), with ``operation`` the value of the tool's operation parameter in it (None: the tool has
    one operation). ``request`` is empty for an example that carries arguments only."""

    example: Example
    index: int
    qualified: str
    operation: str | None

    @property
    def request(self) -> str:
        return self.example.request

    @property
    def arguments(self) -> dict[str, Any]:
        return self.example.calls[self.index].arguments

    @property
    def alone(self) -> bool:
        """The call is the example's only one (its request asks for this call and nothing else)."""
        return not self.example.multi_step


@dataclass
class ExampleSet:
    """Examples bound to the tools of their servers (``tools``: qualified name -> Tool)."""

    examples: list[Example] = field(default_factory=list)
    tools: Mapping[str, Tool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._usages: dict[str, list[Usage]] = {}
        for ex in self.examples:
            for i, call in enumerate(ex.calls):
                q = f"{ex.server}__{call.tool}"
                tool = self.tools.get(q)
                op = call.operation(tool.operation_param) if tool is not None else None
                self._usages.setdefault(q, []).append(Usage(ex, i, q, op))

    def __len__(self) -> int:
        return len(self.examples)

    def usages(self, qualified: str, operation: str | None = None) -> list[Usage]:
        """Every call of ``qualified`` in the set (only those of ``operation``, when given)."""
        rows = self._usages.get(qualified, [])
        return rows if operation is None else [u for u in rows if u.operation == operation]

    def always_set(self, qualified: str, operation: str | None = None) -> set[str]:
        """The arguments every call of ``qualified`` (of ``operation``) in the set writes, when it has two or more:
        what such a call cannot do without, though its schema may leave it optional (``issue_write`` update's
        ``issue_number``: the schema is shared with create, which has none)."""
        rows = self.usages(qualified, operation)
        if len(rows) < 2:
            return set()
        return set.intersection(*(set(u.arguments) for u in rows))

    def diverse(self, qualified: str, operation: str | None = None, k: int = 5) -> list[Usage]:
        """Up to ``k`` single-call examples of a tool (and operation) in bank order (a user's file first): first one
        for each set of arguments a call sets (closing, renaming, labelling and assigning are each an ``issue_write``
        update that sets another field), then one for each other value of a choice among them (reopening sets
        ``state`` too, to another value), then the rest in order. The same whatever the request: what a fixed set of
        examples shows."""
        seen: set[str] = set()
        rows: list[Usage] = []
        for u in self.usages(qualified, operation):
            copy = f"{u.request}\x00{json.dumps(u.arguments, sort_keys=True)}"
            if u.alone and copy not in seen:  # a shipped and a user's copy of one example count once
                seen.add(copy)
                rows.append(u)
        picked: list[Usage] = []
        for kind in (self._fields, self._kind):
            kinds = {kind(u) for u in picked}
            for u in rows:
                if u not in picked and kind(u) not in kinds:
                    picked.append(u)
                    kinds.add(kind(u))
        return (picked + [u for u in rows if u not in picked])[:k]

    @staticmethod
    def _fields(u: Usage) -> tuple[str, ...]:
        return (str(u.operation), *sorted(u.arguments))

    def _kind(self, u: Usage) -> tuple[str, ...]:
        """What kind of call a usage shows: its operation, the arguments it sets, and the values of those that are
        a choice (an enum or a flag): closing and reopening set the same ``state``, to other values."""
        tool = self.tools.get(u.qualified)
        props = (tool.input_schema.get("properties") or {}) if tool is not None else {}
        choice = {k for k, p in props.items() if isinstance(p, dict) and ("enum" in p or p.get("type") == "boolean")}
        return (str(u.operation), *sorted(f"{k}={v}" if k in choice else k for k, v in u.arguments.items()))

    @functools.cached_property
    def own_words(self) -> dict[str, frozenset[str]]:
        """For each tool with two or more examples, the words of its name that every one of its example requests
        says and no example of a tool without that word in its name says (``copilot`` for
        ``assign_copilot_to_issue``, ``dependabot``, ``collaborators``): a request that says none of them does not
        mean that tool. Measured on the multi-step tune tasks (qwen1.5b): "assign the pagination bug to bob-kim" went
        to ``assign_copilot_to_issue``."""
        told = {q: [words(u.request) for u in rows if u.request] for q, rows in self._usages.items()}
        names = {q: words(q.split("__", 1)[-1]) for q in told}
        out: dict[str, frozenset[str]] = {}
        for q, said in told.items():
            if len(said) < 2:
                continue
            own = {
                w
                for w in names[q]
                if len(w) >= 4
                and all(mentioned({w}, ws) for ws in said)
                and not any(mentioned({w}, ws) for q2, rows in told.items() if w not in names[q2] for ws in rows)
            }
            if own:
                out[q] = frozenset(own)
        return out

    def common_to_requests(self, said: Callable[[str], frozenset[str]]) -> dict[tuple[str, str | None], frozenset[str]]:
        """For each tool, and each operation of a consolidated one, with two or more example requests in which
        ``said`` finds something: what it finds in every one of those (the kinds of object each names:
        ``list_issues`` issues, ``discussion_comment_write`` add discussions). A request in which it finds nothing
        does not count: a terse "reviews on owner/repo #7" names no kind, and says nothing of another. Keys are
        ``(qualified, operation or None)``; empty ones are left out."""
        rows: dict[tuple[str, str | None], list[frozenset[str]]] = {}
        for q, usages in self._usages.items():
            for u in usages:
                if u.request and (found := said(u.request)):
                    rows.setdefault((q, None), []).append(found)
                    if u.operation is not None:
                        rows.setdefault((q, u.operation), []).append(found)
        return {key: common for key, got in rows.items() if len(got) >= 2 and (common := frozenset.intersection(*got))}

    def tools_whose_requests(self, says: Callable[[str], bool], share: float = 0.5) -> frozenset[str]:
        """The tools with two or more example requests of which at least ``share`` ``says`` something (name a
        local path: the filesystem's and git's tools, never GitHub's)."""
        out = set()
        for q, rows in self._usages.items():
            told = [u.request for u in rows if u.request]
            if len(told) >= 2 and sum(map(says, told)) >= share * len(told):
                out.add(q)
        return frozenset(out)

    def first_calls(self) -> list[Usage]:
        """The first call of every example that has a request: what routing should pick for that request."""
        return [u for rows in self._usages.values() for u in rows if u.index == 0 and u.request]

    def multi_step(self, server: str | None = None) -> list[Example]:
        return [ex for ex in self.examples if ex.multi_step and (server is None or ex.server == server)]


def _meta_examples(tool: Tool) -> list[Example]:
    """Examples a tool carries in its ``_meta``; a malformed entry is skipped with a log line (the tool stays)."""
    meta = tool.meta or {}
    out: list[Example] = []
    for key in (*META_KEYS, *META_INPUT_KEYS):
        rows = meta.get(key)
        if not isinstance(rows, list):
            continue
        for i, row in enumerate(rows):
            if key in META_INPUT_KEYS:
                row = {"request": "", "arguments": row} if isinstance(row, dict) else row
            try:
                if not isinstance(row, dict):
                    raise ValueError(f"expected an object, got {type(row).__name__}")
                args = row.get("arguments", row.get("input", {}))
                ex = Example.model_validate(
                    {
                        "request": row.get("request") or row.get("description") or "(arguments only)",
                        "calls": [{"tool": tool.name, "arguments": args}],
                        "server": tool.server,
                        "source": f"_meta.{key}[{i}] of {tool.qualified_name}",
                    }
                )
            except ValueError as e:
                log.warning("%s: _meta.%s[%d] is not a usable example (%s); skipped", tool.qualified_name, key, i, e)
                continue
            if key in META_INPUT_KEYS and not row.get("request"):
                ex = ex.model_copy(update={"request": ""})  # arguments only: no request to retrieve by
            out.append(ex)
    return out


def _bind(examples: Sequence[Example], offered: set[str], source: str, warn: Callable[[str], None]) -> list[Example]:
    """The examples whose every tool the server offers; the others skipped with one warning line."""
    kept = [ex for ex in examples if all(t in offered for t in ex.tools)]
    missing = sorted({t for ex in examples for t in ex.tools if t not in offered})
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        warn(f"{source}: {len(examples) - len(kept)} examples name tools the server does not have ({shown}); skipped")
    return kept


def _shipped_for(server: str, offered: set[str], banks: Mapping[str, Path]) -> Path | None:
    """The shipped bank for a server: the one of its name, else the one whose tools it offers best (at least
    :data:`BANK_MATCH` of them): a GitHub server named ``gh`` in a user's config is still GitHub."""
    if server in banks:
        return banks[server]
    best: tuple[float, Path | None] = (0.0, None)
    for path in banks.values():
        try:
            tools = {t for ex in load_examples(path, server) for t in ex.tools}
        except ExamplesError:
            continue
        share = len(tools & offered) / max(1, len(tools))
        if share >= BANK_MATCH and share > best[0]:
            best = (share, path)
    return best[1]


def gather(
    tools: Iterable[Tool],
    user_files: Mapping[str, str | None],
    warn: Callable[[str], None],
    shipped: bool = True,
    banks: Mapping[str, Path] | None = None,
) -> ExampleSet:
    """Every example for the servers of ``tools``: per server, its ``user_files`` entry (a path or None), the
    shipped bank (unless ``shipped`` is False), then the tools' ``_meta`` examples. ``warn`` gets one line per
    refused file and per source with skipped examples."""
    by_server: dict[str, dict[str, Tool]] = {}
    for t in tools:
        by_server.setdefault(t.server, {})[t.name] = t
    banks = shipped_bank_files() if banks is None else banks
    out: list[Example] = []
    for server, named in by_server.items():
        offered = set(named)
        sources: list[tuple[str, Path]] = []
        if (own := user_files.get(server)) is not None:
            sources.append((f"examples of {server!r}", Path(own)))
        if shipped and (bank := _shipped_for(server, offered, banks)) is not None:
            sources.append((f"shipped examples for {server!r}", bank))
        for label, path in sources:
            try:
                rows = load_examples(path, server)
            except ExamplesError as e:
                warn(f"{label} refused: {e}")
                continue
            out += _bind(rows, offered, str(path), warn)
        for t in named.values():
            out += _meta_examples(t)
    return ExampleSet(out, {t.qualified_name: t for named in by_server.values() for t in named.values()})
