"""An answer's claim of a change (agent/claims.py)."""

from __future__ import annotations

import pytest

from nexus_agent.agent.claims import claims_change


@pytest.mark.parametrize(
    ("answer", "claims"),
    [
        ("The untracked files were staged.", True),
        ("I have closed issue #2 and commented on it.", True),
        ("The issue was not closed.", False),
        ("I couldn't find it, so nothing was renamed.", False),
        ('Found: {"number": 3, "state": "closed"}.', False),  # tool data, not a claim
        ("git_log returned `Commit: abc added PDF export`.", False),  # quoted output
        ("Issue #2 is about rate limiting.", False),
    ],
)
def test_a_claim_of_a_change(answer: str, claims: bool) -> None:
    assert claims_change(answer) is claims
