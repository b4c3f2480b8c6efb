"""Query normalisation before retrieval: spell out common chat abbreviations and name the kinds of entities.

Why: small embedders tokenise "PR", "gh" or "deps" into pieces that sit far from "pull request", "GitHub" or
"dependencies" in tool descriptions, and BM25 cannot match them at all. The map is general developer/office
shorthand, not derived from any evaluation set; the expansion is appended, so the original wording still counts.
"""

from __future__ import annotations

import re
from functools import lru_cache

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
_URL = re.compile(r"https?://\S+")
# an absolute, home or relative file-system path: /etc, /etc/hosts,
# ~/notes/a.md, ./src; not "owner/repo" (no leading root) and not the path part of a URL (removed first)
_PATH = re.compile(r"(?<![\w/.:])(?:~|\.{1,2})?/[\w.@-]+(?:/[\w.@-]+)*")
# a file named without a root ("README.md", "src/main.py", ".github/workflows/deploy.yml"): a source, config or
# document extension, or a conventional extension-less name. Matching is case-sensitive: ignoring case read "the
# license", "readme, topics" and "Newtonsoft.Json" in the tools' own example requests as files. "Node.js" is a library
_FILE = re.compile(
    r"(?<![\w/.:@-])(?:[\w.-]+/)*(?:[\w-]+\.(?:md|rst|txt|py|ipynb|js|mjs|ts|tsx|jsx|json|ya?ml|toml|ini|cfg|conf|lock|"
    r"go|rs|java|kt|c|cc|cpp|h|hpp|cs|rb|php|swift|sh|sql|html|css|scss|xml|csv|env|gradle)|README|LICENSE|Dockerfile|"
    r"Makefile|CHANGELOG|CONTRIBUTING)\b(?![\w/-])",
)
_LIBRARY_JS = {"node.js", "next.js", "vue.js", "nuxt.js", "three.js", "d3.js", "chart.js", "express.js", "react.js"}
_MEDIA = re.compile(r"\.(?:png|jpe?g|gif|webp|bmp|svg|mp3|wav|ogg|mp4|m4a)\b", re.IGNORECASE)


def expand_query(query: str) -> str:
    """``query`` plus the expansions of the abbreviations and entity kinds it contains (each once).

    Entity kinds: a URL, a file-system path (an image or media file, or any other), a file named without a root
    (``README.md``, ``src/main.py``) and an issue reference. A
    URL or a path says which kind of tool reads it far better than the words around it ("read
    https://… and summarise" is a fetch, not a memory lookup), yet embedders see only its pieces.
    """
    extra: list[str] = []
    text = _URL.sub(" ", query)  # "peps.python.org" is not the abbreviation "org"
    for w in _WORD.findall(text):
        exp = ABBREVIATIONS.get(w.lower())
        if exp and exp not in extra:
            extra.append(exp)
    if _ISSUE_REF.search(query):
        extra.append("issue or pull request number")
    if _URL.search(query):
        extra.append("web page URL")
    path = _PATH.search(text)
    if path:
        extra.append("image or media file path" if _MEDIA.search(path.group(0)) else "local file or directory path")
    elif any(m.group(0).lower() not in _LIBRARY_JS for m in _FILE.finditer(text)):
        extra.append("file")
    return f"{query} ({'; '.join(extra)})" if extra else query


def for_retrieval(query: str, expand: bool = True) -> str:
    """The query as retrieval sees it: :func:`expand_query`'s, or the query itself when ``expand`` is off."""
    return expand_query(query) if expand else query


# Words that point back into the conversation: "reopen it", "any similar reports in that repo?", "log a bug for
# this". Retrieval sees only the request, so with history such a request goes to the reranker, which sees the
# conversation too. A "that" used as a conjunction costs one needless escalation, not a wrong decision.
_BACK_REFERENCE = re.compile(r"\b(?:it|its|this|that|these|those|them|there)\b", re.IGNORECASE)


def refers_back(query: str) -> bool:
    """Whether ``query`` points at something said earlier (a pronoun or demonstrative)."""
    return bool(_BACK_REFERENCE.search(query))


# A request that asks to be told something ("is acme/api#12 still open?", "any open alerts in acme/web?") rather
# than asks for a change. A question mark alone is not enough: "can you close #12?" is a polite command.
_POLITE_COMMAND = re.compile(r"^(?:(?:can|could|would|will|wo?n't)\s+(?:you|u|ya)|please|pls|mind)\b", re.IGNORECASE)


def is_question(query: str) -> bool:
    """Whether ``query`` is a question about something rather than a request for a change."""
    q = query.strip()
    return q.endswith("?") and not _POLITE_COMMAND.match(q)


# a value written in quotes ("Comment 'ping' on …", "titled “Add …”"): text to write, not words of the request
QUOTED = re.compile(r"(?<!\w)(?:'[^']*'|\"[^\"]*\"|“[^”]*”|‘[^’]*’)(?!\w)")
# What :func:`masked` replaces, in this order: a quoted value (QUOTED); an ``owner/repo#N`` reference; an
# ``owner/repo`` (a lowercase first part, not a path or a file: no root before it, no slash or extension after it,
# though a full stop may end the sentence: "… off main in acme/web." had named no repository); ``#N``; a number
_MASK_REF = re.compile(r"(?<![\w./])[\w.-]+/[\w.-]+#\d+")
_MASK_REPO = re.compile(r"(?<![\w./~@-])[a-z][\w-]*/[\w-]+(?![\w/-]|\.\w)")
_MASK_HASH = re.compile(r"(?<!\w)#\d+")
_MASK_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")


