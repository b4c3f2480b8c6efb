"""Repositories, files, branches, commits and tags, backed by the real git repositories."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

from mcp import types

from nexus_agent.sandbox.github.context import API_ROOT, HTML_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.gitrepo import ZERO_SHA, CommitInfo, FileChange, GitError, GitRepo
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import (
    Blocks,
    Query,
    drop_empty,
    full_repo,
    minimal_repo,
    minimal_user,
    opt_list,
    opt_str,
    paginate,
    parse_query,
    pick_fields,
    repo_of,
    req_str,
    term_score,
)
from nexus_agent.sandbox.github.store import NotFound, Repo, iso

_REPO_NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")

# Languages GitHub's linguist would report for the extensions the sandbox uses (search_code language:).
_EXT_LANGUAGE = {
    ".py": "python",
    ".js": "javascript",
    ".ts": "typescript",
    ".md": "markdown",
    ".toml": "toml",
    ".json": "json",
    ".yml": "yaml",
    ".yaml": "yaml",
    ".go": "go",
    ".sh": "shell",
    ".css": "css",
    ".html": "html",
}


# -- shared operations (also used by the seed) ------------------------------------------------------


def visible(sb: Sandbox, repo: Repo) -> bool:
    """Private repositories are visible to their owner and to members of the owning organisation."""
    if not repo.private or repo.owner.lower() == sb.me.lower():
        return True
    return any(o.login.lower() == repo.owner.lower() for o in sb.store.orgs_of(sb.me))


def can_create_in(sb: Sandbox, owner: str) -> bool:
    return owner.lower() == sb.me.lower() or any(o.login.lower() == owner.lower() for o in sb.store.orgs_of(sb.me))


def create_repo(
    sb: Sandbox,
    owner: str,
    name: str,
    *,
    description: str = "",
    private: bool = False,
    language: str = "",
    topics: tuple[str, ...] = (),
    stars: int = 0,
    default_branch: str = "main",
) -> tuple[Repo, GitRepo]:
    """A database row plus an empty bare git repository whose default branch is ``default_branch``."""
    if not _REPO_NAME.match(name):
        raise ToolError(f"invalid argument 'name': {name!r} is not a valid repository name")
    if sb.store.find_user(owner) is None:
        raise ToolError(f"404 Not Found: owner {owner} does not exist")
    try:
        sb.store.repo(owner, name)
    except NotFound:
        pass
    else:
        raise ToolError(f"422 Unprocessable Entity: repository {owner}/{name} already exists")
    repo = sb.store.add_repo(
        owner,
        name,
        description=description,
        private=private,
        language=language,
        topics=topics,
        stars=stars,
        default_branch=default_branch,
    )
    git = GitRepo.init_bare(sb.repo_path(owner, name), repo.default_branch)
    return repo, git


def commit_files(
    sb: Sandbox, repo: Repo, branch: str, changes: dict[str, bytes | None], message: str, author: str
) -> str:
    """Commit ``changes`` to ``branch`` as ``author`` and return the new commit SHA."""
    git = sb.git(repo)
    sha = git.commit_changes(branch, changes, message, sb.signature(author))
    sb.store.touch_repo(repo.id)
    return sha


def resolve_rev(sb: Sandbox, repo: Repo, git: GitRepo, ref: str | None, sha: str | None) -> str:
    """Commit SHA named by ``sha`` (preferred) or ``ref`` (branch, tag, ``refs/pull/N/head``...).

    Falls back to the default branch; raises a 404-style ToolError if nothing matches.
    """
    if sha:
        found = git.resolve(sha)
        if not found:
            raise ToolError(f"404 Not Found: no commit found for SHA {sha} in {repo.full_name}")
        return found
    rev = ref or repo.default_branch
    pull = re.fullmatch(r"refs/pull/(\d+)/(head|merge)", rev)
    if pull:
        try:
            issue = sb.store.issue(repo.id, int(pull.group(1)))
        except NotFound:
            issue = None
        if issue is None or issue.pull is None:
            raise ToolError(f"404 Not Found: no pull request #{pull.group(1)} in {repo.full_name}")
        live = git.branch_sha(issue.pull.head_ref) if issue.state == "open" else None
        return live or issue.pull.head_sha
    for candidate in (rev, f"refs/heads/{rev}", f"refs/tags/{rev}"):
        found = git.resolve(candidate)
        if found:
            return found
    if not git.branches():
        raise ToolError(f"409 Conflict: git repository {repo.full_name} is empty")
    raise ToolError(f"404 Not Found: no commit found for ref {rev} in {repo.full_name}")


def ref_object(repo: Repo, branch: str, sha: str) -> dict[str, Any]:
    """The REST git reference object returned by create_branch and push_files."""
    return {
        "ref": f"refs/heads/{branch}",
        "url": f"{API_ROOT}/repos/{repo.full_name}/git/refs/heads/{branch}",
        "object": {"sha": sha, "type": "commit", "url": f"{API_ROOT}/repos/{repo.full_name}/git/commits/{sha}"},
    }


def minimal_commit(
    sb: Sandbox, repo: Repo, c: CommitInfo, files: list[FileChange] | None = None, with_patch: bool = False
) -> dict[str, Any]:
    author_login = sb.login_for_email(c.author.email)
    committer_login = sb.login_for_email(c.committer.email)
    out: dict[str, Any] = {
        "sha": c.sha,
        "html_url": f"{HTML_ROOT}/{repo.full_name}/commit/{c.sha}",
        "commit": {
            "message": c.message,
            "author": {"name": c.author.name, "email": c.author.email, "date": c.author.date},
            "committer": {"name": c.committer.name, "email": c.committer.email, "date": c.committer.date},
        },
    }
    if author_login:
        out["author"] = minimal_user(sb, author_login)
    if committer_login:
        out["committer"] = minimal_user(sb, committer_login)
    if files is not None:
        adds, dels = sum(f.additions for f in files), sum(f.deletions for f in files)
        out["stats"] = drop_empty({"additions": adds, "deletions": dels, "total": adds + dels})
        out["files"] = [file_json(f, with_patch) for f in files]
    return out


def file_json(f: FileChange, with_patch: bool) -> dict[str, Any]:
    return drop_empty(
        {
            "filename": f.filename,
            "status": f.status,
            "additions": f.additions,
            "deletions": f.deletions,
            "changes": f.changes,
            "patch": f.patch if with_patch else "",
            "previous_filename": f.previous_filename,
        }
    )


def _branch_or_404(git: GitRepo, repo: Repo, branch: str) -> str | None:
    """Head SHA of ``branch``; None only when the repository is still empty (first commit creates it)."""
    sha = git.branch_sha(branch)
    if sha is None and git.branches():
        raise ToolError(f"404 Not Found: branch {branch} does not exist in {repo.full_name}")
    return sha


def _clean_path(path: str) -> str:
    clean = path.strip().strip("/")
    if not clean or any(part in ("", ".", "..", ".git") for part in clean.split("/")):
        raise ToolError(f"invalid argument 'path': {path!r} is not a valid file path")
    return clean


# -- repositories -----------------------------------------------------------------------------------


@tool("search_repositories")
def search_repositories(sb: Sandbox, args: dict[str, Any]) -> object:
    q = parse_query(req_str(args, "query"))
    # GitHub searches name, description and topics unless in: narrows it (in:readme is not modelled).
    in_fields = {v.lower() for v in q.values("in")} or {"name", "description", "topics"}
    hits: list[tuple[int, Repo]] = []
    for repo in sb.store.repos():
        if not visible(sb, repo):
            continue
        if any(u.lower() != repo.owner.lower() for u in q.values("user") + q.values("org")):
            continue
        if any(r.lower() != repo.full_name.lower() for r in q.values("repo")):
            continue
        if any(lang.lower() != repo.language.lower() for lang in q.values("language")):
            continue
        if any(t.lower() not in {x.lower() for x in repo.topics} for t in q.values("topic")):
            continue
        is_values = {v.lower() for v in q.values("is")}
        if ("private" in is_values and not repo.private) or ("public" in is_values and repo.private):
            continue
        parts = []
        if "name" in in_fields:
            parts.append(repo.name)
        if "description" in in_fields:
            parts.append(repo.description)
        if "topics" in in_fields:
            parts.extend(repo.topics)
        score = term_score(q.terms, " ".join(parts), require_all=True) if q.terms else 1
        if score:
            hits.append((score, repo))
    sort, desc = opt_str(args, "sort"), opt_str(args, "order") != "asc"
    if sort == "stars":
        hits.sort(key=lambda h: h[1].stars, reverse=desc)
    elif sort == "forks":
        hits.sort(key=lambda h: sb.store.fork_count(h[1].id), reverse=desc)
    elif sort == "updated":
        hits.sort(key=lambda h: h[1].updated_at, reverse=desc)
    else:
        hits.sort(key=lambda h: (-h[0], -h[1].stars, h[1].full_name.lower()))
    shape = minimal_repo if args.get("minimal_output", True) else full_repo
    items = [shape(sb, r) for _, r in hits]
    return {"total_count": len(items), "incomplete_results": False, "items": paginate(items, args)}


@tool("create_repository")
def create_repository(sb: Sandbox, args: dict[str, Any]) -> object:
    owner = opt_str(args, "organization") or sb.me
    if not can_create_in(sb, owner):
        raise ToolError(f"failed to create repository: 403 Forbidden: {sb.me} cannot create repositories in {owner}")
    name = req_str(args, "name")
    description = opt_str(args, "description") or ""
    repo, _git = create_repo(sb, owner, name, description=description, private=bool(args.get("private", True)))
    if args.get("autoInit"):
        readme = f"# {name}\n" + (f"\n{description}\n" if description else "")
        commit_files(sb, repo, repo.default_branch, {"README.md": readme.encode()}, "Initial commit", sb.me)
    return {"id": str(repo.id), "url": f"{HTML_ROOT}/{repo.full_name}"}


@tool("fork_repository")
def fork_repository(sb: Sandbox, args: dict[str, Any]) -> object:
    source = repo_of(sb, args)
    if not visible(sb, source):
        raise ToolError(f"404 Not Found: repository {source.full_name} does not exist")
    owner = opt_str(args, "organization") or sb.me
    if not can_create_in(sb, owner):
        raise ToolError(f"failed to fork repository: 403 Forbidden: {sb.me} cannot create repositories in {owner}")
    try:
        sb.store.repo(owner, source.name)
    except NotFound:
        pass
    else:
        raise ToolError(f"422 Unprocessable Entity: repository {owner}/{source.name} already exists")
    fork = sb.store.add_repo(
        owner,
        source.name,
        description=source.description,
        private=source.private,
        language=source.language,
        topics=source.topics,
        fork_of=source.id,
    )
    GitRepo.clone_bare(sb.git(source), sb.repo_path(owner, source.name))
    return {"id": str(fork.id), "url": f"{HTML_ROOT}/{fork.full_name}"}


# -- files ------------------------------------------------------------------------------------------


@tool("get_file_contents")
def get_file_contents(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    git = sb.git(repo)
    commit = resolve_rev(sb, repo, git, opt_str(args, "ref"), opt_str(args, "sha"))
    path = (opt_str(args, "path") or "/").strip("/")
    entry = git.entry(commit, path)
    if entry is None:
        raise ToolError(f"failed to get file contents: 404 Not Found: path '{path}' does not exist at {commit[:7]}")
    if entry.kind == "tree":
        listing = []
        for e in git.list_tree(commit, path):
            kind = {"blob": "file", "tree": "dir", "commit": "submodule"}[e.kind]
            listing.append(
                {
                    "type": kind,
                    "name": e.path.rsplit("/", 1)[-1],
                    "path": e.path,
                    "size": e.size,
                    "sha": e.sha,
                    "url": f"{API_ROOT}/repos/{repo.full_name}/contents/{e.path}?ref={commit}",
                    "git_url": f"{API_ROOT}/repos/{repo.full_name}/git/{'trees' if kind == 'dir' else 'blobs'}/{e.sha}",
                    "html_url": f"{HTML_ROOT}/{repo.full_name}/{'tree' if kind == 'dir' else 'blob'}/{commit}/{e.path}",
                    "download_url": (
                        f"https://raw.githubusercontent.com/{repo.full_name}/{commit}/{e.path}"
                        if kind == "file"
                        else None
                    ),
                }
            )
        fields = opt_list(args, "fields")
        return [pick_fields(item, fields) for item in listing]
    data = git.read_blob(entry.sha)
    uri = f"repo://{repo.full_name}/sha/{commit}/contents/{path}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Blocks(
            [
                types.TextContent(type="text", text=f"successfully downloaded binary file (SHA: {entry.sha})"),
                types.EmbeddedResource(
                    type="resource",
                    resource=types.BlobResourceContents(
                        uri=uri, mime_type="application/octet-stream", blob=base64.b64encode(data).decode()
                    ),
                ),
            ]
        )
    return Blocks(
        [
            types.TextContent(type="text", text=f"successfully downloaded text file (SHA: {entry.sha})"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(uri=uri, mime_type="text/plain; charset=utf-8", text=text),
            ),
        ]
    )


def _file_response(
    sb: Sandbox, repo: Repo, branch: str, path: str, commit_sha: str, blob: dict[str, Any] | None
) -> dict[str, Any]:
    c = sb.git(repo).commit(commit_sha)
    commit = {
        "sha": commit_sha,
        "message": c.message,
        "html_url": f"{HTML_ROOT}/{repo.full_name}/commit/{commit_sha}",
        "author": {"name": c.author.name, "email": c.author.email, "date": c.author.date},
    }
    return {"content": blob, "commit": commit} if blob is not None else {"commit": commit}


@tool("create_or_update_file")
def create_or_update_file(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    git = sb.git(repo)
    path, branch = _clean_path(req_str(args, "path")), req_str(args, "branch")
    head = _branch_or_404(git, repo, branch)
    existing = git.entry(head, path) if head else None
    if existing is not None and existing.kind != "blob":
        raise ToolError(f"422 Unprocessable Entity: '{path}' is a directory on {branch}")
    given_sha = opt_str(args, "sha")
    if existing is not None and not given_sha:
        raise ToolError(
            f"409 Conflict: '{path}' already exists on {branch}; "
            f"pass its blob SHA ({existing.sha}) as 'sha' to update it"
        )
    if existing is not None and given_sha != existing.sha:
        raise ToolError(
            f"409 Conflict: 'sha' {given_sha} does not match the current blob SHA {existing.sha} of '{path}'"
        )
    if existing is None and given_sha:
        raise ToolError(f"422 Unprocessable Entity: 'sha' given but '{path}' does not exist on {branch}")
    content = str(args.get("content", "")).encode("utf-8")
    sha = commit_files(sb, repo, branch, {path: content}, req_str(args, "message"), sb.me)
    blob = git.entry(sha, path)
    assert blob is not None  # just committed
    return _file_response(
        sb,
        repo,
        branch,
        path,
        sha,
        {
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "sha": blob.sha,
            "size": blob.size,
            "html_url": f"{HTML_ROOT}/{repo.full_name}/blob/{branch}/{path}",
        },
    )


@tool("delete_file")
def delete_file(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    git = sb.git(repo)
    path, branch = _clean_path(req_str(args, "path")), req_str(args, "branch")
    head = _branch_or_404(git, repo, branch)
    existing = git.entry(head, path) if head else None
    if existing is None or existing.kind != "blob":
        raise ToolError(f"404 Not Found: file '{path}' does not exist on {branch}")
    sha = commit_files(sb, repo, branch, {path: None}, req_str(args, "message"), sb.me)
    return _file_response(sb, repo, branch, path, sha, None)


@tool("push_files")
def push_files(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    git = sb.git(repo)
    branch = req_str(args, "branch")
    _branch_or_404(git, repo, branch)
    files = args.get("files") or []
    if not files:
        raise ToolError("invalid argument 'files': at least one file is required")
    changes: dict[str, bytes | None] = {_clean_path(f["path"]): f["content"].encode("utf-8") for f in files}
    sha = commit_files(sb, repo, branch, changes, req_str(args, "message"), sb.me)
    return ref_object(repo, branch, sha)


# -- branches, commits, tags ------------------------------------------------------------------------


@tool("list_branches")
def list_branches(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    branches = [{"name": n, "sha": s, "protected": n == repo.default_branch} for n, s in sb.git(repo).branches()]
    return paginate(branches, args)


@tool("create_branch")
def create_branch(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    git = sb.git(repo)
    branch = req_str(args, "branch")
    source = opt_str(args, "from_branch") or repo.default_branch
    source_sha = git.branch_sha(source)
    if source_sha is None:
        raise ToolError(f"failed to get reference: 404 Not Found: branch {source} does not exist in {repo.full_name}")
    if git.branch_sha(branch) is not None:
        raise ToolError(f"failed to create branch: 422 Reference already exists: refs/heads/{branch}")
    try:
        git.git("check-ref-format", "--branch", branch)
        git.set_ref(f"refs/heads/{branch}", source_sha, ZERO_SHA)
    except GitError as e:
        raise ToolError(f"failed to create branch: 422 Unprocessable Entity: {e}") from e
    return ref_object(repo, branch, source_sha)


@tool("list_commits")
def list_commits(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    git = sb.git(repo)
    tip = resolve_rev(sb, repo, git, opt_str(args, "sha"), None)
    commits = git.log(tip, path=opt_str(args, "path"), since=opt_str(args, "since"), until=opt_str(args, "until"))
    author = opt_str(args, "author")
    if author:
        user = sb.store.find_user(author)
        emails = {author.lower()}
        if user:
            emails |= {user.email.lower(), f"{user.login}@users.noreply.github.com".lower()}
        commits = [c for c in commits if c.author.email.lower() in emails or c.author.name.lower() == author.lower()]
    fields = opt_list(args, "fields")
    return [pick_fields(minimal_commit(sb, repo, c), fields) for c in paginate(commits, args)]


@tool("get_commit")
def get_commit(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    git = sb.git(repo)
    sha = resolve_rev(sb, repo, git, req_str(args, "sha"), None)
    c = git.commit(sha)
    detail = opt_str(args, "detail") or "stats"
    if detail == "none":
        return minimal_commit(sb, repo, c)
    base = c.parents[0] if c.parents else git.empty_tree()
    files = git.changed_files(base, sha, with_patch=detail == "full_patch")
    out = minimal_commit(sb, repo, c, files, with_patch=detail == "full_patch")
    out["files"] = paginate(out["files"], args)
    return out


@tool("list_tags")
def list_tags(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    return paginate([{"name": n, "sha": s} for n, s in sb.git(repo).tags()], args)


@tool("get_tag")
def get_tag(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    git = sb.git(repo)
    name = req_str(args, "tag")
    obj = git.tag_object(name)
    if obj is None:
        raise ToolError(f"failed to get tag reference: 404 Not Found: tag {name} does not exist in {repo.full_name}")
    if git.git("cat-file", "-t", obj).strip() != "tag":
        raise ToolError(f"failed to get tag object: 404 Not Found: {name} is a lightweight tag, not a tag object")
    raw = git.git("cat-file", "tag", obj)
    header, _, message = raw.partition("\n\n")
    fields = dict(line.split(" ", 1) for line in header.splitlines())
    tagger = re.match(r"^(.*) <(.*)> (\d+) ([+-]\d{4})$", fields.get("tagger", ""))
    out: dict[str, Any] = {
        "sha": obj,
        "tag": name,
        "message": message.rstrip("\n"),
        "url": f"{API_ROOT}/repos/{repo.full_name}/git/tags/{obj}",
        "object": {"type": fields.get("type", "commit"), "sha": fields.get("object", "")},
    }
    if tagger:
        out["tagger"] = {"name": tagger.group(1), "email": tagger.group(2), "date": iso(int(tagger.group(3)))}
    return out


@tool("get_repository_tree")
def get_repository_tree(sb: Sandbox, args: dict[str, Any]) -> object:
    repo = repo_of(sb, args)
    git = sb.git(repo)
    commit = resolve_rev(sb, repo, git, opt_str(args, "tree_sha"), None)
    entries = git.list_tree(commit, "", recursive=bool(args.get("recursive", False)))
    prefix = opt_str(args, "path_filter") or ""
    tree = [
        drop_empty(
            {
                "path": e.path,
                "type": e.kind,
                "mode": e.mode,
                "size": e.size if e.kind == "blob" else None,
                "sha": e.sha,
                "url": f"{API_ROOT}/repos/{repo.full_name}/git/{'trees' if e.kind == 'tree' else 'blobs'}/{e.sha}",
            }
        )
        for e in entries
        if e.path.startswith(prefix)
    ]
    root = git.entry(commit, "")
    return {
        "sha": root.sha if root else "",
        "truncated": False,
        "tree": tree,
        "count": len(tree),
    }


def _searchable_heads(sb: Sandbox, q: Query) -> Iterator[tuple[Repo, GitRepo, str]]:
    """Visible repositories that the query's ``repo:``/``org:``/``user:`` qualifiers allow, with their git
    handle and default-branch head (repositories without commits are skipped): what code and commit search
    look through."""
    for repo in sb.store.repos():
        if not visible(sb, repo):
            continue
        if any(r.lower() != repo.full_name.lower() for r in q.values("repo")):
            continue
        if any(o.lower() != repo.owner.lower() for o in q.values("org") + q.values("user")):
            continue
        git = sb.git(repo)
        head = git.branch_sha(repo.default_branch)
        if head is not None:
            yield repo, git, head


@tool("search_code")
def search_code(sb: Sandbox, args: dict[str, Any]) -> object:
    q = parse_query(req_str(args, "query"))
    results = []
    for repo, git, head in _searchable_heads(sb, q):
        if q.terms:
            hits = git.grep(head, q.terms)
        else:
            hits = [(e.path, []) for e in git.list_tree(head, "", recursive=True) if e.kind == "blob"]
        for path, lines in hits:
            name = path.rsplit("/", 1)[-1]
            ext = "." + name.rsplit(".", 1)[-1] if "." in name else ""
            if any(not path.startswith(p.strip("/")) for p in q.values("path")):
                continue
            if any(f != name for f in q.values("filename")):
                continue
            if any(ext != "." + x.lstrip(".") for x in q.values("extension")):
                continue
            if any(_EXT_LANGUAGE.get(ext, "") != lang.lower() for lang in q.values("language")):
                continue
            entry = git.entry(head, path)
            results.append(
                {
                    "name": name,
                    "path": path,
                    "sha": entry.sha if entry else "",
                    "repository": repo.full_name,
                    "text_matches": [{"fragment": line} for line in lines[:3]],
                }
            )
    if args.get("order") == "desc":
        results.reverse()
    fields = opt_list(args, "fields")
    items = [pick_fields(drop_empty(r), fields) for r in paginate(results, args)]
    return {"total_count": len(results), "incomplete_results": False, "items": items}


@tool("search_commits")
def search_commits(sb: Sandbox, args: dict[str, Any]) -> object:
    q = parse_query(req_str(args, "query"))
    found: list[tuple[Repo, CommitInfo]] = []
    for repo, git, head in _searchable_heads(sb, q):
        for c in git.log(head):
            login = sb.login_for_email(c.author.email) or ""
            if any(a.lower() != login.lower() for a in q.values("author")):
                continue
            if any(not c.sha.startswith(h.lower()) for h in q.values("hash")):
                continue
            merge = q.values("merge")
            if merge and (len(c.parents) > 1) != (merge[0].lower() == "true"):
                continue
            if q.terms and not term_score(q.terms, c.message, require_all=True):
                continue
            found.append((repo, c))
    sort = opt_str(args, "sort")
    if sort in ("author-date", "committer-date"):
        key = (lambda rc: rc[1].author.date) if sort == "author-date" else (lambda rc: rc[1].committer.date)
        found.sort(key=key, reverse=opt_str(args, "order") != "asc")
    items = [
        minimal_commit(sb, repo, c)
        | {"repository": {"full_name": repo.full_name, "html_url": f"{HTML_ROOT}/{repo.full_name}"}}
        for repo, c in paginate(found, args)
    ]
    return {"total_count": len(found), "incomplete_results": False, "items": items}


# -- deleting ---------------------------------------------------------------------------------------

# What belongs to an issue or pull request (by issue id) and to a repository (by repository id), for a deletion.
_ISSUE_TABLES = (
    ("comments", "issue_id"),
    ("reactions", "issue_id"),
    ("issue_labels", "issue_id"),
    ("issue_assignees", "issue_id"),
    ("pulls", "issue_id"),
    ("pull_reviewers", "issue_id"),
    ("sub_issues", "parent_id"),
    ("sub_issues", "child_id"),
    ("issue_type_of", "issue_id"),
    ("issue_field_values", "issue_id"),
    ("copilot_tasks", "issue_id"),
    ("reviews", "issue_id"),
    ("review_threads", "issue_id"),
)
_REPO_TABLES = (
    "labels",
    "releases",
    "collaborators",
    "stars",
    "repo_subscriptions",
    "repo_settings",
    "discussion_categories",
    "workflows",
    "workflow_runs",
    "notifications",
    "code_scanning_alerts",
    "dependabot_alerts",
    "secret_scanning_alerts",
    "code_quality_findings",
    "advisories",
    "issues",
)


def purge_repo(sb: Sandbox, repo: Repo) -> None:
    """Delete ``repo``'s rows everywhere and its git repository. Forks stay, detached, as on GitHub."""
    st = sb.store
    ids = f"SELECT id FROM issues WHERE repo_id = {int(repo.id)}"
    st.execute(
        f"DELETE FROM review_comment_reactions WHERE comment_id IN (SELECT c.id FROM review_comments c "
        f"JOIN review_threads t ON t.id = c.thread_id WHERE t.issue_id IN ({ids}))"
    )
    st.execute(
        f"DELETE FROM review_comments WHERE thread_id IN (SELECT id FROM review_threads WHERE issue_id IN ({ids}))"
    )
    st.execute(
        f"DELETE FROM project_item_values WHERE item_id IN (SELECT id FROM project_items WHERE issue_id IN ({ids}))"
    )
    st.execute(f"DELETE FROM project_items WHERE issue_id IN ({ids})")
    st.execute(f"DELETE FROM copilot_tasks WHERE pull_issue_id IN ({ids})")
    for table, column in _ISSUE_TABLES:
        st.execute(f"DELETE FROM {table} WHERE {column} IN ({ids})")
    runs = f"SELECT id FROM workflow_runs WHERE repo_id = {int(repo.id)}"
    st.execute(f"DELETE FROM workflow_jobs WHERE run_id IN ({runs})")
    st.execute(f"DELETE FROM workflow_artifacts WHERE run_id IN ({runs})")
    st.execute(
        "DELETE FROM discussion_comments WHERE discussion_id IN (SELECT id FROM discussions WHERE repo_id = ?)",
        (repo.id,),
    )
    st.execute("DELETE FROM discussions WHERE repo_id = ?", (repo.id,))
    st.execute(
        "DELETE FROM thread_subscriptions WHERE notification_id IN (SELECT id FROM notifications WHERE repo_id = ?)",
        (repo.id,),
    )
    for table in _REPO_TABLES:
        st.execute(f"DELETE FROM {table} WHERE repo_id = ?", (repo.id,))
    st.execute("UPDATE repos SET fork_of = NULL WHERE fork_of = ?", (repo.id,))
    st.execute("DELETE FROM repos WHERE id = ?", (repo.id,))


