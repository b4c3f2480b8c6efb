"""Query expansion: chat abbreviations and entity kinds are spelled out, and nothing else is touched."""

from __future__ import annotations

import pytest

from nexus_agent.routing.query import expand_query, is_question


@pytest.mark.parametrize(
    ("query", "expansion"),
    [
        ("list PRs in acme/api", "(pull requests)"),
        ("close acme/api#12", "(issue or pull request number)"),
        ("read https://peps.python.org/pep-0703/ and summarise", "(web page URL)"),
        ("what's in /var/log", "(local file or directory path)"),
        ("open ~/notes/2025-06-12-standup.md", "(local file or directory path)"),
        ("check ./src for TODO comments", "(local file or directory path)"),
        ("look at the scan /home/dana/Downloads/receipt.PNG", "(image or media file path)"),
        ("show my repos and the env at /srv/app", "(repositories; environment; local file or directory path)"),
        ("show the README of acme/api", "(file)"),
        ("read src/main.py in acme/api", "(file)"),
        ("who last touched package.json?", "(file)"),
        ("kick off deploy.yml on main", "(file)"),
    ],
)
def test_expansions(query: str, expansion: str) -> None:
    assert expand_query(query) == f"{query} {expansion}"


@pytest.mark.parametrize(
    "query",
    [
        "what's 3/4 of 12",  # a fraction, not a path
        "merge feature/login into main",  # a branch name
        "star acme/api",  # owner/repo is no file path
        "thanks, and/or whatever works",
        "find a popular Node.js web framework",  # a library, not a file
        "tag v1.2.3 on main",  # a version, not a file
        "summarise readme-generator's issues",  # a repository name that starts like a file
    ],
)
def test_no_expansion(query: str) -> None:
    assert expand_query(query) == query


def test_a_url_is_neither_a_path_nor_a_source_of_abbreviations() -> None:
    # "peps.python.org" must not read as the abbreviation "org", nor its "/pep-0703/" as a file path
    q = "fetch https://peps.python.org/pep-0703/"
    assert expand_query(q) == f"{q} (web page URL)"


@pytest.mark.parametrize(
    ("query", "question"),
    [
        ("is acme/api#12 still open?", True),
        ("any failing runs on main in acme/web?", True),
        ("who has push access to acme/api? ", True),
        ("can you close acme/api#12?", False),  # a polite command
        ("Could u reopen it?", False),
        ("please merge #7?", False),
        ("close acme/api#12", False),
        ("what's open in acme/api", False),  # no question mark: the request is read as it is written
    ],
)
def test_is_question(query: str, question: bool) -> None:
    assert is_question(query) is question
