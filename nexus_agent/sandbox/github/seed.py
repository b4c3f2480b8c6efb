"""Deterministic demo data: organisation ``acme``, user ``octo-dev`` ("me"), repositories, issues, PRs.

The seed goes through the same operations the tools use (create_repo, commit_files, open_pull,
merge_pull), on the logical clock, so a fresh sandbox always has the same commit SHAs and timestamps.

What it builds:
- users octo-dev (me), alice-lee, bob-kim, carol-ops; organisation acme with teams backend, frontend, docs
- acme/api (Python): 4 commits on main, tag v0.1.0, merged PR #4 (CI workflow), open PR #5
  (feature/rate-limit, "Closes #2"), open PR #6 (fix/token-expiry, "Fixes #1"), issues #1-#3 and #7
- acme/web (JavaScript): issue #1, draft PR #2 (feature/dark-mode)
- acme/docs (Markdown): issue #1
- acme/infra (private), octo-dev/dotfiles
"""

from __future__ import annotations

from nexus_agent.sandbox.github.context import Sandbox
from nexus_agent.sandbox.github.handlers.pulls import merge_pull, open_pull
from nexus_agent.sandbox.github.handlers.repos import commit_files, create_repo
from nexus_agent.sandbox.github.store import Issue, Repo

SEED_VERSION = "1"
ME = "octo-dev"

LABELS = {
    "bug": ("d73a4a", "Something isn't working"),
    "enhancement": ("a2eeef", "New feature or request"),
    "documentation": ("0075ca", "Improvements or additions to documentation"),
    "good first issue": ("7057ff", "Good for newcomers"),
    "priority:high": ("b60205", "Needs attention soon"),
    "ui": ("fbca04", "User interface"),
}

API_README = """# acme/api

The Acme public HTTP API.

## Development

    pip install -e .
    python -m api.app
"""

API_README_V2 = (
    API_README
    + """
## Configuration

| variable | default | meaning |
|---|---|---|
| `API_TOKEN_TTL` | `3600` | lifetime of an access token, seconds |
| `API_PORT` | `8080` | port to listen on |
"""
)

API_PYPROJECT = """[project]
name = "acme-api"
version = "0.1.0"
requires-python = ">=3.11"
"""

API_APP = '''"""HTTP application factory."""

from api.auth import verify_token


def create_app():
    routes = {"/health": health, "/me": me}
    return routes


def health(request):
    return {"status": "ok"}


def me(request):
    user = verify_token(request["headers"].get("Authorization", ""))
    return {"user": user}
'''

API_APP_RATE_LIMITED = '''"""HTTP application factory."""

from api.auth import verify_token
from api.ratelimit import TokenBucket

_bucket = TokenBucket(rate_per_s=5.0, burst=10)


def create_app():
    routes = {"/health": health, "/me": me}
    return routes


def health(request):
    return {"status": "ok"}


def me(request):
    if not _bucket.take():
        return {"error": "rate limited", "status": 429}
    user = verify_token(request["headers"].get("Authorization", ""))
    return {"user": user}
'''

API_RATELIMIT = '''"""Token-bucket rate limiter."""

import time


class TokenBucket:
    def __init__(self, rate_per_s: float, burst: int, clock=time.monotonic):
        self.rate_per_s = rate_per_s
        self.burst = burst
        self.tokens = float(burst)
        self.clock = clock
        self.last = clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate_per_s)
        self.last = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False
'''

API_AUTH = '''"""Bearer-token authentication."""

import time

TOKENS = {}  # token -> (user, issued_at)
TOKEN_TTL_S = 3600


def issue_token(user: str, token: str) -> None:
    TOKENS[token] = (user, time.time())


def verify_token(header: str) -> str:
    token = header.removeprefix("Bearer ").strip()
    user, issued_at = TOKENS[token]
    # BUG: compares against the issue time instead of the expiry time
    if time.time() > issued_at:
        raise PermissionError("token expired")
    return user
'''

API_AUTH_FIXED = API_AUTH.replace(
    "    # BUG: compares against the issue time instead of the expiry time\n    if time.time() > issued_at:\n",
    "    if time.time() > issued_at + TOKEN_TTL_S:\n",
)