def is_admin_of(sb: Sandbox, repo: Repo) -> bool:
    """The authenticated user owns the repository, administers its organisation, or is an admin collaborator."""
    if repo.owner.lower() == sb.me.lower():
        return True
    row = sb.store.row(
        "SELECT 1 FROM org_members m JOIN users o ON o.id = m.org_id JOIN users u ON u.id = m.user_id "
        "WHERE o.login = ? AND u.login = ? AND m.role = 'admin'",
        (repo.owner, sb.me),
    )
    direct = sb.store.row(
        "SELECT 1 FROM collaborators WHERE repo_id = ? AND login = ? AND permission = 'admin'", (repo.id, sb.me)
    )
    return row is not None or direct is not None


@tool("delete_repository")
def delete_repository(sb: Sandbox, args: dict[str, Any]) -> object:
    # The real server first asks the user to type the repository's name (an elicitation); here the MCP client's own
    # confirmation of a destructive tool stands in for it, and the call deletes.
    repo = repo_of(sb, args)
    if not visible(sb, repo):
        raise ToolError(f"failed to delete repository: {repo.full_name}: 404 Not Found")
    if not is_admin_of(sb, repo):
        raise ToolError(
            f"failed to delete repository: {repo.full_name}: 403 Forbidden: Must have admin rights to Repository."
        )
    purge_repo(sb, repo)
    # Last: the database rows go with the call's transaction; the git directory cannot be rolled back.
    sb.git(repo).remove()
    return f"Repository {repo.full_name} was deleted."
