"""SQLite state of the sandbox: users, organisations, teams, repositories, labels, issues, pull requests.

Git content (files, branches, commits) lives in the git repositories (see ``gitrepo.py``); this database
holds everything GitHub keeps outside git. Issues and pull requests share one numbering per repository,
as on GitHub: a pull request is an ``issues`` row with ``is_pull = 1`` plus a ``pulls`` row.

Time is a logical clock stored in the database (``meta.clock``, seconds since the epoch, UTC): every
``now()`` call advances it by one minute. Nothing reads the wall clock, so the same calls on a freshly
seeded sandbox always produce the same timestamps and commit SHAs.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS users(
  id INTEGER PRIMARY KEY, login TEXT NOT NULL UNIQUE COLLATE NOCASE, type TEXT NOT NULL,
  name TEXT NOT NULL DEFAULT '', email TEXT NOT NULL DEFAULT '', bio TEXT NOT NULL DEFAULT '',
  company TEXT NOT NULL DEFAULT '', location TEXT NOT NULL DEFAULT '', blog TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS org_members(
  org_id INTEGER NOT NULL, user_id INTEGER NOT NULL, role TEXT NOT NULL, PRIMARY KEY(org_id, user_id));
CREATE TABLE IF NOT EXISTS teams(
  id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL, slug TEXT NOT NULL, name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '', UNIQUE(org_id, slug));
CREATE TABLE IF NOT EXISTS team_members(
  team_id INTEGER NOT NULL, user_id INTEGER NOT NULL, PRIMARY KEY(team_id, user_id));
CREATE TABLE IF NOT EXISTS repos(
  id INTEGER PRIMARY KEY, owner TEXT NOT NULL COLLATE NOCASE, name TEXT NOT NULL COLLATE NOCASE,
  description TEXT NOT NULL DEFAULT '', private INTEGER NOT NULL, fork_of INTEGER,
  default_branch TEXT NOT NULL, language TEXT NOT NULL DEFAULT '', topics TEXT NOT NULL DEFAULT '[]',
  stars INTEGER NOT NULL DEFAULT 0, archived INTEGER NOT NULL DEFAULT 0,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, UNIQUE(owner, name));
CREATE TABLE IF NOT EXISTS labels(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, name TEXT NOT NULL COLLATE NOCASE,
  color TEXT NOT NULL, description TEXT NOT NULL DEFAULT '', UNIQUE(repo_id, name));
CREATE TABLE IF NOT EXISTS issues(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, number INTEGER NOT NULL, title TEXT NOT NULL,
  body TEXT NOT NULL DEFAULT '', state TEXT NOT NULL, state_reason TEXT NOT NULL DEFAULT '',
  author TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, closed_at TEXT NOT NULL DEFAULT '',
  closed_by TEXT NOT NULL DEFAULT '', is_pull INTEGER NOT NULL DEFAULT 0, UNIQUE(repo_id, number));
CREATE TABLE IF NOT EXISTS issue_labels(
  issue_id INTEGER NOT NULL, label_id INTEGER NOT NULL, PRIMARY KEY(issue_id, label_id));
CREATE TABLE IF NOT EXISTS issue_assignees(
  issue_id INTEGER NOT NULL, login TEXT NOT NULL, PRIMARY KEY(issue_id, login));
CREATE TABLE IF NOT EXISTS comments(
  id INTEGER PRIMARY KEY, issue_id INTEGER NOT NULL, author TEXT NOT NULL, body TEXT NOT NULL,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reactions(
  id INTEGER PRIMARY KEY, issue_id INTEGER NOT NULL, comment_id INTEGER NOT NULL DEFAULT 0,
  author TEXT NOT NULL, content TEXT NOT NULL, UNIQUE(issue_id, comment_id, author, content));
CREATE TABLE IF NOT EXISTS pulls(
  issue_id INTEGER PRIMARY KEY, head_ref TEXT NOT NULL, base_ref TEXT NOT NULL,
  head_sha TEXT NOT NULL, merge_base_sha TEXT NOT NULL, draft INTEGER NOT NULL DEFAULT 0,
  merged INTEGER NOT NULL DEFAULT 0, merged_at TEXT NOT NULL DEFAULT '', merged_by TEXT NOT NULL DEFAULT '',
  merge_commit_sha TEXT NOT NULL DEFAULT '', maintainer_can_modify INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS pull_reviewers(
  issue_id INTEGER NOT NULL, reviewer TEXT NOT NULL, PRIMARY KEY(issue_id, reviewer));
"""

