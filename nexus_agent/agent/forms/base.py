"""What every value form shares: the context it reads, numbers in words turned into digits, and how a phrase is
found in the text."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from functools import lru_cache

from text_to_num import alpha2digit

# text2num's languages: number words in any of them become digits
LANGS = ("en", "fr", "es", "de", "it", "pt", "nl")


@dataclass(frozen=True)
class Context:
    """What a form may read: the conversation's text (the user's words, for options) and today's date, against
    which relative dates ("next Tuesday") are read."""

    text: str
    today: dt.date = field(default_factory=dt.date.today)


@lru_cache(maxsize=1024)
def in_digits(text: str, lang: str = "en") -> str:
    """``text`` with the number words of ``lang`` written as digits, small ones and ordinals too ("two" → "2",
    "third" → "3rd"); the numbers, units and dates forms all read the same conversions."""
    return alpha2digit(text, lang, threshold=0)


def says(low: str, phrase: str) -> bool:
    """Whether the case-folded ``low`` contains ``phrase`` at a word start ("ferm" finds "fermées"); a phrase in a
    script without spaces between words (CJK) anywhere."""
    if phrase.isascii() or (phrase[0].isalpha() and ord(phrase[0]) < 0x3000):
        return re.search(rf"(?<!\w){re.escape(phrase)}", low) is not None
    return phrase in low
