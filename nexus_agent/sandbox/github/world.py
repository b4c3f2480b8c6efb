"""Worlds: small JSON documents that seed a fresh sandbox instead of the acme demo data.

A world names the authenticated user (``me``), the users and organisations (with teams), and the repositories with
their files, branches, tags, labels, issues and pull requests. ``World`` is the pydantic model of the document
(unknown keys are refused; a cross-reference to something the world does not define is refused with the path of
the offending value, ``repos[0].issues[1].author``). ``seed_world(sb, world)`` builds it through the same store
and git operations the acme seed and the tools use, on the logical clock, so a world always gives the same commit
SHAs, ids and timestamps.

Issues and pull requests share one numbering per repository. Items are numbered in the order listed, issues
first; an item without ``number`` takes the lowest number that no explicit ``number`` of the repository claims and
no earlier item took. They are created in number order, so creation times rise with the numbers, as on GitHub.

``world_hash`` is what ``open_sandbox`` records in the database (``meta.world``), so a data directory seeded with
one world is never silently served as another.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from nexus_agent.sandbox.github.context import Sandbox, ToolError
from nexus_agent.sandbox.github.gitrepo import ZERO_SHA, GitError
from nexus_agent.sandbox.github.handlers.pulls import freeze_pull, merge_pull, open_pull
from nexus_agent.sandbox.github.handlers.repos import commit_files, create_repo
from nexus_agent.sandbox.github.seed import SEED_VERSION
from nexus_agent.sandbox.github.store import Issue, NotFound, Repo

# GitHub's rule for account names: alphanumerics and single hyphens, at most 39 characters.
LOGIN_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$"
HEX_COLOR = r"^[0-9a-fA-F]{6}$"


class WorldError(ValueError):
    """A world that validated but cannot be built (e.g. a pull request whose head has no new commits)."""


class Spec(BaseModel):
    """Base of every world object: unknown keys are an error, so a typo never silently drops data."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


# -- accounts ---------------------------------------------------------------------------------------


class UserSpec(Spec):
    login: str = Field(pattern=LOGIN_PATTERN)
    name: str = ""
    email: str = ""
    bio: str = ""
    company: str = ""
    location: str = ""
    blog: str = ""


class TeamSpec(Spec):
    slug: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    name: str = ""  # default: the slug
    description: str = ""
    members: list[str] = Field(default_factory=list)


class OrgSpec(Spec):
    login: str = Field(pattern=LOGIN_PATTERN)
    name: str = ""
    email: str = ""
    description: str = ""
    location: str = ""
    blog: str = ""
    members: list[str] = Field(default_factory=list)
    admins: list[str] = Field(default_factory=list)  # members with the admin role (listing them in members too is fine)
    teams: list[TeamSpec] = Field(default_factory=list)


# -- repository content -----------------------------------------------------------------------------


class BranchSpec(Spec):
    """A branch made from ``from`` (default: the repository's default branch), then ``files`` committed on it."""

    name: str = Field(min_length=1)
    from_: str | None = Field(default=None, alias="from")
    files: dict[str, str] = Field(default_factory=dict)
    message: str = ""  # default: "Update <branch>"
    author: str | None = None  # default: me


class CommitSpec(Spec):
    """One more commit: ``files`` maps a path to its new content, or to null to delete it."""

    branch: str | None = None  # default: the repository's default branch
    files: dict[str, str | None] = Field(min_length=1)
    message: str = Field(min_length=1)
    author: str | None = None


class TagSpec(Spec):
    name: str = Field(min_length=1)
    ref: str | None = None  # a branch or an earlier tag; default: the default branch
    message: str | None = None  # an annotated tag's message; default: the tag name
    lightweight: bool = False


class LabelSpec(Spec):
    name: str = Field(min_length=1)
    color: str = Field(default="ededed", pattern=HEX_COLOR)
    description: str = ""