API_TEST_AUTH = """from api.auth import issue_token, verify_token


def test_fresh_token_is_accepted():
    issue_token("alice", "t1")
    assert verify_token("Bearer t1") == "alice"
"""

API_TEST_RATELIMIT = """from api.ratelimit import TokenBucket


def test_burst_then_limited():
    t = [0.0]
    bucket = TokenBucket(rate_per_s=1.0, burst=2, clock=lambda: t[0])
    assert bucket.take() and bucket.take()
    assert not bucket.take()
    t[0] = 1.0
    assert bucket.take()
"""

API_CI = """name: ci
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - run: pip install -e . pytest && pytest
"""

WEB_PACKAGE = """{
  "name": "acme-web",
  "version": "0.3.0",
  "private": true,
  "scripts": {"start": "node src/index.js"}
}
"""

WEB_INDEX = """import { renderLogin } from "./login.js";

document.body.appendChild(renderLogin());
"""

WEB_LOGIN = """export function renderLogin() {
  const form = document.createElement("form");
  const button = document.createElement("button");
  button.textContent = "Log in";
  button.style.marginLeft = "40px";
  form.appendChild(button);
  return form;
}
"""

WEB_THEME = """export function applyTheme(dark) {
  document.body.classList.toggle("dark", dark);
}
"""

WEB_INDEX_DARK = """import { renderLogin } from "./login.js";
import { applyTheme } from "./theme.js";

applyTheme(window.matchMedia("(prefers-color-scheme: dark)").matches);
document.body.appendChild(renderLogin());
"""

DOCS_GETTING_STARTED = """# Getting started

Install the client:

    pip install acme-client==0.1

Then export `ACME_TOKEN` and run `acme whoami`.
"""

DOCS_AUTH = """# Authentication

Every request carries `Authorization: Bearer <token>`. Tokens expire after `API_TOKEN_TTL` seconds.
"""


def _labels(sb: Sandbox, repo: Repo, names: list[str]) -> None:
    for name in names:
        color, description = LABELS[name]
        sb.store.add_label(repo.id, name, color, description)


def _issue(
    sb: Sandbox,
    repo: Repo,
    title: str,
    body: str,
    author: str,
    labels: list[str],
    assignees: list[str],
    comments: tuple[tuple[str, str], ...] = (),
) -> Issue:
    issue = sb.store.create_issue(repo.id, title=title, body=body, author=author)
    sb.store.set_issue_labels(issue.id, [sb.store.label(repo.id, n).id for n in labels])
    sb.store.set_assignees(issue.id, assignees)
    for who, text in comments:
        sb.store.add_comment(issue.id, who, text)
    return sb.store.issue(repo.id, issue.number)


def _branch(sb: Sandbox, repo: Repo, name: str, from_branch: str = "main") -> None:
    git = sb.git(repo)
    sha = git.branch_sha(from_branch)
    assert sha is not None
    git.set_ref(f"refs/heads/{name}", sha, "0" * 40)


def seed(sb: Sandbox) -> None:
    """Fill an empty sandbox with the demo organisation. Deterministic: no randomness, logical clock."""
    with sb.store.transaction():
        _seed(sb)


