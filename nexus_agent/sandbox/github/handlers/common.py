"""Argument helpers, pagination, search-query parsing and the JSON shapes the real server returns.

The shapes follow github-mcp-server's "minimal" output types (MinimalUser, MinimalRepository,
MinimalIssue, MinimalPullRequest, MinimalResponse...): GitHub REST field names, empty optional fields
left out, timestamps as ``YYYY-MM-DDTHH:MM:SSZ``.
"""

from __future__ import annotations

import base64
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from mcp import types

from nexus_agent.sandbox.github.context import API_ROOT, HTML_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.gitrepo import GitRepo
from nexus_agent.sandbox.github.store import Comment, Issue, NotFound, PullFields, Repo, User

DEFAULT_PER_PAGE = 30


@dataclass
class Blocks:
    """Explicit MCP content blocks, for results that are not a single JSON text."""

    items: list[types.ContentBlock]


# -- arguments --------------------------------------------------------------------------------------


def opt_str(args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    return None if value is None else str(value)


def req_str(args: dict[str, Any], key: str) -> str:
    value = opt_str(args, key)
    if value is None or value == "":
        raise ToolError(f"missing required parameter: {key}")
    return value


def opt_int(args: dict[str, Any], key: str) -> int | None:
    """An integer argument; the schemas type numbers as JSON ``number``, so 3.0 is accepted and 3.5 is not."""
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise ToolError(f"invalid argument '{key}': expected a whole number, got {value!r}")
    return int(value)


def req_int(args: dict[str, Any], key: str) -> int:
    value = opt_int(args, key)
    if value is None:
        raise ToolError(f"missing required parameter: {key}")
    return value


def opt_list(args: dict[str, Any], key: str) -> list[Any] | None:
    value = args.get(key)
    return None if value is None else list(value)


def paginate(items: list[Any], args: dict[str, Any], default: int = DEFAULT_PER_PAGE) -> list[Any]:
    """The ``page``/``perPage`` slice (1-based page) of ``items``."""
    page = opt_int(args, "page") or 1
    per_page = opt_int(args, "perPage") or default
    start = (page - 1) * per_page
    return items[start : start + per_page]


def encode_cursor(offset: int) -> str:
    return base64.b64encode(f"cursor:{offset}".encode()).decode()


def decode_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        text = base64.b64decode(cursor.encode(), validate=True).decode()
        prefix, offset = text.split(":", 1)
        if prefix != "cursor":
            raise ValueError(prefix)
        return int(offset)
    except ValueError as e:
        raise ToolError(f"invalid argument 'after': {cursor!r} is not a cursor returned by this server") from e


def pick_fields(obj: dict[str, Any], fields: list[str] | None) -> dict[str, Any]:
    """Keep only ``fields`` (the tools' ``fields`` parameter); absent fields are skipped, as upstream."""
    if not fields:
        return obj
    return {f: obj[f] for f in fields if f in obj}


def repo_of(sb: Sandbox, args: dict[str, Any]) -> Repo:
    return sb.repo(req_str(args, "owner"), req_str(args, "repo"))


def drop_empty(d: dict[str, Any]) -> dict[str, Any]:
    """Go's ``omitempty``: drop None, "", 0-length lists; keep False/0 where the caller sets them."""
    return {k: v for k, v in d.items() if v is not None and v != "" and v != [] and v != {}}


# -- shapes -----------------------------------------------------------------------------------------


def minimal_user(sb: Sandbox, login: str) -> dict[str, Any]:
    user = sb.store.find_user(login)
    uid = user.id if user else 0
    return drop_empty(
        {
            "login": login,
            "id": uid,
            "profile_url": f"{HTML_ROOT}/{login}",
            "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4" if uid else "",
        }
    )


def user_details(sb: Sandbox, user: User) -> dict[str, Any]:
    public_repos = sum(1 for r in sb.store.repos() if r.owner.lower() == user.login.lower() and not r.private)
    return drop_empty(
        {
            "name": user.name,
            "company": user.company,
            "blog": user.blog,
            "location": user.location,
            "email": user.email,
            "bio": user.bio,
            "public_repos": public_repos,
            "created_at": user.created_at,
            "updated_at": user.created_at,
        }
    )


def minimal_repo(sb: Sandbox, repo: Repo) -> dict[str, Any]:
    return drop_empty(
        {
            "id": repo.id,
            "name": repo.name,
            "full_name": repo.full_name,
            "description": repo.description,
            "html_url": f"{HTML_ROOT}/{repo.full_name}",
            "language": repo.language,
            "updated_at": repo.updated_at,
            "created_at": repo.created_at,
            "topics": list(repo.topics),
            "default_branch": repo.default_branch,
        }
    ) | {
        "stargazers_count": repo.stars,
        "forks_count": sb.store.fork_count(repo.id),
        "open_issues_count": sb.store.open_issue_count(repo.id),
        "private": repo.private,
        "fork": repo.fork_of is not None,
        "archived": repo.archived,
    }


def full_repo(sb: Sandbox, repo: Repo) -> dict[str, Any]:
    """The REST repository object (search_repositories with ``minimal_output: false``)."""
    owner = sb.store.find_user(repo.owner)
    return minimal_repo(sb, repo) | {
        "node_id": f"R_sandbox{repo.id}",
        "owner": {"login": repo.owner, "id": owner.id if owner else 0, "type": owner.type if owner else "User"},
        "url": f"{API_ROOT}/repos/{repo.full_name}",
        "clone_url": f"{HTML_ROOT}/{repo.full_name}.git",
        "visibility": "private" if repo.private else "public",
        "pushed_at": repo.updated_at,
        "watchers_count": repo.stars,
    }


def reactions_json(counts: dict[str, int]) -> dict[str, int]:
    return {"total_count": sum(counts.values()), **counts}


def issue_html_url(repo: Repo, issue: Issue) -> str:
    kind = "pull" if issue.pull is not None else "issues"
    return f"{HTML_ROOT}/{repo.full_name}/{kind}/{issue.number}"


def minimal_issue(sb: Sandbox, repo: Repo, issue: Issue) -> dict[str, Any]:
    """MinimalIssue as built from a REST issue (issue_read get, search results)."""
    return drop_empty(
        {
            "number": issue.number,
            "title": issue.title,
            "body": issue.body,
            "state": issue.state,
            "state_reason": issue.state_reason,
            "html_url": issue_html_url(repo, issue),
            "user": minimal_user(sb, issue.author),
            "author_association": author_association(sb, repo, issue.author),
            "labels": [lb.name for lb in issue.labels],
            "assignees": list(issue.assignees),
            "comments": issue.comments,
            "reactions": reactions_json(issue.reactions) if sum(issue.reactions.values()) else None,
            "created_at": issue.created_at,
            "updated_at": issue.updated_at,
            "closed_at": issue.closed_at,
            "closed_by": issue.closed_by,
        }
    )


def rest_issue(sb: Sandbox, repo: Repo, issue: Issue) -> dict[str, Any]:
    """A trimmed REST issue object, the item shape of search_issues / search_pull_requests."""
    base = minimal_issue(sb, repo, issue)
    base["id"] = issue.id
    base["labels"] = [
        drop_empty({"id": lb.id, "name": lb.name, "color": lb.color, "description": lb.description})
        for lb in issue.labels
    ]
    base["assignees"] = [minimal_user(sb, a) for a in issue.assignees]
    base["locked"] = False
    base["repository_url"] = f"{API_ROOT}/repos/{repo.full_name}"
    base["reactions"] = reactions_json(issue.reactions)
    if issue.pull is not None:
        base["draft"] = issue.pull.draft
        base["pull_request"] = drop_empty(
            {
                "url": f"{API_ROOT}/repos/{repo.full_name}/pulls/{issue.number}",
                "html_url": f"{HTML_ROOT}/{repo.full_name}/pull/{issue.number}",
                "diff_url": f"{HTML_ROOT}/{repo.full_name}/pull/{issue.number}.diff",
                "merged_at": issue.pull.merged_at,
            }
        )
    return base


def minimal_comment(sb: Sandbox, repo: Repo, issue: Issue, comment: Comment) -> dict[str, Any]:
    return drop_empty(
        {
            "id": comment.id,
            "body": comment.body,
            "html_url": f"{issue_html_url(repo, issue)}#issuecomment-{comment.id}",
            "user": minimal_user(sb, comment.author),
            "author_association": author_association(sb, repo, comment.author),
            "reactions": reactions_json(comment.reactions) if sum(comment.reactions.values()) else None,
            "created_at": comment.created_at,
            "updated_at": comment.updated_at,
        }
    )


def author_association(sb: Sandbox, repo: Repo, login: str) -> str:
    if login.lower() == repo.owner.lower():
        return "OWNER"
    if any(o.login.lower() == repo.owner.lower() for o in sb.store.orgs_of(login)):
        return "MEMBER"
    return "NONE"


def get_issue(sb: Sandbox, repo: Repo, number: int, *, what: str = "issue") -> Issue:
    try:
        return sb.store.issue(repo.id, number)
    except NotFound as e:
        raise ToolError(f"failed to get {what}: 404 Not Found: {repo.full_name}#{number} does not exist") from e


def issue_by_id(sb: Sandbox, issue_id: int) -> tuple[Repo, Issue] | None:
    """The repository and issue with database id ``issue_id``, or None."""
    row = sb.store.row(
        "SELECT r.owner, r.name, i.number FROM issues i JOIN repos r ON r.id = i.repo_id WHERE i.id = ?", (issue_id,)
    )
    if row is None:
        return None
    repo = sb.store.repo(row["owner"], row["name"])
    return repo, sb.store.issue(repo.id, row["number"])


def get_pull(sb: Sandbox, repo: Repo, number: int) -> tuple[Issue, PullFields]:
    """The pull request ``number`` of ``repo`` (its issue row and pull fields), or a 404-style ToolError."""
    issue = get_issue(sb, repo, number, what="pull request")
    if issue.pull is None:
        raise ToolError(f"failed to get pull request: 404 Not Found: {repo.full_name}#{number} is an issue")
    return issue, issue.pull


def diff_range(git: GitRepo, issue: Issue, pull: PullFields) -> tuple[str, str]:
    """(base, head) commits of the pull request's diff: live for open PRs, frozen once closed."""
    if issue.state == "open":
        head = git.branch_sha(pull.head_ref) or pull.head_sha
        base_tip = git.branch_sha(pull.base_ref)
        base = (git.merge_base(base_tip, head) if base_tip else None) or pull.merge_base_sha
        return base, head
    return pull.merge_base_sha, pull.head_sha


# -- node ids ---------------------------------------------------------------------------------------

# GraphQL node ids of the objects the tools address by node id (review threads, discussion comments, project
# views, status updates...): GitHub's type prefix, then "_sbx" and the row id. Opaque to clients, as on GitHub.
_NODE_ID = re.compile(r"^([A-Za-z]+)_sbx(\d+)$")


def node_id(prefix: str, row_id: int) -> str:
    return f"{prefix}_sbx{row_id}"


def parse_node_id(prefix: str, value: str) -> int | None:
    """The row id inside ``value`` if it is a node id of type ``prefix`` made by :func:`node_id`, else None."""
    m = _NODE_ID.match(value.strip())
    return int(m.group(2)) if m and m.group(1) == prefix else None


# -- search queries ---------------------------------------------------------------------------------

_QUALIFIER = re.compile(r"^(-?)([a-zA-Z][a-zA-Z_-]*):(.+)$")
STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "after",
        "before",
        "when",
        "not",
    }
)


