"""A consolidated tool's operations as choices of their own, the fixed and the closest examples, the argument
grammar fixing a chosen operation, and which failed calls a rewrite can repair."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from nexus_agent.agent.args import example_turns, with_operation
from nexus_agent.agent.schema import constraint_for, validate
from nexus_agent.agent.turn import repairable
from nexus_agent.examples import Example, ExampleSet
from nexus_agent.examples.operations import operation_descriptions, operation_tools
from nexus_agent.registry import Tool, split_key
from nexus_agent.routing.examples import ExampleIndex
from nexus_agent.routing.index import EmbeddingCache

WRITE = Tool(
    "tracker",
    "ticket_write",
    "Create or update a ticket.",
    {
        "type": "object",
        "properties": {
            "method": {
                "type": "string",
                "enum": ["create", "update"],
                "description": (
                    "Options are:\n- 'create' - creates a new ticket.\n- 'update' - updates an existing one."
                ),
            },
            "id": {"type": "number"},
            "state": {"type": "string", "enum": ["open", "closed"]},
            "title": {"type": "string"},
        },
        "required": ["method"],
    },
)


def _ex(request: str, **args: object) -> Example:
    return Example(request=request, calls=[{"tool": "ticket_write", "arguments": args}], server="tracker")


BANK = ExampleSet(
    [
        _ex("close ticket 4", method="update", id=4, state="closed"),
        _ex("shut ticket 5 please", method="update", id=5, state="closed"),
        _ex("reopen ticket 6", method="update", id=6, state="open"),
        _ex("rename ticket 7 to Slow login", method="update", id=7, title="Slow login"),
        _ex("new ticket: Broken footer", method="create", title="Broken footer"),
    ],
    {WRITE.qualified_name: WRITE},
)


def test_each_operation_is_a_tool_of_its_own_described_by_its_examples() -> None:
    assert WRITE.operation_param == "method" and WRITE.operations() == ["create", "update"]
    assert operation_descriptions(WRITE) == {"create": "creates a new ticket.", "update": "updates an existing one."}
    create, update = operation_tools(WRITE, BANK)
    assert (update.key, update.label, update.qualified_name) == (
        "tracker__ticket_write#update",
        "ticket_write.update",
        "tracker__ticket_write",
    )
    assert split_key(update.key) == ("tracker__ticket_write", "update") and split_key("a__b") == ("a__b", None)
    assert update.input_schema["properties"]["method"]["enum"] == ["update"]
    # what its calls set, then the first examples of different kinds: closing, then renaming (another field), not
    # two closes
    assert update.description.startswith(
        'updates an existing one (sets state, title), as in "close ticket 4"; "rename ticket 7 to Slow login"'
    )
    assert '"new ticket: Broken footer"' in create.description
    plain = Tool("tracker", "list_tickets", "List tickets.", {"type": "object", "properties": {}})
    assert operation_tools(plain, BANK) == [plain]


def test_the_fixed_examples_show_one_of_each_kind_first() -> None:
    idx = ExampleIndex(BANK, EmbeddingCache(_Words()))
    fixed = [u.request for u in idx.fixed(WRITE.qualified_name, "update", k=3)]
    assert fixed == ["close ticket 4", "rename ticket 7 to Slow login", "reopen ticket 6"]
    assert [u.request for u in idx.fixed(WRITE.qualified_name, "create")] == ["new ticket: Broken footer"]
    # the closest: by the requests' embeddings
    qvec = _Words().embed_queries(["please shut ticket 9"])[0]
    assert idx.closest(qvec, WRITE.qualified_name, "update", k=1)[0].request == "shut ticket 5 please"


def test_a_fixed_operation_is_all_the_grammar_and_the_schema_allow() -> None:
    tool = with_operation(WRITE, "update")
    assert tool.input_schema["properties"]["method"]["enum"] == ["update"]
    assert validate(tool, {"method": "create"}) is not None and validate(tool, {"method": "update"}) is None
    assert '"\\"update\\""' in constraint_for(tool).gbnf and "create" not in constraint_for(tool).gbnf
    assert with_operation(WRITE, None) is WRITE and with_operation(WRITE, "delete") is WRITE
    turns = example_turns(WRITE, BANK.diverse(WRITE.qualified_name, "update", 1))
    assert turns[0]["content"].startswith("close ticket 4\n\n---\n") and json.loads(turns[1]["content"])["id"] == 4


def test_which_failures_a_rewrite_can_repair() -> None:
    assert repairable("invalid arguments for ticket_write: argument 'state': 'shut' is not one of", WRITE)
    assert repairable("422 Validation Failed: title is too long", WRITE)  # names a parameter
    assert not repairable("Validation Failed: issue 2 is locked", WRITE)  # names nothing the arguments can change
    assert repairable("missing required argument 'id'", WRITE)
    assert not repairable("404 Not Found: ticket 99 does not exist", WRITE)
    assert not repairable("the server is busy, try later", WRITE)
    assert repairable("ticket states are not enabled in this tracker", WRITE)  # a parameter's plural


def test_a_rewrite_leaves_out_the_optional_arguments_the_error_names() -> None:
    from nexus_agent.agent.turn import without_named_optional

    args = {"method": "update", "id": 4, "state": "closed", "title": "x"}
    assert without_named_optional(WRITE, args, "titles are not enabled here") == {
        "method": "update",
        "id": 4,
        "state": "closed",
    }
    # without the named one nothing would change (the id names the object): the model rewrites it
    assert without_named_optional(WRITE, {"method": "update", "id": 4, "title": "x"}, "title is not supported") is None
    assert without_named_optional(WRITE, args, "the server is busy") is None
    # the operation and required arguments stay, named or not
    assert without_named_optional(WRITE, args, "method update: state is not supported") == {
        "method": "update",
        "id": 4,
        "title": "x",
    }


class _Words:
    """A bag-of-words embedder (no model): enough to order requests by shared words."""

    dim = 64
    index_synthetic = True

    def fingerprint(self) -> str:
        return "words-test"

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self._embed(texts)

    def _embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, sum(map(ord, w)) % self.dim] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def test_bench_identifier_hint(tmp_path: Path) -> None:
    """bench/examples.py's ceiling writes the number of the object each write acts on into the request."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    from examples import identifier_given

    from nexus_agent.evaluation.multistep import load_tasks

    task = next(t for t in load_tasks() if t.id == "gh-close-mobile-login")
    assert identifier_given(task).request.endswith("(that is issue #1)")
    pr = next(t for t in load_tasks() if t.id == "gh-ready-dark-mode")
    assert identifier_given(pr).request.endswith("(that is pull request #2)")


