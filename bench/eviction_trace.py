"""The ``trace`` task of ``bench/eviction.py`` (issue 55): bounded KV memory on recorded multi-turn agent traces.

**Traces** (``data/eval/kv_traces/traces.jsonl``, made by ``bench/kv_traces.py`` from the real GitHub sandbox and
filesystem servers): 8–14 turns of 1–3 calls, a fixed tune/check split, three questions per trace asked after later
turns (a login from turn 1, a config value from turn 2, an issue number from an earlier search). Everything is
teacher-forced: the lane of each arm is prefilled with the agent's own trace rendering
(``Conversation.trace_parts``: whole outputs, segments and pins as ``--kv-budget`` gives them) turn by turn, and after
the turn a question is asked, it is asked in the same lane (the transient tail the next turn's prefill drops) and
answered with at most ``ANSWER_TOKENS`` greedy tokens. Correct: the reply holds the answer (a number as a whole
number).

**Arms**: ``none`` (dense), ``raw:<policy>`` (the policy evicting 32-token blocks at every step, as before issue 55)
and ``mem:<scorer>`` (the memory manager with that scorer; a probe also recalls evicted spans before the question,
as the agent does before a turn, and the row says how often that fired and what it cost). Each budget is a
fraction (density) of the trace's dense tokens.

**Shared work**: every arm is the dense lane until its first eviction. The dense run is a managed lane whose budget
it never reaches, with every managed arm's scorer scoring each turn at the moment a solo run would (so each arm's
once-per-turn scores are its own), and it saves the lane's state after the last turn (and its questions) that fits
each budget. Each budgeted arm starts from that state; the questions before it are the dense run's answers (no
eviction had happened, so nothing differs).

**Cost**: scoring (each turn, once) and eviction steps, as a share of the arm's decode time (its share of the dense
run's turns included); recall separately (retrieval plus the note's prefill).
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from nexus_agent.agent.history import Call, Conversation, Turn, surrogate
from nexus_agent.agent.prompts import SYSTEM_MAIN
from nexus_agent.agent.recall import Recall, SpanIndex
from nexus_agent.backend.segmenting import segment
from nexus_agent.engine import Engine
from nexus_agent.evaluation.stats import wilson_ci
from nexus_agent.kv.budget import KVBudget, LaneKV
from nexus_agent.kv.memory import MemoryState
from nexus_agent.kv.segments import Part, SegKind, SegmentMap
from nexus_agent.routing.embedders.base import Embedder

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT / "data" / "eval" / "kv_traces" / "traces.jsonl"
ANSWER_TOKENS = 12
DENSE_BUDGET = 1 << 30  # the dense run's lane: managed (so its turns are scored), never full


@dataclass(frozen=True)
class ArmSpec:
    """``policy``: "none" for dense. ``manager``: the memory manager (else the raw policy)."""

    policy: str
    manager: bool
    densities: tuple[float, ...]

    @property
    def name(self) -> str:
        return "none" if self.policy == "none" else f"{'mem' if self.manager else 'raw'}:{self.policy}"


def parse_arms(text: str, densities: tuple[float, ...]) -> list[ArmSpec]:
    """``none,raw:nexus,mem:keydiff@0.2`` → arms (an ``@d,d`` suffix picks densities for that arm)."""
    out = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        name, _, ds = item.partition("@")
        dens = tuple(float(d) for d in ds.split("/")) if ds else densities
        if name == "none":
            out.append(ArmSpec("none", False, (1.0,)))
            continue
        kind, _, policy = name.partition(":")
        if kind not in ("raw", "mem") or not policy:
            raise ValueError(f"arm {item!r}: write none, raw:<policy> or mem:<scorer>")
        out.append(ArmSpec(policy, kind == "mem", dens))
    return out


@dataclass
class Case:
    id: str
    split: str
    turns: list[Turn]
    questions: list[dict[str, Any]]


def load_cases(split: str | None, path: Path = TRACES) -> list[Case]:
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if split is not None and rec["split"] != split:
            continue
        turns = []
        for tr in rec["turns"]:
            calls = [Call(c["tool"], c["arguments"], surrogate(c["output"]), c["output"]) for c in tr["calls"]]
            t = Turn(user=tr["request"], answer=tr["answer"])
            *t.earlier, last = calls
            t.tool, t.arguments, t.tool_result, t.tool_output = last.tool, last.arguments, last.result, last.output
            turns.append(t)
        cases.append(Case(rec["id"], rec["split"], turns, rec["questions"]))
    return cases


def correct(reply: str, answer: str) -> bool:
    if answer.isdigit():
        return re.search(rf"(?<!\d){answer}(?!\d)", reply) is not None
    return answer.lower() in reply.lower()


@dataclass
class Probe:
    """One question in one arm."""

    kind: str
    fact_turn: int
    age: int  # turns between the fact and the question
    ok: bool
    ok_no_recall: bool
    fired: bool = False
    note_tokens: int = 0
    recall_ms: float = 0.0
    reply: str = ""


@dataclass
class ArmResult:
    arm: ArmSpec
    density: float
    probes: list[Probe] = field(default_factory=list)
    peak: list[int] = field(default_factory=list)
    dense: list[int] = field(default_factory=list)
    decode_ms: float = 0.0
    cost_ms: float = 0.0  # scoring and eviction steps
    scoring_ms: float = 0.0
    steps: int = 0
    turns_scored: int = 0
    evicted_turns: list[float] = field(default_factory=list)  # per trace: share of its turns that lost cells
    wall_s: float = 0.0
    requests: int = 0  # the trace's own requests the recall looked at (after the first eviction)
    request_recalls: int = 0  # of them, how many would have recalled a note
    request_note_chars: int = 0

    def row(self) -> dict[str, Any]:
        def acc(ps: list[Probe], key: Callable[[Probe], bool] = lambda p: p.ok) -> tuple[float, list[float]]:
            k = sum(key(p) for p in ps)
            lo, hi = wilson_ci(k, len(ps))
            return (k / len(ps) if ps else 0.0), [lo, hi]

        a, ci = acc(self.probes)
        first = [p for p in self.probes if p.fact_turn == 1]
        recent = [p for p in self.probes if p.age <= 2]
        a_first, ci_first = acc(first)
        a_recent, ci_recent = acc(recent)
        fired = [p for p in self.probes if p.fired]
        peak, dense = float(np.mean(self.peak)), float(np.mean(self.dense))
        return {
            "task": "trace",
            "policy": self.arm.policy,
            "manager": self.arm.manager,
            "density": self.density,
            "n": len(self.probes),
            "accuracy": a,
            "ci95": ci,
            "accuracy_first_turn": a_first,
            "ci95_first_turn": ci_first,
            "n_first_turn": len(first),
            "accuracy_recent": a_recent,
            "ci95_recent": ci_recent,
            "n_recent": len(recent),
            "accuracy_no_recall": acc(self.probes, lambda p: p.ok_no_recall)[0],
            "accuracy_by_kind": {
                k: acc([p for p in self.probes if p.kind == k])[0] for k in sorted({p.kind for p in self.probes})
            },
            "peak_kv_cells": peak,
            "dense_kv_cells": dense,
            "kv_vs_dense": peak / dense if dense else 0.0,
            "cost_share": self.cost_ms / self.decode_ms if self.decode_ms else 0.0,
            "scoring_ms_per_turn": self.scoring_ms / self.turns_scored if self.turns_scored else 0.0,
            "eviction_steps": self.steps,
            "reinsertions": len(fired),
            "reinsertion_rate": len(fired) / len(self.probes) if self.probes else 0.0,
            "note_tokens_mean": float(np.mean([p.note_tokens for p in fired])) if fired else 0.0,
            "recall_ms_mean": float(np.mean([p.recall_ms for p in fired])) if fired else 0.0,
            "turns_evicted_share": float(np.mean(self.evicted_turns)) if self.evicted_turns else 0.0,
            "request_recall_rate": self.request_recalls / self.requests if self.requests else 0.0,
            "request_note_chars_mean": self.request_note_chars / self.request_recalls if self.request_recalls else 0.0,
            "wall_s": self.wall_s,
        }


@dataclass
class Checkpoint:
    """The dense lane after turn ``turn`` (and its questions): its state, tokens, last query rows, and each
    scorer's memory (segments and once-per-turn ranks), plus what the dense run spent up to there."""

    turn: int
    blob: bytes
    tokens: list[int]
    rows: tuple[np.ndarray, np.ndarray]
    memories: dict[str, MemoryState]
    decode_ms: float
    probes: list[Probe]
    peak: int


