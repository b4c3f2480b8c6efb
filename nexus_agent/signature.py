"""Compressed signature IR: a JSON Schema reduced to a dense, type-hinted function signature.

Example: ``create_repository(name: string, private?: boolean, visibility?: "public"|"private")``.

Rules (why: the LLM reads many of these at once, so every token must carry routing or binding signal):

* required parameters first, then optional ones marked ``?`` (schema order kept inside each group);
* ``enum``/``const`` become literal unions (long enums are cut with ``|…``);
* arrays are ``T[]``; unions (``anyOf``/``oneOf``/type lists) are ``A|B``; ``$ref`` into ``$defs`` is resolved;
* nested objects are abbreviated to their first few keys, ``{a, b?, …}``;
* parameter descriptions are dropped by default, or truncated to ``desc_chars`` characters when asked (with
  ``skip_restating_desc``, still dropped where they only restate the names), and the tool description is
  appended (truncated) only when ``tool_desc_chars > 0``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nexus_agent.registry import Tool


@dataclass(frozen=True)
class SignatureOptions:
    """How much to keep. Defaults give the bare signature the argument generator reads."""

    max_enum: int = 6  # literals shown before ``|…``
    max_nested_keys: int = 3  # keys of a nested object shown before ``…``
    desc_chars: int = 0  # per-parameter description kept as ``/* … */``; 0 = none
    tool_desc_chars: int = 0  # tool description appended after `` — ``; 0 = none
    max_params: int | None = None  # parameters shown before ``…`` (required ones first); None = all
    # drop a parameter description that only restates the parameter's and tool's names ("owner /*Repository
    # owner*/", "perPage /*Results per page for pagination*/"): it costs tokens every turn and binds nothing
    skip_restating_desc: bool = False


def truncate(text: str, n: int) -> str:
    """``text`` on one line, cut to ``n`` characters (an ellipsis marks a cut)."""
    return _truncate(text, n)


def _truncate(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: max(0, n - 1)].rstrip() + "…"


# Words that add nothing to a parameter name in a GitHub-style schema description.
FILLER = frozenset(
    {
        "a",
        "an",
        "the",
        "of",
        "for",
        "to",
        "in",
        "on",
        "by",
        "and",
        "or",
        "is",
        "are",
        "this",
        "that",
        "with",
        "be",
        "as",
        "if",
        "it",
        "its",
        "at",
        "from",
        "use",
        "used",
        "repository",
        "repo",
        "github",
        "number",
        "name",
        "id",
        "identifier",
        "value",
        "min",
        "max",
        "per",
        "page",
        "pagination",
        "results",
        "result",
        "optional",
        "specified",
        "given",
        "filter",
        "filters",
        "content",
        "text",
    }
)


_WORD = re.compile(r"[a-z0-9]+")


def words(text: str) -> set[str]:
    """Lower-case word tokens, with camelCase and snake_case split (``perPage`` -> per, page)."""
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return set(_WORD.findall(text.lower()))


def mentioned(name_words: set[str], text_words: set[str]) -> bool:
    """Whether the text's words (:func:`words`) name any of ``name_words``."""
    # prefix match, so "close" grounds "closed" and "label" grounds "labels"
    return any(
        w == t or (len(w) >= 4 and len(t) >= 4 and (w.startswith(t) or t.startswith(w)))
        for w in name_words
        for t in text_words
    )


def restates(desc: str, param: str, tool: str) -> bool:
    """Whether ``desc`` says nothing beyond the parameter's and the tool's names (plus filler words)."""
    known = words(param) | words(tool) | FILLER
    return all(w.isdigit() or w in known or w.rstrip("s") in known for w in words(desc))


def first_sentence(text: str) -> str:
    """The description up to the first sentence end (descriptions often run on for paragraphs)."""
    text = " ".join(text.split())
    for i, ch in enumerate(text):
        if ch in ".!?" and (i + 1 == len(text) or text[i + 1] == " "):
            return text[: i + 1]
    return text


