"""The pins of a tool result: the character ranges of the identifiers and values it returned, which a KV budget
never evicts (nexus_agent/kv/memory.py).

The same fields the compact view keeps (agent/view.py): in JSON output each ``"key": value`` pair whose key
identifies the object (number, title, name, login, path, ref, state, …; a nested object's identifier with the key
that holds it, ``"user": {"login": "x"``; a SHA's first 12 characters, a message's first line, as the view cuts
them), whose value is a non-zero number other than an
internal ``id``, or that lists names (assignees, labels, reviewers); in text output (a file, a directory listing)
the lines that set a value (``port = 8443``, ``total: 42``) and every number, SHA, path and URL with the word
before it. Bodies, descriptions, links and zero counts stay unpinned (the view drops them too): they go first when
memory is short, and recall can bring them back.
"""

from __future__ import annotations

import json
import re

from nexus_agent.agent.view import _IDS, _NESTED_IDS

PIN_KEYS = frozenset({*_IDS, *_NESTED_IDS, "total_count", "totalCount", "full_name", "tag_name"})
_SHA_CHARS = 12  # the view's short SHA
LIST_KEYS = frozenset({"assignees", "labels", "reviewers", "requested_reviewers", "topics"})
_SHORT = 100  # a string value longer than this is a body, not an identifier

_STR = r'"(?:[^"\\]|\\.)*"'
_NUM = r"-?\d+(?:\.\d+)?"
_SCALAR = rf"(?:{_STR}|{_NUM}|true|false|null)"
_PAIR = re.compile(rf'"(?P<key>[A-Za-z_][\w-]*)"\s*:\s*(?P<value>{_SCALAR})')
_OPENS = re.compile(r'"[A-Za-z_][\w-]*"\s*:\s*\{\s*$')  # `"user": {` before a nested object's first field
_LIST = re.compile(rf'"(?P<key>[A-Za-z_][\w-]*)"\s*:\s*\[\s*(?:{_STR}\s*,?\s*)*\]')
# text output: a line that sets a value, or a value with the word before it
_SETTING = re.compile(r"^[ \t]*[\"']?[A-Za-z_][\w.\- ]{0,40}[\"']?[ \t]*[:=][ \t]*\S[^\n]{0,80}$", re.M)
_VALUE = re.compile(
    r"(?:[A-Za-z_#][\w-]*[ \t:=#]{1,3})?"
    r"(?:https?://\S+|[\w.-]*/[\w./-]+|\b[0-9a-f]{7,40}\b|#?\d[\d.,:-]*\d|#?\d)"
)


def pins(text: str) -> tuple[tuple[int, int], ...]:
    """``[start, end)`` ranges of ``text`` to pin, sorted and merged."""
    try:
        json.loads(text)
        spans = _json_pins(text)
    except (json.JSONDecodeError, ValueError):
        spans = [m.span() for m in _SETTING.finditer(text)] + [m.span() for m in _VALUE.finditer(text)]
    return _merged(spans)


def _json_pins(text: str) -> list[tuple[int, int]]:
    out = []
    for m in _PAIR.finditer(text):
        key, value = m.group("key"), m.group("value")
        a, v = m.start(), m.start("value")
        if value.startswith('"'):
            if key not in PIN_KEYS or value.startswith(('"http://', '"https://')):
                continue
            body = value[1:-1]
            if key == "sha" or key.endswith("_sha"):
                body = body[:_SHA_CHARS]
            elif key == "message":
                body = body.split("\\n", 1)[0]
            if len(body) <= _SHORT:
                if key in _NESTED_IDS and (parent := _OPENS.search(text, max(0, a - 40), a)) is not None:
                    a = parent.start()  # the object's own key: `"user": {"login": "x"` says whose login it is
                out.append((a, v + 1 + len(body) + (1 if body == value[1:-1] else 0)))
        elif value[0] in "-0123456789":
            if key != "id" and float(value) != 0:
                out.append(m.span())
        elif key in PIN_KEYS and value != "null":  # merged, draft
            out.append(m.span())
    for m in _LIST.finditer(text):
        if m.group("key") in LIST_KEYS and m.end() - m.start() <= 4 * _SHORT:
            out.append(m.span())
    return out


def _merged(spans: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(s for s in spans if s[1] > s[0]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)
