"""Worlds: small JSON documents that seed a fresh sandbox instead of the acme demo data.

A world (the format is ``world_spec.py``: ``World`` and the objects it holds) names the authenticated user
(``me``), the users and organisations (teams, issue types and fields), the repositories with their git content
(files, branches, commits, tags), labels, issues, pull requests (with reviews), discussions, releases, workflows
with runs, alerts and advisories, and what belongs to accounts: gists, projects, notifications, the global
advisory database.

``seed_world(sb, world)`` builds it through the same store and git operations the acme seed and the tools use, on
the logical clock, in one transaction, so a world always gives the same commit SHAs, ids and timestamps. A world
that validates but cannot be built (a pull request without new commits, a review comment outside the diff, a
sub-issue cycle) raises ``WorldError`` naming the world path of the item. ``world_hash`` is what ``open_sandbox``
records in ``meta.world``, so a data directory seeded with one world is never silently served as another.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nexus_agent.sandbox.github.context import Sandbox, ToolError
from nexus_agent.sandbox.github.gitrepo import ZERO_SHA, GitError
from nexus_agent.sandbox.github.handlers import (
    actions,
    collaborators,
    discussions,
    gists,
    issue_fields,
    notifications,
    projects,
    releases,
    reviews,
    stars,
    sub_issues,
)
from nexus_agent.sandbox.github.handlers.projects_write import create_status_update
from nexus_agent.sandbox.github.handlers.pulls import freeze_pull, merge_pull, open_pull
from nexus_agent.sandbox.github.handlers.repos import commit_files, create_repo
from nexus_agent.sandbox.github.seed import SEED_VERSION
from nexus_agent.sandbox.github.store import Issue, NotFound, Repo
from nexus_agent.sandbox.github.world_spec import (
    DiscussionSpec,
    IssueSpec,
    JobSpec,
    OptionSpec,
    PullSpec,
    RepoSpec,
    WorkflowSpec,
    World,
    load_world,
    world_hash,
)

__all__ = ["World", "WorldError", "load_world", "seed_world", "world_hash"]

_REVIEW_EVENTS = {"APPROVED": "APPROVE", "CHANGES_REQUESTED": "REQUEST_CHANGES", "COMMENTED": "COMMENT"}


class WorldError(ValueError):
    """A world that validated but cannot be built (e.g. a pull request whose head has no new commits)."""


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
    for i, o in enumerate(w.orgs):
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
        with _at(f"orgs[{i}]"):
            for it in o.issue_types:
                issue_fields.add_type(sb, o.login, it.name, it.description, it.color)
            for f in o.issue_fields:
                issue_fields.add_field(sb, o.login, f.name, f.type, f.description, _options(f.options))
    for i, spec in enumerate(w.repos):
        _seed_repo(sb, w, spec, f"repos[{i}]")
    for g in w.gists:
        gists.create(sb, st.user(g.owner or w.me).login, g.files, g.description, g.public, g.id)
    for i in range(len(w.projects)):
        with _at(f"projects[{i}]"):
            _seed_project(sb, w, i)
    me = st.user(w.me).login
    for i, n in enumerate(w.notifications):
        with _at(f"notifications[{i}]"):
            owner, name = n.repo.split("/", 1)
            repo = st.repo(owner, name)
            title = n.title or _subject_title(sb, repo, n.type, n.number, n.tag)
            notifications.add_notification(
                sb,
                me,
                repo,
                subject_type=n.type,
                title=title,
                reason=n.reason,
                number=n.number,
                ref=n.tag or "",
                unread=n.unread,
            )
    for a in w.advisories:
        published = a.published_at or st.now()
        st.insert(
            "advisories",
            ghsa_id=a.ghsa_id,
            cve_id=a.cve_id,
            summary=a.summary,
            description=a.description,
            severity=a.severity,
            state="published",
            type=a.type,
            vulnerabilities=json.dumps([v.model_dump() for v in a.vulnerabilities]),
            cwes=json.dumps(a.cwes),
            created_at=published,
            updated_at=a.updated_at or published,
            published_at=published,
            withdrawn_at=a.withdrawn_at or "",
        )


def _options(options: list[str | OptionSpec]) -> list[dict[str, str]]:
    out = []
    for o in options:
        spec = OptionSpec(name=o) if isinstance(o, str) else o
        out.append({"name": spec.name, "color": spec.color, "description": spec.description})
    return out


# -- repositories -----------------------------------------------------------------------------------


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
    first: dict[str, bytes | None] = {k: v.encode() for k, v in spec.files.items()}
    for wf in spec.workflows:
        if wf.path not in first:
            first[wf.path] = (wf.content if wf.content is not None else workflow_file(wf)).encode()
    if first:
        with _at(f"{p}.files"):
            commit_files(sb, repo, spec.default_branch, first, spec.message, spec.author or w.me)
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
    for person in spec.collaborators:
        collaborators.add_collaborator(sb, repo, person.login, person.permission)
    for login in spec.stargazers:
        stars.star(sb, st.user(login).login, st.repo(repo.owner, repo.name))
    if spec.watch is not None:
        notifications.subscribe_repo(sb, st.user(w.me).login, repo, watch=spec.watch == "watching")
    if not spec.copilot:
        st.insert("repo_settings", repo_id=repo.id, key="copilot", value="off")
    if spec.discussions_on:
        defaults = [(c.name, c.emoji, c.description, c.answerable) for c in spec.discussion_categories]
        for name, emoji, description, answerable in defaults or discussions.DEFAULT_CATEGORIES:
            discussions.add_category(sb, repo, name, emoji, description, answerable)
    _seed_items(sb, w, spec, repo, p)
    for j, r in enumerate(spec.releases):
        with _at(f"{p}.releases[{j}]"):
            releases.create_release(
                sb,
                repo,
                tag=r.tag,
                target=r.target,
                name=r.name,
                body=r.body,
                author=st.user(r.author or w.me).login,
                draft=r.draft,
                prerelease=r.prerelease,
            )
    for j, wf in enumerate(spec.workflows):
        with _at(f"{p}.workflows[{j}]"):
            _seed_workflow(sb, w, spec, repo, wf)
    _seed_alerts(sb, spec, repo)
    if spec.archived:
        st.set_archived(repo.id, True)
    return st.repo(repo.owner, repo.name)


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "job"


def workflow_file(wf: WorkflowSpec) -> str:
    """A small workflow file for a world's workflow: its triggers and the jobs its runs name."""
    names = list(dict.fromkeys(j.name for run in wf.runs for j in run.jobs)) or ["build"]
    triggers = ["push", "pull_request"] + (["workflow_dispatch"] if wf.dispatch else [])
    lines = [f"name: {wf.name}", "on:", *(f"  {t}:" for t in triggers), "jobs:"]
    for name in names:
        lines += [
            f"  {_slug(name)}:",
            f"    name: {name}",
            "    runs-on: ubuntu-latest",
            "    steps:",
            "      - uses: actions/checkout@v4",
            f"      - run: echo {_slug(name)}",
        ]
    return "\n".join(lines) + "\n"