class _Renderer:
    def __init__(self, root: Mapping[str, Any], opts: SignatureOptions, tool_name: str) -> None:
        self.root = root
        self.opts = opts
        self.tool_name = tool_name

    def resolve(self, schema: Mapping[str, Any], depth: int = 0) -> Mapping[str, Any]:
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#/") or depth > 8:
            return schema
        node: Any = self.root
        for part in ref[2:].split("/"):
            node = node.get(part, {}) if isinstance(node, Mapping) else {}
        merged = {**node, **{k: v for k, v in schema.items() if k != "$ref"}}
        return self.resolve(merged, depth + 1)

    def type_of(self, schema: Mapping[str, Any], depth: int = 0) -> str:
        s = self.resolve(schema)
        if "const" in s:
            return json.dumps(s["const"], ensure_ascii=False)
        if "enum" in s and isinstance(s["enum"], list):
            lits = [json.dumps(v, ensure_ascii=False) for v in s["enum"]]
            shown = lits[: self.opts.max_enum]
            return "|".join(shown) + ("|…" if len(lits) > len(shown) else "")
        for key in ("anyOf", "oneOf"):
            if isinstance(s.get(key), list):
                parts = [self.type_of(x, depth + 1) for x in s[key] if isinstance(x, Mapping)]
                parts = [p for p in dict.fromkeys(parts) if p != "null"] or ["null"]
                return "|".join(parts)
        if isinstance(s.get("allOf"), list) and s["allOf"]:
            return self.type_of(s["allOf"][0], depth + 1)
        t = s.get("type")
        if isinstance(t, list):
            names = [x for x in t if x != "null"] or ["null"]
            return "|".join(self.type_of({**s, "type": x}, depth) for x in names)
        if t == "array":
            items = s.get("items")
            inner = self.type_of(items, depth) if isinstance(items, Mapping) else "any"
            return f"({inner})[]" if "|" in inner else f"{inner}[]"
        if t == "object" or "properties" in s:
            props = s.get("properties")
            if not isinstance(props, Mapping) or not props or depth >= 1:
                return "object"
            req = set(s.get("required", []))
            keys = [k + ("" if k in req else "?") for k in props]
            shown = keys[: self.opts.max_nested_keys]
            return "{" + ", ".join(shown) + (", …" if len(keys) > len(shown) else "") + "}"
        if isinstance(t, str):
            return t
        return "any"

    def params(self) -> list[str]:
        props = self.root.get("properties") or {}
        req = [r for r in self.root.get("required", []) if r in props]
        order = req + [k for k in props if k not in req]
        out = []
        for name in order:
            ps = props[name]
            piece = f"{name}{'' if name in req else '?'}: {self.type_of(ps)}"
            desc = self.resolve(ps).get("description")
            if (
                self.opts.desc_chars > 0
                and isinstance(desc, str)
                and desc.strip()
                and not (self.opts.skip_restating_desc and restates(desc, name, self.tool_name))
            ):
                piece += f" /*{_truncate(desc, self.opts.desc_chars)}*/"
            out.append(piece)
        return out


def signature(tool: Tool, opts: SignatureOptions | None = None) -> str:
    """The compressed signature of ``tool`` (see module docstring for the rules)."""
    opts = opts or SignatureOptions()
    r = _Renderer(tool.input_schema, opts, tool.name)
    params = r.params()
    if opts.max_params is not None and len(params) > opts.max_params:
        params = [*params[: opts.max_params], "…"]
    sig = f"{tool.name}({', '.join(params)})"
    if opts.tool_desc_chars > 0 and tool.description.strip():
        sig += " — " + _truncate(first_sentence(tool.description), opts.tool_desc_chars)
    return sig


def full_schema_text(tool: Tool) -> str:
    """The uncompressed tool definition as a model would see it in a tools prompt (compact JSON)."""
    return json.dumps(tool.to_mcp(), ensure_ascii=False, separators=(",", ":"))