def _seed(sb: Sandbox) -> None:
    st = sb.store
    st.add_user(
        ME,
        name="Octo Dev",
        email="octo-dev@acme.example",
        bio="Backend developer at Acme.",
        company="@acme",
        location="Berlin, Germany",
        blog="https://octo-dev.example",
    )
    st.add_user(
        "alice-lee",
        name="Alice Lee",
        email="alice@acme.example",
        bio="Security and auth.",
        company="@acme",
        location="Lisbon, Portugal",
    )
    st.add_user(
        "bob-kim",
        name="Bob Kim",
        email="bob@acme.example",
        bio="Frontend and design systems.",
        company="@acme",
        location="Seoul, South Korea",
    )
    st.add_user(
        "carol-ops",
        name="Carol Ops",
        email="carol@acme.example",
        bio="Docs and developer relations.",
        company="@acme",
        location="Toronto, Canada",
    )
    st.add_user(
        "acme",
        kind="Organization",
        name="Acme Corp",
        email="opensource@acme.example",
        bio="We build the Acme platform.",
        location="Berlin, Germany",
        blog="https://acme.example",
    )
    st.set_meta("me", ME)
    st.add_org_member("acme", ME, "admin")
    for login in ("alice-lee", "bob-kim", "carol-ops"):
        st.add_org_member("acme", login)
    st.add_team("acme", "backend", "Backend", "API and services", [ME, "alice-lee"])
    st.add_team("acme", "frontend", "Frontend", "Web application", ["bob-kim", ME])
    st.add_team("acme", "docs", "Docs", "Documentation site", ["carol-ops"])

    _seed_api(sb)
    _seed_web(sb)
    _seed_docs(sb)

    infra, _ = create_repo(
        sb,
        "acme",
        "infra",
        description="Infrastructure as code for Acme (private)",
        private=True,
        language="HCL",
        topics=("terraform", "infrastructure"),
    )
    commit_files(
        sb,
        infra,
        "main",
        {"README.md": b"# acme/infra\n\nTerraform for the Acme platform.\n"},
        "Initial commit",
        "alice-lee",
    )
    dot, _ = create_repo(
        sb,
        ME,
        "dotfiles",
        description="My shell and editor configuration",
        language="Shell",
        topics=("dotfiles",),
        stars=3,
    )
    bashrc = b"export EDITOR=vim\nalias gs='git status'\n"
    commit_files(sb, dot, "main", {"README.md": b"# dotfiles\n", ".bashrc": bashrc}, "Add bashrc", ME)
    st.set_meta("seed_version", SEED_VERSION)


def _seed_api(sb: Sandbox) -> None:
    api, git = create_repo(
        sb,
        "acme",
        "api",
        description="The Acme public HTTP API",
        language="Python",
        topics=("api", "python", "http"),
        stars=42,
    )
    _labels(sb, api, ["bug", "enhancement", "documentation", "good first issue", "priority:high"])
    commit_files(
        sb,
        api,
        "main",
        {
            "README.md": API_README.encode(),
            "pyproject.toml": API_PYPROJECT.encode(),
            "src/api/__init__.py": b'"""Acme API."""\n',
        },
        "Initial commit",
        "alice-lee",
    )
    commit_files(
        sb, api, "main", {"src/api/app.py": API_APP.encode()}, "Add health endpoint and app factory", "alice-lee"
    )
    tagged = commit_files(
        sb,
        api,
        "main",
        {"src/api/auth.py": API_AUTH.encode(), "tests/test_auth.py": API_TEST_AUTH.encode()},
        "Add token-based authentication",
        ME,
    )
    git.tag("v0.1.0", tagged, "First preview release", sb.signature(ME))
    commit_files(sb, api, "main", {"README.md": API_README_V2.encode()}, "Document configuration in README", "bob-kim")

    st = sb.store
    _issue(
        sb,
        api,
        "Login fails after password reset",
        "After resetting my password, logging in with the new password returns 401 'token expired' "
        "immediately.\n\nSteps:\n1. Reset password\n2. Log in\n3. Call /me -> 401",
        "carol-ops",
        ["bug", "priority:high"],
        ["alice-lee"],
        (
            ("alice-lee", "I can reproduce this: every fresh token is rejected, not just after a reset."),
            (ME, "Looks like verify_token compares the clock with issued_at instead of issued_at + TTL."),
        ),
    )
    _issue(
        sb,
        api,
        "Add rate limiting to public endpoints",
        "Public endpoints have no rate limit; a single client can exhaust the server. A token bucket per "
        "client would do.",
        "bob-kim",
        ["enhancement"],
        [ME],
    )
    docs_issue = _issue(
        sb,
        api,
        "Document the authentication flow",
        "Explain how tokens are issued and verified.",
        "carol-ops",
        ["documentation", "good first issue"],
        ["bob-kim"],
    )
    st.update_issue(docs_issue.id, state="closed", state_reason="completed", closed_at=st.now(), closed_by="bob-kim")

    _branch(sb, api, "chore/ci")
    commit_files(sb, api, "chore/ci", {".github/workflows/ci.yml": API_CI.encode()}, "Add CI workflow", "bob-kim")
    ci_pr = open_pull(
        sb,
        api,
        title="Add CI workflow",
        body="Runs the test suite on every push.",
        head="chore/ci",
        base="main",
        author="bob-kim",
    )
    merge_pull(sb, api, ci_pr.number, "merge", None, None)

    _branch(sb, api, "feature/rate-limit")
    commit_files(
        sb,
        api,
        "feature/rate-limit",
        {"src/api/ratelimit.py": API_RATELIMIT.encode(), "tests/test_ratelimit.py": API_TEST_RATELIMIT.encode()},
        "Add token bucket",
        ME,
    )
    commit_files(sb, api, "feature/rate-limit", {"src/api/app.py": API_APP_RATE_LIMITED.encode()}, "Rate-limit /me", ME)
    rl = open_pull(
        sb,
        api,
        title="Add token bucket rate limiter",
        body="Adds a token-bucket limiter and applies it to /me.\n\nCloses #2",
        head="feature/rate-limit",
        base="main",
        author=ME,
        reviewers=["alice-lee"],
    )
    st.set_issue_labels(rl.id, [st.label(api.id, "enhancement").id])
    st.add_comment(rl.id, "alice-lee", "Should the limit be per client rather than global?")

    _branch(sb, api, "fix/token-expiry")
    commit_files(
        sb,
        api,
        "fix/token-expiry",
        {"src/api/auth.py": API_AUTH_FIXED.encode()},
        "Compare token age with the TTL",
        "alice-lee",
    )
    open_pull(
        sb,
        api,
        title="Fix token expiry comparison",
        body="Fixes #1: tokens were rejected right after issue.",
        head="fix/token-expiry",
        base="main",
        author="alice-lee",
        reviewers=[ME],
    )

    _issue(
        sb,
        api,
        "Health endpoint should report version",
        "/health should include the package version so deploys can be verified.",
        ME,
        ["enhancement"],
        [],
    )