class IssueSpec(Spec):
    number: int | None = Field(default=None, ge=1)
    title: str = Field(min_length=1)
    body: str = ""
    author: str | None = None  # default: me
    labels: list[str] = Field(default_factory=list)
    assignees: list[str] = Field(default_factory=list)
    state: Literal["open", "closed"] = "open"
    state_reason: Literal["completed", "not_planned", "duplicate"] | None = None  # closed only; default completed
    closed_by: str | None = None  # default: the author
    comments: list[tuple[str, str]] = Field(default_factory=list)  # (author, text)


class PullSpec(Spec):
    number: int | None = Field(default=None, ge=1)
    title: str = Field(min_length=1)
    body: str = ""
    author: str | None = None  # default: me
    head: str = Field(min_length=1)
    base: str | None = None  # default: the repository's default branch
    draft: bool = False
    reviewers: list[str] = Field(default_factory=list)  # logins or "org/team-slug"
    labels: list[str] = Field(default_factory=list)
    assignees: list[str] = Field(default_factory=list)
    state: Literal["open", "closed", "merged"] = "open"
    merge_method: Literal["merge", "squash", "rebase"] = "merge"  # when state is "merged" (merged by me)
    comments: list[tuple[str, str]] = Field(default_factory=list)


class RepoSpec(Spec):
    owner: str
    name: str = Field(pattern=r"^[A-Za-z0-9._-]{1,100}$")
    description: str = ""
    private: bool = False
    language: str = ""
    topics: list[str] = Field(default_factory=list)
    stars: int = Field(default=0, ge=0)  # stargazers the world does not name
    default_branch: str = "main"
    archived: bool = False
    files: dict[str, str] = Field(default_factory=dict)  # the first commit on the default branch
    message: str = "Initial commit"
    author: str | None = None  # of the first commit; default: me
    commits: list[CommitSpec] = Field(default_factory=list)  # made after the branches exist, in order
    branches: list[BranchSpec] = Field(default_factory=list)
    tags: list[TagSpec] = Field(default_factory=list)
    labels: list[LabelSpec] = Field(default_factory=list)
    issues: list[IssueSpec] = Field(default_factory=list)
    pulls: list[PullSpec] = Field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def numbering(self) -> tuple[list[int], list[int]]:
        """The numbers of ``issues`` and of ``pulls`` (see the module docstring)."""
        given: list[int | None] = [x.number for x in self.issues] + [x.number for x in self.pulls]
        claimed = {n for n in given if n is not None}
        taken: set[int] = set()
        out: list[int] = []
        candidate = 1
        for number in given:
            if number is not None:
                out.append(number)
                continue
            while candidate in claimed or candidate in taken:
                candidate += 1
            taken.add(candidate)
            out.append(candidate)
        return out[: len(self.issues)], out[len(self.issues) :]


class World(Spec):
    """A whole sandbox: who "me" is, the accounts, the repositories."""

    name: str = ""  # what the world is for (documentation only)
    description: str = ""
    me: str
    users: list[UserSpec] = Field(min_length=1)
    orgs: list[OrgSpec] = Field(default_factory=list)
    repos: list[RepoSpec] = Field(default_factory=list)

    @model_validator(mode="after")
    def _references(self) -> World:
        problems = list(_check(self))
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def user_logins(self) -> set[str]:
        return {u.login.lower() for u in self.users}

    def org_logins(self) -> set[str]:
        return {o.login.lower() for o in self.orgs}


# -- validation -------------------------------------------------------------------------------------