def _seed_items(sb: Sandbox, w: World, spec: RepoSpec, repo: Repo, p: str) -> None:
    """Issues, pull requests and discussions, created in number order; then the sub-issue links."""
    st = sb.store
    issue_numbers, pull_numbers, discussion_numbers = spec.numbering()
    order: list[tuple[int, str, IssueSpec | PullSpec | DiscussionSpec]] = [
        *((n, f"{p}.issues[{j}]", x) for j, (n, x) in enumerate(zip(issue_numbers, spec.issues, strict=True))),
        *((n, f"{p}.pulls[{j}]", x) for j, (n, x) in enumerate(zip(pull_numbers, spec.pulls, strict=True))),
        *(
            (n, f"{p}.discussions[{j}]", x)
            for j, (n, x) in enumerate(zip(discussion_numbers, spec.discussions, strict=True))
        ),
    ]
    for number, path, item in sorted(order, key=lambda t: t[0]):
        with _at(path):
            author = st.user(item.author or w.me).login
            if isinstance(item, DiscussionSpec):
                _seed_discussion(sb, repo, item, number, author)
                continue
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
                _seed_reviews(sb, repo, st.issue(repo.id, number), item, path)
                _finish_pull(sb, repo, st.issue(repo.id, number), item, author)
                continue
            if item.type is not None:
                issue_fields.set_type(sb, repo, issue, item.type)
            if item.fields:
                values = [{"field_name": k, "value": v} for k, v in item.fields.items()]
                issue_fields.set_values(sb, repo, issue, values)
            if item.state == "closed":
                st.update_issue(
                    issue.id,
                    state="closed",
                    state_reason=item.state_reason or "completed",
                    closed_at=st.now(),
                    closed_by=st.user(item.closed_by or author).login,
                )
    for j, (number, item) in enumerate(zip(issue_numbers, spec.issues, strict=True)):
        for k, child in enumerate(item.sub_issues):
            with _at(f"{p}.issues[{j}].sub_issues[{k}]"):
                sub_issues.link(sb, st.issue(repo.id, number), st.issue(repo.id, child))