# Where the logical clock starts for a freshly seeded sandbox (2025-03-03T09:00:00Z).
CLOCK_START = int(datetime(2025, 3, 3, 9, 0, 0, tzinfo=UTC).timestamp())
CLOCK_STEP_S = 60

REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


class NotFound(LookupError):
    """A user, repository, issue, label... that does not exist."""


@dataclass(frozen=True)
class User:
    id: int
    login: str
    type: str  # "User" or "Organization"
    name: str
    email: str
    bio: str
    company: str
    location: str
    blog: str
    created_at: str


@dataclass(frozen=True)
class Team:
    id: int
    org: str
    slug: str
    name: str
    description: str


@dataclass(frozen=True)
class Repo:
    id: int
    owner: str
    name: str
    description: str
    private: bool
    fork_of: int | None
    default_branch: str
    language: str
    topics: tuple[str, ...]
    stars: int
    archived: bool
    created_at: str
    updated_at: str

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass(frozen=True)
class Label:
    id: int
    repo_id: int
    name: str
    color: str
    description: str


@dataclass(frozen=True)
class PullFields:
    """The pull-request half of an issue row. SHAs are full; ``merge_base_sha`` is the diff base."""

    head_ref: str
    base_ref: str
    head_sha: str
    merge_base_sha: str
    draft: bool
    merged: bool
    merged_at: str
    merged_by: str
    merge_commit_sha: str
    maintainer_can_modify: bool
    reviewers: tuple[str, ...]


@dataclass(frozen=True)
class Issue:
    id: int
    repo_id: int
    number: int
    title: str
    body: str
    state: str  # "open" / "closed"
    state_reason: str
    author: str
    created_at: str
    updated_at: str
    closed_at: str
    closed_by: str
    labels: tuple[Label, ...]
    assignees: tuple[str, ...]
    comments: int
    reactions: dict[str, int] = field(default_factory=dict)
    pull: PullFields | None = None


@dataclass(frozen=True)
class Comment:
    id: int
    issue_id: int
    author: str
    body: str
    created_at: str
    updated_at: str
    reactions: dict[str, int] = field(default_factory=dict)