def test_a_call_keeps_its_operation_and_names_the_object_it_needs() -> None:
    from nexus_agent.agent.grounding import identifier_given
    from nexus_agent.routing.options import RouterConfig
    from nexus_agent.routing.router import Router

    r = Router([WRITE], _Words(), RouterConfig(), examples=BANK)
    assert set(r.tools) == {"tracker__ticket_write#create", "tracker__ticket_write#update"}
    # an update call comes back as the update, whichever operation stands for the name
    assert r.key_for(WRITE.qualified_name, {"method": "update", "id": 4}) == "tracker__ticket_write#update"
    assert r.key_for(WRITE.qualified_name, {"method": "create"}) == "tracker__ticket_write#create"
    # every update example sets the ticket's id (optional in the shared schema); a create names no object
    assert r.object_params(WRITE.qualified_name, "update") == ["id"]
    assert r.object_params(WRITE.qualified_name, "create") == []
    assert not identifier_given(WRITE, "id", "close the ticket about the slow login")
    assert identifier_given(WRITE, "id", "close ticket 12")
    # a number inside the text to write is not the object's
    assert not identifier_given(WRITE, "id", "comment 'fixed in #5' on the ticket about the slow login")
    # an earlier turn that named the ticket gives it
    said = [{"role": "user", "content": "what does ticket 12 say?"}, {"role": "assistant", "content": "It says…"}]
    assert identifier_given(WRITE, "id", "close it", said)
    assert not identifier_given(WRITE, "id", "close it")
    # the examples say how such an object is found: the tools called before the write in a multi-step example
    found = Example(
        request="close the ticket about the slow login",
        calls=[
            {"tool": "search_tickets", "arguments": {"query": "slow login"}},
            {"tool": "ticket_write", "arguments": {"method": "update", "id": 7, "state": "closed"}},
        ],
        server="tracker",
    )
    idx = ExampleIndex(ExampleSet([*BANK.examples, found], {WRITE.qualified_name: WRITE}), EmbeddingCache(_Words()))
    qvec = _Words().embed_queries(["close the ticket about the broken footer"])[0]
    assert idx.lookup_for(qvec, WRITE.qualified_name, {"tracker__search_tickets"}) == "tracker__search_tickets"
    assert idx.lookup_for(qvec, WRITE.qualified_name, {"tracker__list_tickets"}) is None
    assert ExampleIndex(BANK, EmbeddingCache(_Words())).lookup_for(qvec, WRITE.qualified_name, set()) is None
    # told which identifier the write lacks, only the call an example takes it from counts: here the first call
    # finds what the title should say, not the ticket
    titled = Example(
        request="close the ticket about the broken footer with the title the wiki gives",
        calls=[
            {"tool": "read_wiki", "arguments": {"page": "footer"}},
            {"tool": "ticket_write", "arguments": {"method": "update", "id": 9, "title": "x"}, "from": {"title": 0}},
        ],
        server="tracker",
    )
    both = ExampleIndex(ExampleSet([found, titled], {WRITE.qualified_name: WRITE}), EmbeddingCache(_Words()))
    allowed = {"tracker__search_tickets", "tracker__read_wiki"}
    assert both.lookup_for(qvec, WRITE.qualified_name, allowed) == "tracker__read_wiki"
    assert both.lookup_for(qvec, WRITE.qualified_name, allowed, ["id"]) is None
    # no example of the write takes the id from anything, but a comment on a ticket does: its source stands in
    commenting = Example(
        request="comment 'seen' on the ticket about the slow login",
        calls=[
            {"tool": "search_tickets", "arguments": {"query": "slow login"}},
            {"tool": "ticket_comment", "arguments": {"id": 7, "body": "seen"}, "from": {"id": 0}},
        ],
        server="tracker",
    )
    three = ExampleIndex(ExampleSet([titled, commenting], {WRITE.qualified_name: WRITE}), EmbeddingCache(_Words()))
    assert three.lookup_for(qvec, WRITE.qualified_name, allowed, ["id"]) == "tracker__search_tickets"
    assert three.lookup_for(qvec, WRITE.qualified_name, {"tracker__read_wiki"}, ["id"]) is None
    with_from = found.model_copy(
        update={"calls": [found.calls[0], found.calls[1].model_copy(update={"from_": {"id": 0}})]}
    )
    both = ExampleIndex(ExampleSet([with_from, titled], {WRITE.qualified_name: WRITE}), EmbeddingCache(_Words()))
    assert both.lookup_for(qvec, WRITE.qualified_name, allowed, ["id"]) == "tracker__search_tickets"


