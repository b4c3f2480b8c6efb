"""The vendored tool definitions: identical to the shared registry's github_all profile, licence present."""

from __future__ import annotations

import json
from pathlib import Path

from nexus_agent.sandbox.github.handlers import registry
from nexus_agent.sandbox.github.tools import TOOLS_DIR, ToolCatalog


def test_vendored_tools_equal_the_shared_registry(registry_dir: Path) -> None:
    profile = json.loads((registry_dir / "profiles.json").read_text())["github_all"]["tools"]
    expected = sorted(name.split("__", 1)[1] for name in profile)
    vendored = sorted(p.stem for p in TOOLS_DIR.glob("*.json"))
    assert vendored == expected
    assert len(vendored) == 86
    for name in vendored:
        ours = json.loads((TOOLS_DIR / f"{name}.json").read_text())
        theirs = json.loads((registry_dir / "github" / f"{name}.json").read_text())
        assert ours == theirs, name


def test_licence_notice_is_vendored() -> None:
    text = (TOOLS_DIR / "LICENSE-github-mcp-server.txt").read_text()
    assert "MIT License" in text
    assert "Copyright GitHub, Inc." in text
    assert "github/github-mcp-server" in text


def test_every_handler_is_a_catalog_tool() -> None:
    catalog = ToolCatalog.load()
    handlers = registry()
    assert set(handlers) <= set(catalog.definitions)
    # The core the sandbox promises.
    for name in (
        "get_me",
        "search_repositories",
        "get_file_contents",
        "create_or_update_file",
        "list_branches",
        "create_branch",
        "list_commits",
        "get_commit",
        "list_issues",
        "search_issues",
        "issue_read",
        "issue_write",
        "add_issue_comment",
        "list_pull_requests",
        "search_pull_requests",
        "pull_request_read",
        "create_pull_request",
        "update_pull_request",
        "merge_pull_request",
    ):
        assert name in handlers, name


def test_validation_names_the_bad_argument() -> None:
    catalog = ToolCatalog.load()
    assert catalog.validate("issue_read", {"method": "get", "owner": "a", "repo": "b", "issue_number": 1}) is None
    missing = catalog.validate("issue_read", {"method": "get", "owner": "a", "repo": "b"})
    assert missing is not None and "missing required argument 'issue_number'" in missing
    wrong = catalog.validate("list_issues", {"owner": "a", "repo": "b", "perPage": 500})
    assert wrong is not None and "argument 'perPage'" in wrong
    nested = catalog.validate(
        "push_files", {"owner": "a", "repo": "b", "branch": "m", "message": "x", "files": [{"path": "p"}]}
    )
    assert nested is not None and "files.0" in nested and "content" in nested
