"""llama-cpp-python's server (same arguments as ``python -m llama_cpp.server``) with one addition: an ASGI middleware
that prints, for every request, how long the server held it (from the request's arrival to its last body byte:
template, tokenising, grammar, prompt cache, llama.cpp and the response), as ``nexus-server-ms <path> <ms>``.
``bench/remote_engine.py`` subtracts it from the client's time to get what the remote path itself adds."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import uvicorn
from llama_cpp.server.app import create_app
from llama_cpp.server.cli import add_args_from_model, parse_model_from_args
from llama_cpp.server.settings import ModelSettings, ServerSettings, Settings


class Timed:
    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()

        async def timed_send(message: Any) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                ms = (time.perf_counter() - t0) * 1e3
                print(f"nexus-server-ms {scope['path']} {ms:.1f}", file=sys.stderr, flush=True)

        await self.app(scope, receive, timed_send)


def main() -> None:
    parser = argparse.ArgumentParser()
    add_args_from_model(parser, Settings)
    args = parser.parse_args()
    server = parse_model_from_args(ServerSettings, args)
    model = parse_model_from_args(ModelSettings, args)
    app = create_app(server_settings=server, model_settings=[model])
    uvicorn.run(Timed(app), host=server.host, port=int(server.port))


if __name__ == "__main__":
    main()
