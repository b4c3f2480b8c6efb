"""A tool's JSON Schema as argument writing uses it: the GBNF grammar compiled from it, which makes invalid JSON and
unknown keys impossible to emit, and validation against the full schema, which checks what the grammar let through.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import jsonschema
from llama_cpp.llama_grammar import json_schema_to_gbnf

from nexus_agent.backend import JsonConstraint
from nexus_agent.registry import Tool

# Keywords llama.cpp's schema converter does not need and that some servers put in odd places. Without
# "description", a schema that is only a description (projects_write's "any JSON value") becomes ``{}``, which
# the converter reads as any value instead of rejecting the whole tool.
_DROP_KEYS = (
    "$schema",
    "$id",
    "title",
    "description",
    "examples",
    "default",
    "format",
    "deprecated",
    "readOnly",
    "writeOnly",
)


# Any JSON object: the fallback grammar when a schema uses a construct the converter rejects; the schema
# validation step still catches what the grammar let through.
_ANY_OBJECT = json_schema_to_gbnf(json.dumps({"type": "object"}))


# Length bounds are expanded by the converter into one nested optional group per character; a
# ``maxLength: 20000`` (Stripe's dispute evidence) makes a grammar that overflows llama.cpp's recursive
# parser and crashes the process. Bounds above these are dropped; validation still enforces them.
_MAX_LENGTH_BOUND = 256
_MAX_ITEMS_BOUND = 64
_MAX_GRAMMAR_CHARS = 200_000


# Keywords whose value maps *names* to schemas: those names are data (a parameter may well be called "title" or
# "default"), so they are kept and only the schemas under them are stripped.
_NAMED_SCHEMAS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def _strip(schema: Any) -> Any:
    if isinstance(schema, Mapping):
        out: dict[str, Any] = {
            k: ({n: _strip(s) for n, s in v.items()} if k in _NAMED_SCHEMAS and isinstance(v, Mapping) else _strip(v))
            for k, v in schema.items()
            if k not in _DROP_KEYS
        }
        for key, bound in (
            ("maxLength", _MAX_LENGTH_BOUND),
            ("minLength", _MAX_LENGTH_BOUND),
            ("maxItems", _MAX_ITEMS_BOUND),
            ("minItems", _MAX_ITEMS_BOUND),
        ):
            if isinstance(out.get(key), int) and out[key] > bound:
                del out[key]
        return out
    if isinstance(schema, list):
        return [_strip(x) for x in schema]
    return schema


def grammar_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema the grammar is compiled from: top-level unknown keys are closed off, because BFCL-style
    checking counts an unknown parameter as an error and the model has no reason to add one."""
    s = copy.deepcopy(dict(_strip(schema)))
    s.setdefault("type", "object")
    if s.get("type") == "object" and "additionalProperties" not in s:
        s["additionalProperties"] = False
    s.setdefault("properties", {})
    return s


@lru_cache(maxsize=1024)
def _grammar_for(schema_json: str) -> str:
    try:
        g = json_schema_to_gbnf(json.dumps(grammar_schema(json.loads(schema_json))))
    except Exception:  # any converter failure falls back to "some JSON object"
        return _ANY_OBJECT
    return g if len(g) <= _MAX_GRAMMAR_CHARS else _ANY_OBJECT


def grammar_for(tool: Tool) -> str:
    """GBNF for ``tool``'s arguments, keys in the schema's property order (cached by schema)."""
    return _grammar_for(json.dumps(tool.input_schema))


def constraint_for(tool: Tool) -> JsonConstraint:
    """``tool``'s arguments as a backend constrains them: the grammar, and the schema it was compiled from (None
    where the grammar fell back to any JSON object, so a server's structured output falls back alike)."""
    gbnf = grammar_for(tool)
    return JsonConstraint(gbnf, None if gbnf == _ANY_OBJECT else grammar_schema(tool.input_schema))


def validate(tool: Tool, args: Any) -> str | None:
    """None when ``args`` validate against the tool's schema, else a one-line reason naming the field."""
    if not isinstance(args, dict):
        return f"arguments must be a JSON object, got {type(args).__name__}"
    try:
        cls = jsonschema.validators.validator_for(tool.input_schema, default=jsonschema.Draft202012Validator)
        err = jsonschema.exceptions.best_match(cls(dict(tool.input_schema)).iter_errors(args))
    except jsonschema.exceptions.SchemaError as e:
        return f"the tool's own schema is invalid: {e.message}"
    if err is None:
        return None
    where = "/".join(str(p) for p in err.absolute_path) or "<root>"
    return f"{where}: {err.message}"
