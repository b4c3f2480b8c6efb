"""What the shipped example banks must hold, computed from the tool definitions, and the names they must not share
with the evaluation data.

Coverage (:func:`coverage_problems`): every tool of the server has examples (three for a tool that changes state,
two for a read), every value of an operation parameter (``method``, ``action``) three, ``issue_write`` updates three
of each kind of change, enough multi-step examples of the patterns asked for, and no two requests of the same tool
and operation are near-duplicates.

Isolation (:func:`bank_names`, :func:`forbidden_uses`): the owners, repositories, users, labels, issue and pull
request titles, file names and repository+number pairs of a bank and its worlds must not appear in the sandbox's
seed or anywhere under ``data/eval/`` (case-insensitive, as whole words), so an example never teaches the answer to
an evaluation task.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from nexus_agent.evaluation.multistep import ROOT
from nexus_agent.examples.bank import Example, ExampleCall
from nexus_agent.registry import Tool
from nexus_agent.sandbox.github.world_spec import DiscussionSpec, IssueSpec, PullSpec, World
from nexus_agent.signature import words

MIN_WRITE = 3
MIN_READ = 2
MIN_OPERATION = 3
MAX_JACCARD = 0.6
MIN_MULTI = {"github": 24, "filesystem": 6, "git": 6}
# The multi-step patterns each bank must cover (verify.pattern).
PATTERNS_NEEDED = {
    "github": {"find-then-act", "read-then-write", "find-who-then-act", "act-then-check"},
    "filesystem": {"find-then-act", "read-then-write", "act-then-check"},
    "git": {"find-then-act", "act-then-check"},
}
# The kinds of change an issue_write update makes, each of which needs MIN_OPERATION examples.
UPDATE_KINDS = ("close", "reopen", "retitle", "labels", "assignees")
OPERATION_KEYS = ("method", "action")


# ---------------------------------------------------------------------------------------------- coverage


def operation(tool: Tool) -> tuple[str, list[str]] | None:
    """The required parameter that selects what a consolidated tool does, and its values: an enum, or the
    ``- 'value' -`` options its description lists (``sub_issue_write``'s ``method`` is a plain string)."""
    props = tool.input_schema.get("properties") or {}
    for key in OPERATION_KEYS:
        if key in (tool.input_schema.get("required") or []) and key in props:
            prop = props[key]
            values = prop.get("enum") or re.findall(r"^- '(\w+)'", str(prop.get("description", "")), re.M)
            return key, [str(v) for v in values]
    return None


def update_kinds(call: ExampleCall) -> set[str]:
    """What an ``issue_write`` update changes: close, reopen, retitle, labels, assignees."""
    args = call.arguments
    if call.tool != "issue_write" or args.get("method") != "update":
        return set()
    kinds = {"close" if args.get("state") == "closed" else "reopen"} if "state" in args else set()
    return kinds | {
        k for k, arg in (("retitle", "title"), ("labels", "labels"), ("assignees", "assignees")) if arg in args
    }


def jaccard(a: str, b: str) -> float:
    wa, wb = words(a), words(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 1.0


@dataclass
class Coverage:
    """Counts of one bank: examples per tool, per (tool, operation value), per issue_write update kind."""

    tools: Counter[str] = field(default_factory=Counter)
    operations: Counter[tuple[str, str]] = field(default_factory=Counter)
    updates: Counter[str] = field(default_factory=Counter)
    multi: int = 0
    patterns: Counter[str] = field(default_factory=Counter)
    groups: dict[tuple[str, str], list[Example]] = field(default_factory=dict)


def count(examples: Iterable[Example], tools: Mapping[str, Tool]) -> Coverage:
    cov = Coverage()
    for ex in examples:
        seen: set[tuple[str, str]] = set()
        for call in ex.calls:
            op = operation(tools[call.tool]) if call.tool in tools else None
            value = call.operation(op[0]) if op else None
            seen.add((call.tool, value or ""))
            cov.updates.update(update_kinds(call))
        for tool in {t for t, _ in seen}:
            cov.tools[tool] += 1
        for key in seen:
            if key[1]:
                cov.operations[key] += 1
            cov.groups.setdefault(key, []).append(ex)
        if ex.multi_step:
            cov.multi += 1
            pattern = (ex.verify or {}).get("pattern")
            cov.patterns[str(pattern)] += 1
    return cov


def coverage_problems(server: str, examples: list[Example], tools: Mapping[str, Tool]) -> list[str]:
    """Every way ``examples`` fall short of what the bank of ``server`` must hold."""
    cov = count(examples, tools)
    problems = []
    for name, tool in sorted(tools.items()):
        need = MIN_READ if tool.read_only_hint else MIN_WRITE
        if cov.tools[name] < need:
            problems.append(f"{name}: {cov.tools[name]} examples, needs {need}")
        key, values = operation(tool) or ("", [])
        for value in values:
            if cov.operations[(name, value)] < MIN_OPERATION:
                problems.append(f"{name} {key}={value}: {cov.operations[(name, value)]} examples")
    if "issue_write" in tools:
        problems += [f"issue_write update {k}: {cov.updates[k]} examples" for k in UPDATE_KINDS if cov.updates[k] < 3]
    if cov.multi < MIN_MULTI.get(server, 0):
        problems.append(f"{cov.multi} multi-step examples, needs {MIN_MULTI[server]}")
    problems += [
        f"no multi-step example of pattern {p}" for p in sorted(PATTERNS_NEEDED.get(server, ())) if not cov.patterns[p]
    ]
    for (tool_name, value), group in sorted(cov.groups.items()):
        for a, b in itertools.combinations(group, 2):
            if (j := jaccard(a.request, b.request)) >= MAX_JACCARD:
                problems.append(f"{tool_name} {value}: {a.id} and {b.id} are near-duplicates (word Jaccard {j:.2f})")
    return problems


# ---------------------------------------------------------------------------------------------- isolation

# Argument names whose values name an owner, a repository, a user, a label, a title or a file.
_OWNER_ARGS = ("owner", "org", "organization", "item_owner")
_REPO_ARGS = ("repo", "item_repo")
_USER_ARGS = ("username", "user", "author", "assignees", "reviewers")
_NUMBER_ARGS = ("issue_number", "pullNumber", "pull_request_number", "discussionNumber")


@dataclass
class Names:
    """The names a bank and its worlds use, by kind (``owner``, ``repo``, ``user``, ``label``, ``title``, ``file``,
    ``pair``)."""

    by_kind: dict[str, set[str]] = field(default_factory=dict)

    def add(self, kind: str, *values: Any) -> None:
        for v in values:
            if isinstance(v, list | tuple | set):
                self.add(kind, *v)
            elif isinstance(v, str) and v.strip():
                self.by_kind.setdefault(kind, set()).add(v.strip())

    def __iter__(self) -> Any:
        return ((k, v) for k, vs in sorted(self.by_kind.items()) for v in sorted(vs))


def _basename(path: str) -> str:
    """A path's file name (``notes/ideas.md`` -> ``ideas.md``); empty for a folder-like name without a dot."""
    name = PurePosixPath(path.rstrip("/")).name
    return name if "." in name.strip(".") else ""


def bank_names(server: str, examples: Iterable[Example], worlds: Iterable[Mapping[str, Any]]) -> Names:
    """Every owner, repository, user, label, title, file name and repository+number pair ``examples`` of ``server``
    and their ``worlds`` use."""
    names = Names()
    for world in worlds:
        _world_names(server, world, names)
    for ex in examples:
        for call in ex.calls:
            _call_names(server, call, names)
    return names


def _world_names(server: str, world: Mapping[str, Any], names: Names) -> None:
    home = re.match(r"/home/([^/]+)", str(world.get("root", "")))
    if home:
        names.add("user", home.group(1))
    if server == "filesystem":
        names.add("file", *(_basename(p) for p in world.get("files", {})))
        return
    if server == "git":
        names.add("user", world.get("user", {}).get("name"))
        for repo, spec in world.get("repos", {}).items():
            names.add("repo", repo)
            for commit in spec.get("commits", []):
                names.add("file", *(_basename(p) for p in commit.get("files", {})))
            names.add("file", *(_basename(p) for p in [*spec.get("worktree", {}), *spec.get("staged", {})]))
        return
    w = World.model_validate(world)
    names.add("user", w.me, *(u.login for u in w.users), *(u.name for u in w.users))
    for org in w.orgs:
        names.add("owner", org.login)
        names.add("team", *(t.slug for t in org.teams))
    for repo in w.repos:
        names.add("owner", repo.owner)
        names.add("repo", repo.name)
        names.add("label", *(lb.name for lb in repo.labels))
        paths = [*repo.files, *(p for b in repo.branches for p in b.files), *(p for c in repo.commits for p in c.files)]
        names.add("file", *(_basename(p) for p in paths))
        issue_numbers, pull_numbers, discussion_numbers = repo.numbering()
        items: list[tuple[int, IssueSpec | PullSpec | DiscussionSpec]] = [
            *zip(issue_numbers, repo.issues, strict=True),
            *zip(pull_numbers, repo.pulls, strict=True),
            *zip(discussion_numbers, repo.discussions, strict=True),
        ]
        for number, item in items:
            names.add("title", item.title)
            names.add("pair", f"{repo.full_name}#{number}", f"{repo.name}#{number}")
        names.add("file", *(_basename(wf.path) for wf in repo.workflows))
    for gist in w.gists:
        names.add("file", *(_basename(f) for f in gist.files))
    names.add("title", *(p.title for p in w.projects))


def _call_names(server: str, call: ExampleCall, names: Names) -> None:
    args = call.arguments
    if server == "filesystem":
        paths = [args.get("path"), args.get("source"), args.get("destination"), *(args.get("paths") or [])]
        names.add("file", *(_basename(p) for p in paths if isinstance(p, str)))
        return
    if server == "git":
        names.add("file", *(_basename(p) for p in args.get("files") or []))
        return
    for key in _OWNER_ARGS:
        names.add("owner", args.get(key))
    for key in _REPO_ARGS:
        names.add("repo", args.get(key))
    for key in _USER_ARGS:
        names.add("user", args.get(key))
    names.add("label", args.get("labels"))
    if call.tool in ("label_write", "get_label"):
        names.add("label", args.get("name"), args.get("new_name"))
    if call.tool in ("issue_write", "create_pull_request", "update_pull_request"):
        names.add("title", args.get("title"))
    if isinstance(args.get("path"), str):
        names.add("file", _basename(args["path"]))
    names.add("file", *(_basename(f["path"]) for f in args.get("files") or [] if isinstance(f, dict) and "path" in f))
    owner, repo = args.get("owner"), args.get("repo")
    for key in _NUMBER_ARGS:
        if isinstance(owner, str) and isinstance(repo, str) and isinstance(args.get(key), int):
            names.add("pair", f"{owner}/{repo}#{args[key]}", f"{repo}#{args[key]}")


def evaluation_corpus(root: Path = ROOT) -> str:
    """The text a bank must not share names with: the sandbox's seed and everything under ``data/eval/``."""
    parts = [(root / "nexus_agent" / "sandbox" / "github" / "seed.py").read_text(encoding="utf-8")]
    parts += [
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted((root / "data" / "eval").rglob("*"))
        if p.is_file()
    ]
    return "\n".join(parts).lower()


def forbidden_uses(names: Names, corpus: str) -> list[str]:
    """``kind name`` for every name that occurs in ``corpus`` (lower-cased) as a whole word."""
    return [
        f"{kind} {name!r}"
        for kind, name in names
        if re.search(rf"(?<![\w]){re.escape(name.lower())}(?![\w])", corpus) is not None
    ]