def _check(w: World) -> Iterator[str]:
    """Every cross-reference the world makes, as ``path: problem`` strings."""
    users, orgs = w.user_logins(), w.org_logins()
    seen: set[str] = set()
    accounts = [(f"users[{i}]", u.login) for i, u in enumerate(w.users)]
    accounts += [(f"orgs[{i}]", o.login) for i, o in enumerate(w.orgs)]
    for path, login in accounts:
        if login.lower() in seen:
            yield f"{path}.login: {login!r} is defined twice"
        seen.add(login.lower())
    if w.me.lower() not in users:
        yield f"me: {w.me!r} is not one of the users"

    def user(path: str, login: str | None) -> Iterator[str]:
        if login is not None and login.lower() not in users:
            yield f"{path}: user {login!r} is not defined in users"

    teams = {(o.login.lower(), t.slug) for o in w.orgs for t in o.teams}
    for i, org in enumerate(w.orgs):
        for key in ("members", "admins"):
            for j, login in enumerate(getattr(org, key)):
                yield from user(f"orgs[{i}].{key}[{j}]", login)
        slugs: set[str] = set()
        for j, team in enumerate(org.teams):
            if team.slug in slugs:
                yield f"orgs[{i}].teams[{j}].slug: {team.slug!r} is defined twice"
            slugs.add(team.slug)
            for k, login in enumerate(team.members):
                yield from user(f"orgs[{i}].teams[{j}].members[{k}]", login)

    names: set[str] = set()
    for i, repo in enumerate(w.repos):
        p = f"repos[{i}]"
        if repo.owner.lower() not in users | orgs:
            yield f"{p}.owner: {repo.owner!r} is neither a user nor an organisation of the world"
        if repo.full_name.lower() in names:
            yield f"{p}: repository {repo.full_name} is defined twice"
        names.add(repo.full_name.lower())
        yield from user(f"{p}.author", repo.author)
        yield from _check_git(p, repo, user)
        labels = {lb.name.lower() for lb in repo.labels}
        if len(labels) != len(repo.labels):
            yield f"{p}.labels: a label name is defined twice"
        issue_numbers, pull_numbers = repo.numbering()
        numbers = issue_numbers + pull_numbers
        if len(set(numbers)) != len(numbers):
            yield f"{p}: two issues or pull requests have the same number"
        items: list[tuple[str, IssueSpec | PullSpec]] = [(f"{p}.issues[{j}]", x) for j, x in enumerate(repo.issues)]
        items += [(f"{p}.pulls[{j}]", x) for j, x in enumerate(repo.pulls)]
        for ip, item in items:
            yield from user(f"{ip}.author", item.author)
            for k, name in enumerate(item.labels):
                if name.lower() not in labels:
                    yield f"{ip}.labels[{k}]: label {name!r} is not defined in {p}.labels"
            for k, login in enumerate(item.assignees):
                yield from user(f"{ip}.assignees[{k}]", login)
            for k, (login, _text) in enumerate(item.comments):
                yield from user(f"{ip}.comments[{k}][0]", login)
        for j, issue in enumerate(repo.issues):
            yield from user(f"{p}.issues[{j}].closed_by", issue.closed_by)
        branches = {repo.default_branch} | {b.name for b in repo.branches}
        for j, pull in enumerate(repo.pulls):
            pp = f"{p}.pulls[{j}]"
            for ref, key in ((pull.head, "head"), (pull.base or repo.default_branch, "base")):
                if ref not in branches:
                    yield f"{pp}.{key}: branch {ref!r} is not defined in {p}.branches"
            for k, r in enumerate(pull.reviewers):
                if "/" in r:
                    team_org, _, slug = r.partition("/")
                    if (team_org.lower(), slug) not in teams:
                        yield f"{pp}.reviewers[{k}]: team {r!r} is not defined in orgs"
                else:
                    yield from user(f"{pp}.reviewers[{k}]", r)


