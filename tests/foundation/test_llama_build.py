"""The llama-cpp-python build: only what ``llama_cpp`` loads (issue 47).

The set-up builds the pinned sdist with ``scripts/patches/``, which keeps llama.cpp's ``common`` library and
``cpp-httplib`` out when LLAVA is off; the patch's name and hash are in the wheel cache's key.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import llama_cpp
import pytest

from nexus_agent.models import store

REPO = Path(__file__).resolve().parents[2]
UNWANTED = re.compile(r"llama-common|libcommon|httplib")


@pytest.fixture(scope="module")
def bootstrap() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("_bootstrap_under_test", REPO / "scripts" / "bootstrap.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    yield mod
    del sys.modules[spec.name]


def test_the_installed_llama_cpp_has_no_common_library_and_no_httplib() -> None:
    lib = Path(llama_cpp.__file__).parent / "lib"
    on_disk = sorted(p.name for p in lib.iterdir())
    assert any(n.startswith("libllama.") for n in on_disk) and any(n.startswith("libggml") for n in on_disk), on_disk
    assert [n for n in on_disk if UNWANTED.search(n)] == []
    # the wheel also installs llama.cpp's own copies outside the package (site-packages/lib): none of those either
    recorded = [str(f) for f in importlib.metadata.files("llama-cpp-python") or []]
    assert any("libllama" in f for f in recorded)
    assert [f for f in recorded if UNWANTED.search(f)] == []


def test_the_low_level_api_is_all_there() -> None:
    # what nexus_agent.llm calls: the C API is in libllama, which the patch does not touch
    for name in ("llama_model_load_from_file", "llama_init_from_model", "llama_decode", "llama_sampler_init_grammar"):
        assert callable(getattr(llama_cpp, name)), name


def _sdist_cmakelists(tmp_path: Path) -> Path:
    version = store.llama_cpp_version()
    member = f"llama_cpp_python-{version}/CMakeLists.txt"
    with tarfile.open(store.llama_cpp_sdist()) as tf:  # the real sdist, from the cache the set-up filled
        tf.extract(member, tmp_path, filter="data")
    return tmp_path / f"llama_cpp_python-{version}"


def test_the_patch_applies_to_the_pinned_sdist_and_only_once(bootstrap: ModuleType, tmp_path: Path) -> None:
    root = _sdist_cmakelists(tmp_path)
    force_on = 'set(LLAMA_BUILD_COMMON ON CACHE BOOL "Build llama.cpp common library" FORCE)'
    before = (root / "CMakeLists.txt").read_text()
    assert re.search(rf"^    {re.escape(force_on)}$", before, re.M)  # the upstream line: unconditional
    (patch,) = bootstrap.LLAMA_PATCHES
    bootstrap.apply_patch(root, patch)
    after = (root / "CMakeLists.txt").read_text()
    assert re.search(rf"^    if \(LLAVA_BUILD\)\n        {re.escape(force_on)}\n    endif\(\)$", after, re.M)
    assert not re.search(rf"^    {re.escape(force_on)}$", after, re.M)
    with pytest.raises(bootstrap.Failed):  # its old lines are gone: a second application (or another sdist) stops
        bootstrap.apply_patch(root, patch)


def test_the_wheel_cache_key_names_the_patches(bootstrap: ModuleType, tmp_path: Path) -> None:
    patched = bootstrap.llama_wheel_dir()
    (real,) = bootstrap.LLAMA_PATCHES
    other = tmp_path / real.name
    other.write_bytes(real.read_bytes() + b" ")
    try:
        bootstrap.LLAMA_PATCHES = [other]  # same name, other bytes
        changed = bootstrap.llama_wheel_dir()
        bootstrap.LLAMA_PATCHES = []
        unpatched = bootstrap.llama_wheel_dir()
    finally:
        bootstrap.LLAMA_PATCHES = [real]
    assert len({patched.name, changed.name, unpatched.name}) == 3
    assert real.name in bootstrap.patches_tag()