# an absolute or home path ("/home/ana/notes", "~/src/shop"): :data:`_PATH` less the relative ones
_LOCAL_PATH = re.compile(r"(?<![\w/.:])~?/[\w.@-]+(?:/[\w.@-]+)*")
# the words before an ``x/y`` that make it a branch's name, not a repository's ("a branch named spike/pdf-export",
# "check out feature/csv-export", "off feature/jitter")
_BRANCH_BEFORE = re.compile(
    r"\b(?:branch(?:es)?|check\s*out|switch(?:\s+to)?|off|onto|rebase)\b(?:\W+\w+){0,2}\W*$", re.IGNORECASE
)
_BRANCH_AFTER = re.compile(r"\W*branch\b", re.IGNORECASE)  # "the draft/dark-theme branch"
# where a request puts what a branch is made in: "Make a release/0.2.0 branch in acme/api" names the repository
_IN_REPO = re.compile(r"\b(?:in|of|at|for)\s+$", re.IGNORECASE)


def names_local_path(query: str) -> bool:
    """Whether ``query`` names an absolute or home file-system path (outside a URL)."""
    return bool(_LOCAL_PATH.search(_URL.sub(" ", query)))


def names_repository(query: str) -> bool:
    """Whether ``query`` names an ``owner/repo`` (as :func:`masked` finds one: not a path or a file) that is not a
    branch's name ("create the branch feature/tax-total"). A name such as "feature/csv-export" with no "branch" before
    it still counts: the two cannot be told apart by their spelling."""
    text = _URL.sub(" ", QUOTED.sub(" ", query))
    return any(not names_branch(text, m.start(), m.end()) for m in _MASK_REPO.finditer(text))


def branches_named(query: str) -> list[str]:
    """The ``x/y``-shaped names ``query`` gives as branches' (:func:`names_branch`): "Switch … to the
    feature/csv-export branch" names feature/csv-export."""
    text = _URL.sub(" ", QUOTED.sub(" ", query))
    return [m.group() for m in _MASK_REPO.finditer(text) if names_branch(text, m.start(), m.end())]


def names_branch(text: str, start: int, end: int) -> bool:
    """Whether the ``owner/repo``-shaped name at ``text[start:end]`` is a branch's, by the words around it: after
    "branch", "check out", "switch to" … ("start a branch called feature/rate-limit"), or before "branch" ("the
    draft/dark-theme branch"); not after "in", "of", "at" or "for" ("a release/0.2.0 branch in acme/api")."""
    before = text[:start]
    if _BRANCH_AFTER.match(text[end:]):
        return True
    return bool(_BRANCH_BEFORE.search(before)) and not _IN_REPO.search(before)


# The kinds of object a request names its object by, each with the words it is named with. A tool every example
# request of which names one kind (``ExampleIndex.kinds``: ``list_issues`` issues, ``discussion_comment_write``
# discussions) is for a request naming that kind, when the request names a kind at all (``Router._of_kind``).
KINDS: dict[str, re.Pattern[str]] = {
    # not a piece of a name: "release-1.4", "bugs/42", "pr.md"
    kind: re.compile(rf"(?<![-/.\w])(?:{words})(?![-/.]?\w)", re.IGNORECASE)
    for kind, words in {
        "issue": r"issues?|bugs?|tickets?|feature requests?",
        # not the verb: "pull up the comments on …#88"
        "pull request": r"prs?|pull requests?|pulls|pull(?=\s*#\d)",
        "discussion": r"discussions?",
        "gist": r"gists?",
        "label": r"label(?:s|led|ed)?",
        "release": r"releases?",
        "milestone": r"milestones?",
        "workflow": r"workflows?",
        "project": r"projects?",
        "notification": r"notifications?",
        "team": r"teams?",
    }.items()
}


# "#N": the number an object is named by ("Add the bug label to acme/web #6"), not part of a word or an HTML entity
OBJECT_REF = re.compile(r"(?<![\w&])#(\d+)\b")


@lru_cache(maxsize=8192)  # every example request is read once per bank
def kinds_named(query: str) -> frozenset[str]:
    """The :data:`KINDS` that ``query`` names an object by, outside quotes (a quoted title or comment is a value:
    "comment 'Fixed in the PR' on issue 5" is about an issue)."""
    text = _URL.sub(" ", QUOTED.sub(" ", query))
    return frozenset(kind for kind, said in KINDS.items() if said.search(text))


@lru_cache(maxsize=8192)  # the bank's requests are masked again on every routing that reads the examples
def masked(query: str) -> str:
    """``query`` with the values that name its objects replaced by their kinds (``"…"``, ``owner/repo``, ``N``).

    Why: requests are compared with example requests to find how a tool is used, and a small embedder weighs the
    names: "add the bug label to acme/web #6" sat nearer an example that creates a label in another repository than
    to "label halyard-works/larkspur#37 as starter-task". With the names masked on both sides, the nearest example's
    first write was right on 19 of the 31 multi-step tune tasks' first writes, against 14 unmasked (MiniLM)."""
    text = QUOTED.sub('"…"', query)
    text = _MASK_REF.sub("owner/repo #N", text)
    text = _MASK_REPO.sub("owner/repo", text)
    text = _MASK_HASH.sub("#N", text)
    return _MASK_NUMBER.sub("N", text)