def _check_git(p: str, repo: RepoSpec, user: Callable[[str, str | None], Iterator[str]]) -> Iterator[str]:
    """Branches, commits and tags must name refs that exist by the time they are made."""
    refs = {repo.default_branch} if repo.files else set()
    if not repo.files and (repo.branches or repo.tags or repo.commits or repo.pulls):
        yield f"{p}.files: a repository with branches, commits, tags or pull requests needs files for its first commit"
    for j, b in enumerate(repo.branches):
        source = b.from_ or repo.default_branch
        if b.name in refs:
            yield f"{p}.branches[{j}].name: branch {b.name!r} is defined twice"
        elif repo.files and source not in refs:
            yield f"{p}.branches[{j}].from: {source!r} is not the default branch or an earlier branch"
        refs.add(b.name)
        yield from user(f"{p}.branches[{j}].author", b.author)
    for j, c in enumerate(repo.commits):
        if repo.files and (c.branch or repo.default_branch) not in refs:
            yield f"{p}.commits[{j}].branch: branch {c.branch!r} is not defined in {p}.branches"
        yield from user(f"{p}.commits[{j}].author", c.author)
    tags: set[str] = set()
    for j, t in enumerate(repo.tags):
        if t.name in tags:
            yield f"{p}.tags[{j}].name: tag {t.name!r} is defined twice"
        if repo.files and (t.ref or repo.default_branch) not in refs | tags:
            yield f"{p}.tags[{j}].ref: {t.ref!r} is not a branch or an earlier tag of {p}"
        tags.add(t.name)


# -- loading and identity ---------------------------------------------------------------------------


def load_world(path: Path) -> World:
    """Read and validate a world file; a pydantic ``ValidationError`` (a ``ValueError``) names what is wrong."""
    return World.model_validate_json(path.read_text(encoding="utf-8"))


def world_hash(world: World) -> str:
    """A short digest of the world's canonical JSON (every field, defaults included): what ``meta.world`` holds."""
    canonical = json.dumps(world.model_dump(mode="json", by_alias=True), sort_keys=True, separators=(",", ":"))
    return "world:" + hashlib.sha256(canonical.encode()).hexdigest()[:16]


# -- seeding ----------------------------------------------------------------------------------------


@contextmanager
def _at(path: str) -> Iterator[None]:
    """Re-raise a failure of the operations below as a WorldError that names the world path being built."""
    try:
        yield
    except (ToolError, GitError, NotFound) as e:
        raise WorldError(f"{path}: {e}") from e


def seed_world(sb: Sandbox, world: World) -> None:
    """Fill an empty sandbox with ``world``, in one transaction. Deterministic: no randomness, logical clock."""
    with sb.store.transaction():
        _seed(sb, world)
        sb.store.set_meta("world", world_hash(world))
        sb.store.set_meta("seed_version", SEED_VERSION)


def _seed(sb: Sandbox, w: World) -> None:
    st = sb.store
    for u in w.users:
        st.add_user(u.login, name=u.name, email=u.email, bio=u.bio, company=u.company, location=u.location, blog=u.blog)
    st.set_meta("me", next(u.login for u in w.users if u.login.lower() == w.me.lower()))
    for o in w.orgs:
        st.add_user(
            o.login,
            kind="Organization",
            name=o.name,
            email=o.email,
            bio=o.description,
            location=o.location,
            blog=o.blog,
        )
        admins = {a.lower() for a in o.admins}
        for login in dict.fromkeys([*o.admins, *o.members]):
            st.add_org_member(o.login, login, "admin" if login.lower() in admins else "member")
        for t in o.teams:
            st.add_team(o.login, t.slug, t.name or t.slug, t.description, t.members)
    for i, spec in enumerate(w.repos):
        _seed_repo(sb, w, spec, f"repos[{i}]")


