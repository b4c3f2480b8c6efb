"""llama-cpp-python's OpenAI-compatible server (``python -m llama_cpp.server``) as a child process: the real server
the remote engine's tests and benchmark talk to, on a model of the catalog. It needs the server extras (fastapi,
uvicorn, sse-starlette, starlette-context, pydantic-settings), which the dev extra installs.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import TracebackType


def free_port() -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """``python -m llama_cpp.server`` serving ``model_path`` as ``alias`` on 127.0.0.1.

    ``cache``: llama-cpp-python's prompt cache (``LlamaRAMCache``: the state of earlier prompts, restored for the
    longest shared prefix); without it the server reuses only the previous request's prefix. ``log``: the server's
    stderr and stdout (``verbose`` adds llama.cpp's per-request timings and prefix-match lines)."""

    def __init__(
        self,
        model_path: Path,
        alias: str,
        log: Path,
        n_ctx: int = 4096,
        n_threads: int = 2,
        cache: bool = False,
        verbose: bool = False,
        port: int | None = None,
        launcher: list[str] | None = None,
    ) -> None:
        """``launcher``: the command before the server's arguments (default ``python -m llama_cpp.server``)."""
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        self.cmd = [
            *(launcher or [sys.executable, "-m", "llama_cpp.server"]),
            "--model",
            str(model_path),
            "--model_alias",
            alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(n_ctx),
            "--n_threads",
            str(n_threads),
            "--cache",
            str(cache),
            "--verbose",
            str(verbose),
        ]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout_s: float = 120.0) -> LlamaServer:
        """Start the server and wait until ``GET /models`` answers; RuntimeError with the log's tail otherwise."""
        self.log.parent.mkdir(parents=True, exist_ok=True)
        out = self.log.open("wb")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(self.cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        out.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {self.proc.returncode}: {self.tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"llama_cpp.server did not answer within {timeout_s:g} s: {self.tail()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def tail(self, n: int = 1500) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return "(no log)"

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
