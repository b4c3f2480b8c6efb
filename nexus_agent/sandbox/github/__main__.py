"""``python -m nexus_agent.sandbox.github [--data-dir D] [--reset] [--http] [--port P]``."""

from __future__ import annotations

import argparse
from pathlib import Path

from nexus_agent.sandbox.github import default_data_dir
from nexus_agent.sandbox.github.app import serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m nexus_agent.sandbox.github", description=__doc__)
    parser.add_argument("--data-dir", type=Path, default=None, help="default: $NEXUS_HOME/sandbox/github")
    parser.add_argument("--reset", action="store_true", help="delete the data dir and reseed the demo data")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    ns = parser.parse_args(argv)
    serve(ns.data_dir or default_data_dir(), reset=ns.reset, http=ns.http, host=ns.host, port=ns.port)


if __name__ == "__main__":
    main()