class TraceBench:
    def __init__(self, engine: Engine, embedder: Embedder, seed: int = 0) -> None:
        self.engine = engine
        self.model = engine.model
        self.embedder = embedder
        self.seed = seed
        self.results: dict[tuple[str, float], ArmResult] = {}
        self.log: Callable[[str], None] = lambda line: print(line, flush=True)

    # -- rendering: the agent's own trace parts, segmented as the backend does
    def render(
        self, turns: list[Turn], extra: list[tuple[dict[str, str], list[Part] | None]] = ()
    ) -> tuple[list[int], SegmentMap | None]:
        msgs, parts = Conversation(list(turns)).trace_parts(SYSTEM_MAIN)
        tail = [m for m, _ in extra]
        noted = [p for _, p in extra if p is not None]
        return segment(self.model, msgs + tail, parts + noted, generation_prompt=bool(extra))

    # -- one trace, every arm
    def run(self, case: Case, arms: list[ArmSpec]) -> None:
        n = len(case.turns)
        prefix = [self.render(case.turns[:k]) for k in range(n + 1)]
        total = len(prefix[n][0])
        qs_at: dict[int, list[dict[str, Any]]] = {}
        for q in case.questions:
            qs_at.setdefault(q["after_turn"], []).append(q)
        asked = {
            k: max(
                len(self.render(case.turns[:k], [({"role": "user", "content": q["question"]}, None)])[0]) for q in qs
            )
            for k, qs in qs_at.items()
        }
        # the most cells the dense lane holds up to turn k (its questions included)
        held = np.maximum.accumulate([max(len(prefix[k][0]), asked.get(k, 0)) + ANSWER_TOKENS for k in range(n + 1)])
        budgets = sorted({d for a in arms if a.policy != "none" for d in a.densities})
        cells = {d: max(KVBudget.min_tokens(), int(d * total)) for d in budgets}
        # where each budget's arms diverge from the dense run: after the last turn whose lane fits the budget
        fits = {d: max((k for k in range(n + 1) if held[k] <= cells[d]), default=0) for d in budgets}
        scorers = [a.policy for a in arms if a.manager]
        index = SpanIndex(self.embedder)
        # the dense run, scoring for every managed arm, saving the state where each budget's arms diverge
        t_dense = time.perf_counter()
        checkpoints, dense_probes, dense_peak = self._dense(case, prefix, qs_at, scorers, sorted(set(fits.values())))
        dense_wall = time.perf_counter() - t_dense
        for a in arms:
            if a.policy == "none":
                res = self._result(a, 1.0)
                res.probes += dense_probes
                res.peak.append(dense_peak)
                res.dense.append(dense_peak)
                res.decode_ms += checkpoints[-1].decode_ms if checkpoints else 0.0
                res.wall_s += dense_wall
        for d in budgets:
            cp = next(c for c in checkpoints if c.turn == fits[d])
            for a in (a for a in arms if a.policy != "none" and d in a.densities):
                t0 = time.perf_counter()
                res = self._result(a, d)
                self._arm(case, a, cells[d], cp, prefix, qs_at, index, res, dense_peak)
                res.wall_s += time.perf_counter() - t0
                got = sum(p.ok for p in res.probes[-len(case.questions) :])
                self.log(f"  {case.id} {a.name}@{d}: {got}/{len(case.questions)} ({time.perf_counter() - t0:.0f} s)")

    def _result(self, a: ArmSpec, d: float) -> ArmResult:
        key = (a.name, d)
        if key not in self.results:
            self.results[key] = ArmResult(a, d)
        return self.results[key]

    def _dense(
        self,
        case: Case,
        prefix: list[tuple[list[int], SegmentMap | None]],
        qs_at: dict[int, list[dict[str, Any]]],
        scorers: list[str],
        save_at: list[int],
    ) -> tuple[list[Checkpoint], list[Probe], int]:
        eng = self.engine
        assert eng.evictor is not None
        lane = eng.open_lane()
        leader = scorers[0] if scorers else "keydiff"
        eng.set_budget(lane, KVBudget(DENSE_BUDGET, leader, seed=self.seed, manager=True))
        shadows = {s: MemoryState() for s in dict.fromkeys(scorers[1:]) if s != leader}
        real = eng.evictor.score_turn
        last = max(save_at, default=0)  # the last turn any arm diverges after

        def score_all(
            kv: LaneKV, mem: MemoryState, slot: int, lane_id: int, turn: int, policy_name: str | None = None
        ) -> None:
            if lane_id == lane and turn > last:
                return  # past every arm's divergence: nothing reads these scores (the dense lane never evicts)
            if lane_id == lane and policy_name is None:
                for name, sm in shadows.items():
                    sm.segments = mem.segments
                    del sm.rank[len(kv.tokens) :]
                    sm.grow(len(kv.tokens))
                    real(kv, sm, slot, lane_id, turn, policy_name=name)
            real(kv, mem, slot, lane_id, turn, policy_name)

        eng.evictor.score_turn = score_all  # type: ignore[method-assign]
        checkpoints: list[Checkpoint] = []
        probes: list[Probe] = []
        decode_ms = 0.0
        peak = 0
        try:
            for k in range(len(case.turns) + 1):
                if k:
                    t0 = time.perf_counter()
                    eng.prefill(prefix[k][0], lane, segments=prefix[k][1])
                    decode_ms += (time.perf_counter() - t0) * 1000
                    peak = max(peak, len(prefix[k][0]))
                for q in qs_at.get(k, []):
                    p, ms, top = self._ask(case, lane, k, q, None)
                    probes.append(p)
                    decode_ms += ms
                    peak = max(peak, top)
                kv = eng.lane(lane).kv
                if k in save_at or k == len(case.turns):
                    mems = {leader: MemoryState(), **shadows}
                    if kv is not None and kv.memory is not None:
                        mems[leader] = kv.memory
                    scoring = sum(sum(m.scoring_ms.values()) for m in mems.values())
                    rows = (
                        kv.ring.rows()
                        if kv is not None
                        else (np.zeros((0, 1, 1, 1), np.float32), np.zeros(0, np.int32))
                    )
                    checkpoints.append(
                        Checkpoint(
                            turn=k,
                            blob=eng.ctx.seq_state(eng.slot(lane)) if k else b"",
                            tokens=list(kv.tokens) if kv is not None else [],
                            rows=(np.copy(rows[0]), np.copy(rows[1])),
                            memories=copy.deepcopy(mems),
                            decode_ms=decode_ms - scoring,
                            probes=list(probes),
                            peak=peak,
                        )
                    )
        finally:
            eng.evictor.score_turn = real  # type: ignore[method-assign]
            eng.close_lane(lane)
        return checkpoints, probes, peak

    def _arm(
        self,
        case: Case,
        arm: ArmSpec,
        cells: int,
        cp: Checkpoint,
        prefix: list[tuple[list[int], SegmentMap | None]],
        qs_at: dict[int, list[dict[str, Any]]],
        index: SpanIndex,
        res: ArmResult,
        dense_peak: int,
    ) -> None:
        eng = self.engine
        lane = eng.open_lane()
        eng.set_budget(lane, KVBudget(cells, arm.policy, seed=self.seed, manager=arm.manager))
        recall = Recall(self.embedder, lambda: eng.evicted_spans(lane), index=index) if arm.manager else None
        try:
            if cp.turn:
                eng.load_lane(lane, cp.blob, cp.tokens)
            kv = eng._kv(lane, eng.lane(lane))
            assert kv is not None
            if arm.manager and cp.turn:
                kv.memory = copy.deepcopy(cp.memories[arm.policy])
            q, qpos = cp.rows
            keep = min(q.shape[0], kv.ring.capacity)
            if keep:
                for layer in range(q.shape[1]):
                    kv.ring.stage(layer, np.ascontiguousarray(q[-keep:, layer]))
                kv.ring.commit(qpos[-keep:])
            shared_scoring = sum(cp.memories[arm.policy].scoring_ms.values()) if arm.manager and cp.turn else 0.0
            res.probes += cp.probes
            decode_ms = cp.decode_ms
            peak = cp.peak
            for k in range(cp.turn + 1, len(case.turns) + 1):
                if recall is not None and k > 1:
                    # what the turn's own request would recall before it (the trace goes on teacher-forced)
                    got = recall(case.turns[k - 1].user, Conversation(list(case.turns[: k - 1])))
                    res.requests += 1
                    res.request_recalls += bool(got.note)
                    res.request_note_chars += len(got.note)
                t0 = time.perf_counter()
                eng.prefill(prefix[k][0], lane, segments=prefix[k][1])
                decode_ms += (time.perf_counter() - t0) * 1000
                peak = max(peak, kv.cells)
                for question in qs_at.get(k, []):
                    p, ms, top = self._ask(case, lane, k, question, recall)
                    res.probes.append(p)
                    decode_ms += ms
                    peak = max(peak, top)
            mem = kv.memory
            scoring = sum(mem.scoring_ms.values()) if mem is not None else 0.0  # every turn's, shared ones too
            steps = sum(s.total_ms for s in kv.steps)
            res.scoring_ms += scoring
            res.turns_scored += len(mem.scoring_ms) if mem is not None else 0
            res.cost_ms += scoring + steps
            # cp.decode_ms has no scoring in it; the arm's own wall time had its own scoring and steps
            res.decode_ms += decode_ms - (scoring - shared_scoring) - steps
            res.steps += len(kv.steps)
            res.peak.append(peak)
            res.dense.append(dense_peak)
            lost = {
                t
                for t, (a, b) in _turn_ranges(prefix).items()
                if any(kv.pos[i] < 0 for i in range(a, min(b, len(kv.pos))))
            }
            res.evicted_turns.append(len(lost) / len(case.turns))
        finally:
            eng.close_lane(lane)

    def _ask(self, case: Case, lane: int, k: int, q: dict[str, Any], recall: Recall | None) -> tuple[Probe, float, int]:
        """Ask ``q`` after turn ``k`` in ``lane``: plain, and with the recalled note when recall fires. Returns the
        probe, the decode time and the most cells the lane held."""
        eng = self.engine
        turns = case.turns[:k]
        ask = _user(q["question"])
        t0 = time.perf_counter()
        got = recall(q["question"], Conversation(list(turns))) if recall is not None else None
        recall_ms = (time.perf_counter() - t0) * 1000
        toks, segs = self.render(turns, [ask])
        t1 = time.perf_counter()
        g = eng.generate(toks, lane, max_tokens=ANSWER_TOKENS, keep=False, segments=segs)
        ms = (time.perf_counter() - t1) * 1000
        top = self._cells(lane, len(toks)) + len(g.tokens)
        ok = correct(g.text, q["answer"])
        probe = Probe(q["kind"], q["fact_turn"], k - q["fact_turn"], ok, ok, reply=g.text)
        if got is not None and got.note:
            note = ({"role": "user", "content": got.note}, [Part(SegKind.NOTE, got.note, k + 1, f"{k + 1}.n")])
            toks2, segs2 = self.render(turns, [note, ask])
            t2 = time.perf_counter()
            g2 = eng.generate(toks2, lane, max_tokens=ANSWER_TOKENS, keep=False, segments=segs2)
            probe.recall_ms = recall_ms + (time.perf_counter() - t2) * 1000
            probe.fired = True
            probe.note_tokens = len(toks2) - len(toks)
            probe.ok = correct(g2.text, q["answer"])
            probe.reply = g2.text
            top = max(top, self._cells(lane, len(toks2)) + len(g2.tokens))
        return probe, ms, top

    def _cells(self, lane: int, n_tokens: int) -> int:
        kv = self.engine.lane(lane).kv
        return kv.cells if kv is not None and kv.budget.tokens < DENSE_BUDGET else n_tokens


def _user(text: str) -> tuple[dict[str, str], None]:
    return {"role": "user", "content": text}, None


def _turn_ranges(prefix: list[tuple[list[int], SegmentMap | None]]) -> dict[int, tuple[int, int]]:
    return {k: (len(prefix[k - 1][0]), len(prefix[k][0])) for k in range(1, len(prefix))}
