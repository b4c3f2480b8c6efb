"""Query normalisation before retrieval: spell out common chat abbreviations.

Why: small embedders tokenise "PR", "gh" or "deps" into pieces that sit far from "pull request", "GitHub" or
"dependencies" in tool descriptions, and BM25 cannot match them at all. The map is general developer/office
shorthand, not derived from any evaluation set; the expansion is appended, so the original wording still counts.
"""

from __future__ import annotations

import re

ABBREVIATIONS: dict[str, str] = {
    "pr": "pull request",
    "prs": "pull requests",
    "mr": "merge request",
    "mrs": "merge requests",
    "repo": "repository",
    "repos": "repositories",
    "gh": "github",
    "deps": "dependencies",
    "dep": "dependency",
    "vuln": "vulnerability",
    "vulns": "vulnerabilities",
    "cve": "security advisory vulnerability",
    "ci": "continuous integration workflow",
    "msg": "message",
    "msgs": "messages",
    "dm": "direct message",
    "env": "environment",
    "dir": "directory",
    "dirs": "directories",
    "cfg": "config",
    "db": "database",
    "lgtm": "approve",
    "wip": "work in progress draft",
    "pls": "please",
    "org": "organization",
    "orgs": "organizations",
}
_WORD = re.compile(r"[A-Za-z]+")
_ISSUE_REF = re.compile(r"[\w.-]+/[\w.-]+#\d+|(?<!\w)#\d+")


def expand_query(query: str) -> str:
    """``query`` plus the expansions of the abbreviations it contains (each once)."""
    extra: list[str] = []
    for w in _WORD.findall(query):
        exp = ABBREVIATIONS.get(w.lower())
        if exp and exp not in extra:
            extra.append(exp)
    if _ISSUE_REF.search(query):
        extra.append("issue or pull request number")
    return f"{query} ({'; '.join(extra)})" if extra else query
