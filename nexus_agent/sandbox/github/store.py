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

# The tables of the tools beyond issues, pull requests and git (sub-issues, reviews, releases, Actions, projects ...).
# Kept apart from SCHEMA so the acme tables read as they always did; every table here starts empty in the acme
# seed. Typed access lives with the handlers of each area (handlers/<area>.py); rows refer to SCHEMA's ids.
# Times are ISO-8601 UTC from the logical clock; JSON columns hold compact JSON.
TOOLS_SCHEMA = """
CREATE TABLE IF NOT EXISTS repo_settings(
  repo_id INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY(repo_id, key));
CREATE TABLE IF NOT EXISTS sub_issues(
  parent_id INTEGER NOT NULL, child_id INTEGER NOT NULL UNIQUE, position INTEGER NOT NULL,
  PRIMARY KEY(parent_id, child_id));
CREATE TABLE IF NOT EXISTS issue_types(
  id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL, name TEXT NOT NULL COLLATE NOCASE,
  description TEXT NOT NULL DEFAULT '', color TEXT NOT NULL DEFAULT 'gray', created_at TEXT NOT NULL,
  UNIQUE(org_id, name));
CREATE TABLE IF NOT EXISTS issue_type_of(issue_id INTEGER PRIMARY KEY, type_id INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS issue_fields(
  id INTEGER PRIMARY KEY, org_id INTEGER NOT NULL, name TEXT NOT NULL COLLATE NOCASE, data_type TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '', options TEXT NOT NULL DEFAULT '[]', UNIQUE(org_id, name));
CREATE TABLE IF NOT EXISTS issue_field_values(
  issue_id INTEGER NOT NULL, field_id INTEGER NOT NULL, value TEXT NOT NULL, PRIMARY KEY(issue_id, field_id));
CREATE TABLE IF NOT EXISTS copilot_tasks(
  id INTEGER PRIMARY KEY, issue_id INTEGER NOT NULL, kind TEXT NOT NULL, base_ref TEXT NOT NULL DEFAULT '',
  custom_instructions TEXT NOT NULL DEFAULT '', rationale TEXT NOT NULL DEFAULT '',
  confidence TEXT NOT NULL DEFAULT '', pull_issue_id INTEGER, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reviews(
  id INTEGER PRIMARY KEY, issue_id INTEGER NOT NULL, author TEXT NOT NULL, state TEXT NOT NULL,
  body TEXT NOT NULL DEFAULT '', commit_id TEXT NOT NULL, created_at TEXT NOT NULL,
  submitted_at TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS review_threads(
  id INTEGER PRIMARY KEY, issue_id INTEGER NOT NULL, path TEXT NOT NULL, subject_type TEXT NOT NULL,
  line INTEGER, start_line INTEGER, side TEXT NOT NULL DEFAULT 'RIGHT', start_side TEXT,
  resolved INTEGER NOT NULL DEFAULT 0, resolved_by TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS review_comments(
  id INTEGER PRIMARY KEY, thread_id INTEGER NOT NULL, review_id INTEGER NOT NULL, author TEXT NOT NULL,
  body TEXT NOT NULL, commit_id TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS review_comment_reactions(
  id INTEGER PRIMARY KEY, comment_id INTEGER NOT NULL, author TEXT NOT NULL, content TEXT NOT NULL,
  UNIQUE(comment_id, author, content));
CREATE TABLE IF NOT EXISTS releases(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, tag_name TEXT NOT NULL, target TEXT NOT NULL,
  name TEXT NOT NULL DEFAULT '', body TEXT NOT NULL DEFAULT '', author TEXT NOT NULL,
  draft INTEGER NOT NULL DEFAULT 0, prerelease INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL,
  published_at TEXT NOT NULL DEFAULT '', UNIQUE(repo_id, tag_name));
CREATE TABLE IF NOT EXISTS collaborators(
  repo_id INTEGER NOT NULL, login TEXT NOT NULL COLLATE NOCASE, permission TEXT NOT NULL,
  PRIMARY KEY(repo_id, login));
CREATE TABLE IF NOT EXISTS stars(
  login TEXT NOT NULL COLLATE NOCASE, repo_id INTEGER NOT NULL, starred_at TEXT NOT NULL,
  PRIMARY KEY(login, repo_id));
CREATE TABLE IF NOT EXISTS repo_subscriptions(
  login TEXT NOT NULL COLLATE NOCASE, repo_id INTEGER NOT NULL, subscribed INTEGER NOT NULL,
  ignored INTEGER NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY(login, repo_id));
CREATE TABLE IF NOT EXISTS gists(
  id INTEGER PRIMARY KEY, gist_id TEXT NOT NULL UNIQUE, owner TEXT NOT NULL, description TEXT NOT NULL DEFAULT '',
  public INTEGER NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS gist_files(
  gist_id INTEGER NOT NULL, filename TEXT NOT NULL, content TEXT NOT NULL, PRIMARY KEY(gist_id, filename));
CREATE TABLE IF NOT EXISTS discussion_categories(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, name TEXT NOT NULL COLLATE NOCASE, slug TEXT NOT NULL,
  emoji TEXT NOT NULL DEFAULT '', description TEXT NOT NULL DEFAULT '', answerable INTEGER NOT NULL DEFAULT 0,
  UNIQUE(repo_id, name));
CREATE TABLE IF NOT EXISTS discussions(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, number INTEGER NOT NULL, category_id INTEGER NOT NULL,
  title TEXT NOT NULL, body TEXT NOT NULL DEFAULT '', author TEXT NOT NULL, closed INTEGER NOT NULL DEFAULT 0,
  answer_id INTEGER, answer_chosen_at TEXT NOT NULL DEFAULT '', answer_chosen_by TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, UNIQUE(repo_id, number));
CREATE TABLE IF NOT EXISTS discussion_comments(
  id INTEGER PRIMARY KEY, discussion_id INTEGER NOT NULL, reply_to INTEGER, author TEXT NOT NULL,
  body TEXT NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS projects(
  id INTEGER PRIMARY KEY, owner_id INTEGER NOT NULL, number INTEGER NOT NULL, title TEXT NOT NULL,
  short_description TEXT NOT NULL DEFAULT '', readme TEXT NOT NULL DEFAULT '', public INTEGER NOT NULL DEFAULT 0,
  closed INTEGER NOT NULL DEFAULT 0, closed_at TEXT NOT NULL DEFAULT '', creator TEXT NOT NULL,
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, UNIQUE(owner_id, number));
CREATE TABLE IF NOT EXISTS project_fields(
  id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL, name TEXT NOT NULL COLLATE NOCASE, data_type TEXT NOT NULL,
  options TEXT NOT NULL DEFAULT '[]', configuration TEXT NOT NULL DEFAULT '{}', created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL, UNIQUE(project_id, name));
CREATE TABLE IF NOT EXISTS project_items(
  id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL, content_type TEXT NOT NULL, issue_id INTEGER,
  draft_title TEXT NOT NULL DEFAULT '', draft_body TEXT NOT NULL DEFAULT '', creator TEXT NOT NULL,
  archived_at TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS project_item_values(
  item_id INTEGER NOT NULL, field_id INTEGER NOT NULL, value TEXT NOT NULL, PRIMARY KEY(item_id, field_id));
CREATE TABLE IF NOT EXISTS project_views(
  id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL, number INTEGER NOT NULL, name TEXT NOT NULL,
  layout TEXT NOT NULL, filter TEXT NOT NULL DEFAULT '', visible_fields TEXT NOT NULL DEFAULT '[]',
  UNIQUE(project_id, number));
CREATE TABLE IF NOT EXISTS project_status_updates(
  id INTEGER PRIMARY KEY, project_id INTEGER NOT NULL, body TEXT NOT NULL DEFAULT '', status TEXT NOT NULL DEFAULT '',
  start_date TEXT NOT NULL DEFAULT '', target_date TEXT NOT NULL DEFAULT '', creator TEXT NOT NULL,
  created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS workflows(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, name TEXT NOT NULL, path TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'active', created_at TEXT NOT NULL, updated_at TEXT NOT NULL, UNIQUE(repo_id, path));
CREATE TABLE IF NOT EXISTS workflow_runs(
  id INTEGER PRIMARY KEY, workflow_id INTEGER NOT NULL, repo_id INTEGER NOT NULL, run_number INTEGER NOT NULL,
  run_attempt INTEGER NOT NULL DEFAULT 1, event TEXT NOT NULL, status TEXT NOT NULL,
  conclusion TEXT NOT NULL DEFAULT '', head_branch TEXT NOT NULL, head_sha TEXT NOT NULL, actor TEXT NOT NULL,
  triggering_actor TEXT NOT NULL, display_title TEXT NOT NULL, inputs TEXT NOT NULL DEFAULT '{}',
  logs_deleted INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
  run_started_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS workflow_jobs(
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, name TEXT NOT NULL, status TEXT NOT NULL,
  conclusion TEXT NOT NULL DEFAULT '', run_attempt INTEGER NOT NULL DEFAULT 1, steps TEXT NOT NULL DEFAULT '[]',
  log TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL, started_at TEXT NOT NULL DEFAULT '',
  completed_at TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS workflow_artifacts(
  id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, name TEXT NOT NULL, size_in_bytes INTEGER NOT NULL,
  expired INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notifications(
  id INTEGER PRIMARY KEY, login TEXT NOT NULL COLLATE NOCASE, repo_id INTEGER NOT NULL, subject_type TEXT NOT NULL,
  subject_title TEXT NOT NULL, subject_number INTEGER, subject_ref TEXT NOT NULL DEFAULT '', reason TEXT NOT NULL,
  unread INTEGER NOT NULL DEFAULT 1, done INTEGER NOT NULL DEFAULT 0, updated_at TEXT NOT NULL,
  last_read_at TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS thread_subscriptions(
  notification_id INTEGER PRIMARY KEY, subscribed INTEGER NOT NULL, ignored INTEGER NOT NULL,
  created_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS code_scanning_alerts(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, number INTEGER NOT NULL, rule_id TEXT NOT NULL,
  rule_description TEXT NOT NULL DEFAULT '', severity TEXT NOT NULL, security_severity TEXT NOT NULL DEFAULT '',
  tool TEXT NOT NULL, state TEXT NOT NULL, ref TEXT NOT NULL, path TEXT NOT NULL, start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL, message TEXT NOT NULL DEFAULT '', dismissed_reason TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, UNIQUE(repo_id, number));
CREATE TABLE IF NOT EXISTS dependabot_alerts(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, number INTEGER NOT NULL, package TEXT NOT NULL,
  ecosystem TEXT NOT NULL, manifest_path TEXT NOT NULL, severity TEXT NOT NULL, ghsa_id TEXT NOT NULL,
  cve_id TEXT NOT NULL DEFAULT '', summary TEXT NOT NULL, vulnerable_version_range TEXT NOT NULL DEFAULT '',
  patched_version TEXT NOT NULL DEFAULT '', state TEXT NOT NULL, dismissed_reason TEXT NOT NULL DEFAULT '',
  created_at TEXT NOT NULL, updated_at TEXT NOT NULL, UNIQUE(repo_id, number));
CREATE TABLE IF NOT EXISTS secret_scanning_alerts(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, number INTEGER NOT NULL, secret_type TEXT NOT NULL,
  secret_type_display_name TEXT NOT NULL, secret TEXT NOT NULL, state TEXT NOT NULL,
  resolution TEXT NOT NULL DEFAULT '', path TEXT NOT NULL, line INTEGER NOT NULL,
  validity TEXT NOT NULL DEFAULT 'unknown', created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
  UNIQUE(repo_id, number));
CREATE TABLE IF NOT EXISTS code_quality_findings(
  id INTEGER PRIMARY KEY, repo_id INTEGER NOT NULL, number INTEGER NOT NULL, rule_id TEXT NOT NULL,
  category TEXT NOT NULL DEFAULT '', severity TEXT NOT NULL, path TEXT NOT NULL, start_line INTEGER NOT NULL,
  end_line INTEGER NOT NULL, message TEXT NOT NULL, state TEXT NOT NULL DEFAULT 'open', created_at TEXT NOT NULL,
  UNIQUE(repo_id, number));
CREATE TABLE IF NOT EXISTS advisories(
  id INTEGER PRIMARY KEY, ghsa_id TEXT NOT NULL UNIQUE, repo_id INTEGER, cve_id TEXT NOT NULL DEFAULT '',
  summary TEXT NOT NULL, description TEXT NOT NULL DEFAULT '', severity TEXT NOT NULL, state TEXT NOT NULL,
  type TEXT NOT NULL DEFAULT 'reviewed', author TEXT NOT NULL DEFAULT '', vulnerabilities TEXT NOT NULL DEFAULT '[]',
  cwes TEXT NOT NULL DEFAULT '[]', created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
  published_at TEXT NOT NULL DEFAULT '', withdrawn_at TEXT NOT NULL DEFAULT '');
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
        self.db.executescript(TOOLS_SCHEMA)

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

    # -- generic access for the areas whose typed queries live with their handlers ------------------------

    def row(self, sql: str, params: Iterable[object] = ()) -> sqlite3.Row | None:
        return self._one(sql, params)

    def rows(self, sql: str, params: Iterable[object] = ()) -> list[sqlite3.Row]:
        return self._all(sql, params)

    def execute(self, sql: str, params: Iterable[object] = ()) -> None:
        self.db.execute(sql, tuple(params))

    def insert(self, table: str, **values: object) -> int:
        """INSERT one row into ``table`` (a name of the schemas, never user input); return its rowid."""
        cols = ", ".join(values)
        cur = self.db.execute(
            f"INSERT INTO {table}({cols}) VALUES ({', '.join('?' * len(values))})", tuple(values.values())
        )
        return int(cur.lastrowid or 0)

    def update(self, table: str, row_id: int, **values: object) -> None:
        """UPDATE columns of the row ``id = row_id`` of ``table`` (names from the schemas, never user input)."""
        sets = ", ".join(f"{k} = ?" for k in values)
        self.db.execute(f"UPDATE {table} SET {sets} WHERE id = ?", (*values.values(), row_id))

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

    def repo_by_id(self, repo_id: int) -> Repo:
        row = self._one("SELECT * FROM repos WHERE id = ?", (repo_id,))
        if row is None:
            raise NotFound(f"repository id {repo_id} not found")
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
            number = self.next_number(repo_id)
        self.db.execute(
            "INSERT INTO issues(repo_id, number, title, body, state, author, created_at, updated_at, is_pull) "
            "VALUES (?, ?, ?, ?, 'open', ?, ?, ?, ?)",
            (repo_id, number, title, body, author, now, now, int(pull)),
        )
        return self.issue(repo_id, number)

    def next_number(self, repo_id: int) -> int:
        """The next issue/pull request/discussion number: GitHub numbers all three in one sequence per repository."""
        row = self._one(
            "SELECT MAX(COALESCE((SELECT MAX(number) FROM issues WHERE repo_id = ?), 0), "
            "COALESCE((SELECT MAX(number) FROM discussions WHERE repo_id = ?), 0)) + 1 AS n",
            (repo_id, repo_id),
        )
        return int(row["n"]) if row else 1

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