def _seed_repo(sb: Sandbox, w: World, spec: RepoSpec, p: str) -> Repo:
    st = sb.store
    with _at(p):
        repo, git = create_repo(
            sb,
            spec.owner,
            spec.name,
            description=spec.description,
            private=spec.private,
            language=spec.language,
            topics=tuple(spec.topics),
            stars=spec.stars,
            default_branch=spec.default_branch,
        )
    if spec.files:
        files: dict[str, bytes | None] = {k: v.encode() for k, v in spec.files.items()}
        with _at(f"{p}.files"):
            commit_files(sb, repo, spec.default_branch, files, spec.message, spec.author or w.me)
    for j, b in enumerate(spec.branches):
        with _at(f"{p}.branches[{j}]"):
            source = git.resolve(f"refs/heads/{b.from_ or spec.default_branch}")
            assert source is not None  # validated: the source branch exists
            git.set_ref(f"refs/heads/{b.name}", source, ZERO_SHA)
            if b.files:
                changes: dict[str, bytes | None] = {k: v.encode() for k, v in b.files.items()}
                commit_files(sb, repo, b.name, changes, b.message or f"Update {b.name}", b.author or w.me)
    for j, c in enumerate(spec.commits):
        with _at(f"{p}.commits[{j}]"):
            changes = {k: None if v is None else v.encode() for k, v in c.files.items()}
            commit_files(sb, repo, c.branch or spec.default_branch, changes, c.message, c.author or w.me)
    for j, t in enumerate(spec.tags):
        with _at(f"{p}.tags[{j}]"):
            ref = t.ref or spec.default_branch
            sha = git.resolve(f"refs/heads/{ref}") or git.resolve(f"refs/tags/{ref}")
            assert sha is not None  # validated
            if t.lightweight:
                git.set_ref(f"refs/tags/{t.name}", sha, ZERO_SHA)
            else:
                git.tag(t.name, sha, t.message if t.message is not None else t.name, sb.signature(w.me))
    for lb in spec.labels:
        st.add_label(repo.id, lb.name, lb.color.lower(), lb.description)
    if spec.archived:
        st.set_archived(repo.id, True)
    _seed_items(sb, w, spec, repo, p)
    return st.repo(repo.owner, repo.name)


def _seed_items(sb: Sandbox, w: World, spec: RepoSpec, repo: Repo, p: str) -> None:
    """Issues and pull requests, created in number order (see the module docstring)."""
    st = sb.store
    issue_numbers, pull_numbers = spec.numbering()
    order: list[tuple[int, str, IssueSpec | PullSpec]] = [
        *((n, f"{p}.issues[{j}]", x) for j, (n, x) in enumerate(zip(issue_numbers, spec.issues, strict=True))),
        *((n, f"{p}.pulls[{j}]", x) for j, (n, x) in enumerate(zip(pull_numbers, spec.pulls, strict=True))),
    ]
    for number, path, item in sorted(order, key=lambda t: t[0]):
        with _at(path):
            author = item.author or w.me
            if isinstance(item, PullSpec):
                issue = open_pull(
                    sb,
                    repo,
                    title=item.title,
                    body=item.body,
                    head=item.head,
                    base=item.base or spec.default_branch,
                    author=author,
                    draft=item.draft,
                    reviewers=item.reviewers,
                    number=number,
                )
            else:
                issue = st.create_issue(repo.id, title=item.title, body=item.body, author=author, number=number)
            st.set_issue_labels(issue.id, [st.label(repo.id, name).id for name in item.labels])
            st.set_assignees(issue.id, [st.user(a).login for a in item.assignees])
            for who, text in item.comments:
                st.add_comment(issue.id, st.user(who).login, text)
            if isinstance(item, PullSpec):
                _finish_pull(sb, repo, st.issue(repo.id, number), item, author)
            elif item.state == "closed":
                st.update_issue(
                    issue.id,
                    state="closed",
                    state_reason=item.state_reason or "completed",
                    closed_at=st.now(),
                    closed_by=item.closed_by or author,
                )


def _finish_pull(sb: Sandbox, repo: Repo, issue: Issue, spec: PullSpec, author: str) -> None:
    if spec.state == "merged":
        merge_pull(sb, repo, issue.number, spec.merge_method, None, None)
    elif spec.state == "closed":
        assert issue.pull is not None
        freeze_pull(sb, sb.git(repo), issue, issue.pull)
        st = sb.store
        st.update_issue(issue.id, state="closed", state_reason="", closed_at=st.now(), closed_by=author)
