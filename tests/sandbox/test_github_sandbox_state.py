"""In-process checks of the sandbox state: deterministic seed, --reset, the registry dispatch."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from gh_sandbox_support import text_of

from nexus_agent.sandbox.github.server import GitHubSandboxServer, open_sandbox


def _main_sha(data_dir: Path, repo: str) -> str:
    owner, name = repo.split("/")
    return subprocess.run(
        ["git", f"--git-dir={data_dir / 'repos' / owner / f'{name}.git'}", "rev-parse", "main"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_seed_is_deterministic(tmp_path: Path) -> None:
    shas = []
    for run in ("a", "b"):
        sb = open_sandbox(tmp_path / run)
        try:
            shas.append([_main_sha(tmp_path / run, r) for r in ("acme/api", "acme/web", "acme/docs")])
            shas[-1].append(sb.store.now())
        finally:
            sb.close()
    assert shas[0] == shas[1]


def test_same_calls_give_same_commits(tmp_path: Path) -> None:
    heads = []
    for run in ("a", "b"):
        sb = open_sandbox(tmp_path / run)
        try:
            server = GitHubSandboxServer(sb)
            result = server.call(
                "push_files",
                {
                    "owner": "acme",
                    "repo": "web",
                    "branch": "main",
                    "message": "m",
                    "files": [{"path": "x.txt", "content": "x"}],
                },
            )
            assert not result.is_error
            heads.append(_main_sha(tmp_path / run, "acme/web"))
        finally:
            sb.close()
    assert heads[0] == heads[1]


def test_reset_reseeds(tmp_path: Path) -> None:
    data = tmp_path / "gh"
    sb = open_sandbox(data)
    server = GitHubSandboxServer(sb)
    created = server.call("issue_write", {"method": "create", "owner": "acme", "repo": "web", "title": "temp"})
    assert not created.is_error
    seeded_count = len(sb.store.issues())
    sb.close()

    sb = open_sandbox(data)  # reopening keeps state
    assert len(sb.store.issues()) == seeded_count
    sb.close()

    sb = open_sandbox(data, reset=True)
    try:
        assert len(sb.store.issues()) == seeded_count - 1
    finally:
        sb.close()


def test_reset_refuses_foreign_directories(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(RuntimeError, match="refusing to reset"):
        open_sandbox(tmp_path, reset=True)
    assert (tmp_path / "notes.txt").exists()


def test_failed_call_rolls_back_database_changes(tmp_path: Path) -> None:
    sb = open_sandbox(tmp_path / "gh")
    try:
        server = GitHubSandboxServer(sb)
        before = len(sb.store.issues())
        # The assignee check fails after nothing was written; an unknown label would be created first
        # if the order were different, so check that no label leaked either.
        labels_before = len(sb.store.labels(sb.store.repo("acme", "web").id))
        result = server.call(
            "issue_write",
            {
                "method": "create",
                "owner": "acme",
                "repo": "web",
                "title": "t",
                "labels": ["brand-new"],
                "assignees": ["nobody-here"],
            },
        )
        assert result.is_error
        assert len(sb.store.issues()) == before
        assert len(sb.store.labels(sb.store.repo("acme", "web").id)) == labels_before
    finally:
        sb.close()


def test_rebase_merge_replays_commits(tmp_path: Path) -> None:
    sb = open_sandbox(tmp_path / "gh")
    try:
        server = GitHubSandboxServer(sb)
        base = _main_sha(tmp_path / "gh", "acme/api")
        result = server.call(
            "merge_pull_request", {"owner": "acme", "repo": "api", "pullNumber": 5, "merge_method": "rebase"}
        )
        assert not result.is_error
        git_dir = tmp_path / "gh" / "repos" / "acme" / "api.git"
        log = subprocess.run(
            ["git", f"--git-dir={git_dir}", "log", "--format=%s|%P", f"{base}..main"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        assert [line.split("|")[0] for line in log] == ["Rate-limit /me", "Add token bucket"]
        assert all(len(line.split("|")[1].split()) == 1 for line in log)  # linear, no merge commit
        read = server.call("pull_request_read", {"method": "get", "owner": "acme", "repo": "api", "pullNumber": 5})
        assert json.loads(text_of(read))["merged"] is True
    finally:
        sb.close()


def test_code_and_commit_search_respect_repo_and_org_qualifiers(tmp_path: Path) -> None:
    sb = open_sandbox(tmp_path / "gh")
    try:
        server = GitHubSandboxServer(sb)
        pushed = server.call(
            "push_files",
            {
                "owner": "acme",
                "repo": "web",
                "branch": "main",
                "message": "zebrafish",
                "files": [{"path": "notes/zebra.txt", "content": "zebrafish here"}],
            },
        )
        assert not pushed.is_error
        code = json.loads(text_of(server.call("search_code", {"query": "zebrafish"})))
        assert [(i["repository"], i["path"]) for i in code["items"]] == [("acme/web", "notes/zebra.txt")]
        other = json.loads(text_of(server.call("search_code", {"query": "zebrafish repo:acme/api"})))
        assert other["total_count"] == 0
        commits = json.loads(text_of(server.call("search_commits", {"query": "zebrafish org:acme"})))
        assert commits["total_count"] == 1
        nobody = json.loads(text_of(server.call("search_commits", {"query": "zebrafish user:nobody"})))
        assert nobody["total_count"] == 0
    finally:
        sb.close()
