"""Verifying the shipped example banks (``nexus_agent/examples/data``) by running them on real MCP servers.

Every example names the world it runs in (``verify.world``: ``worlds/<server>/<name>.json`` next to the banks) and
what it must change and read. :class:`Scratch` builds each world's pristine state once, under a template folder,
and puts it back in place before every example, so one set of server processes serves a whole bank: the GitHub
sandbox (its database restored with SQLite's backup API, as :class:`~nexus_agent.evaluation.multistep.Workspace`
does), the reference filesystem server over one folder and the reference git server over another.

The filesystem and git worlds use natural absolute paths (``/home/beatriz/...``); the world's ``root`` is mapped to
the scratch folder in the arguments of a call, and back in its output, so what an example states and what it is
checked against read as the user wrote them.

``verify`` (all keys optional but ``world``)::

    {"world": "halyard",
     "changes": {"issue halyard-works/larkspur#14 state": "closed", "comment halyard-works/larkspur#14 *": "Thanks"},
     "files": {"halyard-works/larkspur@main:docs/x.md": {"contains": ["..."]}},
     "commits": {"halyard-works/larkspur@main": {"message": "Fix typo"}},
     "reads": {"0": ["Retry storms"]},
     "pattern": "find-then-act"}

* ``changes``: every state key (:meth:`Scratch.snapshot`) the example changes, and nothing else may change. A key
  may be an fnmatch pattern (``comment owner/repo#3 *``: the new comment, whatever its id), which must match at
  least one changed key. A value is what the key holds afterwards: a string, ``null`` (removed), ``"*"`` (any new
  value: a SHA, a content hash) or ``{"contains": [...]}``.
* ``files``: file contents afterwards, ``{"equals": text}``, ``{"contains": [...]}`` or ``{"absent": true}``.
  GitHub: ``owner/repo@branch:path``; filesystem: the file's absolute path; git: ``<repo path>@<rev>:<path>``
  (committed) or the absolute path of a working-tree file.
* ``commits``: the newest commit on a branch (``owner/repo@branch`` or ``<repo path>@<branch>``) is new and its
  message is ``message``.
* ``reads``: call index -> strings its output must contain (case-insensitive).
* ``pattern``: how a multi-step example's calls depend on each other (:data:`Pattern`).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from nexus_agent.evaluation.multistep import (
    FILESYSTEM_JS,
    ROOT,
    build_files,
    build_git,
    changed_keys,
    files_state,
    git_state,
    github_state,
    lookup,
    replace_contents,
    restore_github,
    result_text,
    run_git,
)
from nexus_agent.examples.bank import DATA, Example, load_examples
from nexus_agent.mcp import MCPConfig, MultiServerClient, StdioServerConfig, ToolResult
from nexus_agent.registry import Tool, tool_from_mcp
from nexus_agent.sandbox.github import sandbox_server_params
from nexus_agent.sandbox.github.server import open_sandbox
from nexus_agent.sandbox.github.tools import TOOLS_DIR
from nexus_agent.sandbox.github.world import World

WORLDS = DATA / "worlds"
SERVERS = ("github", "filesystem", "git")
Pattern = Literal["find-then-act", "read-then-write", "find-who-then-act", "act-then-check", "act-then-act"]


class Verify(BaseModel):
    """An example's ``verify`` field, as the verification reads it."""

    model_config = ConfigDict(extra="forbid")

    world: str
    changes: dict[str, Any] = Field(default_factory=dict)
    files: dict[str, dict[str, Any]] = Field(default_factory=dict)
    commits: dict[str, dict[str, str]] = Field(default_factory=dict)
    reads: dict[int, list[str]] = Field(default_factory=dict)
    pattern: Pattern | None = None


def verify_of(ex: Example) -> Verify:
    if ex.verify is None:
        raise ValueError(f"{ex.source}: a shipped example needs a verify field")
    return Verify.model_validate(ex.verify)


def bank_path(server: str) -> Path:
    return DATA / f"{server}.examples.jsonl"


def load_bank(server: str) -> list[Example]:
    return load_examples(bank_path(server), server)