def _seed_reviews(sb: Sandbox, repo: Repo, issue: Issue, spec: PullSpec, path: str) -> None:
    st = sb.store
    for k, r in enumerate(spec.reviews):
        with _at(f"{path}.reviews[{k}]"):
            author = st.user(r.author).login
            review = reviews.start_review(sb, repo, issue, author)
            threads = []
            for m, c in enumerate(r.comments):
                with _at(f"{path}.reviews[{k}].comments[{m}]"):
                    first = reviews.add_thread(
                        sb,
                        repo,
                        issue,
                        review,
                        path=c.path,
                        body=c.body,
                        subject_type="LINE" if c.line else "FILE",
                        line=c.line,
                        side=c.side,
                        start_line=c.start_line,
                    )
                    threads.append((c, first))
            if r.state != "PENDING":
                reviews.submit_review(sb, issue, review, _REVIEW_EVENTS[r.state], r.body)
            for m, (c, first) in enumerate(threads):
                for who, text in c.replies:
                    if r.state == "PENDING":
                        raise WorldError(f"{path}.reviews[{k}].comments[{m}].replies: a pending review has no replies")
                    reviews.reply(sb, repo, issue, first, st.user(who).login, text)
                if c.resolved:
                    st.update("review_threads", first.thread_id, resolved=1, resolved_by=issue.author)


def _finish_pull(sb: Sandbox, repo: Repo, issue: Issue, spec: PullSpec, author: str) -> None:
    if spec.state == "merged":
        merge_pull(sb, repo, issue.number, spec.merge_method, None, None)
    elif spec.state == "closed":
        assert issue.pull is not None
        freeze_pull(sb, sb.git(repo), issue, issue.pull)
        st = sb.store
        st.update_issue(issue.id, state="closed", state_reason="", closed_at=st.now(), closed_by=author)


def _seed_discussion(sb: Sandbox, repo: Repo, spec: DiscussionSpec, number: int, author: str) -> None:
    st = sb.store
    category = next(c for c in discussions.categories_of(sb, repo) if c.name.lower() == spec.category.lower())
    d = discussions.add_discussion(
        sb, repo, category, title=spec.title, body=spec.body, author=author, number=number, closed=spec.closed
    )
    for c in spec.comments:
        top = discussions.add_comment(sb, d, st.user(c.author).login, c.body)
        for who, text in c.replies:
            discussions.add_comment(sb, d, st.user(who).login, text, reply_to=top.id)
        if c.answer:
            discussions.mark_answer(sb, d, top, author)


