"""Releases: list_releases, get_latest_release, get_release_by_tag.

A release names a tag; a published release whose tag does not exist yet creates it on its target (a branch), as
GitHub does. Drafts have no tag until published. "Latest" is the most recently published release that is neither
a draft nor a prerelease, GitHub's rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nexus_agent.sandbox.github.context import API_ROOT, HTML_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.gitrepo import ZERO_SHA
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import (
    drop_empty,
    minimal_user,
    node_id,
    opt_list,
    paginate,
    pick_fields,
    repo_of,
    req_str,
)
from nexus_agent.sandbox.github.store import Repo


@dataclass(frozen=True)
class Release:
    id: int
    repo_id: int
    tag_name: str
    target: str
    name: str
    body: str
    author: str
    draft: bool
    prerelease: bool
    created_at: str
    published_at: str


def _release(r: Any) -> Release:
    d = dict(r)
    d["draft"], d["prerelease"] = bool(d["draft"]), bool(d["prerelease"])
    return Release(**d)


def releases_of(sb: Sandbox, repo: Repo) -> list[Release]:
    """Newest first, as GitHub lists them (drafts, which have no publication time, by creation)."""
    rows = sb.store.rows("SELECT * FROM releases WHERE repo_id = ? ORDER BY created_at DESC, id DESC", (repo.id,))
    return [_release(r) for r in rows]


def create_release(
    sb: Sandbox,
    repo: Repo,
    *,
    tag: str,
    target: str | None,
    name: str,
    body: str,
    author: str,
    draft: bool = False,
    prerelease: bool = False,
) -> Release:
    """A release of ``tag`` (made on ``target``, default branch by default, when it does not exist and the release
    is published); shared by worlds."""
    git = sb.git(repo)
    target = target or repo.default_branch
    if sb.store.row("SELECT 1 FROM releases WHERE repo_id = ? AND tag_name = ?", (repo.id, tag)) is not None:
        raise ToolError(f"422 Validation Failed: a release with tag {tag!r} already exists in {repo.full_name}")
    if not draft and git.resolve(f"refs/tags/{tag}") is None:
        sha = git.branch_sha(target)
        if sha is None:
            raise ToolError(f"422 Validation Failed: target_commitish {target!r} is not a branch of {repo.full_name}")
        git.set_ref(f"refs/tags/{tag}", sha, ZERO_SHA)
    now = sb.store.now()
    rid = sb.store.insert(
        "releases",
        repo_id=repo.id,
        tag_name=tag,
        target=target,
        name=name,
        body=body,
        author=author,
        draft=int(draft),
        prerelease=int(prerelease),
        created_at=now,
        published_at="" if draft else now,
    )
    return _release(sb.store.row("SELECT * FROM releases WHERE id = ?", (rid,)))


def _html_url(repo: Repo, r: Release) -> str:
    kind = "untagged-" + str(r.id) if r.draft else r.tag_name
    return f"{HTML_ROOT}/{repo.full_name}/releases/tag/{kind}"


def minimal_release(sb: Sandbox, repo: Repo, r: Release) -> dict[str, Any]:
    return drop_empty(
        {
            "id": r.id,
            "tag_name": r.tag_name,
            "name": r.name,
            "body": r.body,
            "html_url": _html_url(repo, r),
            "published_at": r.published_at,
            "author": minimal_user(sb, r.author),
        }
    ) | {"prerelease": r.prerelease, "draft": r.draft}


def rest_release(sb: Sandbox, repo: Repo, r: Release) -> dict[str, Any]:
    """The REST release object get_latest_release and get_release_by_tag return."""
    api = f"{API_ROOT}/repos/{repo.full_name}"
    author = sb.store.find_user(r.author)
    return {
        "url": f"{api}/releases/{r.id}",
        "html_url": _html_url(repo, r),
        "assets_url": f"{api}/releases/{r.id}/assets",
        "upload_url": f"https://uploads.github.com/repos/{repo.full_name}/releases/{r.id}/assets{{?name,label}}",
        "tarball_url": f"{api}/tarball/{r.tag_name}",
        "zipball_url": f"{api}/zipball/{r.tag_name}",
        "id": r.id,
        "node_id": node_id("RE", r.id),
        "tag_name": r.tag_name,
        "target_commitish": r.target,
        "name": r.name,
        "draft": r.draft,
        "prerelease": r.prerelease,
        "created_at": r.created_at,
        "published_at": r.published_at or None,
        "author": minimal_user(sb, r.author) | {"type": author.type if author else "User"},
        "assets": [],
        "body": r.body,
    }


@tool("list_releases")
def list_releases(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    fields = opt_list(args, "fields")
    return [pick_fields(minimal_release(sb, repo, r), fields) for r in paginate(releases_of(sb, repo), args)]


@tool("get_latest_release")
def get_latest_release(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    published = [r for r in releases_of(sb, repo) if not r.draft and not r.prerelease]
    if not published:
        raise ToolError(f"failed to get latest release: 404 Not Found: {repo.full_name} has no published release")
    latest = max(published, key=lambda r: (r.published_at, r.id))
    return rest_release(sb, repo, latest)


@tool("get_release_by_tag")
def get_release_by_tag(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    tag = req_str(args, "tag")
    for r in releases_of(sb, repo):
        if r.tag_name == tag and not r.draft:
            return rest_release(sb, repo, r)
    raise ToolError(f"failed to get release by tag: 404 Not Found: no release with tag {tag!r} in {repo.full_name}")
