"""Real git repositories behind the sandbox, driven through the ``git`` CLI.

Each sandbox repository is a *bare* repository ``<data>/repos/<owner>/<name>.git``. Commits are made
without a working tree (temporary index file + ``commit-tree`` + compare-and-swap ``update-ref``), so a
commit to one branch never disturbs another, exactly like the GitHub contents API. Author and committer
dates come from the sandbox's logical clock, so the same sequence of tool calls yields the same SHAs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ZERO_SHA = "0" * 40

# Fields of `git log --format`, separated by unit separators so that free-text messages cannot break
# the parse; records end with a record separator.
_LOG_FORMAT = "%H%x1f%P%x1f%an%x1f%ae%x1f%aI%x1f%cn%x1f%ce%x1f%cI%x1f%B%x1e"


class GitError(RuntimeError):
    """A git command failed; ``stderr`` holds git's own explanation."""


@dataclass(frozen=True)
class Signature:
    """Who made a commit and when (ISO-8601 UTC, e.g. ``2025-03-03T09:00:00Z``)."""

    name: str
    email: str
    date: str


@dataclass(frozen=True)
class CommitInfo:
    """One commit as read from ``git log``; ``parents`` are full SHAs, dates ISO-8601."""

    sha: str
    parents: tuple[str, ...]
    author: Signature
    committer: Signature
    message: str


@dataclass(frozen=True)
class TreeEntry:
    """One entry of a tree: ``kind`` is ``blob``/``tree``/``commit``; ``size`` is bytes (0 for trees)."""

    mode: str
    kind: str
    sha: str
    size: int
    path: str


@dataclass
class FileChange:
    """One file of a diff. ``status`` uses GitHub's words (added/modified/removed/renamed)."""

    filename: str
    status: str
    additions: int = 0
    deletions: int = 0
    patch: str = ""
    previous_filename: str = ""

    @property
    def changes(self) -> int:
        return self.additions + self.deletions


@dataclass
class MergeOutcome:
    """Result of a three-way merge computed in memory: a tree SHA when clean, conflicting paths if not."""

    clean: bool
    tree: str = ""
    conflicts: list[str] = field(default_factory=list)


_STATUS_WORDS = {"A": "added", "M": "modified", "D": "removed", "R": "renamed", "C": "copied", "T": "changed"}


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    # Ignore the user's and the system's git configuration (signing, hooks, default branch...), so
    # repositories and SHAs are the same on every machine.
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    env["GIT_TERMINAL_PROMPT"] = "0"
    env.pop("GIT_DIR", None)
    env.pop("GIT_INDEX_FILE", None)
    return env