def test_the_decision_shows_the_closest_examples_wherever_their_candidates_stand() -> None:
    from nexus_agent.examples.uses import ExampleUses
    from nexus_agent.routing.options import RouterConfig
    from nexus_agent.routing.router import Router

    def shown(by: str) -> list[str]:
        cfg = RouterConfig().tuned(examples={"decision_examples": 1, "decision_examples_by": by})
        r = Router([WRITE], _Words(), cfg, examples=BANK)
        pool = [r.tools["tracker__ticket_write#create"], r.tools["tracker__ticket_write#update"]]
        return r._decision_examples("please shut ticket 9", pool)

    # the update's closest example ("shut ticket 5 please") is not among the two its line shows: it is shown, though
    # the update stands second; by place, the first candidate's line already shows its examples, so none is
    assert shown("closest") == ["", "shut ticket 5 please"]
    assert shown("position") == ["", ""]
    assert ExampleUses().decision_examples_by == "closest"


def test_requests_meet_examples_with_the_names_of_their_objects_masked() -> None:
    from nexus_agent.routing.query import masked

    assert masked("Add the bug label to acme/web #6.") == "Add the bug label to owner/repo #N."
    assert masked('Rename halyard-works/larkspur#35 to "Support a tz field"') == 'Rename owner/repo #N to "…"'
    assert masked("it's 'fine', close issue 12") == 'it\'s "…", close issue N'
    # paths and files keep their names: they say which tool reads them
    for kept in ("read src/api/app.py and /var/log/app.log", "add docs/rate-limits.md", "tag v1.2.3 and ~/a/b"):
        assert masked(kept) == kept
    # unmasked, the create in the same repository is closer; masked, the close
    closing = _ex("close ticket 4 in zeta/core", method="update", id=4, state="closed")
    creating = _ex("new ticket in acme/web", method="create", title="x")
    idx = ExampleIndex(ExampleSet([closing, creating], {WRITE.qualified_name: WRITE}), EmbeddingCache(_Words()))
    query = "close acme/web ticket 12"
    raw = _Words().embed_queries([query, closing.request, creating.request])
    assert raw[0] @ raw[2] > raw[0] @ raw[1]
    assert idx.closest(idx.vector(query), WRITE.qualified_name, k=1, alone=False)[0].request == closing.request
    best = idx.nearest(idx.vector(query), {"tracker"})
    assert best is not None and best[0] is closing and best[1] > 0.8
    assert idx.nearest(idx.vector(query), {"elsewhere"}) is None


