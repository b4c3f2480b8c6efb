"""Pull requests between real branches: list/search/read, create, update, merge, update branch.

Diffs are ``git diff <merge-base> <head>`` (GitHub's three-dot comparison). Merging really moves the
base branch: a merge commit (``merge``), one new commit (``squash``) or replayed commits (``rebase``).
A merged pull request remembers its head and merge-base SHAs, so its diff stays readable afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nexus_agent.sandbox.github.context import API_ROOT, HTML_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.gitrepo import GitError, GitRepo
from nexus_agent.sandbox.github.handlers import actions, reviews, tool
from nexus_agent.sandbox.github.handlers.common import (
    diff_range,
    drop_empty,
    get_pull,
    issue_html_url,
    minimal_comment,
    minimal_user,
    opt_list,
    opt_str,
    paginate,
    pick_fields,
    repo_of,
    req_int,
    req_str,
)
from nexus_agent.sandbox.github.handlers.issues import closing_references, search, set_state
from nexus_agent.sandbox.github.handlers.repos import file_json
from nexus_agent.sandbox.github.store import Issue, NotFound, PullFields, Repo


def _branch_json(sb: Sandbox, repo: Repo, ref: str, sha: str) -> dict[str, Any]:
    return {"ref": ref, "sha": sha, "repo": drop_empty({"full_name": repo.full_name, "description": repo.description})}


def mergeable_state(git: GitRepo, issue: Issue, pull: PullFields) -> str:
    if issue.state != "open":
        return "unknown"
    if pull.draft:
        return "draft"
    base_tip, head = git.branch_sha(pull.base_ref), git.branch_sha(pull.head_ref)
    if base_tip is None or head is None:
        return "unknown"
    return "clean" if git.merge_trees(base_tip, head).clean else "dirty"


def minimal_pull(sb: Sandbox, repo: Repo, issue: Issue, *, detailed: bool) -> dict[str, Any]:
    """MinimalPullRequest. ``detailed`` adds what only the single-PR endpoint reports (stats, mergeability)."""
    pull = issue.pull
    assert pull is not None
    git = sb.git(repo)
    base, head = diff_range(git, issue, pull)
    out: dict[str, Any] = {
        "number": issue.number,
        "title": issue.title,
        "body": issue.body,
        "state": issue.state,
        "draft": pull.draft,
        "merged": pull.merged,
        "html_url": issue_html_url(repo, issue),
        "user": minimal_user(sb, issue.author),
        "labels": [lb.name for lb in issue.labels],
        "assignees": list(issue.assignees),
        "requested_reviewers": list(pull.reviewers),
        "merged_by": pull.merged_by,
        "head": _branch_json(sb, repo, pull.head_ref, head),
        "base": _branch_json(sb, repo, pull.base_ref, git.branch_sha(pull.base_ref) or base),
        "comments": issue.comments,
        "created_at": issue.created_at,
        "updated_at": issue.updated_at,
        "closed_at": issue.closed_at,
        "merged_at": pull.merged_at,
    }
    if detailed:
        files = git.changed_files(base, head, with_patch=False)
        out["mergeable_state"] = mergeable_state(git, issue, pull)
        out["additions"] = sum(f.additions for f in files)
        out["deletions"] = sum(f.deletions for f in files)
        out["changed_files"] = len(files)
        out["commits"] = len(git.log(head, exclude=base))
    return {k: v for k, v in out.items() if v not in ("", [], None) and not (k in _OMIT_ZERO and v == 0)}


_OMIT_ZERO = {"additions", "deletions", "changed_files", "commits", "comments"}


# -- listing and searching --------------------------------------------------------------------------


@tool("list_pull_requests")
def list_pull_requests(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    state = opt_str(args, "state") or "open"
    pulls = [i for i in sb.store.issues(repo.id, pulls=True) if state == "all" or i.state == state]
    head = opt_str(args, "head")
    if head:
        owner, _, branch = head.rpartition(":")
        pulls = [
            i
            for i in pulls
            if i.pull and i.pull.head_ref == branch and (not owner or owner.lower() == repo.owner.lower())
        ]
    base = opt_str(args, "base")
    if base:
        pulls = [i for i in pulls if i.pull and i.pull.base_ref == base]
    sort = opt_str(args, "sort") or "created"
    keys: dict[str, Callable[[Issue], Any]] = {
        "created": lambda i: (i.created_at, i.number),
        "updated": lambda i: (i.updated_at, i.number),
        "popularity": lambda i: (i.comments, i.number),
        "long-running": lambda i: (i.created_at, i.number),
    }
    # GitHub's default direction is desc for sort=created and asc otherwise.
    direction = opt_str(args, "direction") or ("desc" if sort == "created" else "asc")
    descending = direction == "desc"
    if sort == "long-running":
        descending = not descending  # "desc" = open the longest = created first
    pulls.sort(key=keys[sort], reverse=descending)
    fields = opt_list(args, "fields")
    return [pick_fields(minimal_pull(sb, repo, i, detailed=False), fields) for i in paginate(pulls, args)]


@tool("search_pull_requests")
def search_pull_requests(sb: Sandbox, args: dict[str, Any]) -> object:
    return search(sb, args, pulls=True, natural=False)


# -- reading ----------------------------------------------------------------------------------------


def _read_get(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    return minimal_pull(sb, repo, issue, detailed=True)


def _read_diff(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    assert issue.pull is not None
    git = sb.git(repo)
    base, head = diff_range(git, issue, issue.pull)
    return git.diff(base, head)


def _read_status(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    assert issue.pull is not None
    _, head = diff_range(sb.git(repo), issue, issue.pull)
    # No CI runs in the sandbox; GitHub reports "pending" with no statuses in that case.
    return {
        "state": "pending",
        "sha": head,
        "total_count": 0,
        "statuses": [],
        "repository": {"full_name": repo.full_name},
    }


def _read_files(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    assert issue.pull is not None
    git = sb.git(repo)
    base, head = diff_range(git, issue, issue.pull)
    return [file_json(f, True) for f in paginate(git.changed_files(base, head, with_patch=True), args)]


def _read_commits(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    assert issue.pull is not None
    git = sb.git(repo)
    base, head = diff_range(git, issue, issue.pull)
    commits = list(reversed(git.log(head, exclude=base)))  # GitHub lists PR commits oldest first
    out = []
    for c in paginate(commits, args):
        out.append(
            {
                "sha": c.sha,
                "html_url": f"{HTML_ROOT}/{repo.full_name}/commit/{c.sha}",
                "message": c.message,
                "author": {"name": c.author.name, "email": c.author.email, "date": c.author.date},
            }
        )
    return out


def _read_review_comments(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    return reviews.threads_json(sb, repo, issue, args)


def _read_reviews(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    return reviews.reviews_json(sb, repo, issue, args)


def _read_comments(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    return [minimal_comment(sb, repo, issue, c) for c in paginate(sb.store.comments(issue.id), args)]


def _read_check_runs(sb: Sandbox, repo: Repo, issue: Issue, args: dict[str, Any]) -> object:
    assert issue.pull is not None
    _, head = diff_range(sb.git(repo), issue, issue.pull)
    return actions.check_runs(sb, repo, head)


_READERS: dict[str, Callable[[Sandbox, Repo, Issue, dict[str, Any]], object]] = {
    "get": _read_get,
    "get_diff": _read_diff,
    "get_status": _read_status,
    "get_files": _read_files,
    "get_commits": _read_commits,
    "get_review_comments": _read_review_comments,
    "get_reviews": _read_reviews,
    "get_comments": _read_comments,
    "get_check_runs": _read_check_runs,
}


@tool("pull_request_read")
def pull_request_read(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    issue, _ = get_pull(sb, repo, req_int(args, "pullNumber"))
    return _READERS[req_str(args, "method")](sb, repo, issue, args)


# -- writing ----------------------------------------------------------------------------------------


def _check_reviewers(sb: Sandbox, reviewers: list[str], author: str) -> list[str]:
    for r in reviewers:
        if "/" in r:
            org, slug = r.split("/", 1)
            try:
                sb.store.team_members(org, slug)
            except NotFound as e:
                raise ToolError(f"422 Validation Failed: team reviewer '{r}' does not exist") from e
        elif sb.store.find_user(r) is None:
            raise ToolError(f"422 Validation Failed: reviewer '{r}' is not a user of this sandbox")
        elif r.lower() == author.lower():
            raise ToolError("422 Validation Failed: review cannot be requested from the pull request author")
    return reviewers


def open_pull(
    sb: Sandbox,
    repo: Repo,
    *,
    title: str,
    body: str,
    head: str,
    base: str,
    author: str,
    draft: bool = False,
    reviewers: list[str] | None = None,
    maintainer_can_modify: bool = False,
    number: int | None = None,
) -> Issue:
    """Open a pull request ``head`` -> ``base`` (same repository); shared by the tool, the seed and worlds
    (``number``: a world's explicit number, else the next free one)."""
    git = sb.git(repo)
    owner, sep, branch = head.rpartition(":")
    if sep and owner.lower() != repo.owner.lower():
        raise ToolError("cross-repository pull requests are not supported in the Nexus offline GitHub sandbox")
    head_sha, base_sha = git.branch_sha(branch), git.branch_sha(base)
    if head_sha is None:
        raise ToolError(f"422 Validation Failed: head branch '{branch}' does not exist in {repo.full_name}")
    if base_sha is None:
        raise ToolError(f"422 Validation Failed: base branch '{base}' does not exist in {repo.full_name}")
    if not git.log(head_sha, exclude=base_sha, limit=1):
        raise ToolError(f"422 Validation Failed: No commits between {base} and {branch}")
    for other in sb.store.issues(repo.id, pulls=True):
        if other.state == "open" and other.pull and (other.pull.head_ref, other.pull.base_ref) == (branch, base):
            raise ToolError(f"422 Validation Failed: A pull request already exists for {repo.owner}:{branch}.")
    issue = sb.store.create_issue(repo.id, title=title, body=body, author=author, pull=True, number=number)
    sb.store.add_pull(
        issue.id,
        head_ref=branch,
        base_ref=base,
        head_sha=head_sha,
        merge_base_sha=git.merge_base(base_sha, head_sha) or base_sha,
        draft=draft,
        maintainer_can_modify=maintainer_can_modify,
    )
    sb.store.set_reviewers(issue.id, _check_reviewers(sb, reviewers or [], author))
    return sb.store.issue(repo.id, issue.number)


@tool("create_pull_request")
def create_pull_request(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    issue = open_pull(
        sb,
        repo,
        title=req_str(args, "title"),
        body=opt_str(args, "body") or "",
        head=req_str(args, "head"),
        base=req_str(args, "base"),
        author=sb.me,
        draft=bool(args.get("draft", False)),
        reviewers=opt_list(args, "reviewers"),
        maintainer_can_modify=bool(args.get("maintainer_can_modify", False)),
    )
    return {"id": str(issue.id), "url": issue_html_url(repo, issue)}


@tool("update_pull_request")
def update_pull_request(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    issue, pull = get_pull(sb, repo, req_int(args, "pullNumber"))
    git = sb.git(repo)
    values: dict[str, object] = {}
    for key in ("title", "body"):
        if args.get(key) is not None:
            values[key] = str(args[key])
    if values:
        sb.store.update_issue(issue.id, **values)
    base = opt_str(args, "base")
    if base is not None and base != pull.base_ref:
        if issue.state != "open":
            raise ToolError("422 Validation Failed: cannot change the base branch of a closed pull request")
        base_sha = git.branch_sha(base)
        if base_sha is None:
            raise ToolError(f"422 Validation Failed: base branch '{base}' does not exist in {repo.full_name}")
        head_sha = git.branch_sha(pull.head_ref) or pull.head_sha
        sb.store.update_pull(issue.id, base_ref=base, merge_base_sha=git.merge_base(base_sha, head_sha) or base_sha)
    if args.get("draft") is not None:
        sb.store.update_pull(issue.id, draft=int(bool(args["draft"])))
    if args.get("maintainer_can_modify") is not None:
        sb.store.update_pull(issue.id, maintainer_can_modify=int(bool(args["maintainer_can_modify"])))
    if args.get("reviewers"):
        sb.store.set_reviewers(issue.id, _check_reviewers(sb, opt_list(args, "reviewers") or [], issue.author))
    state = opt_str(args, "state")
    if state and state != issue.state:
        if pull.merged:
            raise ToolError(f"422 Validation Failed: pull request #{issue.number} is merged")
        if state == "closed":
            freeze_pull(sb, git, issue, pull)
        set_state(sb, sb.store.issue(repo.id, issue.number), state, None)
    issue = sb.store.issue(repo.id, issue.number)
    return {"id": str(issue.id), "url": issue_html_url(repo, issue)}


def freeze_pull(sb: Sandbox, git: GitRepo, issue: Issue, pull: PullFields) -> None:
    """Record the head and merge base at closing time, so the closed PR's diff stays stable."""
    base, head = diff_range(git, issue, pull)
    sb.store.update_pull(issue.id, head_sha=head, merge_base_sha=base)


def merge_pull(sb: Sandbox, repo: Repo, number: int, method: str, title: str | None, message: str | None) -> str:
    """Merge pull request ``number`` into its base branch; return the new base tip SHA."""
    issue, pull = get_pull(sb, repo, number)
    if pull.merged:
        raise ToolError(f"405 Method Not Allowed: pull request #{number} is already merged")
    if issue.state != "open":
        raise ToolError(f"405 Method Not Allowed: pull request #{number} is closed")
    if pull.draft:
        raise ToolError(f"405 Method Not Allowed: pull request #{number} is still a draft")
    git = sb.git(repo)
    base_tip, head = git.branch_sha(pull.base_ref), git.branch_sha(pull.head_ref)
    if base_tip is None or head is None:
        raise ToolError(f"422 Unprocessable Entity: the branches of pull request #{number} no longer exist")
    merge_base = git.merge_base(base_tip, head) or pull.merge_base_sha
    me = sb.signature(sb.me)
    if method == "rebase":
        commits = list(reversed(git.log(head, exclude=base_tip)))
        if any(len(c.parents) > 1 for c in commits):
            raise ToolError("405 Method Not Allowed: this branch contains merge commits and cannot be rebased")
        try:
            new_tip = git.replay(commits, base_tip, me)
        except GitError as e:
            raise ToolError(f"405 Method Not Allowed: pull request #{number} cannot be rebased: {e}") from e
    else:
        outcome = git.merge_trees(base_tip, head)
        if not outcome.clean:
            raise ToolError(
                f"405 Method Not Allowed: pull request #{number} is not mergeable: conflicts in "
                + ", ".join(outcome.conflicts)
            )
        if method == "squash":
            subject = title or f"{issue.title} (#{number})"
            body = (
                message
                if message is not None
                else "\n\n".join(f"* {c.message}" for c in reversed(git.log(head, exclude=base_tip)))
            )
            new_tip = git.commit_tree(outcome.tree, [base_tip], f"{subject}\n\n{body}".rstrip() + "\n", me, me)
        else:
            subject = title or f"Merge pull request #{number} from {repo.owner}/{pull.head_ref}"
            body = message if message is not None else issue.title
            new_tip = git.commit_tree(outcome.tree, [base_tip, head], f"{subject}\n\n{body}".rstrip() + "\n", me, me)
    git.set_ref(f"refs/heads/{pull.base_ref}", new_tip, base_tip)
    sb.store.update_pull(
        issue.id,
        merged=1,
        merged_at=me.date,
        merged_by=sb.me,
        merge_commit_sha=new_tip,
        head_sha=head,
        merge_base_sha=merge_base,
    )
    set_state(sb, issue, "closed", None)
    sb.store.touch_repo(repo.id)
    if pull.base_ref == repo.default_branch:
        # GitHub closes the issues a PR says it fixes once it lands on the default branch.
        for full, n in closing_references(issue.body, repo):
            if full == repo.full_name.lower():
                try:
                    target = sb.store.issue(repo.id, n)
                except NotFound:
                    continue
                if target.pull is None and target.state == "open":
                    set_state(sb, target, "closed", "completed")
    return new_tip


@tool("merge_pull_request")
def merge_pull_request(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    sha = merge_pull(
        sb,
        repo,
        req_int(args, "pullNumber"),
        opt_str(args, "merge_method") or "merge",
        opt_str(args, "commit_title"),
        opt_str(args, "commit_message"),
    )
    return {"sha": sha, "merged": True, "message": "Pull Request successfully merged"}


@tool("update_pull_request_branch")
def update_pull_request_branch(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    number = req_int(args, "pullNumber")
    issue, pull = get_pull(sb, repo, number)
    if issue.state != "open":
        raise ToolError(f"422 Unprocessable Entity: pull request #{number} is not open")
    git = sb.git(repo)
    base_tip, head = git.branch_sha(pull.base_ref), git.branch_sha(pull.head_ref)
    if base_tip is None or head is None:
        raise ToolError(f"422 Unprocessable Entity: the branches of pull request #{number} no longer exist")
    expected = opt_str(args, "expectedHeadSha")
    if expected and expected != head:
        raise ToolError(f"422 Unprocessable Entity: expected head sha {expected} but the head is {head}")
    if git.is_ancestor(base_tip, head):
        raise ToolError(
            f"422 Unprocessable Entity: the head branch of #{number} is already up to date with {pull.base_ref}"
        )
    outcome = git.merge_trees(head, base_tip)
    if not outcome.clean:
        conflicts = ", ".join(outcome.conflicts)
        raise ToolError(f"422 Unprocessable Entity: merge conflict between base and head: {conflicts}")
    me = sb.signature(sb.me)
    msg = f"Merge branch '{pull.base_ref}' into {pull.head_ref}\n"
    new_head = git.commit_tree(outcome.tree, [head, base_tip], msg, me, me)
    git.set_ref(f"refs/heads/{pull.head_ref}", new_head, head)
    sb.store.update_pull(issue.id, head_sha=new_head, merge_base_sha=base_tip)
    return {
        "message": "Updating pull request branch.",
        "url": f"{API_ROOT}/repos/{repo.full_name}/pulls/{number}",
        "head_sha": new_head,
    }
