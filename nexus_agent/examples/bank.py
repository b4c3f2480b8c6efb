"""The example file format and its reader.

An examples file is JSON Lines, one example per line (blank lines and lines starting with ``//`` are skipped)::

    {"id": "close-1",
     "request": "Issue 14 in nimbus-labs/orbit is fixed by the new parser, close it.",
     "calls": [{"tool": "issue_write",
                "arguments": {"method": "update", "owner": "nimbus-labs", "repo": "orbit", "issue_number": 14,
                              "state": "closed"}}]}

* ``request``: what a user would write; every argument value of the calls is stated in it, or returned by an
  earlier call of the same example.
* ``calls``: 1 to 4 calls in order. ``from`` maps an argument (a dotted path: ``issue_number``,
  ``assignees.0``) to the index of the earlier call whose result gave its value (a search's number).
* ``id``: optional, unique in the file (a shipped bank gives one to every example).
* ``verify``: optional and free-form, read only by the shipped banks' verification tests (the world an example
  runs in, what it must change); the runtime ignores it.

A malformed file raises :class:`ExamplesError` with the file, the line and the reason; the caller decides what a
refused file costs (the agent logs it and starts without that file).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

DATA = Path(__file__).parent / "data"
MAX_CALLS = 4


class ExamplesError(ValueError):
    """An examples file that cannot be used: ``path:line: reason``."""

    def __init__(self, path: Path | str, line: int | None, reason: str) -> None:
        self.path, self.line, self.reason = str(path), line, reason
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {reason}")


class ExampleCall(BaseModel):
    """One call of an example: the tool's bare name (as its server lists it) and its arguments."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    from_: dict[str, int] = Field(default_factory=dict, alias="from")

    def operation(self, key: str | None) -> str | None:
        """The value of the operation parameter ``key`` (``method``, ``action``) in this call, if it has one."""
        if key is None:
            return None
        value = self.arguments.get(key)
        return value if isinstance(value, str) else None


class Example(BaseModel):
    """One example. ``server`` and ``source`` are set by the reader (the server the file is for, and where the
    example came from: ``path:line``, or ``_meta of <tool>``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = None
    request: str = Field(min_length=1)
    calls: list[ExampleCall] = Field(min_length=1, max_length=MAX_CALLS)
    verify: dict[str, Any] | None = None
    server: str = ""
    source: str = ""

    @field_validator("calls")
    @classmethod
    def _flows_backwards(cls, calls: list[ExampleCall]) -> list[ExampleCall]:
        for i, c in enumerate(calls):
            for arg, src in c.from_.items():
                if not 0 <= src < i:
                    raise ValueError(f"call {i} ({c.tool}): {arg!r} comes from call {src}, which is not an earlier one")
        return calls

    @property
    def multi_step(self) -> bool:
        return len(self.calls) > 1

    @property
    def tools(self) -> list[str]:
        return [c.tool for c in self.calls]


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ExamplesError(path, None, f"cannot read the file: {e}") from e
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s and not s.startswith("//"):
            yield n, s


def _reason(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else err["msg"]


def load_examples(path: Path | str, server: str) -> list[Example]:
    """Every example of the file at ``path``, for ``server``. Raises :class:`ExamplesError` (file, line, reason)
    on the first malformed line: a file is used whole or not at all."""
    path = Path(path)
    out: list[Example] = []
    ids: dict[str, int] = {}
    for n, line in _lines(path):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ExamplesError(path, n, f"not valid JSON ({e.msg}; column {e.colno})") from e
        if not isinstance(row, dict):
            raise ExamplesError(path, n, f"expected a JSON object, got {type(row).__name__}")
        try:
            ex = Example.model_validate({**row, "server": server, "source": f"{path}:{n}"})
        except ValidationError as e:
            raise ExamplesError(path, n, _reason(e)) from e
        if ex.id is not None:
            if ex.id in ids:
                raise ExamplesError(path, n, f"id {ex.id!r} is used again (first on line {ids[ex.id]})")
            ids[ex.id] = n
        out.append(ex)
    return out


def shipped_bank_files() -> dict[str, Path]:
    """The banks that ship with the package: server name -> ``data/<server>.examples.jsonl``."""
    return {p.name.split(".", 1)[0]: p for p in sorted(DATA.glob("*.examples.jsonl"))}
