"""Converting a model folder to GGUF with llama.cpp's own converter, for the ``convert`` models of the catalog.

The converter is ``convert_hf_to_gguf.py`` from the pinned llama-cpp-python sdist (``vendor/llama.cpp``, with its
``conversion/`` package and its own ``gguf-py``), so the GGUF matches the llama.cpp that loads it. It imports torch
and transformers, which the runtime never needs, so it runs in a venv of its own under ``$NEXUS_HOME/venvs``, made
once per machine from :data:`CONVERTER_PINS`. With these pins the conversion is deterministic (two runs, from two
folders, gave the same bytes), so its output is checked against a recorded sha256 like any download.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from nexus_agent.models.errors import ModelError
from nexus_agent.models.venvs import pinned_venv
from nexus_agent.paths import cache_dir

# torch 2.13.0 is the CPU wheel pip takes from this machine's disk (a bare ``torch`` pulls a multi-GB CUDA build);
# the other pins fix the bytes of the output (numpy quantises to Q8_0, sentencepiece reads the vocabulary).
CONVERTER_PINS = (
    "torch==2.13.0",
    "transformers==5.24.0",
    "sentencepiece==0.2.1",
    "safetensors==0.8.0",
    "numpy==2.4.6",
)
# what the converter needs from the sdist, relative to its vendor/llama.cpp folder
_SCRIPT = "convert_hf_to_gguf.py"
_PACKAGES = ("conversion/", "gguf-py/")

Progress = Callable[[int], None]


def converter_python() -> Path:
    """The converter venv's python, created and pinned on first use."""
    return pinned_venv("convert", CONVERTER_PINS, "the GGUF converter")


def converter_script(sdist: Path) -> Path:
    """``convert_hf_to_gguf.py`` unpacked (with what it imports) from the llama-cpp-python ``sdist`` into the cache."""
    top = sdist.name.removesuffix(".tar.gz")
    dest = cache_dir("converter") / top
    if (dest / ".complete").exists():
        return dest / _SCRIPT
    shutil.rmtree(dest, ignore_errors=True)
    prefix = f"{top}/vendor/llama.cpp/"
    try:
        with tarfile.open(sdist) as tf:
            members = []
            for m in tf.getmembers():
                rel = m.name.removeprefix(prefix)
                if m.name.startswith(prefix) and (rel == _SCRIPT or rel.startswith(_PACKAGES)):
                    m.name = rel
                    members.append(m)
            if not any(m.name == _SCRIPT for m in members):
                raise ModelError(f"the llama-cpp-python sdist {sdist.name} has no {prefix}{_SCRIPT}")
            tf.extractall(dest, members=members, filter="data")
    except (tarfile.TarError, OSError) as e:
        raise ModelError(f"could not unpack the GGUF converter from {sdist}: {e}") from e
    (dest / ".complete").touch()
    return dest / _SCRIPT


def convert(
    folder: Path,
    out: Path,
    args: Sequence[str],
    sdist: Path,
    expected_size: int,
    progress: Progress | None = None,
) -> None:
    """Convert the model ``folder`` to the GGUF ``out``. ``progress`` sees the bytes written, up to ``expected_size``.

    The converter's output goes to ``$NEXUS_HOME/logs/convert-<out name>.log``; a failure raises
    :class:`ModelError` with that path and the log's last lines."""
    py = converter_python()
    script = converter_script(sdist)
    log = cache_dir("logs") / f"convert-{out.stem}.log"
    cmd = [str(py), str(script), str(folder), *args, "--outfile", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "NO_LOCAL_GGUF"}  # the sdist's own gguf-py, not PyPI's
    env["HF_HUB_OFFLINE"] = "1"  # everything it reads is the local folder; it must never reach for a hub
    seen = 0
    with log.open("w") as f:
        proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)
        try:
            while proc.poll() is None:
                time.sleep(0.25)
                seen = _report(out, seen, expected_size, progress)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
    if proc.returncode != 0 or not out.exists():
        tail = " | ".join(ln for ln in log.read_text(errors="replace").splitlines()[-5:] if ln.strip())
        raise ModelError(f"the GGUF converter exited with {proc.returncode} on {folder.name}: {tail} (log: {log})")
    _report(out, seen, expected_size, progress)


def _report(out: Path, seen: int, total: int, progress: Progress | None) -> int:
    """Tell ``progress`` how many more bytes of ``out`` were written since ``seen`` (never past ``total``)."""
    try:
        now = min(out.stat().st_size, total) if total else out.stat().st_size
    except FileNotFoundError:
        return seen
    if progress and now > seen:
        progress(now - seen)
    return max(now, seen)
