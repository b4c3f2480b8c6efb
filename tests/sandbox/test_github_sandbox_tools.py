"""The vendored tool definitions: identical to the shared registry's github_all profile, licence present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gh_sandbox_support import text_of

from nexus_agent.sandbox.github.handlers import registry
from nexus_agent.sandbox.github.server import GitHubSandboxServer, open_sandbox
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


def test_every_tool_has_a_handler() -> None:
    assert set(registry()) == set(ToolCatalog.load().definitions)


def _dummy(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    return {"number": 1, "integer": 1, "boolean": False, "array": [], "object": {}}.get(str(kind), "x")


def test_every_method_and_action_is_dispatched(tmp_path: Path) -> None:
    """Each ``method``/``action`` value of every tool reaches an operation: a call with placeholder arguments may
    fail as GitHub would (404, 422 ...), never with a handler crash or "not supported"."""
    sb = open_sandbox(tmp_path / "gh")
    try:
        server = GitHubSandboxServer(sb)
        for name, d in server.catalog.definitions.items():
            props = d["inputSchema"].get("properties", {})
            selector = next((k for k in ("method", "action") if "enum" in props.get(k, {})), None)
            for value in props[selector]["enum"] if selector else [None]:
                args = {k: _dummy(props[k]) for k in d["inputSchema"].get("required", [])}
                args |= {"owner": "acme", "repo": "api"} if "owner" in props and "repo" in props else {}
                if selector:
                    args[selector] = value
                text = text_of(server.call(name, args))
                assert not text.startswith("internal error"), (name, value, text)
                assert "not supported" not in text, (name, value, text)
    finally:
        sb.close()


def test_a_tool_without_a_handler_says_so(tmp_path: Path) -> None:
    sb = open_sandbox(tmp_path / "gh")
    try:
        server = GitHubSandboxServer(sb)
        del server.handlers["list_discussions"]
        result = server.call("list_discussions", {"owner": "acme", "repo": "api"})
        assert result.is_error
        assert text_of(result) == "list_discussions is not supported in the Nexus offline GitHub sandbox"
    finally:
        sb.close()
