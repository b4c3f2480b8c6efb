"""Quantities in another unit than the parameter's: "two hours" for a parameter in minutes, "1.5 km" in metres,
"$25" in cents. The parameter's unit is the first unit its description names; pint converts."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from nexus_agent.agent.forms.base import LANGS, Context, in_digits

_UNIT_WORD = re.compile(
    r"\b(milliseconds?|ms|seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|meters?|metres?|"
    r"kilometers?|kilometres?|km|miles?|feet|foot|ft|bytes?|kilobytes?|megabytes?|gigabytes?|kb|mb|gb|kib|mib|gib|"
    r"cents?|smallest currency unit)\b",
    re.I,
)
_QUANTITY = re.compile(r"(\d+(?:[.,]\d+)?)\s*([a-zA-Zµ]+)")
_MONEY = re.compile(
    r"(?:[$€£]\s*(\d+(?:[.,]\d{1,2})?))|"
    r"(?:(\d+(?:[.,]\d{1,2})?)\s*(?:dollars?|bucks?|euros?|pounds?|usd|eur|gbp|[$€£]))",
    re.I,
)
_IDIOMS = {"half an hour": (0.5, "hour"), "an hour": (1.0, "hour"), "a day": (1.0, "day"), "a week": (1.0, "week"),
           "a minute": (1.0, "minute"), "a mile": (1.0, "mile"), "a quarter of an hour": (0.25, "hour"),
           "quarter of an hour": (0.25, "hour"), "an hour and a half": (1.5, "hour"),
           "a minute and a half": (1.5, "minute"), "half a minute": (0.5, "minute"), "half a day": (0.5, "day"),
           "a fortnight": (2.0, "week")}  # fmt: skip


@lru_cache(maxsize=1)
def _registry() -> Any:
    import pint  # about 0.4 s to import; only argument checks that meet a unit need it

    return pint.UnitRegistry()


@lru_cache(maxsize=256)
def _quantities(text: str) -> tuple[tuple[float, str], ...]:
    out = []
    for lang in LANGS:
        for m in _QUANTITY.finditer(in_digits(text, lang)):
            out.append((float(m.group(1).replace(",", ".")), m.group(2)))
    low = text.casefold()
    out += [q for k, q in _IDIOMS.items() if re.search(rf"(?<!\w){k}(?!\w)", low)]
    return tuple(out)


def stated(value: Any, prop: Mapping[str, Any], name: str, ctx: Context) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    m = _UNIT_WORD.search(str(prop.get("description", "")))
    if m is None:
        return False
    target = m.group(1).lower()
    if target.startswith("cent") or target == "smallest currency unit":
        amounts = _MONEY.findall(in_digits(ctx.text))  # "twenty bucks" → "20 bucks"
        return any(abs(float((a or b).replace(",", ".")) * 100 - value) < 1e-6 for a, b in amounts)
    ureg = _registry()
    for n, unit in _quantities(ctx.text):
        try:
            got = ureg.Quantity(n, unit).to(target).magnitude
        except Exception:  # not a unit pint knows, or another dimension
            continue
        if abs(got - value) <= 1e-9 * max(1.0, abs(value)):
            return True
    return False
