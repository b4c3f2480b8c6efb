"""The multi-step task set (``data/eval/multistep/``): fresh state per task, declarative state checks, and the
writes each task may make.

A task (one line of ``tasks.jsonl``, :class:`Task`) names a request, the servers it runs on, the gold calls that
carry it out (later arguments taken from earlier results, marked in ``from``), the checks its end state must pass
and the state keys it may change (``allowed_writes``). The three servers are real MCP server processes: the GitHub
sandbox (SQLite + bare git repositories), the reference filesystem server (a temporary folder, ``{fs}`` in the
requests) and the reference git server (a repository, ``{repo}``).

:class:`Workspace` builds each server's pristine state once from ``fixtures.json`` and puts it back in place
before every task, so one set of server processes serves a whole run: the sandbox's database is restored with
SQLite's backup API (its server reopens no file), the folders are emptied and copied again.
:meth:`Workspace.snapshot` flattens the state into ``key -> value`` strings (``issue acme/api#2 state``,
``file notes/todo.md``, ``git ref refs/heads/main`` ...); :func:`evaluate` diffs it against the pristine one, so
a write outside ``allowed_writes`` (fnmatch patterns over those keys) fails the task like a failed check.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nexus_agent.evaluation.files import read_jsonl
from nexus_agent.mcp import MultiServerClient, StdioServerConfig, ToolResult
from nexus_agent.sandbox.github import sandbox_server_params
from nexus_agent.sandbox.github.context import DB_NAME
from nexus_agent.sandbox.github.server import open_sandbox
from nexus_agent.sandbox.github.store import Store

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data" / "eval" / "multistep"
TASKS = DATA / "tasks.jsonl"
FIXTURES = DATA / "fixtures.json"
# tune tasks asked in other words (same worlds, same checks): how much of a tune result is its wording's
REWORDED = DATA / "reworded.jsonl"
# The reference filesystem server, installed by ``scripts/bootstrap.py --test`` (tests/mcp_servers/package.json).
FILESYSTEM_JS = ROOT / "tests" / "mcp_servers" / "node_modules" / "@modelcontextprotocol" / "server-filesystem"
FILESYSTEM_JS = FILESYSTEM_JS / "dist" / "index.js"

Kind = Literal["multi", "single", "absent"]
# How a multi-step task's calls depend on each other.
Pattern = Literal["find-then-act", "read-then-write", "act-then-check"]
Server = Literal["github", "filesystem", "git"]
SERVERS: tuple[str, ...] = ("github", "filesystem", "git")
# Deterministic commits in the git fixture: one fixed clock, advanced a minute per commit.
GIT_EPOCH = 1764579600  # 2025-12-01T09:00:00Z


class GoldCall(BaseModel):
    """One call of the gold sequence. ``from_``: where a value flows from, argument (dotted path into lists and
    dicts, ``edits.0.newText``) -> the index of the earlier call whose result text contains the whole value, or
    ``[index, part]`` when only ``part`` of the argument was taken from that result."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    server: Server
    tool: str
    arguments: dict[str, Any]
    from_: dict[str, int | tuple[int, str]] = Field(default_factory=dict, alias="from")

    @property
    def qualified(self) -> str:
        return f"{self.server}__{self.tool}"

    def flows(self) -> Iterator[tuple[str, int, str]]:
        """``(argument path, source call index, the value taken)`` for every ``from_`` entry."""
        for path, src in self.from_.items():
            if isinstance(src, int):
                yield path, src, str(lookup(self.arguments, path))
            else:
                yield path, src[0], src[1]


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    kind: Kind
    pattern: Pattern | None = None  # multi-step tasks only
    servers: list[Server]
    request: str
    fixture: dict[str, str] = Field(default_factory=dict)  # server -> fixture name in fixtures.json
    gold: list[GoldCall]
    checks: list[dict[str, Any]] = Field(default_factory=list)  # on the end state (CHECKS)
    answer_checks: list[dict[str, Any]] = Field(default_factory=list)  # on the answer text (ANSWER_CHECKS)
    allowed_writes: list[str] = Field(default_factory=list)  # fnmatch patterns over snapshot keys
    notes: str = ""
    split: Literal["tune", "check"] | None = None

    def filled(self, values: Mapping[str, str]) -> Task:
        """The task with ``{fs}`` / ``{repo}`` replaced by this run's paths, in the request and every argument."""
        return Task.model_validate(_fill(self.model_dump(by_alias=True), values))


def _fill(obj: Any, values: Mapping[str, str]) -> Any:
    if isinstance(obj, str):
        for k, v in values.items():
            obj = obj.replace("{" + k + "}", v)
        return obj
    if isinstance(obj, list):
        return [_fill(x, values) for x in obj]
    if isinstance(obj, dict):
        return {k: _fill(v, values) for k, v in obj.items()}
    return obj


def load_tasks(path: Path = TASKS, split: str | None = None) -> list[Task]:
    """The tasks of ``split`` (all when None). ``"reworded"``: the tune tasks :data:`REWORDED` asks in other words,
    each with its own request and the tune task's worlds and checks, in that file's order."""
    tasks = [Task.model_validate(row) for _, row in read_jsonl(path)]
    if split == "reworded":
        tune = {t.id: t for t in tasks if t.split == "tune"}
        return [tune[row["id"]].model_copy(update={"request": row["request"]}) for _, row in read_jsonl(REWORDED)]
    return [t for t in tasks if split is None or t.split == split]


