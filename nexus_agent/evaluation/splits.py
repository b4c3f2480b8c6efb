"""Tuning and check parts of an evaluation set, drawn once by a fixed seed.

Why: tuning prompts, thresholds and training data on the same requests a default is then reported on fits them
(the dev sets scored 7–12 points above requests never seen). Every set is split once into ``tune`` and ``check``;
tuning reads only ``tune``, and a changed default is reported on both parts.

``python -m nexus_agent.evaluation.splits FILE [--tune-share S]`` writes the ``split`` field of every line, and
refuses to draw again once any line carries one.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from nexus_agent.evaluation.files import read_jsonl

SPLIT_SEED = 20261203
SPLITS = ("tune", "check")


def assign_splits(lines: list[dict[str, Any]], seed: int = SPLIT_SEED, tune_share: float = 0.5) -> None:
    """Set ``split`` on every line: a seeded shuffle of the ids, the first ``tune_share`` of them ``tune``."""
    if any("split" in line for line in lines):
        raise ValueError("the split is drawn once: some lines already carry one")
    ids = sorted(line["id"] for line in lines)
    random.Random(seed).shuffle(ids)
    tune = set(ids[: round(len(ids) * tune_share)])
    for line in lines:
        line["split"] = "tune" if line["id"] in tune else "check"


def split_file(path: Path, tune_share: float = 0.5) -> Counter[str]:
    """Draw the split of the JSONL file at ``path`` in place; :class:`ValueError` if it was drawn already."""
    lines = [r for _, r in read_jsonl(path)]
    assign_splits(lines, tune_share=tune_share)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines), encoding="utf-8")
    return Counter(r["split"] for r in lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nexus_agent.evaluation.splits")
    ap.add_argument("file", type=Path)
    ap.add_argument("--tune-share", type=float, default=0.5, help="share of the lines in the tuning part")
    a = ap.parse_args(argv)
    try:
        counts = split_file(a.file, a.tune_share)
    except ValueError as e:
        print(f"{a.file}: {e}", file=sys.stderr)
        return 2
    print(f"{a.file}: {dict(counts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
