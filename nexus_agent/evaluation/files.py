"""The files every evaluation reads and writes: JSONL eval sets in, JSON reports out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_jsonl(path: Path) -> list[tuple[int, Any]]:
    """``(line number, parsed value)`` for every non-blank line, numbered from 1 (blank lines count).

    Raises :class:`ValueError` naming ``path:line`` on a line that is not JSON.
    """
    rows = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((i, json.loads(line)))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{i}: invalid JSON ({e.msg})") from e
    return rows


def write_json(path: Path, data: Any, *, indent: int = 2, ensure_ascii: bool = True, end: str = "\n") -> None:
    """Write ``data`` as JSON (creating the folder); the keywords keep each report's existing format."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent, ensure_ascii=ensure_ascii) + end, encoding="utf-8")