def iso(ts: int) -> str:
    """Seconds since the epoch -> ``YYYY-MM-DDTHH:MM:SSZ``."""
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Store:
    """Typed queries over the sandbox database. Every mutating method commits its own transaction."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA foreign_keys = ON")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All statements inside commit together or not at all (one tool call = one transaction)."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def _one(self, sql: str, params: Iterable[object] = ()) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.db.execute(sql, tuple(params)).fetchone()
        return row

    def _all(self, sql: str, params: Iterable[object] = ()) -> list[sqlite3.Row]:
        return list(self.db.execute(sql, tuple(params)).fetchall())

    # -- meta and clock -------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self._one("SELECT value FROM meta WHERE key = ?", (key,))
        return None if row is None else str(row["value"])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def now(self) -> str:
        """Advance the logical clock by one step and return it as ISO-8601 UTC."""
        current = int(self.get_meta("clock") or CLOCK_START)
        current += CLOCK_STEP_S
        self.set_meta("clock", str(current))
        return iso(current)

    # -- users, orgs, teams ---------------------------------------------------------------------------

    def add_user(self, login: str, kind: str = "User", **profile: str) -> User:
        created = profile.pop("created_at", None) or self.now()
        cols = ["login", "type", "created_at", *profile.keys()]
        self.db.execute(
            f"INSERT INTO users({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            (login, kind, created, *profile.values()),
        )
        return self.user(login)

    def user(self, login: str) -> User:
        row = self._one("SELECT * FROM users WHERE login = ?", (login,))
        if row is None:
            raise NotFound(f"user {login} not found")
        return User(**dict(row))

    def find_user(self, login: str) -> User | None:
        try:
            return self.user(login)
        except NotFound:
            return None

    def users(self, kind: str) -> list[User]:
        return [User(**dict(r)) for r in self._all("SELECT * FROM users WHERE type = ? ORDER BY id", (kind,))]

    def add_org_member(self, org: str, login: str, role: str = "member") -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO org_members VALUES (?, ?, ?)", (self.user(org).id, self.user(login).id, role)
        )

    def orgs_of(self, login: str) -> list[User]:
        rows = self._all(
            "SELECT u.* FROM users u JOIN org_members m ON m.org_id = u.id WHERE m.user_id = ? ORDER BY u.id",
            (self.user(login).id,),
        )
        return [User(**dict(r)) for r in rows]

    def add_team(self, org: str, slug: str, name: str, description: str, members: list[str]) -> Team:
        org_id = self.user(org).id
        cur = self.db.execute(
            "INSERT INTO teams(org_id, slug, name, description) VALUES (?, ?, ?, ?)", (org_id, slug, name, description)
        )
        for login in members:
            self.db.execute("INSERT INTO team_members VALUES (?, ?)", (cur.lastrowid, self.user(login).id))
        return Team(int(cur.lastrowid or 0), org, slug, name, description)

    def teams_of(self, login: str) -> list[Team]:
        rows = self._all(
            "SELECT t.*, o.login AS org FROM teams t JOIN team_members tm ON tm.team_id = t.id "
            "JOIN users o ON o.id = t.org_id WHERE tm.user_id = ? ORDER BY o.login, t.slug",
            (self.user(login).id,),
        )
        return [Team(r["id"], r["org"], r["slug"], r["name"], r["description"]) for r in rows]

    def team_members(self, org: str, slug: str) -> list[str]:
        team = self._one("SELECT id FROM teams WHERE org_id = ? AND slug = ?", (self.user(org).id, slug))
        if team is None:
            raise NotFound(f"team {org}/{slug} not found")
        rows = self._all(
            "SELECT u.login FROM users u JOIN team_members tm ON tm.user_id = u.id WHERE tm.team_id = ? "
            "ORDER BY u.login",
            (team["id"],),
        )
        return [r["login"] for r in rows]

    # -- repositories ---------------------------------------------------------------------------------

    def add_repo(
        self,
        owner: str,
        name: str,
        *,
        description: str = "",
        private: bool = False,
        default_branch: str = "main",
        language: str = "",
        topics: tuple[str, ...] = (),
        stars: int = 0,
        fork_of: int | None = None,
    ) -> Repo:
        now = self.now()
        self.db.execute(
            "INSERT INTO repos(owner, name, description, private, fork_of, default_branch, language, topics, "
            "stars, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                owner,
                name,
                description,
                int(private),
                fork_of,
                default_branch,
                language,
                json.dumps(list(topics)),
                stars,
                now,
                now,
            ),
        )
        return self.repo(owner, name)

    @staticmethod
    def _repo_row(r: sqlite3.Row) -> Repo:
        d = dict(r)
        d["private"] = bool(d["private"])
        d["archived"] = bool(d["archived"])
        d["topics"] = tuple(json.loads(d["topics"]))
        return Repo(**d)

    def repo(self, owner: str, name: str) -> Repo:
        row = self._one("SELECT * FROM repos WHERE owner = ? AND name = ?", (owner, name))
        if row is None:
            raise NotFound(f"repository {owner}/{name} not found")
        return self._repo_row(row)

    def repos(self) -> list[Repo]:
        return [self._repo_row(r) for r in self._all("SELECT * FROM repos ORDER BY id")]

    def set_archived(self, repo_id: int, archived: bool) -> None:
        self.db.execute("UPDATE repos SET archived = ? WHERE id = ?", (int(archived), repo_id))

    def touch_repo(self, repo_id: int) -> None:
        self.db.execute("UPDATE repos SET updated_at = ? WHERE id = ?", (self.now(), repo_id))

    def fork_count(self, repo_id: int) -> int:
        row = self._one("SELECT COUNT(*) AS n FROM repos WHERE fork_of = ?", (repo_id,))
        return int(row["n"]) if row else 0

    def open_issue_count(self, repo_id: int) -> int:
        # GitHub's open_issues_count counts open pull requests too.
        row = self._one("SELECT COUNT(*) AS n FROM issues WHERE repo_id = ? AND state = 'open'", (repo_id,))
        return int(row["n"]) if row else 0

    # -- labels ---------------------------------------------------------------------------------------

    def add_label(self, repo_id: int, name: str, color: str, description: str = "") -> Label:
        cur = self.db.execute(
            "INSERT INTO labels(repo_id, name, color, description) VALUES (?, ?, ?, ?)",
            (repo_id, name, color, description),
        )
        return Label(int(cur.lastrowid or 0), repo_id, name, color, description)

    def label(self, repo_id: int, name: str) -> Label:
        row = self._one("SELECT * FROM labels WHERE repo_id = ? AND name = ?", (repo_id, name))
        if row is None:
            raise NotFound(f"label {name!r} not found")
        return Label(**dict(row))

    def labels(self, repo_id: int) -> list[tuple[Label, int]]:
        """Labels of a repository with their issue counts, most used first (then by name)."""
        rows = self._all(
            "SELECT l.*, COUNT(il.issue_id) AS n FROM labels l LEFT JOIN issue_labels il ON il.label_id = l.id "
            "WHERE l.repo_id = ? GROUP BY l.id ORDER BY n DESC, l.name COLLATE NOCASE",
            (repo_id,),
        )
        return [(Label(r["id"], r["repo_id"], r["name"], r["color"], r["description"]), int(r["n"])) for r in rows]

    def update_label(self, label_id: int, *, name: str, color: str, description: str) -> None:
        self.db.execute(
            "UPDATE labels SET name = ?, color = ?, description = ? WHERE id = ?", (name, color, description, label_id)
        )

    def delete_label(self, label_id: int) -> None:
        self.db.execute("DELETE FROM issue_labels WHERE label_id = ?", (label_id,))
        self.db.execute("DELETE FROM labels WHERE id = ?", (label_id,))

    # -- issues and pull requests ---------------------------------------------------------------------

    def create_issue(
        self, repo_id: int, *, title: str, body: str, author: str, pull: bool = False, number: int | None = None
    ) -> Issue:
        """A new open issue (or the issue half of a pull request). ``number`` defaults to the next one after the
        highest in the repository, as on GitHub; a world may give it explicitly (it must be free)."""
        now = self.now()
        if number is None:
            row = self._one("SELECT COALESCE(MAX(number), 0) + 1 AS n FROM issues WHERE repo_id = ?", (repo_id,))
            number = int(row["n"]) if row else 1
        self.db.execute(
            "INSERT INTO issues(repo_id, number, title, body, state, author, created_at, updated_at, is_pull) "
            "VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?)",
            (repo_id, number, title, body, author, now, now, int(pull)),
        )
        return self.issue(repo_id, number)

    def add_pull(
        self,
        issue_id: int,
        *,
        head_ref: str,
        base_ref: str,
        head_sha: str,
        merge_base_sha: str,
        draft: bool,
        maintainer_can_modify: bool,
    ) -> None:
        self.db.execute(
            "INSERT INTO pulls(issue_id, head_ref, base_ref, head_sha, merge_base_sha, draft, maintainer_can_modify) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (issue_id, head_ref, base_ref, head_sha, merge_base_sha, int(draft), int(maintainer_can_modify)),
        )

    def update_pull(self, issue_id: int, **values: object) -> None:
        """Set columns of the ``pulls`` row; keys must be column names (checked against the schema)."""
        allowed = {
            "head_ref",
            "base_ref",
            "head_sha",
            "merge_base_sha",
            "draft",
            "merged",
            "merged_at",
            "merged_by",
            "merge_commit_sha",
            "maintainer_can_modify",
        }
        unknown = set(values) - allowed
        if unknown:
            raise KeyError(f"unknown pull columns: {sorted(unknown)}")
        sets = ", ".join(f"{k} = ?" for k in values)
        self.db.execute(f"UPDATE pulls SET {sets} WHERE issue_id = ?", (*values.values(), issue_id))

    def set_reviewers(self, issue_id: int, reviewers: list[str]) -> None:
        for r in reviewers:
            self.db.execute("INSERT OR IGNORE INTO pull_reviewers VALUES (?, ?)", (issue_id, r))

    def update_issue(self, issue_id: int, **values: object) -> None:
        allowed = {"title", "body", "state", "state_reason", "closed_at", "closed_by"}
        unknown = set(values) - allowed
        if unknown:
            raise KeyError(f"unknown issue columns: {sorted(unknown)}")
        values["updated_at"] = self.now()
        sets = ", ".join(f"{k} = ?" for k in values)
        self.db.execute(f"UPDATE issues SET {sets} WHERE id = ?", (*values.values(), issue_id))

    def set_issue_labels(self, issue_id: int, label_ids: list[int]) -> None:
        self.db.execute("DELETE FROM issue_labels WHERE issue_id = ?", (issue_id,))
        for lid in label_ids:
            self.db.execute("INSERT OR IGNORE INTO issue_labels VALUES (?, ?)", (issue_id, lid))

    def set_assignees(self, issue_id: int, logins: list[str]) -> None:
        self.db.execute("DELETE FROM issue_assignees WHERE issue_id = ?", (issue_id,))
        for login in logins:
            self.db.execute("INSERT OR IGNORE INTO issue_assignees VALUES (?, ?)", (issue_id, login))

    def issue(self, repo_id: int, number: int) -> Issue:
        row = self._one("SELECT * FROM issues WHERE repo_id = ? AND number = ?", (repo_id, number))
        if row is None:
            raise NotFound(f"issue #{number} not found")
        return self._issue_row(row)

    def issues(self, repo_id: int | None = None, *, pulls: bool | None = None) -> list[Issue]:
        """Issues (``pulls=False``), pull requests (``True``) or both, newest number first."""
        where, params = [], []
        if repo_id is not None:
            where.append("repo_id = ?")
            params.append(repo_id)
        if pulls is not None:
            where.append("is_pull = ?")
            params.append(int(pulls))
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self._all(f"SELECT * FROM issues {clause} ORDER BY repo_id, number DESC", params)
        return [self._issue_row(r) for r in rows]

    def _issue_row(self, row: sqlite3.Row) -> Issue:
        iid = row["id"]
        labels = tuple(
            Label(**dict(r))
            for r in self._all(
                "SELECT l.* FROM labels l JOIN issue_labels il ON il.label_id = l.id WHERE il.issue_id = ? "
                "ORDER BY l.name COLLATE NOCASE",
                (iid,),
            )
        )
        assignees = tuple(
            r["login"] for r in self._all("SELECT login FROM issue_assignees WHERE issue_id = ? ORDER BY login", (iid,))
        )
        n_comments = self._one("SELECT COUNT(*) AS n FROM comments WHERE issue_id = ?", (iid,))
        pull = None
        if row["is_pull"]:
            p = self._one("SELECT * FROM pulls WHERE issue_id = ?", (iid,))
            if p is not None:
                rows = self._all("SELECT reviewer FROM pull_reviewers WHERE issue_id = ? ORDER BY reviewer", (iid,))
                reviewers = tuple(r["reviewer"] for r in rows)
                pull = PullFields(
                    head_ref=p["head_ref"],
                    base_ref=p["base_ref"],
                    head_sha=p["head_sha"],
                    merge_base_sha=p["merge_base_sha"],
                    draft=bool(p["draft"]),
                    merged=bool(p["merged"]),
                    merged_at=p["merged_at"],
                    merged_by=p["merged_by"],
                    merge_commit_sha=p["merge_commit_sha"],
                    maintainer_can_modify=bool(p["maintainer_can_modify"]),
                    reviewers=reviewers,
                )
        d = {k: row[k] for k in row.keys() if k != "is_pull"}  # noqa: SIM118 - sqlite3.Row is not a mapping
        return Issue(
            **d,
            labels=labels,
            assignees=assignees,
            comments=int(n_comments["n"]) if n_comments else 0,
            reactions=self._reactions(iid, 0),
            pull=pull,
        )

    # -- comments and reactions -----------------------------------------------------------------------

    def add_comment(self, issue_id: int, author: str, body: str) -> Comment:
        now = self.now()
        cur = self.db.execute(
            "INSERT INTO comments(issue_id, author, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            (issue_id, author, body, now, now),
        )
        self.db.execute("UPDATE issues SET updated_at = ? WHERE id = ?", (now, issue_id))
        return Comment(int(cur.lastrowid or 0), issue_id, author, body, now, now)

    def comments(self, issue_id: int) -> list[Comment]:
        rows = self._all("SELECT * FROM comments WHERE issue_id = ? ORDER BY id", (issue_id,))
        return [Comment(**dict(r), reactions=self._reactions(issue_id, r["id"])) for r in rows]

    def comment(self, issue_id: int, comment_id: int) -> Comment:
        row = self._one("SELECT * FROM comments WHERE issue_id = ? AND id = ?", (issue_id, comment_id))
        if row is None:
            raise NotFound(f"comment {comment_id} not found on this issue")
        return Comment(**dict(row), reactions=self._reactions(issue_id, comment_id))

    def add_reaction(self, issue_id: int, comment_id: int, author: str, content: str) -> int:
        """Add a reaction (0 = on the issue itself); idempotent per (author, content). Returns its id."""
        self.db.execute(
            "INSERT OR IGNORE INTO reactions(issue_id, comment_id, author, content) VALUES (?, ?, ?, ?)",
            (issue_id, comment_id, author, content),
        )
        row = self._one(
            "SELECT id FROM reactions WHERE issue_id = ? AND comment_id = ? AND author = ? AND content = ?",
            (issue_id, comment_id, author, content),
        )
        return int(row["id"]) if row else 0

    def _reactions(self, issue_id: int, comment_id: int) -> dict[str, int]:
        rows = self._all(
            "SELECT content, COUNT(*) AS n FROM reactions WHERE issue_id = ? AND comment_id = ? GROUP BY content",
            (issue_id, comment_id),
        )
        counts = {k: 0 for k in REACTIONS}
        for r in rows:
            counts[r["content"]] = int(r["n"])
        return counts