def load_fixtures(path: Path = FIXTURES) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def lookup(obj: Any, dotted: str) -> Any:
    """``edits.0.newText`` -> ``obj["edits"][0]["newText"]``."""
    for part in dotted.split("."):
        obj = obj[int(part)] if isinstance(obj, list) else obj[part]
    return obj


# ---------------------------------------------------------------------------------------------- state


def _sha(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:12]


def run_git(cwd: Path, *args: str, env: Mapping[str, str] | None = None, git_dir: Path | None = None) -> str:
    argv = ["git", *([f"--git-dir={git_dir}"] if git_dir else []), *args]
    full_env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", **(env or {})}
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=full_env, check=True)
    return proc.stdout


@dataclass
class Workspace:
    """The three servers' state under ``root``: ``github/`` (sandbox data), ``files/`` and ``repo/``; pristine
    copies under ``template/``. Call :meth:`build` once, then :meth:`reset` before each task."""

    root: Path
    fixture: str = "base"
    _pristine: dict[str, str] = field(default_factory=dict)

    @property
    def gh_dir(self) -> Path:
        return self.root / "github"

    @property
    def fs_dir(self) -> Path:
        return self.root / "files"

    @property
    def git_dir(self) -> Path:
        return self.root / "repo"

    @property
    def template(self) -> Path:
        return self.root / "template"

    def values(self) -> dict[str, str]:
        """What the requests' placeholders stand for."""
        return {"fs": str(self.fs_dir), "repo": str(self.git_dir)}

    def build(self, fixtures: Mapping[str, Any] | None = None) -> None:
        fx = fixtures or load_fixtures()
        self.root = self.root.resolve()  # the filesystem server compares real paths
        shutil.rmtree(self.template, ignore_errors=True)
        self.template.mkdir(parents=True)
        _build_github(self.template / "github", fx["github"][self.fixture])
        build_files(self.template / "files", fx["filesystem"][self.fixture])
        build_git(self.template / "repo", fx["git"][self.fixture])
        for d in (self.gh_dir, self.fs_dir, self.git_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.reset()
        self._pristine = self.snapshot()

    @property
    def pristine(self) -> dict[str, str]:
        return self._pristine

    def reset(self) -> None:
        """Put every server's state back to the template, in place (the server processes keep running)."""
        restore_github(self.gh_dir, self.template / "github")
        replace_contents(self.fs_dir, self.template / "files")
        replace_contents(self.git_dir, self.template / "repo")

    def snapshot(self) -> dict[str, str]:
        return {**github_state(self.gh_dir), **files_state(self.fs_dir), **git_state(self.git_dir)}

    def store(self) -> Store:
        return Store(self.gh_dir / DB_NAME)

    def server_configs(self) -> dict[str, StdioServerConfig]:
        """The three MCP servers over this workspace, as the client starts them."""
        gh = sandbox_server_params(self.gh_dir)
        passed = {k: os.environ[k] for k in ("NEXUS_HOME", "PYTHONPATH") if k in os.environ}
        node = shutil.which("node") or "node"
        git_server = Path(sys.executable).parent / "mcp-server-git"
        return {
            "github": StdioServerConfig(command=gh.command, args=list(gh.args), env=passed),
            "filesystem": StdioServerConfig(command=node, args=[str(FILESYSTEM_JS), str(self.fs_dir)]),
            "git": StdioServerConfig(command=str(git_server)),
        }

    def mcp_config(self) -> dict[str, Any]:
        """The same servers as an ``mcpServers`` file (Claude Desktop format) for ``AgentConfig.config_file``."""
        return {
            "mcpServers": {
                name: {"command": c.command, "args": c.args, **({"env": c.env} if c.env else {})}
                for name, c in self.server_configs().items()
            }
        }


def restore_github(dst: Path, src: Path, repos: Iterable[str] | None = None) -> None:
    """Put the sandbox data in ``src`` (database and git repositories) in place in ``dst``, where a server may be
    running: the database through SQLite's backup API (the server's connection stays valid), the repositories
    copied again (only ``repos``, ``owner/name``, when given: the others are known to be as in ``src``)."""
    with closing(sqlite3.connect(src / DB_NAME)) as s, closing(sqlite3.connect(dst / DB_NAME)) as d:
        s.backup(d)
    if repos is None:
        shutil.rmtree(dst / "repos", ignore_errors=True)
        shutil.copytree(src / "repos", dst / "repos", symlinks=True)
        return
    for full in repos:
        owner, name = full.lower().split("/")
        rel = Path("repos") / owner / f"{name}.git"
        shutil.rmtree(dst / rel, ignore_errors=True)
        if (src / rel).exists():
            shutil.copytree(src / rel, dst / rel, symlinks=True)


def replace_contents(dst: Path, src: Path) -> None:
    """Empty ``dst`` (keeping the folder itself, which a server may hold as its root) and copy ``src`` into it."""
    dst.mkdir(parents=True, exist_ok=True)
    for child in dst.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
        else:
            child.unlink()
    shutil.copytree(src, dst, dirs_exist_ok=True, symlinks=True)


def _build_github(data_dir: Path, fx: Mapping[str, Any]) -> None:
    sb = open_sandbox(data_dir)
    try:
        st = sb.store
        with st.transaction():
            for spec in fx["issues"]:
                owner, name = spec["repo"].split("/")
                repo = st.repo(owner, name)
                issue = st.create_issue(repo.id, title=spec["title"], body=spec["body"], author=spec["author"])
                st.set_issue_labels(issue.id, [st.label(repo.id, n).id for n in spec["labels"]])
                st.set_assignees(issue.id, spec["assignees"])
                for who, text in spec.get("comments", []):
                    st.add_comment(issue.id, who, text)
                if spec.get("state") == "closed":
                    st.update_issue(
                        issue.id, state="closed", state_reason="completed", closed_at=st.now(), closed_by=spec["author"]
                    )
    finally:
        sb.close()


def build_files(root: Path, fx: Mapping[str, Any]) -> None:
    root.mkdir(parents=True)
    for rel, text in fx["files"].items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    for rel in fx.get("dirs", []):
        (root / rel).mkdir(parents=True, exist_ok=True)


def build_git(repo: Path, fx: Mapping[str, Any]) -> None:
    repo.mkdir(parents=True)
    run_git(repo, "init", "-q", "-b", "main")
    run_git(repo, "config", "user.name", fx["user"]["name"])
    run_git(repo, "config", "user.email", fx["user"]["email"])
    for i, commit in enumerate(fx["commits"]):
        branch = commit["branch"]
        if "from" in commit:
            run_git(repo, "checkout", "-q", "-B", branch, commit["from"])
        elif i:
            run_git(repo, "checkout", "-q", branch)
        for rel, text in commit["files"].items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text, encoding="utf-8")
            run_git(repo, "add", rel)
        stamp = f"{GIT_EPOCH + 60 * i} +0000"
        run_git(
            repo, "commit", "-q", "-m", commit["message"], env={"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
        )
    run_git(repo, "checkout", "-q", fx["checkout"])
    for rel, text in fx.get("worktree", {}).items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    for rel, text in fx.get("staged", {}).items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
        run_git(repo, "add", rel)


def github_state(data_dir: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    db = sqlite3.connect(data_dir / DB_NAME)
    db.row_factory = sqlite3.Row
    with closing(db):
        repos = {r["id"]: f"{r['owner']}/{r['name']}" for r in db.execute("SELECT id, owner, name FROM repos")}
        for r in db.execute("SELECT * FROM repos"):
            fields = {k: r[k] for k in ("description", "private", "archived", "default_branch", "topics", "fork_of")}
            out[f"repo {repos[r['id']]}"] = json.dumps(fields, sort_keys=True)
        for r in db.execute("SELECT * FROM labels"):
            out[f"label {repos[r['repo_id']]} {r['name'].lower()}"] = f"{r['color']}|{r['description']}"
        numbers: dict[int, str] = {}
        for r in db.execute("SELECT * FROM issues"):
            key = f"{repos[r['repo_id']]}#{r['number']}"
            numbers[r["id"]] = key
            for col in ("title", "body", "state", "state_reason"):
                out[f"issue {key} {col}"] = str(r[col])
        labels = db.execute(
            "SELECT il.issue_id, l.name FROM issue_labels il JOIN labels l ON l.id = il.label_id ORDER BY l.name"
        )
        grouped: dict[str, list[str]] = {}
        for r in labels:
            grouped.setdefault(f"issue {numbers[r['issue_id']]} labels", []).append(r["name"].lower())
        for r in db.execute("SELECT issue_id, login FROM issue_assignees ORDER BY login"):
            grouped.setdefault(f"issue {numbers[r['issue_id']]} assignees", []).append(r["login"].lower())
        for r in db.execute("SELECT issue_id, reviewer FROM pull_reviewers ORDER BY reviewer"):
            grouped.setdefault(f"pull {numbers[r['issue_id']]} reviewers", []).append(r["reviewer"].lower())
        out.update({k: ",".join(v) for k, v in grouped.items()})
        for r in db.execute("SELECT * FROM pulls"):
            for col in ("head_ref", "base_ref", "draft", "merged", "maintainer_can_modify"):
                out[f"pull {numbers[r['issue_id']]} {col}"] = str(r[col])
        for r in db.execute("SELECT * FROM comments"):
            out[f"comment {numbers[r['issue_id']]} {r['id']}"] = r["body"]
        for r in db.execute("SELECT * FROM reactions"):
            out[f"reaction {numbers[r['issue_id']]} {r['comment_id']} {r['author']} {r['content']}"] = "1"
        out.update(_github_tool_state(db, repos, numbers))
    for git_dir in sorted((data_dir / "repos").glob("*/*.git")):
        full = f"{git_dir.parent.name}/{git_dir.name.removesuffix('.git')}"
        refs = run_git(data_dir, "for-each-ref", "--format=%(refname) %(objectname)", git_dir=git_dir)
        for line in refs.splitlines():
            ref, sha = line.split()
            out[f"ref {full} {ref}"] = sha
    return out


def _compact(value: Mapping[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _github_tool_state(db: sqlite3.Connection, repos: Mapping[int, str], numbers: Mapping[int, str]) -> dict[str, str]:
    """The tables of the tools beyond issues, pull requests and git (``store.TOOLS_SCHEMA``), one readable key per
    object or relation, in the style of :func:`github_state`: ``issue acme/api#1 sub_issues``, ``review
    acme/api#5 3``, ``release acme/api v1.0``, ``project acme/1``, ``workflow_run acme/api 7`` ... Values hold what a
    call can change and no timestamps, so a diff shows exactly what changed."""
    out: dict[str, str] = {}
    rows = db.execute
    # Issues: hierarchy, types, custom fields; Copilot's tasks.
    children: dict[str, list[str]] = {}
    for r in rows("SELECT parent_id, child_id FROM sub_issues ORDER BY position"):
        children.setdefault(numbers[r["parent_id"]], []).append(numbers[r["child_id"]])
    out.update({f"issue {k} sub_issues": ",".join(v) for k, v in children.items()})
    orgs = {r["id"]: r["login"] for r in rows("SELECT id, login FROM users")}
    for r in rows("SELECT * FROM issue_types"):
        out[f"issue_type {orgs[r['org_id']]} {r['name']}"] = f"{r['color']}|{r['description']}"
    for r in rows("SELECT o.issue_id, t.name FROM issue_type_of o JOIN issue_types t ON t.id = o.type_id"):
        out[f"issue {numbers[r['issue_id']]} type"] = r["name"]
    for r in rows("SELECT * FROM issue_fields"):
        options = ",".join(o["name"] for o in json.loads(r["options"]))
        out[f"issue_field {orgs[r['org_id']]} {r['name']}"] = f"{r['data_type']}|{options}"
    for r in rows(
        "SELECT v.issue_id, f.name, v.value FROM issue_field_values v JOIN issue_fields f ON f.id = v.field_id"
    ):
        out[f"issue {numbers[r['issue_id']]} field {r['name']}"] = r["value"]
    for r in rows("SELECT * FROM copilot_tasks"):
        pull = numbers.get(r["pull_issue_id"], "") if r["pull_issue_id"] else ""
        out[f"copilot {numbers[r['issue_id']]} {r['id']}"] = "|".join(
            (r["kind"], r["base_ref"], r["custom_instructions"], pull)
        )
    # Reviews, their threads and comments, reactions to review comments.
    for r in rows("SELECT * FROM reviews"):
        out[f"review {numbers[r['issue_id']]} {r['id']}"] = f"{r['author']}|{r['state']}|{r['body']}"
    threads = {}
    for r in rows("SELECT * FROM review_threads"):
        threads[r["id"]] = numbers[r["issue_id"]]
        where = f"{r['path']}:{r['line']}" if r["line"] is not None else r["path"]
        out[f"review_thread {threads[r['id']]} {r['id']}"] = f"{where} {r['side']}|resolved={r['resolved']}"
    for r in rows("SELECT * FROM review_comments"):
        out[f"review_comment {threads[r['thread_id']]} {r['thread_id']} {r['id']}"] = f"{r['author']}|{r['body']}"
    for r in rows(
        "SELECT x.*, c.thread_id FROM review_comment_reactions x JOIN review_comments c ON c.id = x.comment_id"
    ):
        out[f"review_reaction {threads[r['thread_id']]} {r['comment_id']} {r['author']} {r['content']}"] = "1"
    # Repositories: releases, people, stars, subscriptions, settings.
    for r in rows("SELECT id, stars FROM repos"):
        out[f"repo {repos[r['id']]} stargazers"] = str(r["stars"])
    for r in rows("SELECT * FROM releases"):
        fields = {k: r[k] for k in ("name", "body", "target", "draft", "prerelease")}
        out[f"release {repos[r['repo_id']]} {r['tag_name']}"] = _compact(fields)
    for r in rows("SELECT * FROM collaborators"):
        out[f"collaborator {repos[r['repo_id']]} {r['login'].lower()}"] = r["permission"]
    for r in rows("SELECT * FROM stars"):
        out[f"star {r['login'].lower()} {repos[r['repo_id']]}"] = "1"
    for r in rows("SELECT * FROM repo_subscriptions"):
        out[f"subscription {r['login'].lower()} {repos[r['repo_id']]}"] = "ignoring" if r["ignored"] else "watching"
    for r in rows("SELECT * FROM repo_settings"):
        out[f"repo {repos[r['repo_id']]} setting {r['key']}"] = r["value"]
    # Gists.
    gists = {}
    for r in rows("SELECT * FROM gists"):
        gists[r["id"]] = r["gist_id"]
        out[f"gist {r['gist_id']}"] = _compact(
            {"owner": r["owner"], "description": r["description"], "public": r["public"]}
        )
    for r in rows("SELECT * FROM gist_files"):
        out[f"gist {gists[r['gist_id']]} file {r['filename']}"] = r["content"]
    # Discussions.
    for r in rows("SELECT * FROM discussion_categories"):
        out[f"discussion_category {repos[r['repo_id']]} {r['name']}"] = "answerable" if r["answerable"] else ""
    discussions, categories = {}, {r["id"]: r["name"] for r in rows("SELECT id, name FROM discussion_categories")}
    for r in rows("SELECT * FROM discussions"):
        discussions[r["id"]] = f"{repos[r['repo_id']]}#{r['number']}"
        fields = {
            "title": r["title"],
            "body": r["body"],
            "category": categories[r["category_id"]],
            "closed": r["closed"],
        }
        out[f"discussion {discussions[r['id']]}"] = _compact(fields | {"answer": r["answer_id"]})
    for r in rows("SELECT * FROM discussion_comments"):
        at = f"{r['reply_to']}/{r['id']}" if r["reply_to"] else str(r["id"])
        out[f"discussion_comment {discussions[r['discussion_id']]} {at}"] = f"{r['author']}|{r['body']}"
    out.update(_project_state(db, orgs, numbers))
    # Actions.
    paths = {}
    for r in rows("SELECT * FROM workflows"):
        paths[r["id"]] = r["path"]
        out[f"workflow {repos[r['repo_id']]} {r['path']}"] = f"{r['name']}|{r['state']}"
    runs = {}
    for r in rows("SELECT * FROM workflow_runs"):
        runs[r["id"]] = repos[r["repo_id"]]
        fields = {k: r[k] for k in ("event", "status", "conclusion", "run_attempt", "head_branch", "logs_deleted")}
        out[f"workflow_run {runs[r['id']]} {r['id']}"] = _compact(fields | {"workflow": paths[r["workflow_id"]]})
    for r in rows("SELECT * FROM workflow_jobs"):
        value = f"{r['name']}|attempt={r['run_attempt']}|{r['status']}|{r['conclusion']}"
        out[f"workflow_job {runs[r['run_id']]} {r['run_id']} {r['id']}"] = value
    for r in rows("SELECT * FROM workflow_artifacts"):
        out[f"artifact {runs[r['run_id']]} {r['run_id']} {r['name']}"] = f"{r['size_in_bytes']}|expired={r['expired']}"
    # Notifications and thread subscriptions.
    for r in rows("SELECT * FROM notifications"):
        subject = f"{r['subject_type']} {r['subject_number'] or r['subject_ref'] or r['subject_title']}"
        fields = {"repo": repos[r["repo_id"]], "subject": subject, "reason": r["reason"]}
        out[f"notification {r['id']}"] = _compact(fields | {"unread": r["unread"], "done": r["done"]})
    for r in rows("SELECT * FROM thread_subscriptions"):
        out[f"thread_subscription {r['notification_id']}"] = "ignoring" if r["ignored"] else "watching"
    # Alerts and advisories.
    for table, what in (
        ("code_scanning_alerts", "rule_id"),
        ("dependabot_alerts", "package"),
        ("secret_scanning_alerts", "secret_type"),
        ("code_quality_findings", "rule_id"),
    ):
        for r in rows(f"SELECT * FROM {table}"):
            out[f"{table.removesuffix('s')} {repos[r['repo_id']]} {r['number']}"] = f"{r['state']}|{r[what]}"
    for r in rows("SELECT * FROM advisories"):
        where = repos[r["repo_id"]] if r["repo_id"] is not None else "global"
        fields = {"where": where, "state": r["state"], "severity": r["severity"], "summary": r["summary"]}
        out[f"advisory {r['ghsa_id']}"] = _compact(fields | {"withdrawn": bool(r["withdrawn_at"])})
    return out


def _project_state(db: sqlite3.Connection, owners: Mapping[int, str], numbers: Mapping[int, str]) -> dict[str, str]:
    """Projects: ``project harbor-io/1``, its fields, items (``project_item harbor-io/1 3``: what the item is), item
    values by field name (option names and iteration titles, not ids), views and status updates."""
    out: dict[str, str] = {}
    projects, fields = {}, {}
    for r in db.execute("SELECT * FROM projects"):
        projects[r["id"]] = f"{owners[r['owner_id']]}/{r['number']}"
        state = {k: r[k] for k in ("title", "short_description", "readme", "public", "closed")}
        out[f"project {projects[r['id']]}"] = _compact(state)
    for r in db.execute("SELECT * FROM project_fields"):
        fields[r["id"]] = r
        choices = [o["name"] for o in json.loads(r["options"])]
        choices += [i["title"] for i in json.loads(r["configuration"]).get("iterations", [])]
        out[f"project_field {projects[r['project_id']]} {r['name']}"] = f"{r['data_type']}|{','.join(choices)}"
    items = {}
    for r in db.execute("SELECT * FROM project_items"):
        items[r["id"]] = projects[r["project_id"]]
        what = numbers.get(r["issue_id"], "") if r["issue_id"] else f"draft: {r['draft_title']}"
        out[f"project_item {items[r['id']]} {r['id']}"] = what + ("|archived" if r["archived_at"] else "")
    for r in db.execute("SELECT * FROM project_item_values"):
        field = fields[r["field_id"]]
        value = json.loads(r["value"])
        named = json.loads(field["options"]) + json.loads(field["configuration"]).get("iterations", [])
        value = next((o.get("name") or o.get("title") for o in named if o["id"] == value), value)
        out[f"project_value {items[r['item_id']]} {r['item_id']} {field['name']}"] = str(value)
    for r in db.execute("SELECT * FROM project_views"):
        visible = [fields[f]["name"] for f in json.loads(r["visible_fields"]) if f in fields]
        view = {"name": r["name"], "layout": r["layout"], "filter": r["filter"], "visible_fields": visible}
        out[f"project_view {projects[r['project_id']]} {r['number']}"] = _compact(view)
    for r in db.execute("SELECT * FROM project_status_updates"):
        value = f"{r['status']}|{r['start_date']}|{r['target_date']}|{r['body']}"
        out[f"project_status_update {projects[r['project_id']]} {r['id']}"] = value
    return out


def files_state(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[f"dir {rel}" if p.is_dir() else f"file {rel}"] = "" if p.is_dir() else _sha(p.read_bytes())
    return out


def git_state(repo: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    if not (repo / ".git").exists():
        return out
    for line in run_git(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines():
        ref, sha = line.split()
        out[f"git ref {ref}"] = sha
    out["git HEAD"] = run_git(repo, "symbolic-ref", "-q", "HEAD").strip() if _head_is_branch(repo) else "detached"
    for line in run_git(repo, "ls-files", "-s").splitlines():
        meta, path = line.split("\t", 1)
        out[f"git index {path}"] = meta.split()[1]
    for p in sorted(repo.rglob("*")):
        rel = p.relative_to(repo).as_posix()
        if rel == ".git" or rel.startswith(".git/") or p.is_dir():
            continue
        out[f"git tree {rel}"] = _sha(p.read_bytes())
    return out


def _head_is_branch(repo: Path) -> bool:
    proc = subprocess.run(["git", "symbolic-ref", "-q", "HEAD"], cwd=repo, capture_output=True)
    return proc.returncode == 0


def changed_keys(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """Keys added, removed or changed between two snapshots."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def unallowed(changed: list[str], allowed: list[str]) -> list[str]:
    return [k for k in changed if not any(fnmatch.fnmatchcase(k, pat) for pat in allowed)]


# ---------------------------------------------------------------------------------------------- checks


@dataclass
class CheckContext:
    """What a check reads: the workspace after the task, the pristine snapshot, the answer and the calls' results."""

    ws: Workspace
    answer: str
    results: list[str]


CheckFn = Callable[[CheckContext, dict[str, Any]], str | None]
CHECKS: dict[str, CheckFn] = {}
ANSWER_CHECKS: dict[str, CheckFn] = {}


def check(name: str, *, answer: bool = False) -> Callable[[CheckFn], CheckFn]:
    """Register a check: it returns None when it holds, else what is wrong."""

    def add(fn: CheckFn) -> CheckFn:
        (ANSWER_CHECKS if answer else CHECKS)[name] = fn
        return fn

    return add


def _contains_all(text: str, needles: list[str]) -> str | None:
    missing = [n for n in needles if n.lower() not in text.lower()]
    return None if not missing else f"missing {missing}"


def _issue_of(st: Store, spec: Mapping[str, Any]) -> Any:
    owner, name = spec["repo"].split("/")
    return st.issue(st.repo(owner, name).id, int(spec["number"]))


@check("gh_issue")
def _gh_issue(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """An issue or pull request's fields: state, state_reason, labels_include/exclude, assignees_include/exclude,
    title_contains, body_contains."""
    with closing(ctx.ws.store()) as st:
        issue = _issue_of(st, spec)
    labels = {lb.name.lower() for lb in issue.labels}
    assignees = {a.lower() for a in issue.assignees}
    problems = []
    for col in ("state", "state_reason"):
        if col in spec and getattr(issue, col) != spec[col]:
            problems.append(f"{col} {getattr(issue, col)!r} != {spec[col]!r}")
    problems += [f"label {x!r} missing" for x in spec.get("labels_include", []) if x.lower() not in labels]
    problems += [f"label {x!r} present" for x in spec.get("labels_exclude", []) if x.lower() in labels]
    problems += [f"assignee {x!r} missing" for x in spec.get("assignees_include", []) if x.lower() not in assignees]
    problems += [f"assignee {x!r} present" for x in spec.get("assignees_exclude", []) if x.lower() in assignees]
    for col in ("title", "body"):
        if f"{col}_contains" in spec and (p := _contains_all(getattr(issue, col), spec[f"{col}_contains"])):
            problems.append(f"{col} {p}")
    return "; ".join(problems) or None


@check("gh_comment")
def _gh_comment(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """A new comment on issue/PR ``number`` whose body contains every ``contains``."""
    with closing(ctx.ws.store()) as st:
        issue = _issue_of(st, spec)
        bodies = [c.body for c in st.comments(issue.id)]
    old = {v for k, v in ctx.ws.pristine.items() if k.startswith(f"comment {spec['repo']}#{spec['number']} ")}
    new = [b for b in bodies if b not in old]
    if not new:
        return "no new comment"
    return None if any(_contains_all(b, spec.get("contains", [])) is None for b in new) else f"comments {new!r}"


@check("gh_new_issue")
def _gh_new_issue(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """A new issue in ``repo`` whose title contains every ``title_contains`` (body every ``body_contains``, title
    and body together every ``text_contains``, labels include ``labels_include``)."""
    owner, name = spec["repo"].split("/")
    with closing(ctx.ws.store()) as st:
        issues = st.issues(st.repo(owner, name).id, pulls=False)
    new = [i for i in issues if f"issue {spec['repo']}#{i.number} title" not in ctx.ws.pristine]
    for i in new:
        labels = {lb.name.lower() for lb in i.labels}
        if (
            _contains_all(i.title, spec.get("title_contains", [])) is None
            and _contains_all(i.body, spec.get("body_contains", [])) is None
            and _contains_all(f"{i.title}\n{i.body}", spec.get("text_contains", [])) is None
            and all(x.lower() in labels for x in spec.get("labels_include", []))
        ):
            return None
    return f"no matching new issue among {[i.title for i in new]}"


@check("gh_pull")
def _gh_pull(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """A pull request's ``merged`` / ``draft`` flags."""
    with closing(ctx.ws.store()) as st:
        issue = _issue_of(st, spec)
    if issue.pull is None:
        return "not a pull request"
    problems = [
        f"{k} {getattr(issue.pull, k)} != {spec[k]}"
        for k in ("merged", "draft")
        if k in spec and getattr(issue.pull, k) != spec[k]
    ]
    problems += [f"reviewer {r!r} missing" for r in spec.get("reviewers_include", []) if r not in issue.pull.reviewers]
    return "; ".join(problems) or None


@check("gh_new_pull")
def _gh_new_pull(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """A new pull request from ``head`` into ``base`` (title containing ``title_contains``)."""
    owner, name = spec["repo"].split("/")
    with closing(ctx.ws.store()) as st:
        pulls = st.issues(st.repo(owner, name).id, pulls=True)
    for p in pulls:
        if f"issue {spec['repo']}#{p.number} title" in ctx.ws.pristine or p.pull is None:
            continue
        if (
            (p.pull.head_ref, p.pull.base_ref) == (spec["head"], spec.get("base", "main"))
            and _contains_all(p.title, spec.get("title_contains", [])) is None
            and _contains_all(p.body, spec.get("body_contains", [])) is None
        ):
            return None
    return "no matching new pull request"


@check("gh_reaction")
def _gh_reaction(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """A reaction ``content`` by octo-dev on issue ``number`` (``comment``: on that comment id; default the issue)."""
    key = f"reaction {spec['repo']}#{spec['number']} {spec.get('comment', 0)} octo-dev {spec['content']}"
    return None if key in ctx.ws.snapshot() else "no such reaction"


def _gh_git(ctx: CheckContext, repo: str) -> Path:
    owner, name = repo.lower().split("/")
    return ctx.ws.gh_dir / "repos" / owner / f"{name}.git"


@check("gh_branch")
def _gh_branch(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """Branch ``branch`` exists in ``repo`` (``absent``: does not); ``from``: it points where that branch pointed
    before the task."""
    return _branch(ctx, spec, f"ref {spec['repo']} refs/heads/", spec["branch"])


@check("gh_file")
def _gh_file(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """File ``path`` on ``branch`` of ``repo``: ``contains`` every string, ``not_contains`` none."""
    git_dir = _gh_git(ctx, spec["repo"])
    try:
        text = run_git(ctx.ws.gh_dir, "show", f"{spec.get('branch', 'main')}:{spec['path']}", git_dir=git_dir)
    except subprocess.CalledProcessError:
        return "no such file"
    bad = [n for n in spec.get("not_contains", []) if n.lower() in text.lower()]
    return _contains_all(text, spec.get("contains", [])) or (f"contains {bad}" if bad else None)


@check("gh_label")
def _gh_label(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """Label ``name`` in ``repo`` exists (with ``color``) or, with ``absent``, does not."""
    value = ctx.ws.snapshot().get(f"label {spec['repo']} {spec['name'].lower()}")
    if spec.get("absent"):
        return None if value is None else "label exists"
    if value is None:
        return "no such label"
    if "color" in spec and value.split("|")[0].lower() != spec["color"].lower():
        return f"colour {value.split('|')[0]} != {spec['color']}"
    return None


@check("fs_file")
def _fs_file(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """File ``path`` (relative to the folder): ``equals``, ``contains``, ``not_contains``; ``absent``: no file."""
    p = ctx.ws.fs_dir / spec["path"]
    if spec.get("absent"):
        return None if not p.exists() else "file exists"
    if not p.is_file():
        return "no such file"
    text = p.read_text(encoding="utf-8", errors="replace")
    if "equals" in spec and text.rstrip("\n") != spec["equals"].rstrip("\n"):
        return f"content {text[:200]!r}"
    bad = [n for n in spec.get("not_contains", []) if n.lower() in text.lower()]
    return _contains_all(text, spec.get("contains", [])) or (f"contains {bad}" if bad else None)


@check("fs_dir")
def _fs_dir(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    return None if (ctx.ws.fs_dir / spec["path"]).is_dir() else "no such folder"


@check("git_branch")
def _git_branch(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """Branch ``name`` exists (``absent``: not); ``from``: it points where that branch pointed before the task."""
    return _branch(ctx, spec, "git ref refs/heads/", spec["name"])


def _branch(ctx: CheckContext, spec: dict[str, Any], key: str, name: str) -> str | None:
    """Branch ``name`` (snapshot key ``key + name``) exists, or not with ``absent``; ``from``: at that branch's
    commit before the task."""
    sha = ctx.ws.snapshot().get(key + name)
    if spec.get("absent"):
        return None if sha is None else "branch exists"
    if sha is None:
        return "no such branch"
    if "from" in spec and sha != ctx.ws.pristine.get(key + spec["from"]):
        return f"branch is not at {spec['from']}"
    return None


@check("git_head")
def _git_head(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """The checked-out branch is ``branch``."""
    head = ctx.ws.snapshot().get("git HEAD")
    return None if head == f"refs/heads/{spec['branch']}" else f"HEAD is {head}"


@check("git_commit")
def _git_commit(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """The newest commit on ``branch`` (default HEAD) is new, its message contains ``message_contains`` and it
    changes every file of ``files_include``."""
    repo, rev = ctx.ws.git_dir, spec.get("branch", "HEAD")
    try:
        sha = run_git(repo, "rev-parse", "--verify", "-q", rev).strip()
    except subprocess.CalledProcessError:
        return f"no branch {rev}"
    if sha in ctx.ws.pristine.values():
        return "no new commit"
    message = run_git(repo, "log", "-1", "--format=%B", sha)
    changed = set(run_git(repo, "show", "--name-only", "--format=", sha).split())
    missing = [f for f in spec.get("files_include", []) if f not in changed]
    extra = [f for f in spec.get("files_exclude", []) if f in changed]
    problems = [p for p in (_contains_all(message, spec.get("message_contains", [])),) if p]
    problems += [f"{f} not in the commit" for f in missing] + [f"{f} in the commit" for f in extra]
    return "; ".join(problems) or None


@check("git_status")
def _git_status(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """``path``'s status: ``staged`` (changes in the index, ready to commit) or ``clean`` (nothing uncommitted)."""
    line = run_git(ctx.ws.git_dir, "status", "--porcelain", "--", spec["path"]).rstrip("\n")
    if spec.get("clean"):
        return None if not line else f"status {line!r}"
    if spec.get("staged"):
        return None if line and line[0] not in " ?" else f"status {line!r}"
    return "git_status needs clean or staged"


@check("answer_contains", answer=True)
def _answer_contains(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """The answer contains every ``text`` (case-insensitive)."""
    return _contains_all(ctx.answer, spec["text"])


ABSENT_RE = re.compile(
    r"\b(no (?:such|matching|open|issue|pull|file|branch|label|result)s?|not (?:find|found|exist|see|locate)|"
    r"(?:does|do|did)n[’']?t (?:find|exist|see)|(?:could|can)n[’']?o?t (?:find|locate|see)|cannot (?:find|locate)|"
    r"there (?:is|are) no|nothing (?:matches|matching|about|called|named)|no .{0,40} (?:matches|about|named|called)|"
    r"none (?:of|match)|unable to (?:find|locate))",
    re.IGNORECASE,
)


@check("answer_says_absent", answer=True)
def _answer_says_absent(ctx: CheckContext, spec: dict[str, Any]) -> str | None:
    """The answer says the named object was not found."""
    return None if ABSENT_RE.search(ctx.answer) else "the answer does not say it was not found"


@dataclass
class Outcome:
    """Whether a task's end state passes: failed checks (name -> why) and writes outside ``allowed_writes``."""

    failed: dict[str, str]
    extra_writes: list[str]
    changed: list[str]

    @property
    def ok(self) -> bool:
        return not self.failed and not self.extra_writes


def evaluate(task: Task, ws: Workspace, answer: str = "", results: list[str] | None = None) -> Outcome:
    """Run ``task``'s state and answer checks on ``ws`` as it is now, and diff its state against the pristine one."""
    ctx = CheckContext(ws, answer, results or [])
    failed: dict[str, str] = {}
    for i, spec in enumerate(task.checks):
        if (why := CHECKS[spec["type"]](ctx, spec)) is not None:
            failed[f"{i}:{spec['type']}"] = why
    for i, spec in enumerate(task.answer_checks):
        if (why := ANSWER_CHECKS[spec["type"]](ctx, spec)) is not None:
            failed[f"a{i}:{spec['type']}"] = why
    changed = changed_keys(ws.pristine, ws.snapshot())
    return Outcome(failed, unallowed(changed, task.allowed_writes), changed)


def validate(tasks: list[Task]) -> Iterator[str]:
    """Problems with the set itself: unknown check types, duplicate ids, kinds that contradict their gold."""
    seen: set[str] = set()
    for t in tasks:
        if t.id in seen:
            yield f"{t.id}: duplicate id"
        seen.add(t.id)
        for spec in t.checks:
            if spec.get("type") not in CHECKS:
                yield f"{t.id}: unknown check {spec.get('type')!r}"
        for spec in t.answer_checks:
            if spec.get("type") not in ANSWER_CHECKS:
                yield f"{t.id}: unknown answer check {spec.get('type')!r}"
        if t.kind == "multi" and not 2 <= len(t.gold) <= 4:
            yield f"{t.id}: a multi-step task needs 2-4 gold calls"
        if t.kind == "multi" and t.pattern != "act-then-check" and not any(c.from_ for c in t.gold):
            yield f"{t.id}: a {t.pattern} task needs a value taken from an earlier result"
        if (t.kind == "multi") != (t.pattern is not None):
            yield f"{t.id}: a pattern is given for multi-step tasks, and only for them"
        if t.kind == "single" and len(t.gold) != 1:
            yield f"{t.id}: a single-call control has one gold call"
        if t.kind == "absent" and (t.allowed_writes or t.checks):
            yield f"{t.id}: an absent-target task allows no write and has no state check"
        if t.kind != "absent" and not (t.checks or t.answer_checks):
            yield f"{t.id}: no check"
        for i, c in enumerate(t.gold):
            for arg, src, value in c.flows():
                if src >= i:
                    yield f"{t.id}: {c.tool}.{arg} flows from a later call"
                if value not in str(lookup(c.arguments, arg)):
                    yield f"{t.id}: {c.tool}.{arg} does not hold the value {value!r} it takes"
        if set(t.servers) != {c.server for c in t.gold} and t.kind != "absent":
            yield f"{t.id}: servers {t.servers} != the gold's"


def result_text(result: ToolResult) -> str:
    """All the text a result carries: its text blocks and the text of embedded resources (the GitHub server
    returns a file's content as a resource after a one-line text block)."""
    parts = [result.text]
    for block in result.content:
        resource = block.get("resource") if block.get("type") == "resource" else None
        if isinstance(resource, Mapping) and isinstance(resource.get("text"), str):
            parts.append(resource["text"])
    return "\n".join(p for p in parts if p)


async def replay(task: Task, hub: MultiServerClient) -> list[ToolResult]:
    """Run ``task``'s gold calls (placeholders already filled) through ``hub``, in order."""
    return [await hub.call_tool(c.qualified, c.arguments) for c in task.gold]
