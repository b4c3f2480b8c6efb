"""Rebuild the shipped ``minilm-tools`` embedder: a pinned torch venv runs :mod:`.train_biencoder` on the shipped set.

Why a separate venv: torch is ~1 GB and only needed to train, while the runtime loads the result with
onnxruntime. The recipe (script, training set, pins, steps, seed, threads) is hashed into :func:`recipe_key`, which
the shipped artifact records; ``scripts/test`` fails when the two disagree, so a recipe change cannot pass without
a rebuild. Training is seeded, uses torch's deterministic algorithms and a fixed thread count (part of the recipe):
two rebuilds on one machine give the same bytes, but float kernels differ between CPUs (AVX2 vs AVX-512), so a
rebuild elsewhere may differ in the last bits. The shipped file, not a rebuild, is what every machine routes with.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from nexus_agent.models import ModelError, fetch_model
from nexus_agent.models.shipped import ARTIFACTS, Artifact, file_digest, read_artifact
from nexus_agent.models.venvs import pinned_venv
from nexus_agent.training.dataset import DEFAULT_SET

NAME = "minilm-tools"
# torch 2.13.0 is the CPU wheel that pip takes from this machine's disk; a bare ``torch`` pulls a CUDA build.
BUILD_PINS = ("torch==2.13.0", "transformers==5.24.0", "onnx==1.23.2", "onnxruntime==1.32.0")
STEPS = 300
SEED = 0
THREADS = 2
SCRIPT = Path(__file__).with_name("train_biencoder.py")
SHIPPED_FILES = ("model.onnx", "tokenizer.json")


class BuildError(RuntimeError):
    pass


def recipe_key() -> str:
    """Hash of everything that determines the trained model (script, training set, pins, steps, seed, threads)."""
    h = hashlib.sha256()
    for blob in (
        SCRIPT.read_bytes(),
        DEFAULT_SET.read_bytes(),
        "|".join(BUILD_PINS).encode(),
        f"{STEPS}|{SEED}|{THREADS}".encode(),
    ):
        h.update(hashlib.sha256(blob).digest())
    return h.hexdigest()[:16]


def build_venv() -> Path:
    """The build venv's python, created (and pinned) on first use."""
    return pinned_venv("tune", BUILD_PINS, "the minilm-tools build")


def train(out: Path, base: Path, threads: int = THREADS) -> None:
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


@dataclass(frozen=True)
class RebuildReport:
    """What a rebuild made: the new artifact, and whether its model equals the one shipped before it."""

    artifact: Artifact
    previous_sha256: str | None
    out: Path

    @property
    def identical(self) -> bool:
        return self.previous_sha256 == self.artifact.files["model.onnx"].sha256


def rebuild(out: Path | None = None, threads: int = THREADS) -> RebuildReport:
    """Retrain from the recipe and write a complete artifact folder to ``out`` (default: the shipped folder, so the
    change shows up in ``git diff`` for review)."""
    dest = out or ARTIFACTS / NAME
    try:
        previous = read_artifact(NAME).files["model.onnx"].sha256
    except ModelError:
        previous = None
    base = fetch_model("minilm-fp32")
    with tempfile.TemporaryDirectory(prefix="minilm-tools-") as tmp:
        trained = Path(tmp) / "out"
        train(trained, base, threads)
        dest.mkdir(parents=True, exist_ok=True)
        for name in SHIPPED_FILES:
            shutil.copyfile(trained / name, dest / name)
        manifest = json.loads((trained / "manifest.json").read_text())
    artifact = Artifact(
        name=NAME,
        recipe=recipe_key(),
        files={name: file_digest(dest / name) for name in SHIPPED_FILES},
        manifest=manifest,
    )
    (dest / "artifact.json").write_text(artifact.to_json())
    return RebuildReport(artifact, previous, dest)


def _run(cmd: list[str], what: str) -> None:
    print(f"[models] {what} …", file=sys.stderr, flush=True)
    # HF_HUB_OFFLINE: transformers must never reach for a model hub; everything it loads is a local folder
    res = subprocess.run(cmd, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if res.returncode != 0:
        raise BuildError(f"could not {what}: `{' '.join(cmd[:4])} …` exited with {res.returncode}")