def _seed_workflow(sb: Sandbox, w: World, spec: RepoSpec, repo: Repo, wf: WorkflowSpec) -> None:
    st = sb.store
    flow = actions.add_workflow(sb, repo, wf.name, wf.path, wf.state)
    git = sb.git(repo)
    for run in wf.runs:
        branch = run.branch or spec.default_branch
        sha = git.branch_sha(branch) or ""
        completed = run.status == "completed"
        conclusion = (run.conclusion or "success") if completed else ""
        title = run.title or (git.commit(sha).message.splitlines()[0] if sha else wf.name)
        row = actions.add_run(
            sb,
            repo,
            flow,
            event=run.event,
            branch=branch,
            sha=sha,
            actor=st.user(run.actor or w.me).login,
            status=run.status,
            conclusion=conclusion,
            title=title,
        )
        for job in run.jobs or [JobSpec(name="build")]:
            status = job.status or run.status
            job_conclusion = (job.conclusion or conclusion or "success") if status == "completed" else ""
            # When some step says how it ended (the one that failed), the others succeeded; else they end as the job.
            named = any(not isinstance(s, str) and s.conclusion for s in job.steps)
            usual = "success" if named and job_conclusion else job_conclusion
            steps = [
                {"name": s, "status": status, "conclusion": usual}
                if isinstance(s, str)
                else {"name": s.name, "status": status, "conclusion": s.conclusion or usual}
                for s in job.steps
            ]
            actions.add_job(sb, row, job.name, status=status, conclusion=job_conclusion, steps=steps, log=job.log)
        for a in run.artifacts:
            actions.add_artifact(sb, row, a.name, a.size, a.expired)


def _numbered(specs: list[Any]) -> Iterator[tuple[int, Any]]:
    """(number, spec) with GitHub-like numbering: explicit numbers kept, the others 1, 2, ... around them."""
    claimed = {s.number for s in specs if s.number is not None}
    next_free = 1
    for s in specs:
        if s.number is not None:
            yield s.number, s
            continue
        while next_free in claimed:
            next_free += 1
        claimed.add(next_free)
        yield next_free, s


def _seed_alerts(sb: Sandbox, spec: RepoSpec, repo: Repo) -> None:
    st = sb.store
    for n, a in _numbered(spec.code_scanning_alerts):
        now = st.now()
        st.insert(
            "code_scanning_alerts",
            repo_id=repo.id,
            number=n,
            rule_id=a.rule_id,
            rule_description=a.description,
            severity=a.severity,
            security_severity=a.security_severity or "",
            tool=a.tool,
            state=a.state,
            ref=a.ref or f"refs/heads/{spec.default_branch}",
            path=a.path,
            start_line=a.start_line,
            end_line=a.end_line or a.start_line,
            message=a.message,
            dismissed_reason=a.dismissed_reason or "",
            created_at=now,
            updated_at=now,
        )
    for n, d in _numbered(spec.dependabot_alerts):
        now = st.now()
        st.insert(
            "dependabot_alerts",
            repo_id=repo.id,
            number=n,
            package=d.package,
            ecosystem=d.ecosystem,
            manifest_path=d.manifest_path,
            severity=d.severity,
            ghsa_id=d.ghsa_id,
            cve_id=d.cve_id,
            summary=d.summary,
            vulnerable_version_range=d.vulnerable_version_range,
            patched_version=d.patched_version,
            state=d.state,
            dismissed_reason=d.dismissed_reason or "",
            created_at=now,
            updated_at=now,
        )
    for n, s in _numbered(spec.secret_scanning_alerts):
        now = st.now()
        st.insert(
            "secret_scanning_alerts",
            repo_id=repo.id,
            number=n,
            secret_type=s.secret_type,
            secret_type_display_name=s.display_name or s.secret_type,
            secret=s.secret,
            state=s.state,
            resolution=s.resolution or "",
            path=s.path,
            line=s.line,
            validity=s.validity,
            created_at=now,
            updated_at=now,
        )
    for n, q in _numbered(spec.code_quality_findings):
        st.insert(
            "code_quality_findings",
            repo_id=repo.id,
            number=n,
            rule_id=q.rule_id,
            category=q.category,
            severity=q.severity,
            path=q.path,
            start_line=q.start_line,
            end_line=q.end_line or q.start_line,
            message=q.message,
            state=q.state,
            created_at=st.now(),
        )
    for a in spec.security_advisories:
        now = st.now()
        st.insert(
            "advisories",
            ghsa_id=a.ghsa_id,
            repo_id=repo.id,
            cve_id=a.cve_id,
            summary=a.summary,
            description=a.description,
            severity=a.severity,
            state=a.state,
            type="reviewed",
            author=st.user(a.author).login if a.author else "",
            vulnerabilities=json.dumps([v.model_dump() for v in a.vulnerabilities]),
            cwes=json.dumps(a.cwes),
            created_at=now,
            updated_at=now,
            published_at=now if a.state == "published" else "",
        )


