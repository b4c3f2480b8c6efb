"""What every value form shares: the context it reads."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Context:
    """What a form may read: the conversation's text (the user's words, for options) and today's date, against
    which relative dates ("next Tuesday") are read."""

    text: str
    today: dt.date = field(default_factory=dt.date.today)
