"""The remote engine (``--engine URL``): the agent against llama-cpp-python's real OpenAI-compatible server on
qwen0.5b, and every failure the issue lists (closed port, unknown model, a server stopped mid-session, a timeout,
HTTP 5xx, an invalid body, a stream cut off) ending the turn with an error event that names the server and the cause,
the conversation unchanged."""

from __future__ import annotations

import http.server
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nexus_agent.agent.api import REMOTE_DECLINES, AgentConfig, SyncNexusAgent
from nexus_agent.agent.args import ArgumentWriter
from nexus_agent.backend import RemoteBackend, RemoteConfig, RemoteError
from nexus_agent.backend.llama_server import LlamaServer, free_port
from nexus_agent.engine import Engine, EngineConfig
from nexus_agent.mcp.config import parse_config
from nexus_agent.models import resolve
from nexus_agent.registry import load_registry
from nexus_agent.sandbox.github import sandbox_mcp_config

REQUEST = "list the open issues in the acme/api repository"
BIN = Path(sys.executable).parent / "nexus-agent"
RUN_JSON = ["--json", "-y", "-p", REQUEST]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with LlamaServer(resolve("qwen0.5b"), "qwen0.5b", log, n_ctx=4096) as s:
        yield s


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("remote-agent")
    path = d / "mcp.json"
    path.write_text(json.dumps(sandbox_mcp_config(d / "gh")))
    return path


def _agent(config_file: Path, notices: list[str] | None = None, **cfg: Any) -> SyncNexusAgent:
    return SyncNexusAgent(
        AgentConfig(config_file=config_file, yes=True, **cfg),
        on_notice=(notices.append if notices is not None else None),
    )


def _errors(events: list[Any]) -> list[str]:
    return [e.message for e in events if e.type == "error"]


# -- the real server ----------------------------------------------------------------------------------------------


@pytest.mark.real_model
def test_probe_finds_what_llama_cpp_python_honours(server: LlamaServer) -> None:
    b = RemoteBackend(RemoteConfig(url=server.url))
    caps = b.capabilities()
    assert caps.model == "qwen0.5b" and caps.served == ("qwen0.5b",)
    assert caps.structured == "grammar" and caps.logprobs
    assert caps.fallbacks() == []
    b.close()


@pytest.mark.real_model
def test_arguments_through_the_server_equal_in_process(server: LlamaServer, registry_dir: Path) -> None:
    """Greedy decoding under the same grammar over the same chat template: the same values. Free text the model
    composes itself (a description) may part where two logits nearly tie, since the server's context (batch size,
    logits for every token) rounds differently; the values the request gives do not."""
    tools = {t.name: t for t in load_registry(registry_dir).profile("github_all")}
    cases = [
        ("list_issues", REQUEST),
        ("create_repository", "create a private repo called notes-2027"),
        ("get_file_contents", "show me README.md in octo-dev/dotfiles"),
    ]
    remote = RemoteBackend(RemoteConfig(url=server.url, model="qwen0.5b"))
    engine = Engine(EngineConfig(model="qwen0.5b", n_ctx=4096))
    try:
        for name, request in cases:
            here = ArgumentWriter(engine).write(tools[name], request)
            there = ArgumentWriter(remote).write(tools[name], request)
            assert there.arguments is not None and here.arguments is not None, name
            given = {k: v for k, v in here.arguments.items() if k != "description"}
            assert {k: there.arguments.get(k) for k in given} == given, name
    finally:
        engine.close()
        remote.close()


@pytest.mark.real_model
def test_a_turn_through_the_server_calls_the_sandbox(server: LlamaServer, config_file: Path) -> None:
    notices: list[str] = []
    agent = _agent(config_file, notices, engine=server.url, model="qwen0.5b", kv_budget=512)
    try:
        events = agent.run(REQUEST)
        assert _errors(events) == []
        types = [e.type for e in events]
        assert types[0] == "route" and "tool_call" in types and "tool_result" in types and types[-1] == "answer"
        call = next(e for e in events if e.type == "tool_call")
        assert call.name == "list_issues" and call.arguments.get("owner") == "acme"
        assert any(e.type == "token" for e in events), "the answer streams"
        assert events[-1].text.strip()
        # one notice for everything that needs the local KV cache (the budget included), one with what was probed
        assert notices.count(REMOTE_DECLINES) == 1
        assert any("constrained output: grammar" in n for n in notices)
        assert agent.agent.engine is None and len(agent.agent.conversation.turns) == 1
    finally:
        agent.close()