# -- account-level objects --------------------------------------------------------------------------


def _seed_project(sb: Sandbox, w: World, index: int) -> None:
    st = sb.store
    spec = w.projects[index]
    owner = st.user(spec.owner)
    creator = st.user(spec.creator or w.me).login
    p = projects.create_project(
        sb,
        owner,
        spec.title,
        creator,
        short_description=spec.short_description,
        readme=spec.readme,
        public=int(spec.public),
        closed=int(spec.closed),
        closed_at=st.now() if spec.closed else "",
    )
    if spec.status_options is not None:
        status = projects.find_field(sb, p, name="Status")
        assert status is not None
        options = [
            {"id": projects.option_id(status.id, i), "name": name, "color": "GRAY", "description": ""}
            for i, name in enumerate(spec.status_options)
        ]
        st.update("project_fields", status.id, options=json.dumps(options))
    for f in spec.fields:
        iterations = [it.model_dump() for it in f.iterations]
        projects.add_field(sb, p, f.name, f.type, options=_options(f.options), iterations=iterations)
    for j, item in enumerate(spec.items):
        with _at(f"projects[{index}].items[{j}]"):
            issue = None
            if item.repo is not None and item.number is not None:
                owner_name, repo_name = item.repo.split("/", 1)
                issue = st.issue(st.repo(owner_name, repo_name).id, item.number)
            row = projects.add_item(sb, p, issue, creator, item.draft_title or "", item.draft_body)
            for name, value in item.values.items():
                field = projects.find_field(sb, p, name=name)
                assert field is not None  # validated
                projects.set_value(sb, row, field, value, by_name=True)
            if item.archived:
                st.update("project_items", row.id, archived_at=st.now())
    for v in spec.views:
        visible = []
        for name in v.visible_fields:
            field = projects.find_field(sb, p, name=name)
            assert field is not None  # validated
            visible.append(field.id)
        projects.add_view(sb, p, v.name, v.layout, v.filter, visible)
    for s in spec.status_updates:
        create_status_update(
            sb,
            p,
            body=s.body,
            status=s.status or "",
            start_date=s.start_date or "",
            target_date=s.target_date or "",
            creator=st.user(s.author or w.me).login,
        )


def _subject_title(sb: Sandbox, repo: Repo, kind: str, number: int | None, tag: str | None) -> str:
    st = sb.store
    if kind in ("Issue", "PullRequest") and number is not None:
        return st.issue(repo.id, number).title
    if kind == "Discussion" and number is not None:
        row = st.row("SELECT title FROM discussions WHERE repo_id = ? AND number = ?", (repo.id, number))
        return row["title"] if row else ""
    if kind == "Release" and tag:
        row = st.row("SELECT name FROM releases WHERE repo_id = ? AND tag_name = ?", (repo.id, tag))
        return (row["name"] if row else "") or tag
    return kind
