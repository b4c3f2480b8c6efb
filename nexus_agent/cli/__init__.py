"""The ``nexus-agent`` command line.

Every module ``nexus_agent/cli/cmd_*.py`` defines ``register(app)``; this package discovers them, so the
list of subcommands lives in exactly one place: the folder. A command imports the layers it runs inside its own
function, so ``nexus-agent --help`` or ``models list`` does not load llama.cpp, onnxruntime or the MCP SDK (this is
about start-up time, not cycles: the layer contract in pyproject.toml holds for these imports too).
"""

from __future__ import annotations

import importlib
import pkgutil

import typer

app = typer.Typer(
    name="nexus-agent",
    help="Local agent runtime for LLMs with many MCP tools.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _register_all() -> None:
    for mod in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if mod.name.startswith("cmd_"):
            importlib.import_module(f"{__name__}.{mod.name}").register(app)


def main() -> None:
    _register_all()
    app()
