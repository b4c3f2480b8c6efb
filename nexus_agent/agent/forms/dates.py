"""Dates and times in any spelling: "3rd of June 2025", "3 juin 2025", "2025/06/03", "6月3日", "next Tuesday",
"tomorrow at 5pm". The value is the ISO form a schema asks for (``2025-06-03``, ``2025-06``,
``2025-06-03T17:00:00``, ``17:00``).

Two readings, either enough: the value's own parts (year, month as a number or a month name in one of
:data:`_LOCALES`, day as a number or ordinal, a time as 17:00, 5pm or 17h) all appear in the text; or dateparser,
relative to today, finds that date (and time) in the text, which is how relative dates are read.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from babel.dates import get_month_names

from nexus_agent.agent.forms.base import Context, in_digits, says

_ISO = re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?(?:[T ](\d{2}):(\d{2})(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$")
_TIME = re.compile(r"^(\d{1,2}):(\d{2})(?::\d{2})?$")
_LOCALES = ("en", "fr", "de", "es", "it", "pt", "nl", "pl", "ru", "sv", "da", "cs", "tr", "ja", "zh", "ko")


@lru_cache(maxsize=1)
def _month_names() -> dict[int, tuple[str, ...]]:
    """Month number → every name of it (wide and abbreviated, format and stand-alone) in :data:`_LOCALES`."""
    names: dict[int, set[str]] = {m: set() for m in range(1, 13)}
    for loc in _LOCALES:
        for width in ("wide", "abbreviated"):
            for context in ("format", "stand-alone"):
                for m, name in get_month_names(width, context, loc).items():
                    n = name.casefold().rstrip(".")
                    if len(n) >= 3 or not n.isascii():  # "mai" yes, a two-letter abbreviation no
                        names[m].add(n)
    return {m: tuple(sorted(v, key=len, reverse=True)) for m, v in names.items()}


def _has_month(text: str, month: int) -> bool:
    return any(says(text, name) for name in _month_names()[month])  # a prefix: "juni", "junio", "june" …


def _has_day(text: str, day: int) -> bool:
    return bool(re.search(rf"(?<!\d)0?{day}(?:st|nd|rd|th|er|e|º|°|\.|日|일)?(?!\d)", text))


def _has_year(text: str, year: int, today: dt.date) -> bool:
    if re.search(rf"(?<!\d){year}(?!\d)", text) or re.search(rf"['’]{year % 100:02d}(?!\d)", text):
        return True
    # no year written: the current one, or the next when the date would be past
    return not re.search(r"(?<!\d)(?:19|20)\d{2}(?!\d)", text) and year in (today.year, today.year + 1)


def _has_time(text: str, hour: int, minute: int) -> bool:
    h12 = hour % 12 or 12
    ampm = "p" if hour >= 12 else "a"
    pats = [rf"(?<!\d)0?{hour}[:h.]{minute:02d}(?!\d)", rf"(?<!\d){hour}\s*uhr"]
    if minute == 0:
        pats += [rf"(?<!\d){h12}\s*{ampm}\.?m\b", rf"(?<!\d)0?{hour}\s*h(?!\w)"]
    else:
        pats.append(rf"(?<!\d){h12}[:.]{minute:02d}\s*{ampm}\.?m\b")
    return any(re.search(p, text) for p in pats)


def _clock_words(text: str) -> str:
    """ "half past 3" → "3:30", "quarter past 3" → "3:15", "quarter to 4" → "3:45" (before am/pm or "in the
    afternoon" is read: "half past 3 in the afternoon" → "3:30 pm")."""
    text = re.sub(r"half past (\d{1,2})", r"\1:30", text)
    text = re.sub(r"quarter past (\d{1,2})", r"\1:15", text)
    text = re.sub(r"quarter to (\d{1,2})", lambda m: f"{(int(m.group(1)) - 1) % 12 or 12}:45", text)
    return re.sub(r"(\d{1,2}:\d{2}) in the (?:afternoon|evening)", r"\1 pm", text)


def _numeric(text: str, y: int, m: int, d: int) -> bool:
    """2025/06/03, 2025.6.3, 3.6.2025, 06/03/2025 (either order of day and month, with the year written)."""
    sep = r"[-/.]"
    return bool(
        re.search(rf"(?<!\d){y}{sep}0?{m}{sep}0?{d}(?!\d)", text)
        or re.search(rf"(?<!\d)0?{d}{sep}0?{m}{sep}(?:{y}|{y % 100:02d})(?!\d)", text)
        or re.search(rf"(?<!\d)0?{m}{sep}0?{d}{sep}(?:{y}|{y % 100:02d})(?!\d)", text)
    )


@lru_cache(maxsize=256)
def _parsed(text: str, today: dt.date) -> tuple[dt.datetime, ...]:
    """Every date dateparser finds in ``text``, relative dates read from ``today``."""
    from dateparser.search import search_dates  # about 0.1 s to import; only argument checks need it

    base = dt.datetime.combine(today, dt.time())
    found = search_dates(text, settings={"RELATIVE_BASE": base, "PREFER_DATES_FROM": "future"}) or []
    return tuple(when for _, when in found)


def names_a_date(text: str) -> bool:
    """Whether ``text`` (what the user wrote) names a date or a time, absolute or relative ("since monday", "3rd of
    June", "2025-06-01"), in one of :data:`_LOCALES`. Only those languages are tried, not detected: a quick check
    (tens of ms), where detection's first use in a process loads every language (about 2 s)."""
    from dateparser.search import search_dates

    return bool(re.search(r"\d{4}-\d{2}", text)) or bool(search_dates(text, languages=list(_LOCALES)))


def warm() -> None:
    """Load dateparser's languages (the first search in a process takes about 2 s), so that the first argument
    check does not pay it (called between turns, after the next turn's prefill)."""
    _parsed("tomorrow at noon", dt.date.today())


def stated(value: Any, prop: Mapping[str, Any], name: str, ctx: Context) -> bool:
    if not isinstance(value, str):
        return False
    text = _clock_words(in_digits(ctx.text).casefold())  # "the third of June" → "the 3rd of june"
    v = value.strip()
    if t := _TIME.match(v):
        h, mi = int(t.group(1)), int(t.group(2))
        return _has_time(text, h, mi) or any((w.hour, w.minute) == (h, mi) for w in _parsed(ctx.text, ctx.today))
    m = _ISO.match(v)
    if not m:
        return False
    y, mo = int(m.group(1)), int(m.group(2))
    day: int | None = int(m.group(3)) if m.group(3) else None
    hour = int(m.group(4)) if m.group(4) else None
    minute = int(m.group(5)) if m.group(5) else 0
    timed = hour is not None and (hour, minute) != (0, 0)
    parts = (
        _has_year(text, y, ctx.today)
        and (_has_month(text, mo) or (day is not None and _numeric(text, y, mo, day)))
        and (day is None or _has_day(text, day))
    )
    if parts and (not timed or _has_time(text, hour or 0, minute)):
        return True
    for w in _parsed(ctx.text, ctx.today):
        if (w.year, w.month) != (y, mo) or (day is not None and w.day != day):
            continue
        if not timed or (w.hour, w.minute) == (hour, minute) or _has_time(text, hour or 0, minute):
            return True
    return False
