"""The sandbox a handler works on: the SQLite store, the git repositories and who "me" is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nexus_agent.sandbox.github.gitrepo import GitRepo, Signature
from nexus_agent.sandbox.github.store import NotFound, Repo, Store

HTML_ROOT = "https://github.com"
API_ROOT = "https://api.github.com"
DB_NAME = "github.sqlite3"


class ToolError(Exception):
    """A failure reported to the client as an MCP error result (``isError: true``) with this text."""


@dataclass
class Sandbox:
    """Everything a tool handler may touch. ``root`` holds ``github.sqlite3`` and ``repos/<owner>/<name>.git``."""

    root: Path
    store: Store

    @classmethod
    def open(cls, root: Path) -> Sandbox:
        root.mkdir(parents=True, exist_ok=True)
        return cls(root=root, store=Store(root / DB_NAME))

    def close(self) -> None:
        self.store.close()

    @property
    def me(self) -> str:
        """Login of the authenticated user (set by the seed)."""
        login = self.store.get_meta("me")
        if login is None:
            raise ToolError("the sandbox has not been seeded (no authenticated user)")
        return login

    def repo_path(self, owner: str, name: str) -> Path:
        return self.root / "repos" / owner.lower() / f"{name.lower()}.git"

    def repo(self, owner: str, name: str) -> Repo:
        """The repository ``owner/name`` or a 404-style ToolError."""
        try:
            return self.store.repo(owner, name)
        except NotFound as e:
            raise ToolError(f"404 Not Found: repository {owner}/{name} does not exist") from e

    def git(self, repo: Repo) -> GitRepo:
        return GitRepo(self.repo_path(repo.owner, repo.name))

    def signature(self, login: str) -> Signature:
        """A commit signature for ``login`` stamped with the next tick of the logical clock."""
        user = self.store.user(login)
        email = user.email or f"{user.login}@users.noreply.github.com"
        return Signature(user.name or user.login, email, self.store.now())

    def login_for_email(self, email: str) -> str | None:
        """Map a commit author e-mail back to a sandbox login, as GitHub does for verified e-mails."""
        for user in self.store.users("User"):
            if email in (user.email, f"{user.login}@users.noreply.github.com"):
                return user.login
        return None
