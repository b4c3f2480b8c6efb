"""The public Python API, for desktop apps that embed Nexus Agent as their MCP client.

```python
async with NexusAgent.from_config(AgentConfig(mcp=["github"])) as agent:
    async for event in agent.run("list open issues in acme/api"):
        print(event.type, event)
```

An app that holds several chats opens one :class:`Chat` per chat on the same agent. They share the model (one
load), the MCP servers and the router; each keeps its own history and its own lane of the engine's radix arena, so
switching chats reuses each chat's cached KV instead of prefilling its history again:

```python
async with NexusAgent.from_config(AgentConfig(mcp=["github"])) as agent:
    work, home = agent.open_chat(), agent.open_chat()
    async for event in work.run("list open issues in acme/api"):
        ...
```

``agent.run`` is the agent's first chat. Turns of different chats serialise on the engine's coarse lock.

With ``AgentConfig(engine="http://gpu-box:8000/v1", model=...)`` generation goes to an OpenAI-compatible server
(vLLM, SGLang, llama-server) instead: retrieval stays local, the routing decision, the arguments and the answers go
to the server, and turns of different chats run concurrently (only retrieval queues, on the router's lock).

``SyncNexusAgent`` wraps the same object for synchronous code; it is safe to call from several threads
(each call gets its own events; ``open_chat`` gives a :class:`SyncChat`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, field_validator, model_validator

from nexus_agent import defaults
from nexus_agent.agent.args import example_head, with_operation
from nexus_agent.agent.events import ElicitationEvent, ErrorEvent, Event
from nexus_agent.agent.forms import dates
from nexus_agent.agent.history import Conversation
from nexus_agent.agent.prompts import SYSTEM_CHAT, SYSTEM_MAIN
from nexus_agent.agent.recall import Recall
from nexus_agent.agent.routing_adapter import AgentRouter, shared_embedder
from nexus_agent.agent.turn import (
    CallResult,
    TurnCancelled,
    TurnDeps,
    TurnRouter,
    mark_trace,
    next_heads,
    run_turn,
)
from nexus_agent.agent.view import MAX_ITEMS, AnswerView
from nexus_agent.backend import Backend, LocalBackend, RemoteBackend, RemoteConfig, RemoteError, check_base_url
from nexus_agent.backend.decision import Messages
from nexus_agent.engine import CHAT, MAIN, Engine, EngineConfig
from nexus_agent.examples import ExampleSet, gather
from nexus_agent.examples.uses import ARMS as EXAMPLE_ARMS
from nexus_agent.examples.uses import example_uses
from nexus_agent.kv.budget import KVBudget
from nexus_agent.kv.memory import UNIT
from nexus_agent.kv.policies import EVICT_CHOICES, check_evict
from nexus_agent.mcp import (
    AuthOptions,
    ElicitationReply,
    ElicitationRequest,
    MultiServerClient,
    SourceOptions,
    load_config,
    resolve_preset,
)
from nexus_agent.mcp.config import EngineEntry, MCPConfig
from nexus_agent.mcp.tools import ToolListDiff
from nexus_agent.registry import Tool
from nexus_agent.routing.options import Relevance, RouterOptions
from nexus_agent.splice.mode import SpliceMode

log = logging.getLogger(__name__)

DEFAULT_MODEL = defaults.CHAT_MODEL


def check_examples(name: str) -> str:
    example_uses(name)  # a ValueError names the known settings
    return name


ConfirmFn = Callable[[str, dict[str, Any], Mapping[str, Any] | None], bool | Awaitable[bool]]


class AgentConfig(BaseModel):
    """Everything an agent needs; validated at the boundary so a bad value names its field.

    ``mcp``: preset names (``github``); ``config_file``: an ``mcpServers`` JSON file (Claude Desktop /
    Cursor format); both may be given. ``yes``: run tools that may modify data without asking (a question routed
    to a tool that declares a write still asks).
    """

    model_config = ConfigDict(extra="forbid")

    # in-process: a short name or GGUF path (None: defaults.CHAT_MODEL); with ``engine``: the served model's name
    # (None: the first the server lists)
    model: str | None = None
    # an OpenAI-compatible base URL (``http://127.0.0.1:8000/v1``); None: llama.cpp in-process, or the config
    # file's ``engine``. The key comes from ``api_key``, else NEXUS_API_KEY or OPENAI_API_KEY.
    engine: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    engine_timeout_s: float = Field(default=120.0, gt=0)
    mcp: list[str] = Field(default_factory=list)
    config_file: Path | None = None
    embedder: str = defaults.EMBEDDER
    yes: bool = False
    n_ctx: int = Field(default=8192, ge=512)
    n_threads: int = Field(default=2, ge=1)
    tool_timeout_s: float = Field(default=60.0, gt=0)
    window_turns: int = Field(default=4, ge=0)
    # compiled tool blocks for the routing decision's candidate lines (docs/atb-format.md)
    splice: SpliceMode = SpliceMode.AUTO
    # whether a request needs a tool: "llm" also asks the model (routing/judge.py), "exemplars" the embeddings only
    relevance: Relevance = Relevance.LLM
    # KV cells each conversation may hold, as a count or as a fraction (0 < x < 1) of ``n_ctx`` (None: no budget; the
    # prompt keeps the last ``window_turns`` turns). With a budget the conversation's lane keeps the whole trace and
    # the memory manager (nexus_agent/kv/memory.py) keeps it under the budget: pins stay, whole spans go, ``evict``
    # scores each turn once, and a request recalls what was evicted (agent/recall.py).
    kv_budget: float | None = Field(default=None, gt=0)
    # stable prompt heads (system prompts, the decision's and the judge's instructions) loaded from disk instead of
    # decoded in every process (nexus_agent/engine/heads.py); off: decoded when first needed, once per process
    head_cache: bool = True
    # answers read a compact view of a tool's output (its rows' identifying fields and the fields the request names,
    # agent/view.py) or, "full", the whole output (cut at 6,000 characters); the whole output is read anyway when the
    # request asks for details
    answer_view: AnswerView = AnswerView.COMPACT
    answer_items: int = Field(default=MAX_ITEMS, ge=1)  # rows of a listed result the answer reads
    # calls one request may make (the agent loop, docs/agent-loop.md): after each result the agent decides between
    # another call and the answer; 1: one call, answered at once
    max_steps: int = Field(default=defaults.MAX_STEPS, ge=1, le=16)
    # after a turn, decode the history the next turn's prompts start with while the user reads the answer (a chunk
    # at a time; the next request stops it and goes on from what it holds). Off for a one-shot run.
    warm_next: bool = True
    evict: Annotated[
        str, AfterValidator(check_evict), WithJsonSchema({"type": "string", "enum": list(EVICT_CHOICES)})
    ] = defaults.KV_SCORER
    # where the servers' verified usage examples are used (docs/examples.md): "all", "none", or one use alone
    # ("keys": routing keys, "arguments": argument writing; "retrieved": all, with the argument writer's examples
    # the closest to each request instead of a fixed set)
    examples: Annotated[
        str, AfterValidator(check_examples), WithJsonSchema({"type": "string", "enum": list(EXAMPLE_ARMS)})
    ] = defaults.EXAMPLES

    @field_validator("engine")
    @classmethod
    def _engine_url(cls, v: str | None) -> str | None:
        return None if v is None else check_base_url(v)

    @property
    def kv_cells(self) -> int | None:
        """The budget in cells (a fraction of ``n_ctx`` converted)."""
        if self.kv_budget is None:
            return None
        return int(self.kv_budget * self.n_ctx) if self.kv_budget < 1 else int(self.kv_budget)

    @model_validator(mode="after")
    def _budget_fits(self) -> AgentConfig:
        cells = self.kv_cells
        if cells is None:
            return self
        if self.kv_budget is not None and self.kv_budget >= 1 and self.kv_budget != int(self.kv_budget):
            raise ValueError(f"kv_budget ({self.kv_budget}) is a number of cells or a fraction below 1 of n_ctx")
        if cells < KVBudget.min_tokens():
            raise ValueError(
                f"kv_budget ({self.kv_budget}) is {cells} cells, less than the {KVBudget.min_tokens()} the sink, the "
                "recent window and one span of room need (it must be greater than or equal to that)"
            )
        if self.evict == "none":
            raise ValueError("kv_budget needs an eviction policy: evict 'none' keeps every token (drop the budget)")
        if cells > self.n_ctx // 2:
            raise ValueError(
                f"kv_budget ({cells} cells) must be at most half of n_ctx ({self.n_ctx}): routing, arguments and "
                "other conversations share the context's cells"
            )
        return self


class KVBudgetError(ValueError):
    """The KV budget cannot hold what must stay from the start (the system prompt's pins)."""


def pins_at_start(engine: Engine) -> int:
    """Cells a conversation's lane needs from its first turn: the system prompt (pinned), the recent window and one
    span of room."""
    budget = engine.budget
    recent = budget.recent if budget is not None else 32
    head = engine.tokenize_chat([{"role": "system", "content": SYSTEM_MAIN}], "")
    return len(head) + recent + UNIT


# What declines on a remote engine, said once at start (paper 001 Path B: the server prefills text).
REMOTE_DECLINES = (
    "remote engine: compiled tool blocks, the radix arena and KV eviction work on a local KV cache and are off; "
    "prompts go to the server as text, and its own prefix cache reuses what repeats"
)


class NexusAgent:
    """An agent bound to MCP servers and one model, in-process or on a server. Use as an async context manager."""

    def __init__(
        self, cfg: AgentConfig, confirm: ConfirmFn | None = None, on_notice: Callable[[str], None] | None = None
    ) -> None:
        self.cfg = cfg
        self._confirm = confirm
        self._notice = on_notice or (lambda _msg: None)
        self.conversation = Conversation()  # the first chat's history (``run``)
        self.engine: Engine | None = None  # the in-process engine (None on a remote engine)
        self.backend: Backend | None = None
        self.hub: MultiServerClient | None = None
        self.router: TurnRouter | None = None
        self._tools: dict[str, Tool] = {}
        self._annotations: dict[str, Mapping[str, Any] | None] = {}
        self.examples = ExampleSet()  # the servers' usage examples (nexus_agent/examples), gathered at start
        self._loop: asyncio.AbstractEventLoop | None = None
        # server -> the event sinks of the turns now calling one of its tools (the last one is asked an elicitation)
        self._asking: dict[str, list[Callable[[Event], None]]] = {}
        # the next turn's prefill between turns (``warm_next``): one per chat whose turn ended since a turn began
        self._idle: list[_Idle] = []
        self._idle_lock = threading.Lock()
        self._recalls: dict[int, Recall] = {}  # per conversation lane, with a KV budget

    @classmethod
    def from_config(cls, cfg: AgentConfig | Mapping[str, Any] | None = None, **kwargs: Any) -> NexusAgent:
        conf = cfg if isinstance(cfg, AgentConfig) else AgentConfig.model_validate(dict(cfg or {}))
        return cls(conf, **kwargs)

    # -- lifetime
    async def __aenter__(self) -> NexusAgent:
        await self.start()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start the MCP servers, the model and the router. The model loads (and the system prompts' heads come in,
        from disk when a process decoded them before) while the servers start: neither waits on the other."""
        self._loop = asyncio.get_running_loop()
        servers: dict[str, Any] = {}
        engine_entry = None
        if self.cfg.config_file is not None:
            file_cfg = load_config(self.cfg.config_file)
            servers.update(file_cfg.servers)
            engine_entry = file_cfg.engine
        for preset in self.cfg.mcp:
            res = resolve_preset(preset)
            self._notice(res.reason)
            servers[res.server_name] = res.server
        remote = self._remote(engine_entry)
        source_options = SourceOptions(
            auth=AuthOptions(config_file=str(self.cfg.config_file) if self.cfg.config_file is not None else None),
            elicitation=self._elicit,
        )
        hub = MultiServerClient.from_config(
            MCPConfig(servers=servers), options=source_options, default_timeout=self.cfg.tool_timeout_s
        )
        self.hub = hub
        loading = asyncio.ensure_future(asyncio.to_thread(self._open_local)) if remote is None else None
        try:
            await hub.start()
        except BaseException:
            if loading is not None:
                (await asyncio.gather(loading, return_exceptions=True))  # the thread cannot be stopped: let it end
                self._close_engine()
            raise
        for name, why in hub.failures.items():
            self._notice(f"MCP server {name!r} failed to start: {why}")
        self._index_tools()
        uses = example_uses(self.cfg.examples)
        if uses.any:
            user_files = {name: getattr(server, "examples", None) for name, server in servers.items()}
            self.examples = gather(self._tools.values(), user_files, self._notice)
        if loading is not None:
            self.backend = await loading
        else:
            assert remote is not None
            self.backend = remote
            self._notice(REMOTE_DECLINES)
            try:
                caps = await asyncio.to_thread(remote.capabilities)
                self._notice(f"engine {remote.label}: {caps.summary()}")
                for line in caps.fallbacks():
                    self._notice(line)
            except RemoteError as e:  # not fatal: each turn tries again and ends with an error event until it answers
                self._notice(f"{e}; turns fail until it answers")
        options = RouterOptions(
            embedder=self.cfg.embedder, reranker=defaults.RERANKER, splice=self.cfg.splice, relevance=self.cfg.relevance
        )
        # The decision's and the judge's heads (about 1,400 tokens) come in when a request first needs them (from
        # disk, in well under a second), not here: the context's cells are shared by every lane, so while a lane
        # holds them every decode in the others attends over them too, 15 % slower per token on 2 cores
        # (docs/measurements.md#turn-latency), a cost a session of auto-routed requests would pay for nothing.
        self.router = await asyncio.to_thread(
            AgentRouter.create, list(self._tools.values()), options, self.backend, self.examples, uses
        )
        hub.add_tools_listener(self._on_tools_changed)

    def _open_local(self) -> LocalBackend:
        """The in-process engine, with the system prompts of the conversation and ``CHAT`` lanes held."""
        self.engine = Engine(
            EngineConfig(
                model=self.cfg.model or DEFAULT_MODEL,
                n_ctx=self.cfg.n_ctx,
                n_threads=self.cfg.n_threads,
                kv_budget=self.cfg.kv_cells,
                evict=self.cfg.evict,  # read only with kv_budget, which the validator never pairs with "none"
                kv_manager=True,
            )
        )
        if self.cfg.kv_cells is not None:
            need = pins_at_start(self.engine)
            if self.cfg.kv_cells < need:
                self._close_engine()
                raise KVBudgetError(
                    f"--kv-budget {self.cfg.kv_budget:g} ({self.cfg.kv_cells} cells) is smaller than the pins at "
                    f"start: the system prompt, the recent window and one span of room need {need} cells; give at "
                    f"least {need}"
                )
            for line in self.engine.notices:
                self._notice(line)
        backend = LocalBackend(self.engine, heads=self.cfg.head_cache)
        for system, lane in ((SYSTEM_MAIN, MAIN), (SYSTEM_CHAT, CHAT)) if self.cfg.head_cache else ():
            backend.warm([[{"role": "system", "content": system}, {"role": "user", "content": u}] for u in "ab"], lane)
        return backend

    def _close_engine(self) -> None:
        if self.engine is not None:
            self.engine.close()
            self.engine = None

    def _remote(self, entry: EngineEntry | None) -> RemoteBackend | None:
        """The remote backend the config names (``engine``, else the config file's), or None for in-process."""
        if self.cfg.engine is not None:
            url, model, timeout = self.cfg.engine, self.cfg.model, self.cfg.engine_timeout_s
        elif entry is not None:
            url, model, timeout = entry.url, self.cfg.model or entry.model, entry.timeout
        else:
            return None
        return RemoteBackend(RemoteConfig(url=url, model=model, api_key=self.cfg.api_key, timeout_s=timeout))

    async def aclose(self) -> None:
        await asyncio.to_thread(self._stop_idle, True)
        if self.hub is not None:
            await self.hub.aclose()
            self.hub = None
        self._close_engine()
        if isinstance(self.backend, RemoteBackend):
            self.backend.close()
        self.backend = None

    # -- tools
    def _index_tools(self) -> None:
        assert self.hub is not None
        self._tools = {t.qualified_name: t.to_registry_tool() for t in self.hub.tools}
        self._annotations = {t.qualified_name: t.annotations for t in self.hub.tools}

    async def _on_tools_changed(self, diff: ToolListDiff) -> None:
        """``notifications/tools/list_changed``: update the index and the router incrementally."""
        self._index_tools()
        if self.router is not None:
            changed = [self._tools[q] for q in diff.qualified([*diff.added, *diff.changed]) if q in self._tools]
            await asyncio.to_thread(self._apply_diff, changed, diff.qualified(list(diff.removed)))

    def _apply_diff(self, changed: list[Tool], removed: list[str]) -> None:
        # The turn lock (the local engine's; none on a server) keeps a diff from landing between a turn's routing and
        # its arguments; the router's own lock keeps it out of a routing in progress.
        assert self.backend is not None and self.router is not None
        with self.backend.turn():
            self.router.apply_diff(changed, removed)

    @property
    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def compile_examples(self, progress: Callable[[str, int], None] | None = None) -> int:
        """Decode and store now the fixed argument examples of every tool and operation that has examples (heads
        under ``$NEXUS_HOME/heads``), so no request decodes them (``nexus-agent examples compile``); ``progress``
        gets each routing key and its head's length in tokens. Returns how many heads were warmed."""
        if self.backend is None or self.router is None:
            raise RuntimeError("agent is not started: use `async with NexusAgent.from_config(...)`")
        uses = example_uses(self.cfg.examples).with_history(False)
        if uses.arguments != "static":
            return 0
        n = 0
        for qualified, tool in self._tools.items():
            ops: list[str | None] = [*tool.operations()] or [None]
            for op in ops:
                shown = self.router.examples_for("", qualified, op, uses)
                if shown:
                    with self.backend.turn():
                        got = self.backend.warm(example_head(with_operation(tool, op), shown), MAIN)
                    n += 1
                    if progress is not None:
                        progress(f"{qualified}#{op}" if op else qualified, got)
        return n

    # -- turns
    def _call_tool_from_thread(self, name: str, args: dict[str, Any], emit: Callable[[Event], None]) -> CallResult:
        assert self._loop is not None and self.hub is not None
        hub = self.hub

        async def call() -> Any:
            server = hub.resolve(name).server
            asking = self._asking.setdefault(server, [])
            asking.append(emit)  # an elicitation from this server during the call goes to this turn's events
            try:
                return await hub.call_tool(name, args)
            finally:
                asking.remove(emit)

        res = asyncio.run_coroutine_threadsafe(call(), self._loop).result()
        return CallResult(text=res.readable(), is_error=res.is_error)

    async def _elicit(self, request: ElicitationRequest) -> ElicitationReply:
        """A server's elicitation, as an event of the turn whose tool call it came with; waits for the app's answer."""
        asking = self._asking.get(request.server)
        if not asking:
            return ElicitationReply("cancel")  # no turn is calling this server: nobody to ask
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[ElicitationReply] = loop.create_future()

        def settle(action: str, content: dict[str, Any] | None) -> None:
            if not answer.done():
                reply = (
                    ElicitationReply("accept", content)
                    if action == "accept"
                    else ElicitationReply("decline" if action == "decline" else "cancel")
                )
                answer.set_result(reply)

        event = ElicitationEvent(
            server=request.server,
            message=request.message,
            mode=request.mode,
            requested_schema=dict(request.schema),
            url=request.url,
        )

        def reply(action: str, content: dict[str, Any] | None) -> None:
            loop.call_soon_threadsafe(settle, action, content)  # the app may answer from any thread

        event.bind(reply)
        asking[-1](event)
        return await answer

    def _confirm_from_thread(self, name: str, args: dict[str, Any], ann: Mapping[str, Any] | None) -> bool:
        if self._confirm is None:
            return False
        out = self._confirm(name, args, ann)
        if inspect.isawaitable(out):
            assert self._loop is not None
            return bool(asyncio.run_coroutine_threadsafe(_as_coro(out), self._loop).result())
        return bool(out)

    def open_chat(self) -> Chat:
        """A new conversation on this agent: its own history and engine lane, the same model, servers and router."""
        if self.backend is None:
            raise RuntimeError("agent is not started: use `async with NexusAgent.from_config(...)`")
        # a server keeps no lanes: every chat is lane MAIN to it
        return Chat(self, Conversation(), self.engine.open_lane() if self.engine is not None else MAIN)

    def run(self, query: str) -> AsyncIterator[Event]:
        """Run one turn of the first chat; see :meth:`Chat.run`."""
        return self._run(query, self.conversation, MAIN)

    async def _run(self, query: str, conversation: Conversation, lane: int) -> AsyncIterator[Event]:
        """Run one turn and yield its events as they happen (tokens stream).

        Leaving the loop early or cancelling the task that iterates cancels the turn at its next event (a token
        at the latest; a stage already running, such as argument writing or a tool call, finishes first). The
        generator returns once the turn has stopped, so the next turn never waits on it. A cancelled turn leaves
        the conversation as it was, unless its tool already ran (then the turn is kept, marked interrupted).
        """
        if self.backend is None or self.router is None:
            raise RuntimeError("agent is not started: use `async with NexusAgent.from_config(...)`")
        self._stop_idle()  # this turn continues from what the prefill holds
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        cancel = threading.Event()

        def emit(ev: Event) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, ev)

        deps = TurnDeps(
            backend=self.backend,
            router=self.router,
            tools=lambda: self._tools,
            annotations=lambda q: self._annotations.get(q),
            call_tool=lambda name, args: self._call_tool_from_thread(name, args, emit),
            confirm=self._confirm_from_thread,
            auto_yes=self.cfg.yes,
            window_turns=self.cfg.window_turns,
            full_trace=self.cfg.kv_budget is not None and self.engine is not None,
            recall=self._recall(lane),
            compact=self.cfg.answer_view == AnswerView.COMPACT,
            max_items=self.cfg.answer_items,
            max_steps=self.cfg.max_steps,
            examples=example_uses(self.cfg.examples),
            cancelled=cancel.is_set,
            lane=lane,
        )

        def work() -> None:
            try:
                run_turn(deps, conversation, query, emit)
            except TurnCancelled:
                pass
            except Exception as e:
                emit(ErrorEvent(stage="turn", message=f"{type(e).__name__}: {e}"))
            finally:
                if deps.full_trace:
                    self._memory_notices(lane)
                    mark_trace(deps.backend, conversation, lane)  # what the next turn's head is made of
                if self.cfg.warm_next and not cancel.is_set():
                    # started before the end is posted, so the next turn always finds it to stop
                    idle = _Idle.start(self.backend, next_heads(conversation, lane, deps.window_turns, deps.full_trace))
                    with self._idle_lock:
                        self._idle += [idle] if idle is not None else []
                loop.call_soon_threadsafe(queue.put_nowait, None)

        worker = threading.Thread(target=work, name="nexus-turn", daemon=True)
        worker.start()
        try:
            while (ev := await queue.get()) is not None:
                yield ev
        finally:
            if worker.is_alive():
                cancel.set()
                # Even if this wait is cancelled too, the worker still holds the engine's turn lock, so a next
                # turn queues behind it instead of interleaving.
                await asyncio.to_thread(worker.join)

    def _recall(self, lane: int) -> Recall | None:
        """The conversation's recall of evicted spans (one span index per lane), with a KV budget only."""
        engine = self.engine
        if self.cfg.kv_budget is None or engine is None:
            return None
        if lane not in self._recalls:
            self._recalls[lane] = Recall(shared_embedder(self.cfg.embedder), lambda: engine.evicted_spans(lane))
        return self._recalls[lane]

    def _memory_notices(self, lane: int) -> None:
        """Say once what the lane's memory had to give up (its pins no longer fit the budget)."""
        mem = self.engine.memory(lane) if self.engine is not None else None
        while mem is not None and mem.notices:
            self._notice(mem.notices.pop(0))

    def _stop_idle(self, wait: bool = False) -> None:
        """Stop the prefills between turns; ``wait``: until their chunks are done (before a lane or the engine
        closes)."""
        with self._idle_lock:
            idles, self._idle = self._idle, []
        for idle in idles:
            idle.stop.set()
        for idle in idles if wait else ():
            idle.thread.join()


@dataclass
class _Idle:
    """The prefill of the next turn's prompt heads (:func:`next_heads`), on a thread of its own between turns."""

    thread: threading.Thread
    stop: threading.Event

    @classmethod
    def start(cls, backend: Backend | None, heads: list[tuple[list[Messages], int]]) -> _Idle | None:
        if backend is None or not backend.local or not heads:
            return None
        stop = threading.Event()

        def work() -> None:
            for variants, lane in heads:
                try:
                    backend.prefill(variants, lane, stop.is_set)
                except Exception as e:  # a speed-up lost: the next turn prefills what is missing itself
                    log.warning("prefilling the next turn's history failed: %s", e)
                    return
            if not stop.is_set():
                dates.warm()  # the argument check's date search loads its languages once (~2 s)

        thread = threading.Thread(target=work, name="nexus-prefill", daemon=True)
        thread.start()
        return cls(thread, stop)


class Chat:
    """One conversation of an agent (:meth:`NexusAgent.open_chat`): its history and its lane of the engine."""

    def __init__(self, agent: NexusAgent, conversation: Conversation, lane: int) -> None:
        self.agent = agent
        self.conversation = conversation
        self.lane = lane

    def run(self, query: str) -> AsyncIterator[Event]:
        """Run one turn of this chat and yield its events (see :meth:`NexusAgent._run` for cancellation)."""
        return self.agent._run(query, self.conversation, self.lane)

    def close(self) -> None:
        """Forget this chat's cached KV (its history object stays readable)."""
        if self.agent.engine is not None:  # a remote engine keeps no lanes
            self.agent._stop_idle(wait=True)  # it may be prefilling this lane
            self.agent.engine.close_lane(self.lane)


class SyncNexusAgent:
    """Synchronous wrapper: runs the agent on a private event-loop thread. Thread-safe."""

    def __init__(self, cfg: AgentConfig | Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="nexus-loop", daemon=True)
        self._thread.start()
        self.agent = NexusAgent.from_config(cfg, **kwargs)
        self._submit(self.agent.start())

    def _submit(self, coro: Awaitable[Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(_as_coro(coro), self._loop).result()

    def run(self, query: str) -> list[Event]:
        """Run one turn; return its events in order."""

        async def collect() -> list[Event]:
            return [ev async for ev in self.agent.run(query)]

        out: list[Event] = self._submit(collect())
        return out

    def open_chat(self) -> SyncChat:
        """A new conversation on the same agent (see :meth:`NexusAgent.open_chat`)."""
        return SyncChat(self, self.agent.open_chat())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._submit(self.agent.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def __enter__(self) -> SyncNexusAgent:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class SyncChat:
    """A :class:`Chat` for synchronous code; thread-safe like :class:`SyncNexusAgent`."""

    def __init__(self, owner: SyncNexusAgent, chat: Chat) -> None:
        self._owner = owner
        self.chat = chat

    @property
    def conversation(self) -> Conversation:
        return self.chat.conversation

    def run(self, query: str) -> list[Event]:
        """Run one turn of this chat; return its events in order."""

        async def collect() -> list[Event]:
            return [ev async for ev in self.chat.run(query)]

        out: list[Event] = self._owner._submit(collect())
        return out

    def close(self) -> None:
        self.chat.close()


async def _as_coro(x: Awaitable[Any]) -> Any:
    """``run_coroutine_threadsafe`` takes coroutines only; this wraps any awaitable."""
    return await x
