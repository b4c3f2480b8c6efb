"""Pinned helper venvs under ``$NEXUS_HOME/venvs``: the tools the runtime never imports (torch, transformers).

The embedder build (:mod:`nexus_agent.training.minilm_tools`) and the GGUF converter (:mod:`.convert`) each run in one,
so those packages stay out of the project's own environment.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from nexus_agent.models.errors import ModelError
from nexus_agent.paths import cache_dir


def pinned_venv(prefix: str, pins: Sequence[str], what: str) -> Path:
    """The python of a venv holding ``pins``, made once per pin set and interpreter version (a minute or two: torch
    is ~1 GB). ``what`` names its use in the one line printed while it is made; pip's output goes to
    ``$NEXUS_HOME/logs/venv-<prefix>.log``, and a failure raises :class:`ModelError` quoting it."""
    key = hashlib.sha256(f"{'|'.join(pins)}|{sys.version_info[:2]}".encode()).hexdigest()[:12]
    venv = cache_dir("venvs") / f"{prefix}-{key}"
    py = venv / "bin" / "python"
    stamp = venv / ".complete"
    if stamp.exists():
        return py
    print(f"[models] setting up the venv of {what} ({', '.join(pins)}) …", file=sys.stderr, flush=True)
    log = cache_dir("logs") / f"venv-{prefix}.log"
    run_logged([sys.executable, "-m", "venv", "--clear", str(venv)], log, f"create the venv of {what}")
    run_logged([str(py), "-m", "pip", "install", "-q", *pins], log, f"install {' '.join(pins)}")
    stamp.write_text("\n".join(pins) + "\n")
    return py


def run_logged(cmd: list[str], log: Path, what: str) -> None:
    """Run ``cmd``, its output appended to ``log``; a failure raises :class:`ModelError` with the log's last line."""
    with log.open("a") as f:
        f.write(f"\n$ {' '.join(cmd)}\n")
        f.flush()
        res = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    if res.returncode != 0:
        lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip() and "WARNING" not in ln]
        raise ModelError(f"could not {what}: {lines[-1] if lines else f'exit {res.returncode}'} (log: {log})")
