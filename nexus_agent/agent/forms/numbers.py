"""Numbers written as words ("ten", "vingt-cinq", "zwölf"), in another script ("١٢"), with a suffix ("10k") or as
an idiom ("a dozen"); an ordinal ("the second page") for a page number."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from nexus_agent.agent.forms.base import LANGS, Context, in_digits

# \d is Unicode-aware: Arabic-Indic and other decimal digits match, and float() reads them
# an ordinal ("1st", "the first") is not a count: "close the first issue" gives no issue number 1
# (a CJK counter may follow: "30件", "5個"); "+1" is a reaction, not the number 1
_NUMBER = re.compile(r"(?<![0-9A-Za-z_.+])(\d+(?:[.,]\d+)?)(?:\s*(k|thousand))?(?![0-9A-Za-z_])", re.I)
_IDIOMS = {"half a dozen": 6.0, "a dozen": 12.0, "dozen": 12.0, "a hundred": 100.0, "a thousand": 1000.0}
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


@lru_cache(maxsize=256)
def numbers_in(text: str) -> frozenset[float]:
    """Every number ``text`` states, in digits or in words of text2num's languages."""
    out: set[float] = set()
    low = text.casefold()
    # English ordinals are masked before the other languages read the text: Italian reads "second" as 2
    masked = re.sub(rf"(?<!\w)(?:{'|'.join(_ORDINALS)})(?!\w)", "§", text, flags=re.I)
    variants = {text, in_digits(text, "en"), *(in_digits(masked, lang) for lang in LANGS)}
    for variant in variants:
        for m in _NUMBER.finditer(variant):
            try:
                n = float(m.group(1).replace(",", "."))
            except ValueError:
                continue
            out.add(n * 1000 if m.group(2) else n)
    out |= {v for k, v in _IDIOMS.items() if re.search(rf"(?<!\w){k}(?!\w)", low)}
    return frozenset(out)


def stated(value: Any, prop: Mapping[str, Any], name: str, ctx: Context) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if float(value) in numbers_in(ctx.text):
        return True
    # "the second page": an ordinal names a page number, and nothing else (it would ground "first" everywhere)
    if "page" in name.lower() and float(value).is_integer() and 1 <= value <= len(_ORDINALS):
        # "the second page", "the 2nd results page"; not "newest first"
        ordinal = rf"(?:{_ORDINALS[int(value) - 1]}|{int(value)}(?:st|nd|rd|th))"
        return bool(re.search(rf"(?<!\w){ordinal}\s+(?:\w+\s+)?page", ctx.text.casefold()))
    return False
