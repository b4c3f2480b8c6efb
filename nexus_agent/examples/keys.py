"""Which arguments a call writes, as its closest examples show.

The examples teach a consolidated tool's uses, and a use is mostly a set of keys: "assign X to bob" is an update
with ``assignees``, "mark it ready for review" an ``update_pull_request`` with ``draft``. Measured on the
multi-step tune tasks (qwen1.5b, the object given), the writes that failed left out the key the request asked to
change (``assignees``, ``draft``) and set one nobody asked for (an issue ``type`` of "bug", ``issue_fields`` for a
label): the schema lists forty parameters and the model fills whichever the signature shows first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nexus_agent.examples.sets import Usage
from nexus_agent.registry import IDENTIFIER


@dataclass(frozen=True)
class ArgKeys:
    """What argument writing may write, from the closest examples of a tool (and operation).

    ``forced``: the keys of the closest example, which the grammar makes the model write (their values still face
    the grounding check: one the conversation does not state is dropped after). ``allowed``: every key the closest
    ``pool`` examples set; an optional parameter outside it is left out of the grammar unless the conversation names
    it in full (``labels``, ``title``)."""

    forced: frozenset[str]
    allowed: frozenset[str]


# examples this much less close than the closest are as close: only the keys they all set are forced ("merge PR 44"
# and "merge PR 7 with the commit title …" are 0.68 and 0.69 from "merge the dark mode PR": no ``commit_title``)
TIE = 0.05


def arg_keys(ranked: Sequence[tuple[Usage, float]], threshold: float, pool: int) -> ArgKeys | None:
    """:class:`ArgKeys` from a tool's examples with their cosine to the request, closest first; None when the
    closest is under ``threshold`` (a request unlike every example: its keys say nothing of this one). Forced: the
    keys every example within :data:`TIE` of the closest sets."""
    if not ranked or ranked[0][1] < threshold:
        return None
    closest, sim = ranked[0]
    forced = set(closest.arguments)
    for u, s in ranked[1:]:
        if sim - s <= TIE:
            forced &= set(u.arguments)
    allowed: set[str] = set()
    for u, _ in ranked[:pool]:
        allowed |= set(u.arguments)
    return ArgKeys(frozenset(forced), frozenset(allowed))


def keys_view(
    props: Mapping[str, Any], required: Sequence[str], keys: ArgKeys, named: set[str]
) -> tuple[list[str], list[str]]:
    """The required parameters (the schema's and the forced ones) and the optional ones argument writing keeps
    under ``keys``: those the examples set, and those the conversation names in full (``named``) unless they name
    an existing object (``IDENTIFIER``): "open an issue … and mention its number on the footer links issue (#3)"
    named "issue" and "number", and the create was written with ``issue_number`` 3, which no create example sets."""
    forced = [k for k in props if k in keys.forced and k not in required]
    named = {k for k in named if not IDENTIFIER.search(k)}
    kept = [k for k in props if k not in required and k not in forced and (k in keys.allowed or k in named)]
    return [*required, *forced], kept
