"""Gists: create_gist, update_gist, get_gist, list_gists.

A gist's id is 32 hex digits derived from its row id (deterministic; a world may give its own). Secret gists are
readable by id, as on GitHub, but listed only for their owner; only the owner may update a gist.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from nexus_agent.sandbox.github.context import API_ROOT, Sandbox, ToolError
from nexus_agent.sandbox.github.handlers import tool
from nexus_agent.sandbox.github.handlers.common import minimal_user, opt_str, paginate, req_str

GIST_ROOT = "https://gist.github.com"
_LANGUAGES = {
    ".py": "Python",
    ".js": "JavaScript",
    ".ts": "TypeScript",
    ".go": "Go",
    ".md": "Markdown",
    ".sh": "Shell",
    ".json": "JSON",
    ".yml": "YAML",
    ".yaml": "YAML",
    ".toml": "TOML",
    ".sql": "SQL",
    ".rs": "Rust",
    ".txt": "Text",
}


@dataclass(frozen=True)
class Gist:
    """``files``: filename -> content, by filename."""

    id: int
    gist_id: str
    owner: str
    description: str
    public: bool
    created_at: str
    updated_at: str
    files: dict[str, str]


def gist_id_for(row_id: int) -> str:
    return hashlib.sha1(f"nexus-sandbox-gist-{row_id}".encode()).hexdigest()[:32]


def find_gist(sb: Sandbox, gist_id: str) -> Gist | None:
    r = sb.store.row("SELECT * FROM gists WHERE gist_id = ?", (gist_id.strip(),))
    if r is None:
        return None
    files = sb.store.rows("SELECT filename, content FROM gist_files WHERE gist_id = ? ORDER BY filename", (r["id"],))
    return Gist(
        r["id"],
        r["gist_id"],
        r["owner"],
        r["description"],
        bool(r["public"]),
        r["created_at"],
        r["updated_at"],
        {f["filename"]: f["content"] for f in files},
    )


def create(
    sb: Sandbox, owner: str, files: dict[str, str], description: str, public: bool, gist_id: str | None = None
) -> Gist:
    """A new gist (shared by the tool and worlds)."""
    now = sb.store.now()
    row_id = sb.store.insert(
        "gists",
        gist_id=gist_id or "",
        owner=owner,
        description=description,
        public=int(public),
        created_at=now,
        updated_at=now,
    )
    gid = gist_id or gist_id_for(row_id)
    sb.store.execute("UPDATE gists SET gist_id = ? WHERE id = ?", (gid, row_id))
    for name, content in files.items():
        sb.store.insert("gist_files", gist_id=row_id, filename=name, content=content)
    found = find_gist(sb, gid)
    assert found is not None
    return found


def _file_json(g: Gist, name: str, with_content: bool) -> dict[str, Any]:
    content = g.files[name]
    ext = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    out: dict[str, Any] = {
        "filename": name,
        "type": "text/plain",
        "language": _LANGUAGES.get(ext.lower()),
        "raw_url": f"https://gist.githubusercontent.com/{g.owner}/{g.gist_id}/raw/{name}",
        "size": len(content.encode()),
    }
    if with_content:
        out |= {"truncated": False, "content": content}
    return out


def gist_json(sb: Sandbox, g: Gist, *, with_content: bool) -> dict[str, Any]:
    """The REST gist object: with file contents for get_gist, without them in list_gists."""
    api = f"{API_ROOT}/gists/{g.gist_id}"
    owner = sb.store.find_user(g.owner)
    return {
        "url": api,
        "forks_url": f"{api}/forks",
        "commits_url": f"{api}/commits",
        "id": g.gist_id,
        "node_id": f"G_sbx{g.id}",
        "git_pull_url": f"{GIST_ROOT}/{g.gist_id}.git",
        "git_push_url": f"{GIST_ROOT}/{g.gist_id}.git",
        "html_url": f"{GIST_ROOT}/{g.gist_id}",
        "files": {name: _file_json(g, name, with_content) for name in g.files},
        "public": g.public,
        "created_at": g.created_at,
        "updated_at": g.updated_at,
        "description": g.description,
        "comments": 0,
        "owner": minimal_user(sb, g.owner) | {"type": owner.type if owner else "User"},
        "truncated": False,
    }


@tool("create_gist")
def create_gist(sb: Sandbox, args: dict[str, Any]) -> object:
    filename = req_str(args, "filename").strip()
    if "/" in filename:
        raise ToolError(f"failed to create gist: 422 Validation Failed: filename {filename!r} may not contain '/'")
    content = str(args.get("content", ""))
    if not content.strip():
        raise ToolError("failed to create gist: 422 Validation Failed: 'content' cannot be blank")
    g = create(sb, sb.me, {filename: content}, opt_str(args, "description") or "", bool(args.get("public", False)))
    return {"id": g.gist_id, "url": f"{GIST_ROOT}/{g.gist_id}"}


@tool("update_gist")
def update_gist(sb: Sandbox, args: dict[str, Any]) -> object:
    gid = req_str(args, "gist_id")
    g = find_gist(sb, gid)
    # GitHub answers 404 rather than 403 for a gist the caller may not edit.
    if g is None or g.owner.lower() != sb.me.lower():
        raise ToolError(f"failed to update gist: 404 Not Found: no gist {gid} of {sb.me}")
    filename = req_str(args, "filename").strip()
    if "/" in filename:
        raise ToolError(f"failed to update gist: 422 Validation Failed: filename {filename!r} may not contain '/'")
    sb.store.execute(
        "INSERT OR REPLACE INTO gist_files(gist_id, filename, content) VALUES (?, ?, ?)",
        (g.id, filename, str(args.get("content", ""))),
    )
    values: dict[str, object] = {"updated_at": sb.store.now()}
    if "description" in args:
        values["description"] = opt_str(args, "description") or ""
    sb.store.update("gists", g.id, **values)
    return {"id": g.gist_id, "url": f"{GIST_ROOT}/{g.gist_id}"}


@tool("get_gist")
def get_gist(sb: Sandbox, args: dict[str, Any]) -> object:
    gid = req_str(args, "gist_id")
    g = find_gist(sb, gid)
    if g is None:
        raise ToolError(f"failed to get gist: 404 Not Found: no gist {gid}")
    return gist_json(sb, g, with_content=True)


@tool("list_gists")
def list_gists(sb: Sandbox, args: dict[str, Any]) -> object:
    login = opt_str(args, "username") or sb.me
    if sb.store.find_user(login) is None:
        raise ToolError(f"failed to list gists: 404 Not Found: user {login} does not exist")
    since = opt_str(args, "since")
    if since:
        try:
            datetime.fromisoformat(since.replace("Z", "+00:00"))
        except ValueError as e:
            raise ToolError(f"invalid since timestamp: {e}") from e
    mine = login.lower() == sb.me.lower()
    rows = sb.store.rows("SELECT gist_id FROM gists WHERE owner = ? ORDER BY updated_at DESC, id DESC", (login,))
    gists = [g for r in rows if (g := find_gist(sb, r["gist_id"])) is not None and (mine or g.public)]
    if since:
        gists = [g for g in gists if g.updated_at >= since]
    return [gist_json(sb, g, with_content=False) for g in paginate(gists, args)]
