"""Flags the request turns on in other words: "just show me a preview" for ``dryRun``, "keep it secret" for
``sensitive``, "hit enter" for ``submit``. Only ``true`` needs grounding (``false`` is what leaving a flag out
means); the flag's own name in the request is checked by the caller."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from nexus_agent.agent.forms.base import Context, says

# a flag's name (lower case, without "_" or "-") -> phrases that turn it on
SYNONYMS: dict[str, tuple[str, ...]] = {
    "dryrun": ("preview", "don't write", "do not write", "without writing", "simulate", "what would", "just show"),
    "sensitive": ("secret", "confidential", "hidden", "mask", "don't show the value"),
    "submit": ("hit enter", "press enter", "and submit", "then submit"),
    "recursive": ("recursively", "subfolders", "subdirectories", "all levels", "nested folders"),
    "force": ("overwrite", "even if", "anyway", "forcibly"),
    "draft": ("wip", "work in progress", "not ready", "brouillon", "borrador", "entwurf"),
    "private": ("only me", "not public", "hidden", "privé", "privad", "privat"),
    "includehidden": ("hidden files", "dotfiles", "dot files"),
    "casesensitive": ("exact case", "match case", "case matters"),
}


def stated(value: Any, prop: Mapping[str, Any], name: str, ctx: Context) -> bool:
    if value is not True:
        return False
    low = ctx.text.casefold()
    return any(says(low, p) for p in SYNONYMS.get(re.sub(r"[_\-]", "", name.lower()), ()))