def world_path(server: str, name: str) -> Path:
    return WORLDS / server / f"{name}.json"


def load_world(server: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(world_path(server, name).read_text(encoding="utf-8"))
    return data


def world_names(server: str) -> list[str]:
    return sorted(p.stem for p in (WORLDS / server).glob("*.json"))


def server_tools(server: str) -> dict[str, Tool]:
    """The tool definitions a bank is written against: the sandbox's vendored GitHub tools, the registry's
    filesystem and git tools (``data/mcp-registry/<server>/``)."""
    folder = TOOLS_DIR if server == "github" else ROOT / "data" / "mcp-registry" / server
    tools = [
        tool_from_mcp(json.loads(p.read_text(encoding="utf-8")), server, str(p)) for p in sorted(folder.glob("*.json"))
    ]
    return {t.name: t for t in tools}


# ---------------------------------------------------------------------------------------------- scratch servers


@dataclass
class Scratch:
    """The three servers' state under ``root`` (``github/``, ``files/``, ``git/``), every world's pristine copy
    under ``template/<server>/<world>/``. :meth:`prepare` the worlds, :meth:`reset` to one before each example."""

    root: Path
    _pristine: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    # server -> (the world its state was last reset to, the repositories changed since: None when not known)
    _live: dict[str, tuple[str, set[str] | None]] = field(default_factory=dict)
    _worlds: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.root = self.root.resolve()  # the filesystem server compares real paths
        for d in (self.gh_dir, self.fs_dir, self.git_dir):
            d.mkdir(parents=True, exist_ok=True)

    @property
    def gh_dir(self) -> Path:
        return self.root / "github"

    @property
    def fs_dir(self) -> Path:
        return self.root / "files"

    @property
    def git_dir(self) -> Path:
        return self.root / "git"

    def template(self, server: str, world: str) -> Path:
        return self.root / "template" / server / world

    def world(self, server: str, name: str) -> dict[str, Any]:
        return self._worlds[(server, name)]

    def prepare(self, server: str, name: str) -> None:
        """Build world ``name`` of ``server`` once and record its pristine snapshot."""
        if (server, name) in self._worlds:
            return
        world = load_world(server, name)
        tpl = self.template(server, name)
        shutil.rmtree(tpl, ignore_errors=True)
        tpl.parent.mkdir(parents=True, exist_ok=True)
        if server == "github":
            open_sandbox(tpl, world=World.model_validate(world)).close()
        elif server == "filesystem":
            build_files(tpl, world)
        else:
            tpl.mkdir()
            for repo, spec in world["repos"].items():
                build_git(tpl / repo, {**spec, "user": world["user"]})
        _compact(tpl, server)
        self._worlds[(server, name)] = world
        self.reset(server, name)
        self._pristine[(server, name)] = self.snapshot(server)

    def pristine(self, server: str, name: str) -> dict[str, str]:
        return self._pristine[(server, name)]

    def reset(self, server: str, name: str) -> None:
        """Put ``server``'s state back to world ``name``, in place (its server process keeps running).

        The filesystem is copied again whole. The GitHub database is restored whole (SQLite's backup API), but only
        the git repositories the last example changed are copied again (:meth:`settled`), as with the git server's
        repositories: copying every repository before every example would cost most of the run."""
        tpl = self.template(server, name)
        world, changed = self._live.get(server, ("", None))
        self._live[server] = (name, None)  # unknown until settled() is told what the next example changed
        if server == "filesystem":
            replace_contents(self.fs_dir, tpl)
            return
        if world != name or changed is None:
            if server == "github":
                restore_github(self.gh_dir, tpl)
            else:
                replace_contents(self.git_dir, tpl)
            return
        if server == "github":
            restore_github(self.gh_dir, tpl, repos=changed)
        for unit in sorted(changed) if server == "git" else ():
            shutil.rmtree(self.git_dir / unit, ignore_errors=True)
            if (tpl / unit).exists():
                shutil.copytree(tpl / unit, self.git_dir / unit, symlinks=True)

    def settled(self, server: str, changed: list[str]) -> None:
        """The example just run on ``server`` changed ``changed`` (snapshot keys) and nothing else: the next
        :meth:`reset` to the same world restores only the repositories they name."""
        world, _ = self._live[server]
        units: set[str] = set()
        for key in changed:
            if server == "github" and key.startswith(("ref ", "repo ")):
                units.add(key.split(" ")[1].lower())
            elif server == "git":
                units.add(key.split(":", 1)[0].rsplit("/", 1)[-1])
        self._live[server] = (world, units)

    def real_root(self, server: str) -> Path:
        return self.fs_dir if server == "filesystem" else self.git_dir

    def snapshot(self, server: str) -> dict[str, str]:
        """``server``'s state as ``key -> value`` strings; filesystem and git keys name the world's paths."""
        if server == "github":
            return github_state(self.gh_dir)
        if server == "filesystem":
            root = self._root_of(server)
            return {f"{k.split(' ', 1)[0]} {root}/{k.split(' ', 1)[1]}": v for k, v in files_state(self.fs_dir).items()}
        root = self._root_of(server)
        out: dict[str, str] = {}
        for repo in sorted(p for p in self.git_dir.iterdir() if p.is_dir()):
            out.update({f"{root}/{repo.name}: {k}": v for k, v in git_state(repo).items()})
        return out

    def _root_of(self, server: str) -> str:
        roots = {str(w["root"]) for (s, _), w in self._worlds.items() if s == server}
        if len(roots) != 1:
            raise ValueError(f"the {server} worlds must share one root, got {sorted(roots)}")
        return roots.pop()

    def to_real(self, server: str, value: Any) -> Any:
        """``value`` with the world's root replaced by the scratch folder (filesystem and git)."""
        if server == "github":
            return value
        return _replace(value, self._root_of(server), str(self.real_root(server)))

    def to_world(self, server: str, text: str) -> str:
        if server == "github":
            return text
        return text.replace(str(self.real_root(server)), self._root_of(server))

    def server_configs(self, github_world: str | None) -> dict[str, StdioServerConfig]:
        """The three MCP servers over the scratch folders. The GitHub sandbox opens its folder as seeded with
        ``github_world`` (prepared, and the state put back to it first); :meth:`reset` then swaps in any other
        world under the running process, as :class:`~nexus_agent.evaluation.multistep.Workspace` swaps in a fresh
        copy of its one fixture."""
        world = None if github_world is None else world_path("github", github_world)
        gh = sandbox_server_params(self.gh_dir, world=world)
        passed = {k: os.environ[k] for k in ("NEXUS_HOME", "PYTHONPATH") if k in os.environ}
        node = shutil.which("node") or "node"
        git_server = Path(sys.executable).parent / "mcp-server-git"
        return {
            "github": StdioServerConfig(command=gh.command, args=list(gh.args), env=passed),
            "filesystem": StdioServerConfig(command=node, args=[str(FILESYSTEM_JS), str(self.fs_dir)]),
            "git": StdioServerConfig(command=str(git_server)),
        }

    def read_file(self, server: str, locator: str) -> str | None:
        """The text a ``files`` locator names, or None when there is no such file."""
        try:
            if server == "github":
                repo, rest = locator.split("@", 1)
                branch, path = rest.split(":", 1)
                owner, name = repo.lower().split("/")
                git_dir = self.gh_dir / "repos" / owner / f"{name}.git"
                return run_git(self.gh_dir, "show", f"{branch}:{path}", git_dir=git_dir)
            if server == "git" and "@" in locator:
                repo, rest = locator.split("@", 1)
                rev, path = rest.split(":", 1)
                return run_git(Path(self.to_real(server, repo)), "show", f"{rev}:{path}")
        except Exception:
            return None
        p = Path(self.to_real(server, locator))
        return p.read_text(encoding="utf-8") if p.is_file() else None

    def commit_message(self, server: str, locator: str) -> tuple[str, str] | None:
        """(sha, message) of the newest commit on ``repo@branch``, or None when there is no such branch."""
        repo, branch = locator.rsplit("@", 1)
        try:
            if server == "github":
                owner, name = repo.lower().split("/")
                git_dir = self.gh_dir / "repos" / owner / f"{name}.git"
                out = run_git(self.gh_dir, "log", "-1", "--format=%H%n%B", branch, git_dir=git_dir)
            else:
                out = run_git(Path(self.to_real(server, repo)), "log", "-1", "--format=%H%n%B", branch)
        except Exception:
            return None
        sha, _, message = out.partition("\n")
        return sha, message.strip()


def _compact(template: Path, server: str) -> None:
    """Pack a template's git repositories (objects and refs) and drop git's sample hooks, so copying one back is a
    handful of files rather than hundreds; what the repositories hold is unchanged."""
    if server == "github":
        git_dirs = sorted(template.glob("repos/*/*.git"))
    elif server == "git":
        git_dirs = sorted(p / ".git" for p in template.iterdir() if (p / ".git").is_dir())
    else:
        return
    for git_dir in git_dirs:
        run_git(template, "repack", "-a", "-d", "-q", git_dir=git_dir)
        run_git(template, "pack-refs", "--all", git_dir=git_dir)
        shutil.rmtree(git_dir / "hooks", ignore_errors=True)


def _replace(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [_replace(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _replace(v, old, new) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------------------------- running


@dataclass
class Run:
    """One example run: each call's output (world paths), and what is wrong."""

    example: Example
    outputs: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def output_text(result: ToolResult) -> str:
    """What a call returned, as text: :func:`result_text`, plus a ``[image image/png]`` line per media block."""
    media = [
        f"[{b.get('type')} {b.get('mimeType', '')}]" for b in result.content if b.get("type") in ("image", "audio")
    ]
    return "\n".join([result_text(result), *media]).strip("\n")


def appears(value: Any, text: str) -> bool:
    """Whether ``value`` (taken from an earlier result) is in ``text``: a scalar of its JSON equal to the value,
    or a string of it containing the value; in plain text, the value as a whole word. A path is also in a listing
    that names its last part (``list_directory``'s "[FILE] harbour.svg" gives ``…/photos/harbour.svg``), as the
    runtime's grounding reads it (``agent.grounding.unnamed_paths``)."""
    want = str(value)
    if isinstance(value, str) and "/" in value.rstrip("/") and appears(value.rstrip("/").rsplit("/", 1)[-1], text):
        return True
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if data is not None:
        return any(s == want or (isinstance(value, str) and want in s) for s in _scalars(data))
    return re.search(rf"(?<![\w]){re.escape(want)}(?![\w])", text) is not None


def _scalars(data: Any) -> Iterator[str]:
    if isinstance(data, dict):
        for v in data.values():
            yield from _scalars(v)
    elif isinstance(data, list):
        for v in data:
            yield from _scalars(v)
    elif data is not None and not isinstance(data, bool):
        yield str(data)


async def run_example(ex: Example, scratch: Scratch, hub: MultiServerClient) -> Run:
    """Run ``ex``'s calls in order on its world, fresh; check every call succeeds, every ``from`` value is in the
    result it comes from, and the state and outputs are what ``verify`` says."""
    run = Run(ex)
    spec = verify_of(ex)
    server = ex.server
    scratch.reset(server, spec.world)
    for i, call in enumerate(ex.calls):
        for path, src in call.from_.items():
            value = lookup(call.arguments, path)
            if not appears(value, run.outputs[src]):
                run.problems.append(f"call {i} {call.tool}.{path}={value!r} is not in the output of call {src}")
        result = await hub.call_tool(f"{server}__{call.tool}", scratch.to_real(server, call.arguments))
        text = scratch.to_world(server, output_text(result))
        run.outputs.append(text)
        if result.is_error:
            run.problems.append(f"call {i} {call.tool} failed: {text[:300]}")
    if run.problems:
        return run
    after = scratch.snapshot(server)
    scratch.settled(server, changed_keys(scratch.pristine(server, spec.world), after))
    run.problems += change_problems(spec.changes, scratch.pristine(server, spec.world), after)
    for locator, want in spec.files.items():
        if (p := _file_problem(scratch.read_file(server, locator), want)) is not None:
            run.problems.append(f"file {locator}: {p}")
    for locator, want in spec.commits.items():
        found = scratch.commit_message(server, locator)
        before = scratch.pristine(server, spec.world).values()
        if found is None:
            run.problems.append(f"commit {locator}: no such branch")
        elif found[0] in before or found[0][:12] in before:
            run.problems.append(f"commit {locator}: no new commit")
        elif found[1] != want["message"]:
            run.problems.append(f"commit {locator}: message {found[1]!r} != {want['message']!r}")
    for i, needles in spec.reads.items():
        out = run.outputs[i].lower() if i < len(run.outputs) else ""
        run.problems += [f"output of call {i} lacks {n!r}" for n in needles if n.lower() not in out]
    return run


def _is_pattern(key: str) -> bool:
    return any(c in key for c in "*?[")


def change_problems(spec: Mapping[str, Any], before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """What is wrong with the change from ``before`` to ``after``, given ``spec`` (``verify.changes``)."""
    changed = changed_keys(before, after)
    problems: list[str] = []
    matched: set[str] = set()
    for key, want in spec.items():
        keys = [k for k in changed if fnmatch.fnmatchcase(k, key)] if _is_pattern(key) else [key] * (key in changed)
        if not keys:
            problems.append(f"{key!r} did not change (it holds {after.get(key)!r})")
        for k in keys:
            matched.add(k)
            if (p := _value_problem(after.get(k), want)) is not None:
                problems.append(f"{k!r}: {p}")
    problems += [
        f"{k!r} changed and should not have: {before.get(k)!r} -> {after.get(k)!r}" for k in changed if k not in matched
    ]
    return problems


def _value_problem(value: str | None, want: Any) -> str | None:
    if want is None:
        return None if value is None else f"still holds {value!r}"
    if value is None:
        return "was removed"
    if want == "*":
        return None
    if isinstance(want, str):
        return None if value == want else f"{value!r} != {want!r}"
    if isinstance(want, dict) and set(want) == {"contains"}:
        needles = [want["contains"]] if isinstance(want["contains"], str) else want["contains"]
        missing = [n for n in needles if n.lower() not in value.lower()]
        return None if not missing else f"{value!r} lacks {missing}"
    return f"unknown expectation {want!r}"


def _file_problem(text: str | None, want: Mapping[str, Any]) -> str | None:
    if want.get("absent"):
        return None if text is None else "exists"
    if text is None:
        return "no such file"
    if "equals" in want and text.rstrip("\n") != str(want["equals"]).rstrip("\n"):
        return f"content {text[:300]!r}"
    needles = want.get("contains", [])
    missing = [n for n in ([needles] if isinstance(needles, str) else needles) if n not in text]
    return None if not missing else f"lacks {missing} in {text[:300]!r}"


@dataclass
class BankRun:
    """Every example of some banks run once: ``runs`` by :func:`example_key`, and the tools each server listed."""

    runs: dict[str, Run]
    listed: dict[str, set[str]]


def example_key(ex: Example) -> str:
    return f"{ex.server}:{ex.id}"


async def run_banks(scratch: Scratch, banks: Mapping[str, list[Example]]) -> BankRun:
    """Run every example of ``banks`` (server -> examples) on one set of server processes over ``scratch``."""
    for server, examples in banks.items():
        for name in sorted({verify_of(ex).world for ex in examples}):
            scratch.prepare(server, name)
    github_worlds = sorted({verify_of(ex).world for ex in banks.get("github", [])})
    first = github_worlds[0] if github_worlds else None
    if first is not None:
        scratch.reset("github", first)
    configs = {name: cfg for name, cfg in scratch.server_configs(first).items() if name in banks}
    async with MultiServerClient.from_config(MCPConfig(servers=configs)) as hub:
        listed = {server: {t.name for t in hub.tools if t.server == server} for server in banks}
        runs = {}
        for examples in banks.values():
            for ex in examples:
                runs[example_key(ex)] = await run_example(ex, scratch, hub)
    return BankRun(runs, listed)