class GitRepo:
    """A bare repository on disk. All refs are full names inside; callers pass short branch names."""

    def __init__(self, path: Path) -> None:
        self.path = path

    # -- plumbing -------------------------------------------------------------------------------------

    def git(self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> str:
        """Run ``git --git-dir=<repo> args...`` and return stdout as text; raise GitError on failure."""
        return self.git_bytes(*args, stdin=stdin, env=env).decode("utf-8", errors="replace")

    def git_bytes(self, *args: str, stdin: bytes | None = None, env: dict[str, str] | None = None) -> bytes:
        full_env = _git_env()
        if env:
            full_env.update(env)
        proc = subprocess.run(
            ["git", f"--git-dir={self.path}", *args],
            input=stdin,
            capture_output=True,
            env=full_env,
            check=False,
        )
        if proc.returncode != 0:
            raise GitError(f"git {args[0]} failed: {proc.stderr.decode('utf-8', errors='replace').strip()}")
        return proc.stdout

    @classmethod
    def init_bare(cls, path: Path, default_branch: str) -> GitRepo:
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "init", "--quiet", "--bare", f"--initial-branch={default_branch}", str(path)],
            check=True,
            capture_output=True,
            env=_git_env(),
        )
        return cls(path)

    @classmethod
    def clone_bare(cls, source: GitRepo, path: Path) -> GitRepo:
        """A fork: a bare copy of every branch and tag of ``source``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "clone", "--quiet", "--bare", str(source.path), str(path)],
            check=True,
            capture_output=True,
            env=_git_env(),
        )
        return cls(path)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    # -- refs -----------------------------------------------------------------------------------------

    def resolve(self, rev: str) -> str | None:
        """Full SHA of the commit that ``rev`` (branch, tag, SHA, ``refs/...``) names, or None."""
        if not rev or rev.startswith("-"):
            return None
        try:
            out = self.git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        except GitError:
            return None
        return out.strip() or None

    def branch_sha(self, branch: str) -> str | None:
        try:
            return self.git("rev-parse", "--verify", "--quiet", f"refs/heads/{branch}").strip() or None
        except GitError:
            return None

    def branches(self) -> list[tuple[str, str]]:
        """(name, sha) for every branch, sorted by name (GitHub lists branches alphabetically)."""
        out = self.git("for-each-ref", "--sort=refname", "--format=%(refname:strip=2)%00%(objectname)", "refs/heads")
        return [tuple(line.split("\0", 1)) for line in out.splitlines() if line]  # type: ignore[misc]

    def tags(self) -> list[tuple[str, str]]:
        """(name, commit sha) for every tag, newest tag name first (GitHub's order for list_tags)."""
        out = self.git("for-each-ref", "--sort=-refname", "--format=%(refname:strip=2)%00%(objectname)", "refs/tags")
        result = []
        for line in out.splitlines():
            name, _obj = line.split("\0", 1)
            sha = self.resolve(f"refs/tags/{name}")
            if sha:
                result.append((name, sha))
        return result

    def tag_object(self, name: str) -> str | None:
        """SHA the tag ref points at (the tag object for annotated tags), or None."""
        try:
            return self.git("rev-parse", "--verify", "--quiet", f"refs/tags/{name}").strip() or None
        except GitError:
            return None

    def set_ref(self, ref: str, new_sha: str, expected_old: str) -> None:
        """Compare-and-swap ``ref``: fails if it no longer points at ``expected_old`` (ZERO_SHA = absent)."""
        self.git("update-ref", ref, new_sha, expected_old)

    def tag(self, name: str, sha: str, message: str, tagger: Signature) -> None:
        """Create an annotated tag."""
        self.git("tag", "-a", name, sha, "-m", message, env=_sig_env(tagger, tagger))

    # -- trees and blobs ------------------------------------------------------------------------------

    def entry(self, commit: str, path: str) -> TreeEntry | None:
        """The tree entry at ``path`` in ``commit`` (``""`` = root tree), or None if absent."""
        path = path.strip("/")
        if not path:
            tree = self.git("rev-parse", f"{commit}^{{tree}}").strip()
            return TreeEntry("040000", "tree", tree, 0, "")
        out = self.git("ls-tree", "-l", "--full-tree", commit, "--", path)
        for entry in _parse_ls_tree(out):
            if entry.path == path:
                return entry
        return None

    def list_tree(self, commit: str, path: str = "", recursive: bool = False) -> list[TreeEntry]:
        """Entries under directory ``path`` of ``commit``; with ``recursive`` every blob and sub-tree."""
        path = path.strip("/")
        spec = f"{commit}:{path}" if path else commit
        args = ["ls-tree", "-l"]
        if recursive:
            args += ["-r", "-t"]
        out = self.git(*args, spec)
        entries = _parse_ls_tree(out)
        if path:
            entries = [TreeEntry(e.mode, e.kind, e.sha, e.size, f"{path}/{e.path}") for e in entries]
        return entries

    def read_blob(self, sha: str) -> bytes:
        return self.git_bytes("cat-file", "blob", sha)

    # -- commits --------------------------------------------------------------------------------------

    def commit_changes(
        self,
        branch: str,
        changes: dict[str, bytes | None],
        message: str,
        author: Signature,
        expected_head: str | None = None,
    ) -> str:
        """Commit ``changes`` (path -> new bytes, or None to delete) on top of ``branch``; return new SHA.

        Works on a private temporary index, so concurrent commits to other branches are unaffected, and
        moves the branch with compare-and-swap so a concurrent move is an error, not a lost update.
        Creates the branch (as a root commit) if it does not exist yet.
        """
        parent = self.branch_sha(branch)
        if expected_head is not None and parent != expected_head:
            raise GitError(f"branch {branch} moved: expected {expected_head}, found {parent}")
        with tempfile.TemporaryDirectory(prefix="nexus-gh-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if parent:
                self.git("read-tree", parent, env=env)
            # --index-info works without a working tree; mode 0 removes the path from the index.
            lines = []
            for path, data in sorted(changes.items()):
                if data is None:
                    if parent is None or self.entry(parent, path) is None:
                        raise GitError(f"cannot delete {path}: no such file on {branch}")
                    lines.append(f"0 {ZERO_SHA}\t{path}\n")
                else:
                    blob = self.git("hash-object", "-w", "--stdin", stdin=data).strip()
                    lines.append(f"100644 {blob}\t{path}\n")
            self.git("update-index", "--index-info", stdin="".join(lines).encode(), env=env)
            tree = self.git("write-tree", env=env).strip()
        parents = [parent] if parent else []
        sha = self.commit_tree(tree, parents, message, author, author)
        self.set_ref(f"refs/heads/{branch}", sha, parent or ZERO_SHA)
        return sha

    def commit_tree(self, tree: str, parents: list[str], message: str, author: Signature, committer: Signature) -> str:
        args = ["commit-tree", tree]
        for p in parents:
            args += ["-p", p]
        return self.git(*args, stdin=message.encode(), env=_sig_env(author, committer)).strip()

    def log(
        self,
        rev: str,
        *,
        path: str | None = None,
        since: str | None = None,
        until: str | None = None,
        skip: int = 0,
        limit: int | None = None,
        exclude: str | None = None,
    ) -> list[CommitInfo]:
        """Commits reachable from ``rev`` (minus those reachable from ``exclude``), newest first."""
        args = ["log", f"--format={_LOG_FORMAT}", "--topo-order"]
        if since:
            args.append(f"--since={since}")
        if until:
            args.append(f"--until={until}")
        if skip:
            args.append(f"--skip={skip}")
        if limit is not None:
            args.append(f"--max-count={limit}")
        args.append(rev)
        if exclude:
            args.append(f"^{exclude}")
        if path:
            args += ["--", path.strip("/")]
        return _parse_log(self.git(*args))

    def commit(self, sha: str) -> CommitInfo:
        return _parse_log(self.git("log", "-1", f"--format={_LOG_FORMAT}", sha))[0]

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        proc = subprocess.run(
            ["git", f"--git-dir={self.path}", "merge-base", "--is-ancestor", ancestor, descendant],
            capture_output=True,
            env=_git_env(),
            check=False,
        )
        return proc.returncode == 0

    def merge_base(self, a: str, b: str) -> str | None:
        try:
            return self.git("merge-base", a, b).strip() or None
        except GitError:
            return None

    # -- diffs ----------------------------------------------------------------------------------------

    def diff(self, base: str, head: str) -> str:
        """Unified diff from ``base`` to ``head`` (both commit SHAs), as ``git diff`` prints it."""
        return self.git("diff", "--no-color", "-M", "--full-index", base, head)

    def changed_files(self, base: str, head: str, *, with_patch: bool) -> list[FileChange]:
        """Per-file status, line counts and (optionally) the file's patch hunk, in path order."""
        numstat = self.git("diff", "--numstat", "-z", "-M", base, head)
        files = _parse_numstat(numstat)
        statuses = self.git("diff", "--name-status", "-z", "-M", base, head).split("\0")
        i = 0
        by_name = {f.filename: f for f in files}
        while i < len(statuses) and statuses[i]:
            code = statuses[i][0]
            if code in "RC":
                old, new = statuses[i + 1], statuses[i + 2]
                i += 3
                if new in by_name:
                    by_name[new].status = _STATUS_WORDS[code]
                    by_name[new].previous_filename = old
            else:
                name = statuses[i + 1]
                i += 2
                if name in by_name:
                    by_name[name].status = _STATUS_WORDS.get(code, "modified")
        if with_patch:
            for f in files:
                paths = [f.previous_filename, f.filename] if f.previous_filename else [f.filename]
                text = self.git("diff", "--no-color", "-M", base, head, "--", *paths)
                f.patch = _strip_diff_header(text)
        return files

    def empty_tree(self) -> str:
        return self.git("hash-object", "-t", "tree", "--stdin", stdin=b"").strip()

    # -- merging --------------------------------------------------------------------------------------

    def merge_trees(self, ours: str, theirs: str) -> MergeOutcome:
        """Three-way merge of two commits computed without a working tree (``git merge-tree``)."""
        proc = subprocess.run(
            ["git", f"--git-dir={self.path}", "merge-tree", "--write-tree", "--name-only", ours, theirs],
            capture_output=True,
            env=_git_env(),
            check=False,
        )
        out = proc.stdout.decode("utf-8", errors="replace")
        if proc.returncode == 0:
            return MergeOutcome(clean=True, tree=out.splitlines()[0].strip())
        if proc.returncode == 1:
            # Output: tree line, conflicted file names, blank line, informational messages.
            lines = out.splitlines()
            conflicts = []
            for line in lines[1:]:
                if not line.strip():
                    break
                conflicts.append(line.strip())
            return MergeOutcome(clean=False, conflicts=conflicts)
        raise GitError(f"git merge-tree failed: {proc.stderr.decode('utf-8', errors='replace').strip()}")

    def replay(self, commits: list[CommitInfo], onto: str, committer: Signature) -> str:
        """Re-apply ``commits`` (oldest first) on ``onto`` one by one; return the new tip (a rebase).

        Uses a throwaway worktree and ``cherry-pick``; raises GitError on a conflict.
        """
        with tempfile.TemporaryDirectory(prefix="nexus-gh-rebase-") as tmp:
            wt = Path(tmp) / "wt"
            self.git("worktree", "add", "--detach", "--quiet", str(wt), onto)
            try:
                env = _sig_env(committer, committer)
                for c in commits:
                    env_c = dict(env)
                    # cherry-pick keeps the original author; only the committer changes, as on GitHub.
                    env_c.pop("GIT_AUTHOR_NAME")
                    env_c.pop("GIT_AUTHOR_EMAIL")
                    env_c.pop("GIT_AUTHOR_DATE")
                    full_env = _git_env()
                    full_env.update(env_c)
                    proc = subprocess.run(
                        ["git", "-C", str(wt), "cherry-pick", "--allow-empty", c.sha],
                        capture_output=True,
                        env=full_env,
                        check=False,
                    )
                    if proc.returncode != 0:
                        raise GitError(f"rebase conflict while applying {c.sha[:7]}: {proc.stderr.decode().strip()}")
                tip = (
                    subprocess.run(
                        ["git", "-C", str(wt), "rev-parse", "HEAD"], capture_output=True, env=_git_env(), check=True
                    )
                    .stdout.decode()
                    .strip()
                )
            finally:
                self.git("worktree", "remove", "--force", str(wt))
                self.git("worktree", "prune")
        return tip

    # -- search ---------------------------------------------------------------------------------------

    def grep(self, commit: str, patterns: list[str]) -> list[tuple[str, list[str]]]:
        """Files of ``commit`` containing every pattern (fixed strings, case-insensitive).

        Returns (path, matching lines) pairs in path order.
        """
        if not patterns:
            return []
        args = ["grep", "-I", "-i", "-F", "--full-name", "--all-match", "-n"]
        for p in patterns:
            args += ["-e", p]
        proc = subprocess.run(
            ["git", f"--git-dir={self.path}", *args, commit],
            capture_output=True,
            env=_git_env(),
            check=False,
        )
        if proc.returncode not in (0, 1):
            raise GitError(f"git grep failed: {proc.stderr.decode('utf-8', errors='replace').strip()}")
        hits: dict[str, list[str]] = {}
        for line in proc.stdout.decode("utf-8", errors="replace").splitlines():
            # Format: <commit>:<path>:<line no>:<text>
            _, rest = line.split(":", 1)
            path, _lineno, text = rest.split(":", 2)
            hits.setdefault(path, []).append(text)
        return sorted(hits.items())


def _sig_env(author: Signature, committer: Signature) -> dict[str, str]:
    return {
        "GIT_AUTHOR_NAME": author.name,
        "GIT_AUTHOR_EMAIL": author.email,
        "GIT_AUTHOR_DATE": author.date,
        "GIT_COMMITTER_NAME": committer.name,
        "GIT_COMMITTER_EMAIL": committer.email,
        "GIT_COMMITTER_DATE": committer.date,
    }


def _parse_ls_tree(out: str) -> list[TreeEntry]:
    entries = []
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        mode, kind, sha, size = meta.split()
        entries.append(TreeEntry(mode, kind, sha, 0 if size == "-" else int(size), path))
    return entries


def _iso_utc(git_iso: str) -> str:
    # git prints strict ISO with an offset (+00:00); GitHub prints Z. The sandbox clock is always UTC.
    return git_iso.replace("+00:00", "Z")


def _parse_log(out: str) -> list[CommitInfo]:
    commits = []
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if not record:
            continue
        sha, parents, an, ae, ad, cn, ce, cd, msg = record.split("\x1f", 8)
        commits.append(
            CommitInfo(
                sha=sha,
                parents=tuple(parents.split()),
                author=Signature(an, ae, _iso_utc(ad)),
                committer=Signature(cn, ce, _iso_utc(cd)),
                message=msg.rstrip("\n"),
            )
        )
    return commits


def _parse_numstat(out: str) -> list[FileChange]:
    """Parse ``git diff --numstat -z -M``: renames come as ``a\\td\\t\\0old\\0new\\0``."""
    parts = out.split("\0")
    files: list[FileChange] = []
    i = 0
    while i < len(parts) and parts[i]:
        adds, dels, name = parts[i].split("\t", 2)
        additions = 0 if adds == "-" else int(adds)
        deletions = 0 if dels == "-" else int(dels)
        if name == "":
            old, new = parts[i + 1], parts[i + 2]
            files.append(FileChange(new, "renamed", additions, deletions, previous_filename=old))
            i += 3
        else:
            files.append(FileChange(name, "modified", additions, deletions))
            i += 1
    return files


def _strip_diff_header(text: str) -> str:
    """GitHub's per-file ``patch`` starts at the first hunk header; drop the ``diff --git`` preamble."""
    idx = text.find("\n@@")
    if text.startswith("@@"):
        return text
    return text[idx + 1 :] if idx >= 0 else ""