@pytest.mark.real_model
def test_a_model_the_server_does_not_serve(server: LlamaServer, config_file: Path) -> None:
    agent = _agent(config_file, engine=server.url, model="gpt-17")
    try:
        events = agent.run(REQUEST)
        (msg,) = _errors(events)
        assert server.url in msg and "does not serve model 'gpt-17'" in msg and "qwen0.5b" in msg
        assert agent.agent.conversation.turns == []
    finally:
        agent.close()


@pytest.mark.real_model
def test_server_stopped_mid_session(config_file: Path, tmp_path: Path) -> None:
    s = LlamaServer(resolve("qwen0.5b"), "qwen0.5b", tmp_path / "server.log", n_ctx=4096).start()
    agent = _agent(config_file, engine=s.url, model="qwen0.5b")
    try:
        assert _errors(agent.run(REQUEST)) == []
        s.stop()
        events = agent.run("list the open pull requests in acme/api")
        (msg,) = _errors(events)
        assert s.url in msg and "unreachable" in msg
        assert len(agent.agent.conversation.turns) == 1, "the failed turn leaves the conversation as it was"
    finally:
        agent.close()
        s.stop()


@pytest.mark.real_model
def test_cli_run_through_the_server(server: LlamaServer, config_file: Path) -> None:
    res = subprocess.run(
        [str(BIN), "run", "--config", str(config_file), "--engine", server.url, "--model", "qwen0.5b", *RUN_JSON],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    events = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    assert [e["type"] for e in events][-1] == "answer"
    assert any(e["type"] == "tool_call" and e["name"] == "list_issues" for e in events)


# -- failures without a model ---------------------------------------------------------------------------------------


def test_closed_port_ends_the_turn_with_an_error(config_file: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    notices: list[str] = []
    agent = _agent(config_file, notices, engine=url, engine_timeout_s=5)
    try:
        assert any(url in n and "unreachable" in n for n in notices), notices
        events = agent.run(REQUEST)
        (msg,) = _errors(events)
        assert f"engine {url}: unreachable" in msg
        assert agent.agent.conversation.turns == []
    finally:
        agent.close()


def test_cli_closed_port_exits_non_zero(config_file: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    res = subprocess.run(
        [str(BIN), "run", "--config", str(config_file), "--engine", url, "--json", "-p", REQUEST],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 1
    errors = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{") and '"error"' in x]
    assert errors and url in errors[0]["message"]


def test_cli_bad_engine_url_is_a_usage_error(config_file: Path) -> None:
    res = subprocess.run(
        [str(BIN), "run", "--config", str(config_file), "--engine", "ftp://x", "-p", "hi"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2 and "engine" in res.stderr


def test_models_path_prints_the_gguf() -> None:
    res = subprocess.run([str(BIN), "models", "path", "tiny"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0
    path = Path(res.stdout.strip())
    assert path.is_file() and path.read_bytes()[:4] == b"GGUF"
    bad = subprocess.run([str(BIN), "models", "path", "nope"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unknown model" in bad.stderr


def test_config_file_names_the_engine() -> None:
    cfg = parse_config({"mcpServers": {}, "engine": {"url": "http://gpu:8000/v1", "model": "m", "timeout": 30}})
    assert cfg.engine is not None and (cfg.engine.url, cfg.engine.model, cfg.engine.timeout) == (
        "http://gpu:8000/v1",
        "m",
        30,
    )
    with pytest.raises(ValueError, match=r"engine\.url: must be an http"):
        parse_config({"mcpServers": {}, "engine": {"url": "gpu:8000"}})


# A server that speaks HTTP but misbehaves on chat completions, one way per mode (its /models is valid, so the
# failure is the completion's). "barrier": every chat request waits until two are in flight at once.
class _Faulty(http.server.BaseHTTPRequestHandler):
    mode = "http500"
    barrier: threading.Barrier | None = None

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(
            200, json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "x"}]}).encode()
        )

    def do_POST(self) -> None:
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        mode = type(self).mode
        if mode == "http500":
            self._send(500, b'{"error": {"message": "CUDA out of memory"}}')
        elif mode == "garbage":
            self._send(200, b"<html>not json</html>")
        elif mode == "hang":
            threading.Event().wait(30)
        elif req.get("stream"):
            if mode == "barrier":
                assert type(self).barrier is not None
                type(self).barrier.wait(timeout=20)
            chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
            parts = [{**chunk, "choices": [{"index": 0, "delta": {"content": "Done."}, "finish_reason": None}]}]
            if mode != "cut":
                parts.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            body = "".join(f"data: {json.dumps(p)}\n\n" for p in parts) + ("data: [DONE]\n\n" if mode != "cut" else "")
            self._send(200, body.encode(), "text/event-stream")
        else:
            if mode == "barrier" and "grammar" not in json.dumps(req) and req.get("max_tokens", 0) > 16:
                assert type(self).barrier is not None
                type(self).barrier.wait(timeout=20)  # argument requests of two turns must be in flight together
            text = json.dumps({"owner": "acme", "repo": "api"}) if req.get("max_tokens", 0) > 16 else "hello"
            msg = {"role": "assistant", "content": text}
            out = {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "m",
                "choices": [{"index": 0, "message": msg, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
            }
            self._send(200, json.dumps(out).encode())


@pytest.fixture
def faulty() -> Iterator[tuple[str, type[_Faulty]]]:
    handler = type("Handler", (_Faulty,), {})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}/v1", handler
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("http500", "HTTP 500 while probing: CUDA out of memory"),
        ("garbage", "sent an invalid response"),
        ("hang", "timed out after 1 s"),
    ],
)
def test_backend_failures_name_server_and_cause(faulty: tuple[str, type[_Faulty]], mode: str, cause: str) -> None:
    url, handler = faulty
    handler.mode = mode
    b = RemoteBackend(RemoteConfig(url=url, timeout_s=1, max_retries=0))
    with pytest.raises(RemoteError) as err:
        b.chat([{"role": "user", "content": "hi"}], max_tokens=8)
    assert str(err.value).startswith(f"engine {url}: ") and cause in str(err.value)


def test_a_cut_off_stream_ends_the_turn(faulty: tuple[str, type[_Faulty]], config_file: Path) -> None:
    url, handler = faulty
    handler.mode = "cut"
    agent = _agent(config_file, engine=url, relevance="exemplars")
    try:
        events = agent.run(REQUEST)
        (msg,) = _errors(events)
        assert url in msg and "cut off" in msg
        assert any(e.type == "tool_result" for e in events), "the failure is the answer's"
        assert agent.agent.conversation.turns == []
    finally:
        agent.close()


@pytest.mark.parametrize(
    ("query", "relevance"),
    [
        (REQUEST, "exemplars"),  # routed by retrieval; the argument requests meet at the barrier
        ("show me my open pull requests", "llm"),  # names no object: the relevance judges' requests meet there
    ],
)
def test_turns_of_two_chats_run_at_once_on_a_remote_engine(
    faulty: tuple[str, type[_Faulty]], config_file: Path, query: str, relevance: str
) -> None:
    """Each request of one turn blocks until the other chat's is in flight too: serialised turns (or routing that
    held a lock over the judge) would break the barrier (its wait times out and the request fails); concurrent ones
    both finish."""
    url, handler = faulty
    handler.mode = "barrier"
    handler.barrier = threading.Barrier(2)
    agent = _agent(config_file, engine=url, relevance=relevance)
    try:
        other = agent.open_chat()
        results: dict[str, list[Any]] = {}
        threads = [
            threading.Thread(target=lambda: results.__setitem__("a", agent.run(query))),
            threading.Thread(target=lambda: results.__setitem__("b", other.run(query))),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert _errors(results["a"]) == [] and _errors(results["b"]) == []
        assert results["a"][-1].type == "answer" and results["b"][-1].type == "answer"
        assert len(agent.agent.conversation.turns) == 1 and len(other.conversation.turns) == 1
    finally:
        agent.close()


def test_free_port_is_closed() -> None:
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", free_port()), timeout=2):
        pass
