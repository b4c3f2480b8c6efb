"""The multi-turn agent traces of the KV memory benchmark (issue 55): ``data/eval/kv_traces/traces.jsonl``.

Each trace is an agent session of 8–14 turns, each turn a request carried out by 1–3 scripted tool calls whose
results come from the real servers: the GitHub sandbox (``nexus_agent/sandbox/github``, its ``acme`` demo world) and
the reference filesystem server (``tests/mcp_servers``), as ``nexus_agent/evaluation/multistep.py`` starts them. Each
trace has a world of its own, seeded: 12 people, 8–14 issues in ``acme/api`` (authors, assignees, labels, bodies;
a seeded number of older closed issues first, so that numbers differ between traces) and a folder of config files,
notes and reports with seeded values. Calls, results and the turn's answer (a short templated sentence that names
what was found but not the facts the questions ask) are recorded as text: the benchmark prefills them teacher-forced.

Three questions per trace, asked after later turns, about facts of different ages whose answers are checkable
strings:

* ``person``: who opened the issue turn 1 read (a login, from ``issue_read``);
* ``file``: a setting of the config file turn 2 read (a value, from ``read_text_file``);
* ``search``: the number of an issue an earlier search returned (turn 3 up to two turns before the question).

The split is fixed: even trace indices are ``tune``, odd ones ``check``. Deterministic in ``--seed`` (one
``random.Random`` per trace; the servers' clocks are logical; the workspace sits at a fixed path).

usage: python bench/kv_traces.py [--n 40] [--seed 55] [--out data/eval/kv_traces/traces.jsonl]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nexus_agent.evaluation.multistep import FILESYSTEM_JS, result_text
from nexus_agent.mcp import MultiServerClient, StdioServerConfig
from nexus_agent.mcp.config import MCPConfig
from nexus_agent.sandbox.github import sandbox_server_params
from nexus_agent.sandbox.github.server import open_sandbox

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "eval" / "kv_traces" / "traces.jsonl"
WORK = Path("/tmp/acme-workspace")  # fixed: paths appear in the recorded arguments
REPO = ("acme", "api")

FIRST = ("mei", "jan", "sofia", "thanh", "abdul", "lena", "oscar", "roberto", "yuki", "dev", "hannah", "fatima",
         "kwame", "ines", "tomas", "aiko", "lars", "nadia", "pavel", "rosa", "samir", "ulla", "wen")  # fmt: skip
LAST = ("chen", "kowalski", "rossi", "nguyen", "karim", "meyer", "garcia", "bianchi", "tanaka", "patel", "wright",
        "moreau", "okafor", "silva", "novak", "sato", "berg", "haddad", "ivanov", "lopez", "rahman")  # fmt: skip
TOPICS = {  # a keyword every title of the topic contains (the search's query)
    "cache": ("Cache entries never expire", "Add a cache warm-up on start", "Cache hit rate missing from metrics"),
    "login": ("Login fails after password reset", "Login page ignores the remember-me box", "Slow login on mobile"),
    "export": ("CSV export drops the last row", "PDF export times out", "Add an export of the audit log"),
    "billing": ("Billing totals round the wrong way", "Billing page shows the old plan", "Billing emails skip refunds"),
    "search": ("Search ignores accented letters", "Search results repeat on page two", "Add search by label"),
    "upload": ("Large upload fails silently", "Upload progress bar stuck at 99%", "Resume a broken upload"),
    "webhook": ("Webhook retries never stop", "Webhook secret shown in logs", "Add webhook delivery history"),
    "logging": ("Logging misses the request id", "Debug logging left on in production", "Rotate logging files daily"),
}
BODIES = (
    "Steps: open the page, wait a minute, reload. Expected the new value, got the old one.",
    "This started after the last deploy. The error shows up in about one request in twenty.",
    "Customers reported it twice this week. A workaround is to clear the browser cache.",
    "The fix is probably small, but it needs a test that covers the edge case first.",
    "Seen on staging and production. Nothing useful in the logs so far.",
    "We discussed this in the planning meeting; it blocks the next release.",
)
LABELS = ("bug", "enhancement", "documentation", "good first issue", "priority:high")
ANSWERS_PERSON = "Who opened the issue about {what} that I asked you to open earlier? Answer with the login only."
ANSWERS_FILE = "What is {key} set to in {path}, the file you read earlier? Answer with the value only."
ANSWERS_SEARCH = "When you searched for {topic} issues, what was the number of the issue titled '{title}'? Answer with the number only."  # noqa: E501


@dataclass
class World:
    people: list[str]
    issues: list[dict[str, Any]]  # number, title, topic, author
    files: dict[str, str]  # path relative to the root -> text
    settings: dict[str, dict[str, str]]  # config path -> key -> value


@dataclass
class Call:
    tool: str  # qualified: github__issue_read
    arguments: dict[str, Any]
    output: str = ""
    is_error: bool = False


@dataclass
class TurnRec:
    request: str
    calls: list[Call]
    answer: str = ""


@dataclass
class Question:
    kind: str  # person | file | search
    after_turn: int  # asked after this many turns
    fact_turn: int  # the turn whose result holds the answer (1-based)
    question: str
    answer: str


@dataclass
class Trace:
    id: str
    split: str
    seed: int
    turns: list[TurnRec]
    questions: list[Question] = field(default_factory=list)


# ------------------------------------------------------------------------------------------------ the world


def _world(rng: random.Random) -> World:
    people = sorted({f"{rng.choice(FIRST)}-{rng.choice(LAST)}" for _ in range(16)})[:12]
    topics = rng.sample(sorted(TOPICS), 5)
    issues = []
    for topic in topics:
        for title in rng.sample(TOPICS[topic], rng.randint(2, 3)):
            issues.append({"title": title, "topic": topic, "author": rng.choice(people)})
    rng.shuffle(issues)
    settings: dict[str, dict[str, str]] = {}
    files: dict[str, str] = {}
    region = rng.choice(["eu-west-3", "us-east-2", "ap-south-1", "eu-central-1", "sa-east-1"])
    settings["config/app.toml"] = {
        "port": str(rng.randint(3000, 9999)),
        "workers": str(rng.randint(2, 32)),
        "timeout_s": str(rng.choice([15, 20, 30, 45, 60, 90, 120])),
        "region": region,
    }
    settings["config/db.yaml"] = {
        "host": f"db-{rng.randint(10, 99)}.internal",
        "pool_size": str(rng.randint(4, 64)),
        "replica": rng.choice(["none", "db-replica-a", "db-replica-b", "db-replica-c"]),
        "max_connections": str(rng.randint(50, 900)),
    }
    settings["config/cache.ini"] = {
        "backend": rng.choice(["redis", "memcached", "valkey"]),
        "ttl_s": str(rng.randint(30, 7200)),
        "max_items": str(rng.randint(1000, 90000)),
        "namespace": rng.choice(["acme-prod", "acme-main", "acme-v2", "acme-live"]),
    }
    files["config/app.toml"] = "[server]\n" + "".join(
        f"{k} = {_toml(v)}\n" for k, v in settings["config/app.toml"].items()
    )
    files["config/db.yaml"] = "database:\n" + "".join(f"  {k}: {v}\n" for k, v in settings["config/db.yaml"].items())
    files["config/cache.ini"] = "[cache]\n" + "".join(f"{k} = {v}\n" for k, v in settings["config/cache.ini"].items())
    for _ in range(rng.randint(2, 3)):
        who = rng.sample(people, 3)
        day = rng.randint(1, 28)
        files[f"notes/standup-{day:02d}.md"] = (
            f"# Standup, day {day}\n\n- {who[0]}: working on {rng.choice(topics)}\n- {who[1]}: reviewing "
            f"#{rng.randint(1, 40)}\n- {who[2]}: on call this week\n\nNext standup at {rng.randint(8, 11)}:30.\n"
        )
    files["notes/todo.md"] = "".join(f"- [ ] {rng.choice(TOPICS[t])}\n" for t in rng.sample(topics, 3))
    rows = "".join(f"{m},{rng.randint(100, 9999)},{rng.randint(1, 300)}\n" for m in ("jan", "feb", "mar", "apr"))
    files["reports/usage.csv"] = "month,active_users,tickets\n" + rows
    return World(people=people, issues=issues, files=files, settings=settings)


def _toml(v: str) -> str:
    return v if v.isdigit() else f'"{v}"'


def _build(world: World, rng: random.Random) -> tuple[Path, Path]:
    """The world on disk: the sandbox's data (seeded acme world, then this trace's people and issues) and the
    filesystem folder."""
    shutil.rmtree(WORK, ignore_errors=True)
    gh, fs = WORK / "github", WORK / "files"
    sb = open_sandbox(gh)
    try:
        st = sb.store
        with st.transaction():
            for login in world.people:
                st.add_user(login, name=login.replace("-", " ").title())
            repo = st.repo(*REPO)
            for _ in range(rng.randint(0, 25)):  # older issues, closed: the numbers differ between traces
                old = st.create_issue(
                    repo.id, title="Old report", body="Fixed long ago.", author=rng.choice(world.people)
                )
                st.update_issue(old.id, state="closed", state_reason="completed", closed_at=st.now())
            for spec in world.issues:
                body = " ".join(rng.sample(BODIES, 2))
                issue = st.create_issue(repo.id, title=spec["title"], body=body, author=spec["author"])
                spec["number"] = issue.number
                labels = rng.sample(LABELS, rng.randint(0, 2))
                st.set_issue_labels(issue.id, [st.label(repo.id, n).id for n in labels])
                st.set_assignees(issue.id, rng.sample(world.people, rng.randint(0, 1)))
    finally:
        sb.close()
    for rel, text in world.files.items():
        (fs / rel).parent.mkdir(parents=True, exist_ok=True)
        (fs / rel).write_text(text, encoding="utf-8")
    return gh, fs


# ------------------------------------------------------------------------------------------------ turns

Plan = tuple[str, list[Call], Callable[[list[Call]], str]]  # request, calls, answer from the results


def _path(fs: Path, rel: str) -> str:
    return str(fs / rel)


def _issue_turn(world: World, rng: random.Random, issue: dict[str, Any]) -> Plan:
    n = issue["number"]
    req = rng.choice([f"Open issue #{n} in acme/api.", f"What does issue #{n} in acme/api say?",
                      f"Show me acme/api#{n}."])  # fmt: skip
    call = Call("github__issue_read", {"method": "get", "owner": "acme", "repo": "api", "issue_number": n})

    def answer(cs: list[Call]) -> str:
        d = json.loads(cs[0].output)
        return f'Issue #{d["number"]} "{d["title"]}" is {d["state"]} with {d["comments"]} comments.'

    return req, [call], answer


def _file_turn(fs: Path, rng: random.Random, rel: str) -> Plan:
    req = rng.choice([f"Show me {rel}.", f"What is in {rel}?", f"Read {rel} for me."])

    def answer(cs: list[Call]) -> str:
        lines = [x for x in cs[0].output.splitlines() if x.strip()]
        return f"{rel} has {len(lines)} lines; it starts with {lines[0].strip()}."

    return req, [Call("filesystem__read_text_file", {"path": _path(fs, rel)})], answer


def _search_turn(world: World, rng: random.Random, topic: str) -> Plan:
    req = rng.choice([f"Search acme/api for issues about {topic}.", f"Find the {topic} issues in acme/api.",
                      f"Which issues in acme/api mention {topic}?"])  # fmt: skip
    call = Call("github__search_issues", {"query": f"{topic} repo:acme/api", "perPage": 3})

    def answer(cs: list[Call]) -> str:
        d = json.loads(cs[0].output)
        return f"The search found {d['total_count']} issues about {topic}."

    return req, [call], answer


def _filler(world: World, fs: Path, rng: random.Random) -> Plan:
    """A turn of 1–3 calls that asks nothing the questions need."""
    kind = rng.choice(["dir", "list", "comments", "two", "note", "three", "me", "readme"])
    if kind == "dir":
        d = rng.choice(["notes", "config", "reports"])
        return (f"What is in the {d} folder?", [Call("filesystem__list_directory", {"path": _path(fs, d)})],
                lambda cs: f"The {d} folder has {len(cs[0].output.splitlines())} entries.")  # fmt: skip
    if kind == "list":
        k = rng.randint(2, 3)
        call = Call("github__list_issues", {"owner": "acme", "repo": "api", "state": "OPEN", "perPage": k})
        return (f"List the {k} newest open issues in acme/api.", [call],
                lambda cs: f"Here are the {k} newest open issues.")  # fmt: skip
    if kind == "comments":
        n = rng.choice(world.issues)["number"]
        call = Call("github__issue_read", {"method": "get_labels", "owner": "acme", "repo": "api", "issue_number": n})
        return (f"Which labels does #{n} have?", [call], lambda cs: f"Issue #{n}'s labels are listed above.")
    if kind == "two":
        note = rng.choice([p for p in world.files if p.startswith("notes/")])
        calls = [Call("filesystem__list_directory", {"path": _path(fs, "notes")}),
                 Call("filesystem__read_text_file", {"path": _path(fs, note)})]  # fmt: skip
        return (f"List the notes folder, then open {note.split('/')[-1]}.", calls,
                lambda cs: f"The notes folder has {len(cs[0].output.splitlines())} files; here is {note}.")  # fmt: skip
    if kind == "note":
        rel = rng.choice(["reports/usage.csv", "notes/todo.md"])
        return (f"Read {rel}.", [Call("filesystem__read_text_file", {"path": _path(fs, rel)})],
                lambda cs: f"{rel} is {len(cs[0].output)} characters long.")  # fmt: skip
    if kind == "three":
        a, b = rng.sample(world.issues, 2)
        calls = [
            Call("github__issue_read", {"method": "get", "owner": "acme", "repo": "api", "issue_number": a["number"]}),
            Call("github__issue_read", {"method": "get", "owner": "acme", "repo": "api", "issue_number": b["number"]}),
            Call("filesystem__list_directory", {"path": _path(fs, "reports")}),
        ]
        return (f"Compare issues #{a['number']} and #{b['number']}, and list the reports folder.", calls,
                lambda cs: "Both issues are open; the reports folder is listed above.")  # fmt: skip
    if kind == "me":
        return ("Which GitHub account are you using?", [Call("github__get_me", {})],
                lambda cs: f"I am signed in as {json.loads(cs[0].output).get('login')}.")  # fmt: skip
    return ("Show me the README of acme/api.",
            [Call("github__get_file_contents", {"owner": "acme", "repo": "api", "path": "README.md"})],
            lambda cs: "The README describes the API and how to run it.")  # fmt: skip


async def _run(hub: MultiServerClient, plan: Plan) -> TurnRec:
    req, calls, answer = plan
    for c in calls:
        res = await hub.call_tool(c.tool, c.arguments)
        c.output, c.is_error = result_text(res), res.is_error
        if c.is_error:
            raise RuntimeError(f"{c.tool} {c.arguments} failed: {c.output[:200]}")
    return TurnRec(req, calls, answer(calls))


def _mentions(turn: TurnRec, answer: str) -> bool:
    text = " ".join([turn.request, turn.answer, *(json.dumps(c.arguments) + c.output for c in turn.calls)])
    return re.search(rf"(?<![\w-]){re.escape(answer)}(?![\w-])", text, re.I) is not None


async def make_trace(index: int, seed: int) -> Trace:
    """The trace of ``index``: drawn again (seed, seed + 10⁶, …) until no turn but a question's own states its
    answer, so every question is about one turn."""
    for attempt in range(50):
        tr = await _draw(index, seed + attempt * 1_000_000)
        if all(not _mentions(t, q.answer) for q in tr.questions for i, t in enumerate(tr.turns, 1) if i != q.fact_turn):
            return tr
    raise RuntimeError(f"trace {index}: no draw keeps its answers to one turn")


async def _draw(index: int, seed: int) -> Trace:
    rng = random.Random(seed)
    world = _world(rng)
    gh, fs = _build(world, rng)
    n_turns = rng.randint(8, 14)
    person = rng.choice(world.issues)
    config = rng.choice(sorted(world.settings))
    key = rng.choice(sorted(world.settings[config]))
    topics = sorted({i["topic"] for i in world.issues})
    search_topic = rng.choice(topics)
    search_turn = rng.randint(3, n_turns - 2)
    plans: list[Plan] = []
    for t in range(1, n_turns + 1):
        if t == 1:
            plans.append(_issue_turn(world, rng, person))
        elif t == 2:
            plans.append(_file_turn(fs, rng, config))
        elif t == search_turn:
            plans.append(_search_turn(world, rng, search_topic))
        else:
            plans.append(_filler(world, fs, rng))
    servers = {
        "github": _stdio(sandbox_server_params(gh)),
        "filesystem": StdioServerConfig(command=shutil.which("node") or "node", args=[str(FILESYSTEM_JS), str(fs)]),
    }
    async with MultiServerClient.from_config(MCPConfig(servers=servers)) as hub:
        turns = [await _run(hub, p) for p in plans]
    hits = json.loads(turns[search_turn - 1].calls[0].output)["items"]
    target = rng.choice(hits)
    split = "tune" if index % 2 == 0 else "check"
    late = list(range(max(search_turn + 1, n_turns // 2), n_turns + 1))
    qs = [
        Question("person", rng.choice(late), 1, ANSWERS_PERSON.format(what=person["title"].lower()), person["author"]),
        Question("file", rng.choice(late), 2, ANSWERS_FILE.format(key=key, path=config), world.settings[config][key]),
        Question(
            "search",
            rng.choice([search_turn + 1, search_turn + 2, *late]) if search_turn + 2 <= n_turns else search_turn + 1,
            search_turn,
            ANSWERS_SEARCH.format(topic=search_topic, title=target["title"]),
            str(target["number"]),
        ),
    ]
    return Trace(f"kv-{index:02d}", split, seed, turns, sorted(qs, key=lambda q: q.after_turn))


def _stdio(params: Any) -> StdioServerConfig:
    env = {k: v for k, v in (params.env or {}).items() if k in ("NEXUS_HOME", "PYTHONPATH")}
    return StdioServerConfig(command=params.command, args=list(params.args), env=env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--seed", type=int, default=55)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    if not FILESYSTEM_JS.exists():
        sys.exit(f"the reference filesystem server is not installed ({FILESYSTEM_JS}): run scripts/bootstrap.py --test")
    rows = []
    for i in range(a.n):
        tr = asyncio.run(make_trace(i, a.seed * 1000 + i))
        rows.append(json.dumps(asdict(tr), ensure_ascii=False))
        print(f"{tr.id} {tr.split}: {len(tr.turns)} turns, {sum(len(t.calls) for t in tr.turns)} calls", flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("\n".join(rows) + "\n", encoding="utf-8")
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
