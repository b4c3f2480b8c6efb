"""``atb-compile``: compile tool schemas into KV blocks (.atb). Not implemented yet: see the issues."""

from __future__ import annotations

import sys


def main() -> None:
    print("atb-compile: compiled tool blocks are not built yet (tracked in a later issue)", file=sys.stderr)
    sys.exit(2)
