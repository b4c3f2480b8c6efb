"""The world document: pydantic models of a world file and the checks of its cross-references.

``World`` is the whole document. Every object refuses unknown keys, and ``World`` checks that everything a world
names exists in it (users, labels, branches, issue numbers, categories, fields ...), reporting each problem with
the path of the offending value (``repos[0].issues[1].author: user 'x' is not defined in users``). Building a world
into a sandbox is ``world.py``'s job; what can only be known while building (a pull request whose head has no new
commits, a review comment on a line outside the diff) is reported there, with the same kind of path.

Numbering, as ``world.py`` builds it:
- issues, pull requests and discussions share one sequence per repository; items are taken in the order issues,
  pulls, discussions, and an item without ``number`` gets the lowest number no explicit ``number`` claims and no
  earlier item took (:meth:`RepoSpec.numbering`);
- alerts are numbered per repository and kind, in order, unless given a ``number``;
- projects are numbered per owner in the order listed;
- workflow runs, jobs, gists, notifications ... get ids 1, 2, 3 ... in the order the world lists them (repositories
  in order, and within a repository its workflows' runs in order), so a world's author knows them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# GitHub's rule for account names: alphanumerics and single hyphens, at most 39 characters.
LOGIN_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$"
HEX_COLOR = r"^[0-9a-fA-F]{6}$"
DATE = r"^\d{4}-\d{2}-\d{2}$"
TIMESTAMP = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"
GHSA_PATTERN = r"^GHSA(-[0-9a-z]{4}){3}$"
# Bumped when the meaning of a world document changes, so data dirs seeded under the old meaning are not reused.
WORLD_FORMAT = 1

Severity = Literal["critical", "high", "medium", "low"]
RunStatus = Literal["queued", "in_progress", "completed", "waiting", "requested", "pending"]
Conclusion = Literal["success", "failure", "cancelled", "skipped", "neutral", "timed_out", "action_required"]


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


class IssueTypeSpec(Spec):
    name: str = Field(min_length=1)
    description: str = ""
    color: str = "gray"  # GitHub's issue type colours: gray, blue, green, yellow, orange, red, pink, purple


class OptionSpec(Spec):
    """A single-select option (issue fields, project fields); a bare string is the same as ``{"name": s}``."""

    name: str = Field(min_length=1)
    color: str = "GRAY"
    description: str = ""


class IssueFieldSpec(Spec):
    name: str = Field(min_length=1)
    type: Literal["text", "number", "date", "single_select"]
    description: str = ""
    options: list[str | OptionSpec] = Field(default_factory=list)  # single_select only

    def option_names(self) -> list[str]:
        return [o if isinstance(o, str) else o.name for o in self.options]


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
    issue_types: list[IssueTypeSpec] = Field(default_factory=list)
    issue_fields: list[IssueFieldSpec] = Field(default_factory=list)


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
    type: str | None = None  # an issue type of the owning organisation
    fields: dict[str, str | int | float] = Field(default_factory=dict)  # issue field name -> value (option name)
    sub_issues: list[int] = Field(default_factory=list)  # numbers of issues of the same repository, in order


class ReviewCommentSpec(Spec):
    """A review thread: its first comment, on ``line`` of ``path`` in the diff (a file comment without ``line``),
    and replies."""

    path: str = Field(min_length=1)
    line: int | None = Field(default=None, ge=1)
    side: Literal["LEFT", "RIGHT"] = "RIGHT"
    start_line: int | None = Field(default=None, ge=1)
    body: str = Field(min_length=1)
    replies: list[tuple[str, str]] = Field(default_factory=list)  # (author, text)
    resolved: bool = False


class ReviewSpec(Spec):
    author: str
    state: Literal["APPROVED", "CHANGES_REQUESTED", "COMMENTED", "PENDING"]
    body: str = ""
    comments: list[ReviewCommentSpec] = Field(default_factory=list)


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
    reviews: list[ReviewSpec] = Field(default_factory=list)  # made before the pull request is merged or closed


class CollaboratorSpec(Spec):
    login: str
    permission: Literal["read", "triage", "write", "maintain", "admin"] = "write"


class ReleaseSpec(Spec):
    """A release of ``tag``; a published release creates a missing tag on ``target`` (default branch)."""

    tag: str = Field(min_length=1)
    name: str = ""
    body: str = ""
    author: str | None = None
    target: str | None = None
    draft: bool = False
    prerelease: bool = False


class StepSpec(Spec):
    name: str = Field(min_length=1)
    # Default: the job's, or success when another step of the job names how it ended (the step that failed).
    conclusion: Conclusion | None = None


class JobSpec(Spec):
    name: str = Field(min_length=1)
    status: RunStatus | None = None  # default: the run's
    conclusion: Conclusion | None = None  # default: the run's
    steps: list[str | StepSpec] = Field(default_factory=list)
    log: str = ""  # default: a log made from the steps


class ArtifactSpec(Spec):
    name: str = Field(min_length=1)
    size: int = Field(default=1024, ge=0)
    expired: bool = False


class RunSpec(Spec):
    event: str = "push"
    branch: str | None = None  # default: the default branch; the run is on its head commit
    status: RunStatus = "completed"
    conclusion: Conclusion | None = None  # default: success when completed
    actor: str | None = None  # default: me
    title: str | None = None  # default: the head commit's subject
    jobs: list[JobSpec] = Field(default_factory=list)  # default: one job "build"
    artifacts: list[ArtifactSpec] = Field(default_factory=list)


class WorkflowSpec(Spec):
    """A workflow: its file (``content``, or a small generated one with the runs' jobs, committed with the
    repository's first commit when the path is not in ``files``) and its runs."""

    name: str = Field(min_length=1)
    path: str = Field(pattern=r"^\.github/workflows/[^/]+\.ya?ml$")
    state: Literal["active", "disabled_manually", "disabled_inactivity"] = "active"
    dispatch: bool = True  # whether the generated file has a workflow_dispatch trigger
    content: str | None = None
    runs: list[RunSpec] = Field(default_factory=list)


class CategorySpec(Spec):
    name: str = Field(min_length=1)
    emoji: str = ""
    description: str = ""
    answerable: bool = False  # a Q&A category: its discussions can have an answer


class DiscussionCommentSpec(Spec):
    author: str
    body: str = Field(min_length=1)
    answer: bool = False
    replies: list[tuple[str, str]] = Field(default_factory=list)  # (author, text)


class DiscussionSpec(Spec):
    number: int | None = Field(default=None, ge=1)
    title: str = Field(min_length=1)
    body: str = ""
    author: str | None = None
    category: str = "General"
    closed: bool = False
    comments: list[DiscussionCommentSpec] = Field(default_factory=list)


class CodeScanningAlertSpec(Spec):
    number: int | None = Field(default=None, ge=1)
    rule_id: str = Field(min_length=1)
    description: str = ""
    severity: Literal["error", "warning", "note"] = "warning"
    security_severity: Severity | None = None
    tool: str = "CodeQL"
    state: Literal["open", "dismissed", "fixed"] = "open"
    ref: str | None = None  # default: refs/heads/<default branch>
    path: str = Field(min_length=1)
    start_line: int = Field(default=1, ge=1)
    end_line: int | None = None
    message: str = ""
    dismissed_reason: Literal["false positive", "won't fix", "used in tests"] | None = None


class DependabotAlertSpec(Spec):
    number: int | None = Field(default=None, ge=1)
    package: str = Field(min_length=1)
    ecosystem: str = "pip"
    manifest_path: str = "requirements.txt"
    severity: Severity = "high"
    ghsa_id: str = Field(pattern=GHSA_PATTERN)
    cve_id: str = ""
    summary: str = Field(min_length=1)
    vulnerable_version_range: str = ""
    patched_version: str = ""
    state: Literal["open", "fixed", "dismissed", "auto_dismissed"] = "open"
    dismissed_reason: Literal["fix_started", "inaccurate", "no_bandwidth", "not_used", "tolerable_risk"] | None = None


class SecretAlertSpec(Spec):
    number: int | None = Field(default=None, ge=1)
    secret_type: str = Field(min_length=1)
    display_name: str = ""  # default: the secret type
    secret: str = Field(min_length=1)
    state: Literal["open", "resolved"] = "open"
    resolution: (
        Literal["false_positive", "wont_fix", "revoked", "pattern_edited", "pattern_deleted", "used_in_tests"] | None
    ) = None
    path: str = Field(min_length=1)
    line: int = Field(default=1, ge=1)
    validity: Literal["active", "inactive", "unknown"] = "unknown"


class CodeQualitySpec(Spec):
    number: int | None = Field(default=None, ge=1)
    rule_id: str = Field(min_length=1)
    category: str = ""
    severity: Literal["error", "warning", "note"] = "warning"
    path: str = Field(min_length=1)
    start_line: int = Field(default=1, ge=1)
    end_line: int | None = None
    message: str = Field(min_length=1)
    state: Literal["open", "dismissed", "fixed"] = "open"


class VulnerabilitySpec(Spec):
    ecosystem: str
    package: str
    vulnerable_version_range: str = ""
    patched_versions: str = ""


class RepoAdvisorySpec(Spec):
    ghsa_id: str = Field(pattern=GHSA_PATTERN)
    cve_id: str = ""
    summary: str = Field(min_length=1)
    description: str = ""
    severity: Severity = "medium"
    state: Literal["triage", "draft", "published", "closed"] = "draft"
    author: str | None = None
    vulnerabilities: list[VulnerabilitySpec] = Field(default_factory=list)
    cwes: list[str] = Field(default_factory=list)  # "CWE-79"


class RepoSpec(Spec):
    owner: str
    name: str = Field(pattern=r"^[A-Za-z0-9._-]{1,100}$")
    description: str = ""
    private: bool = False
    language: str = ""
    topics: list[str] = Field(default_factory=list)
    stars: int = Field(default=0, ge=0)  # stargazers the world does not name (stargazers add to it)
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
    collaborators: list[CollaboratorSpec] = Field(default_factory=list)
    stargazers: list[str] = Field(default_factory=list)
    watch: Literal["watching", "ignoring"] | None = None  # the authenticated user's subscription
    copilot: bool = True  # whether Copilot can be assigned and asked for reviews
    releases: list[ReleaseSpec] = Field(default_factory=list)
    workflows: list[WorkflowSpec] = Field(default_factory=list)
    has_discussions: bool | None = None  # default: on when categories or discussions are given
    discussion_categories: list[CategorySpec] = Field(default_factory=list)  # default: GitHub's six
    discussions: list[DiscussionSpec] = Field(default_factory=list)
    code_scanning_alerts: list[CodeScanningAlertSpec] = Field(default_factory=list)
    dependabot_alerts: list[DependabotAlertSpec] = Field(default_factory=list)
    secret_scanning_alerts: list[SecretAlertSpec] = Field(default_factory=list)
    code_quality_findings: list[CodeQualitySpec] = Field(default_factory=list)
    security_advisories: list[RepoAdvisorySpec] = Field(default_factory=list)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def discussions_on(self) -> bool:
        if self.has_discussions is not None:
            return self.has_discussions
        return bool(self.discussion_categories or self.discussions)

    def numbering(self) -> tuple[list[int], list[int], list[int]]:
        """The numbers of ``issues``, ``pulls`` and ``discussions`` (see the module docstring)."""
        groups: list[list[int | None]] = [
            [x.number for x in self.issues],
            [x.number for x in self.pulls],
            [x.number for x in self.discussions],
        ]
        given = [n for g in groups for n in g]
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
        a, b = len(self.issues), len(self.issues) + len(self.pulls)
        return out[:a], out[a:b], out[b:]


# -- account-level objects --------------------------------------------------------------------------


class GistSpec(Spec):
    id: str | None = Field(default=None, pattern=r"^[0-9a-f]{20,32}$")  # default: derived from the order
    owner: str | None = None  # default: me
    description: str = ""
    public: bool = False
    files: dict[str, str] = Field(min_length=1)


class IterationSpec(Spec):
    title: str = Field(min_length=1)
    start_date: str = Field(pattern=DATE)
    duration: int = Field(ge=1)  # days


class ProjectFieldSpec(Spec):
    name: str = Field(min_length=1)
    type: Literal["text", "number", "date", "single_select", "iteration"]
    options: list[str | OptionSpec] = Field(default_factory=list)  # single_select
    iterations: list[IterationSpec] = Field(default_factory=list)  # iteration

    def option_names(self) -> list[str]:
        return [o if isinstance(o, str) else o.name for o in self.options]


class ProjectItemSpec(Spec):
    """An issue or pull request (``repo`` + ``number``), or a draft issue (``draft_title``), with field values by
    field name (a single-select value is the option's name, an iteration value its title)."""

    repo: str | None = None  # "owner/name"
    number: int | None = Field(default=None, ge=1)
    draft_title: str | None = None
    draft_body: str = ""
    values: dict[str, str | int | float] = Field(default_factory=dict)
    archived: bool = False


class ProjectViewSpec(Spec):
    name: str = Field(min_length=1)
    layout: Literal["table", "board", "roadmap"] = "table"
    filter: str = ""
    visible_fields: list[str] = Field(default_factory=list)  # field names


class StatusUpdateSpec(Spec):
    body: str = ""
    status: Literal["INACTIVE", "ON_TRACK", "AT_RISK", "OFF_TRACK", "COMPLETE"] | None = None
    start_date: str | None = Field(default=None, pattern=DATE)
    target_date: str | None = Field(default=None, pattern=DATE)
    author: str | None = None


class ProjectSpec(Spec):
    """A project of a user or organisation, numbered per owner in order, with GitHub's built-in fields (Status's
    options are Todo, In Progress, Done unless ``status_options`` says otherwise) plus ``fields``."""

    owner: str
    title: str = Field(min_length=1)
    short_description: str = ""
    readme: str = ""
    public: bool = False
    closed: bool = False
    creator: str | None = None  # default: me
    status_options: list[str] | None = None
    fields: list[ProjectFieldSpec] = Field(default_factory=list)
    items: list[ProjectItemSpec] = Field(default_factory=list)
    views: list[ProjectViewSpec] = Field(default_factory=list)  # after the default "View 1"
    status_updates: list[StatusUpdateSpec] = Field(default_factory=list)


class NotificationSpec(Spec):
    """A notification thread of the authenticated user about an issue, pull request or discussion (``number``), a
    release (``tag``), or anything else (``title``)."""

    repo: str  # "owner/name"
    type: Literal[
        "Issue", "PullRequest", "Release", "Discussion", "CheckSuite", "Commit", "RepositoryVulnerabilityAlert"
    ]
    number: int | None = Field(default=None, ge=1)
    tag: str | None = None
    title: str | None = None  # default: the subject's title
    reason: Literal[
        "assign",
        "author",
        "comment",
        "ci_activity",
        "invitation",
        "manual",
        "mention",
        "review_requested",
        "security_alert",
        "state_change",
        "subscribed",
        "team_mention",
    ] = "subscribed"
    unread: bool = True


class GlobalAdvisorySpec(Spec):
    ghsa_id: str = Field(pattern=GHSA_PATTERN)
    cve_id: str = ""
    summary: str = Field(min_length=1)
    description: str = ""
    severity: Literal["unknown", "low", "medium", "high", "critical"] = "medium"
    type: Literal["reviewed", "malware", "unreviewed"] = "reviewed"
    vulnerabilities: list[VulnerabilitySpec] = Field(default_factory=list)
    cwes: list[str] = Field(default_factory=list)
    published_at: str | None = Field(default=None, pattern=TIMESTAMP)  # default: the logical clock
    updated_at: str | None = Field(default=None, pattern=TIMESTAMP)
    withdrawn_at: str | None = Field(default=None, pattern=TIMESTAMP)


class World(Spec):
    """A whole sandbox: who "me" is, the accounts, the repositories, and what belongs to accounts."""

    name: str = ""  # what the world is for (documentation only)
    description: str = ""
    me: str
    users: list[UserSpec] = Field(min_length=1)
    orgs: list[OrgSpec] = Field(default_factory=list)
    repos: list[RepoSpec] = Field(default_factory=list)
    gists: list[GistSpec] = Field(default_factory=list)
    projects: list[ProjectSpec] = Field(default_factory=list)
    notifications: list[NotificationSpec] = Field(default_factory=list)
    advisories: list[GlobalAdvisorySpec] = Field(default_factory=list)  # the global advisory database

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

    def repo(self, full_name: str) -> RepoSpec | None:
        return next((r for r in self.repos if r.full_name.lower() == full_name.lower()), None)

    def org(self, login: str) -> OrgSpec | None:
        return next((o for o in self.orgs if o.login.lower() == login.lower()), None)


# -- validation -------------------------------------------------------------------------------------

Check = Callable[[str, str | None], Iterator[str]]


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

    for i, org in enumerate(w.orgs):
        yield from _check_org(f"orgs[{i}]", org, user)
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
        yield from _check_items(w, p, repo, user)
        yield from _check_repo_extras(p, repo, user)
    gist_ids: set[str] = set()
    for i, g in enumerate(w.gists):
        yield from user(f"gists[{i}].owner", g.owner)
        if g.id is not None and g.id in gist_ids:
            yield f"gists[{i}].id: {g.id!r} is used twice"
        gist_ids.add(g.id or "")
    for i, project in enumerate(w.projects):
        yield from _check_project(w, f"projects[{i}]", project, user)
    for i, n in enumerate(w.notifications):
        yield from _check_notification(w, f"notifications[{i}]", n)
    ghsa = [a.ghsa_id for a in w.advisories] + [a.ghsa_id for r in w.repos for a in r.security_advisories]
    if len(set(ghsa)) != len(ghsa):
        yield "advisories: a GHSA id is used twice (global and repository advisories share them)"


def _check_org(p: str, org: OrgSpec, user: Check) -> Iterator[str]:
    for key in ("members", "admins"):
        for j, login in enumerate(getattr(org, key)):
            yield from user(f"{p}.{key}[{j}]", login)
    slugs: set[str] = set()
    for j, team in enumerate(org.teams):
        if team.slug in slugs:
            yield f"{p}.teams[{j}].slug: {team.slug!r} is defined twice"
        slugs.add(team.slug)
        for k, login in enumerate(team.members):
            yield from user(f"{p}.teams[{j}].members[{k}]", login)
    if len({t.name.lower() for t in org.issue_types}) != len(org.issue_types):
        yield f"{p}.issue_types: an issue type name is defined twice"
    if len({f.name.lower() for f in org.issue_fields}) != len(org.issue_fields):
        yield f"{p}.issue_fields: an issue field name is defined twice"
    for j, f in enumerate(org.issue_fields):
        if (f.type == "single_select") != bool(f.options):
            yield f"{p}.issue_fields[{j}].options: single_select fields, and only they, take options"


def _check_git(p: str, repo: RepoSpec, user: Check) -> Iterator[str]:
    """Branches, commits and tags must name refs that exist by the time they are made."""
    refs = {repo.default_branch} if repo.files or repo.workflows else set()
    if not refs and (repo.branches or repo.tags or repo.commits or repo.pulls or repo.releases):
        yield (
            f"{p}.files: a repository with branches, commits, tags, releases or pull requests needs files for its "
            "first commit"
        )
    for j, b in enumerate(repo.branches):
        source = b.from_ or repo.default_branch
        if b.name in refs:
            yield f"{p}.branches[{j}].name: branch {b.name!r} is defined twice"
        elif refs and source not in refs:
            yield f"{p}.branches[{j}].from: {source!r} is not the default branch or an earlier branch"
        refs.add(b.name)
        yield from user(f"{p}.branches[{j}].author", b.author)
    for j, c in enumerate(repo.commits):
        if refs and (c.branch or repo.default_branch) not in refs:
            yield f"{p}.commits[{j}].branch: branch {c.branch!r} is not defined in {p}.branches"
        yield from user(f"{p}.commits[{j}].author", c.author)
    tags: set[str] = set()
    for j, t in enumerate(repo.tags):
        if t.name in tags:
            yield f"{p}.tags[{j}].name: tag {t.name!r} is defined twice"
        if refs and (t.ref or repo.default_branch) not in refs | tags:
            yield f"{p}.tags[{j}].ref: {t.ref!r} is not a branch or an earlier tag of {p}"
        tags.add(t.name)
    releases: set[str] = set()
    for j, r in enumerate(repo.releases):
        if r.tag in releases:
            yield f"{p}.releases[{j}].tag: a release of {r.tag!r} is defined twice"
        releases.add(r.tag)
        if r.tag not in tags and (r.target or repo.default_branch) not in refs and not r.draft:
            yield f"{p}.releases[{j}].target: {r.target!r} is not a branch of {p} (nor {r.tag!r} one of its tags)"
        yield from user(f"{p}.releases[{j}].author", r.author)
    for j, wf in enumerate(repo.workflows):
        for k, run in enumerate(wf.runs):
            if run.branch is not None and run.branch not in refs:
                yield f"{p}.workflows[{j}].runs[{k}].branch: branch {run.branch!r} is not defined in {p}.branches"
            yield from user(f"{p}.workflows[{j}].runs[{k}].actor", run.actor)
    if len({wf.path for wf in repo.workflows}) != len(repo.workflows):
        yield f"{p}.workflows: a workflow path is used twice"


def _check_items(w: World, p: str, repo: RepoSpec, user: Check) -> Iterator[str]:
    """Issues, pull requests and discussions: numbers, people, labels, types, fields, sub-issues, reviews."""
    labels = {lb.name.lower() for lb in repo.labels}
    if len(labels) != len(repo.labels):
        yield f"{p}.labels: a label name is defined twice"
    issue_numbers, pull_numbers, discussion_numbers = repo.numbering()
    numbers = issue_numbers + pull_numbers + discussion_numbers
    if len(set(numbers)) != len(numbers):
        yield f"{p}: two issues, pull requests or discussions have the same number"
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
    org = w.org(repo.owner)
    types = {t.name.lower() for t in org.issue_types} if org else set()
    fields = {f.name.lower(): f for f in org.issue_fields} if org else {}
    children: dict[int, str] = {}
    for j, issue in enumerate(repo.issues):
        ip = f"{p}.issues[{j}]"
        yield from user(f"{ip}.closed_by", issue.closed_by)
        if issue.type is not None and issue.type.lower() not in types:
            yield f"{ip}.type: {issue.type!r} is not an issue type of {repo.owner} (orgs[].issue_types)"
        for name, value in issue.fields.items():
            f = fields.get(name.lower())
            if f is None:
                yield f"{ip}.fields.{name}: not an issue field of {repo.owner} (orgs[].issue_fields)"
            elif f.type == "single_select" and str(value).lower() not in {o.lower() for o in f.option_names()}:
                yield f"{ip}.fields.{name}: {value!r} is not one of the options {f.option_names()}"
            elif f.type == "date" and not re.match(DATE, str(value)):
                yield f"{ip}.fields.{name}: {value!r} is not a date YYYY-MM-DD"
            elif f.type == "number" and not isinstance(value, int | float):
                yield f"{ip}.fields.{name}: {value!r} is not a number"
        for k, n in enumerate(issue.sub_issues):
            if n not in issue_numbers:
                yield f"{ip}.sub_issues[{k}]: {n} is not the number of an issue of {p}"
            elif n in children:
                yield f"{ip}.sub_issues[{k}]: issue {n} is already a sub-issue in {children[n]}"
            elif n == issue_numbers[j]:
                yield f"{ip}.sub_issues[{k}]: an issue cannot be its own sub-issue"
            children[n] = ip
    branches = {repo.default_branch} | {b.name for b in repo.branches}
    teams = {(o.login.lower(), t.slug) for o in w.orgs for t in o.teams}
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
        pending: set[str] = set()
        for k, review in enumerate(pull.reviews):
            rp = f"{pp}.reviews[{k}]"
            yield from user(f"{rp}.author", review.author)
            if review.state == "PENDING":
                if review.author.lower() in pending:
                    yield f"{rp}: {review.author} already has a pending review of this pull request"
                pending.add(review.author.lower())
            for m, c in enumerate(review.comments):
                for n, (login, _text) in enumerate(c.replies):
                    yield from user(f"{rp}.comments[{m}].replies[{n}][0]", login)
    categories = {c.name.lower() for c in repo.discussion_categories} or {
        "announcements",
        "general",
        "ideas",
        "polls",
        "q&a",
        "show and tell",
    }
    for j, d in enumerate(repo.discussions):
        dp = f"{p}.discussions[{j}]"
        yield from user(f"{dp}.author", d.author)
        if d.category.lower() not in categories:
            yield f"{dp}.category: {d.category!r} is not a discussion category of {p}"
        if sum(1 for c in d.comments if c.answer) > 1:
            yield f"{dp}.comments: a discussion has at most one answer"
        for k, dc in enumerate(d.comments):
            yield from user(f"{dp}.comments[{k}].author", dc.author)
            for m, (login, _text) in enumerate(dc.replies):
                yield from user(f"{dp}.comments[{k}].replies[{m}][0]", login)
    if repo.discussions and repo.has_discussions is False:
        yield f"{p}.has_discussions: false, but the repository has discussions"


def _check_repo_extras(p: str, repo: RepoSpec, user: Check) -> Iterator[str]:
    for j, c in enumerate(repo.collaborators):
        yield from user(f"{p}.collaborators[{j}].login", c.login)
    for j, login in enumerate(repo.stargazers):
        yield from user(f"{p}.stargazers[{j}]", login)
    for j, a in enumerate(repo.security_advisories):
        yield from user(f"{p}.security_advisories[{j}].author", a.author)
    for key in ("code_scanning_alerts", "dependabot_alerts", "secret_scanning_alerts", "code_quality_findings"):
        given = [a.number for a in getattr(repo, key) if a.number is not None]
        if len(set(given)) != len(given):
            yield f"{p}.{key}: two alerts have the same number"


def _check_project(w: World, p: str, project: ProjectSpec, user: Check) -> Iterator[str]:
    if project.owner.lower() not in w.user_logins() | w.org_logins():
        yield f"{p}.owner: {project.owner!r} is neither a user nor an organisation of the world"
    yield from user(f"{p}.creator", project.creator)
    builtin = {"title", "assignees", "status", "labels", "linked pull requests", "milestone", "repository", "reviewers"}
    fields = {f.name.lower(): f for f in project.fields}
    for name in fields:
        if name in builtin:
            yield f"{p}.fields: {name!r} is a built-in field of every project"
    for j, f in enumerate(project.fields):
        if (f.type == "single_select") != bool(f.options):
            yield f"{p}.fields[{j}].options: single_select fields, and only they, take options"
    status = [s.lower() for s in project.status_options or ["Todo", "In Progress", "Done"]]
    for j, item in enumerate(project.items):
        ip = f"{p}.items[{j}]"
        if (item.repo is None) == (item.draft_title is None) or (item.repo is None) != (item.number is None):
            yield f"{ip}: give either repo and number (an issue or pull request) or draft_title (a draft issue)"
        elif item.repo is not None:
            spec = w.repo(item.repo)
            if spec is None:
                yield f"{ip}.repo: repository {item.repo!r} is not defined in repos"
            else:
                issues, pulls, _ = spec.numbering()
                if item.number not in issues + pulls:
                    yield f"{ip}.number: {item.number} is not an issue or pull request of {item.repo}"
        for name, value in item.values.items():
            field = fields.get(name.lower())
            if name.lower() == "status":
                if str(value).lower() not in status:
                    yield f"{ip}.values.Status: {value!r} is not one of the Status options"
            elif field is None:
                yield f"{ip}.values.{name}: not a custom field of the project (other built-in fields follow the item)"
            elif field.type == "single_select" and str(value).lower() not in {o.lower() for o in field.option_names()}:
                yield f"{ip}.values.{name}: {value!r} is not one of the options {field.option_names()}"
            elif field.type == "iteration" and str(value).lower() not in {i.title.lower() for i in field.iterations}:
                yield f"{ip}.values.{name}: {value!r} is not one of the iterations of {name}"
    for j, v in enumerate(project.views):
        for k, name in enumerate(v.visible_fields):
            if name.lower() not in builtin | set(fields):
                yield f"{p}.views[{j}].visible_fields[{k}]: {name!r} is not a field of the project"
    for j, s in enumerate(project.status_updates):
        yield from user(f"{p}.status_updates[{j}].author", s.author)


def _check_notification(w: World, p: str, n: NotificationSpec) -> Iterator[str]:
    spec = w.repo(n.repo)
    if spec is None:
        yield f"{p}.repo: repository {n.repo!r} is not defined in repos"
        return
    issues, pulls, discussions = spec.numbering()
    wanted = {"Issue": issues, "PullRequest": pulls, "Discussion": discussions}.get(n.type)
    if wanted is not None and n.number not in wanted:
        yield f"{p}.number: {n.number} is not the number of a {n.type} of {n.repo}"
    if n.type == "Release" and n.tag not in {r.tag for r in spec.releases}:
        yield f"{p}.tag: {n.tag!r} is not the tag of a release of {n.repo}"
    if wanted is None and n.type != "Release" and not n.title:
        yield f"{p}.title: a {n.type} notification needs a title"


# -- loading and identity ---------------------------------------------------------------------------


def load_world(path: Path) -> World:
    """Read and validate a world file; a pydantic ``ValidationError`` (a ``ValueError``) names what is wrong."""
    return World.model_validate_json(path.read_text(encoding="utf-8"))


def world_hash(world: World) -> str:
    """A short digest of the world (the fields it sets, canonical JSON) and of the world format: what
    ``meta.world`` holds. A world file that gains or loses a value gets another hash."""
    doc = world.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    canonical = json.dumps([WORLD_FORMAT, doc], sort_keys=True, separators=(",", ":"))
    return "world:" + hashlib.sha256(canonical.encode()).hexdigest()[:16]