class _Always:
    """A decision that always picks one routing key, and counts how often it was asked."""

    uses_llm = False
    decider = None

    def __init__(self, key: str) -> None:
        self.key, self.asked = key, 0

    def rerank(self, query: str, candidates: list[Tool], *args: object, **kw: object) -> object:
        from nexus_agent.routing.rerank.base import RerankResult

        self.asked += 1
        return RerankResult([1.0 if t.key == self.key else 0.0 for t in candidates], self.key)


def test_a_close_example_routes_without_the_decision_and_only_on_its_server() -> None:
    from nexus_agent.routing.options import RouterConfig
    from nexus_agent.routing.router import Router

    other = Tool("elsewhere", "ticket_close", "Close a ticket.", {"type": "object", "properties": {}})
    create = "tracker__ticket_write#create"

    def routed(query: str, **uses: object) -> tuple[str | None, str | None, int]:
        decision = _Always(create)
        cfg = RouterConfig().tuned(gate={"always_escalate": True}, examples=uses)
        r = Router([WRITE, other], _Words(), cfg, reranker=decision, examples=BANK)  # type: ignore[arg-type]
        res = r.route(query)
        return res.tool, res.operation, decision.asked

    # "close ticket N": the example "close ticket 4" is as close as can be; the decision is not asked
    assert routed("close ticket 9") == (WRITE.qualified_name, "update", 0)
    # the threshold out of reach: the decision decides
    assert routed("close ticket 9", match_auto=1.5) == (WRITE.qualified_name, "create", 1)
    assert routed("close ticket 9", keys=False) == (WRITE.qualified_name, "create", 1)


def test_the_examples_raise_the_tools_of_the_first_candidates_server_only() -> None:
    from nexus_agent.routing.options import RouterConfig
    from nexus_agent.routing.router import Router

    other = Tool("elsewhere", "ticket_close", "Close a ticket quickly.", {"type": "object", "properties": {}})
    for weight in (0.0, 1.0):
        r = Router([WRITE, other], _Words(), RouterConfig().tuned(examples={"match_weight": weight}), examples=BANK)
        scores = {c.key: c.score for c in r.retrieve("reopen ticket 3")}
        plain = {c.key: c.score for c in r.retrieve("reopen ticket 3", allowed={other.qualified_name})}
        if weight == 0:
            base = scores
            continue
        # the tracker's update has "reopen ticket 6": raised by the masked cosine (1.0 here) when the tracker leads
        lead = max(base, key=base.__getitem__)
        assert lead.startswith("tracker__")
        assert scores["tracker__ticket_write#update"] - base["tracker__ticket_write#update"] > 0.9
        assert scores[other.key] == base[other.key]
        # with only the other server allowed, nothing of the tracker is raised, nor is the other tool
        assert plain[other.key] == base[other.key]