def _seed_web(sb: Sandbox) -> None:
    web, _ = create_repo(
        sb,
        "acme",
        "web",
        description="Acme web application",
        language="JavaScript",
        topics=("web", "frontend"),
        stars=17,
    )
    _labels(sb, web, ["bug", "enhancement", "ui"])
    commit_files(
        sb,
        web,
        "main",
        {
            "README.md": b"# acme/web\n\nThe Acme web client.\n",
            "package.json": WEB_PACKAGE.encode(),
            "src/index.js": WEB_INDEX.encode(),
            "src/login.js": WEB_LOGIN.encode(),
        },
        "Initial web client",
        "bob-kim",
    )
    _issue(
        sb,
        web,
        "Login button misaligned on mobile",
        "On screens narrower than 400px the login button overflows the form.",
        "carol-ops",
        ["bug", "ui"],
        ["bob-kim"],
        (("bob-kim", "It's the hard-coded marginLeft in login.js."),),
    )
    _branch(sb, web, "feature/dark-mode")
    commit_files(
        sb,
        web,
        "feature/dark-mode",
        {"src/theme.js": WEB_THEME.encode(), "src/index.js": WEB_INDEX_DARK.encode()},
        "Add dark mode following the system preference",
        "bob-kim",
    )
    open_pull(
        sb,
        web,
        title="Add dark mode toggle",
        body="Follows prefers-color-scheme. WIP: no manual toggle yet.",
        head="feature/dark-mode",
        base="main",
        author="bob-kim",
        draft=True,
    )


def _seed_docs(sb: Sandbox) -> None:
    docs, _ = create_repo(
        sb,
        "acme",
        "docs",
        description="Documentation for the Acme platform",
        language="Markdown",
        topics=("documentation",),
        stars=5,
    )
    _labels(sb, docs, ["documentation", "good first issue"])
    commit_files(
        sb,
        docs,
        "main",
        {
            "README.md": b"# Acme docs\n\nSources of docs.acme.example.\n",
            "docs/getting-started.md": DOCS_GETTING_STARTED.encode(),
            "docs/auth.md": DOCS_AUTH.encode(),
        },
        "Add getting started and auth pages",
        "carol-ops",
    )
    _issue(
        sb,
        docs,
        "Getting started guide references old install command",
        "docs/getting-started.md pins acme-client==0.1, the current release is 0.3.",
        "carol-ops",
        ["documentation", "good first issue"],
        [],
    )