@dataclass
class Query:
    """A GitHub search string split into qualifiers (``key:value``, optional ``-`` negation) and terms."""

    qualifiers: list[tuple[str, str, bool]] = field(default_factory=list)
    terms: list[str] = field(default_factory=list)

    def values(self, key: str) -> list[str]:
        return [v for k, v, neg in self.qualifiers if k == key and not neg]

    def negated(self, key: str) -> list[str]:
        return [v for k, v, neg in self.qualifiers if k == key and neg]


def parse_query(text: str) -> Query:
    try:
        tokens = shlex.split(text)
    except ValueError:
        tokens = text.split()
    q = Query()
    for tok in tokens:
        m = _QUALIFIER.match(tok)
        if m:
            q.qualifiers.append((m.group(2).lower(), m.group(3), m.group(1) == "-"))
        elif tok.upper() not in ("AND", "OR", "NOT"):
            q.terms.append(tok.lower())
    return q


def term_score(terms: list[str], text: str, *, require_all: bool) -> int:
    """How many of ``terms`` occur in ``text`` (case-insensitive); 0 if ``require_all`` and one is missing.

    With ``require_all=False`` stop words are ignored and a word also matches by its first five letters,
    a cheap stand-in for the real server's semantic issue search (so "logins failing" finds "Login fails").
    """
    hay = text.lower()
    if require_all:
        return len(terms) if all(t in hay for t in terms) else 0
    words = [t for t in terms if t not in STOPWORDS] or terms
    return sum(1 for t in words if t in hay or (len(t) > 5 and t[:5] in hay))


def matches_repo_scope(repo: Repo, q: Query, owner: str | None, name: str | None) -> bool:
    if owner and name and (repo.owner.lower(), repo.name.lower()) != (owner.lower(), name.lower()):
        return False
    for full in q.values("repo"):
        if full.lower() != repo.full_name.lower():
            return False
    return all(o.lower() == repo.owner.lower() for o in q.values("org") + q.values("user") + q.values("owner"))
