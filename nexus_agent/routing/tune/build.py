"""Build the ``minilm-tools`` embedder: a pinned torch venv runs :mod:`.train_biencoder` on the shipped set.

Why a separate venv: torch is ~1 GB and only needed to train, while the runtime loads the result with
onnxruntime. The build is reproducible from the repository alone (training set + script + pins + seed), so the
recipe hash, not a weight checksum, decides whether a cached build is current: float kernels differ across CPUs
(AVX2 vs AVX-512), so the weights are equal only up to rounding from one machine to another.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from nexus_agent.paths import cache_dir
from nexus_agent.routing.tune.dataset import DEFAULT_SET

# torch 2.13.0 is the CPU wheel that pip takes from this machine's disk; a bare ``torch`` pulls a CUDA build.
BUILD_PINS = ("torch==2.13.0", "transformers==5.24.0", "onnx==1.23.2", "onnxruntime==1.32.0")
STEPS = 300
SEED = 0
SCRIPT = Path(__file__).with_name("train_biencoder.py")


class BuildError(RuntimeError):
    pass


def recipe_key() -> str:
    """Hash of everything that determines the trained model (script, training set, pins, steps, seed)."""
    h = hashlib.sha256()
    for blob in (
        SCRIPT.read_bytes(),
        DEFAULT_SET.read_bytes(),
        "|".join(BUILD_PINS).encode(),
        f"{STEPS}|{SEED}".encode(),
    ):
        h.update(hashlib.sha256(blob).digest())
    return h.hexdigest()[:16]


def build_venv() -> Path:
    """The build venv's python, created (and pinned) on first use."""
    key = hashlib.sha256("|".join(BUILD_PINS).encode()).hexdigest()[:12]
    venv = cache_dir("venvs") / f"tune-{key}"
    py = venv / "bin" / "python"
    stamp = venv / ".complete"
    if not stamp.exists():
        _run([sys.executable, "-m", "venv", "--clear", str(venv)], "create the build venv")
        _run([str(py), "-m", "pip", "install", "-qq", *BUILD_PINS], f"install {' '.join(BUILD_PINS)}")
        stamp.write_text("\n".join(BUILD_PINS))
    return py


def build_minilm_tools(out: Path, base: Path, threads: int = 2) -> None:
    """Train into ``out`` (a new folder) from the fp32 base model folder ``base``."""
    py = build_venv()
    cmd = [
        str(py),
        str(SCRIPT),
        "--data",
        str(DEFAULT_SET),
        "--base",
        str(base),
        "--out",
        str(out),
        "--steps",
        str(STEPS),
        "--seed",
        str(SEED),
        "--threads",
        str(threads),
    ]
    _run(cmd, "train minilm-tools")
    (out / "recipe.txt").write_text(recipe_key())


def _run(cmd: list[str], what: str) -> None:
    print(f"[models] {what} …", file=sys.stderr, flush=True)
    # HF_HUB_OFFLINE: transformers must never reach for a model hub; everything it loads is a local folder
    res = subprocess.run(cmd, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if res.returncode != 0:
        raise BuildError(f"could not {what}: `{' '.join(cmd[:4])} …` exited with {res.returncode}")
