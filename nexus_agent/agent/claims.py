"""Whether an answer says, in its own words, that something was changed.

The turn asks it of the model's answer to a request for a change that no call made (``turn._unchanged``): measured
on the multi-step check tasks, qwen1.5b answered "The files were staged" after two reads and no write, under a
prompt that said nothing had changed. ``bench/multistep.py`` counts such claims with the same test, so a claim it
misses is missed by both.
"""

from __future__ import annotations

import re

# a change said done: the past tense of the verbs a request asks for changes with
CLAIM = re.compile(
    r"\b(closed|commented|created|merged|label(?:l)?ed|updated|deleted|wrote|written|renamed|moved|committed|staged|"
    r"assigned|reopened|edited|added|checked out|switched|opened|posted|replaced|reacted)\b",
    re.IGNORECASE,
)
_JSON_OBJECT = re.compile(r"\{[^{}]*\}")  # tool data an answer quotes ("state": "closed")
_QUOTED = re.compile(r"`[^`]*`")  # tool output an answer quotes as data
# a claim denied in the 30 characters before it, within its sentence ("was not closed", "couldn't be staged")
_NEGATION = re.compile(r"\b(not|n't|never|no|unable|cannot|couldn't|didn't|wasn't|haven't)\b[^.]{0,30}$", re.IGNORECASE)


def claims_change(answer: str) -> bool:
    """Whether ``answer`` says, in its own words, in the past tense and not negated, that something was changed.
    Tool data it quotes (a JSON object, a backticked output) is not a claim."""
    prose = _JSON_OBJECT.sub(" ", _QUOTED.sub(" ", answer))
    return any(not _NEGATION.search(prose[max(0, m.start() - 40) : m.start()]) for m in CLAIM.finditer(prose))
