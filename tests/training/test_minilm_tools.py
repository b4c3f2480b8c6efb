"""The routing embedder ships as a reviewed artifact: its training set comes from tool definitions only, its record
names the recipe it was built from, and the store verifies it instead of training on a first run."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from nexus_agent import models
from nexus_agent.models import shipped
from nexus_agent.registry import load_registry
from nexus_agent.routing.embedders import create_embedder
from nexus_agent.training import minilm_tools
from nexus_agent.training.dataset import DEFAULT_SET, build_set


def test_shipped_set_matches_the_registry_and_never_contains_eval_queries(
    registry_dir: Path, eval_queries: frozenset[str]
) -> None:
    reg = load_registry(registry_dir)
    shipped_set = json.loads(DEFAULT_SET.read_text())
    rebuilt = build_set(reg)
    # the shipped file is exactly what the builder makes from this registry (no hand edits, no stale entries)
    assert shipped_set == json.loads(json.dumps(rebuilt))
    assert set(shipped_set["tools"]) == {t.qualified_name for t in reg.profile(None)}
    anchors = {a.strip().lower() for v in shipped_set["tools"].values() for a in v["anchors"]}
    # Copying from eval/ would show as dozens of verbatim matches; a generic request such as "list my gists"
    # can be written independently by the generator and by the eval authors, so allow a couple.
    leaked = anchors & eval_queries
    assert len(leaked) <= 2, f"eval queries in the training set: {sorted(leaked)[:5]}"
    assert all(len(v["anchors"]) >= 2 and v["doc"] for v in shipped_set["tools"].values())


def test_recipe_key_follows_the_training_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = minilm_tools.recipe_key()
    changed = tmp_path / "set.json"
    data = json.loads(DEFAULT_SET.read_text())
    data["version"] += 1
    changed.write_text(json.dumps(data))
    monkeypatch.setattr(minilm_tools, "DEFAULT_SET", changed)
    assert minilm_tools.recipe_key() != before


def test_the_shipped_embedder_was_built_from_the_current_recipe() -> None:
    # A change to the training set, the training script, the pins, steps, seed or threads must come with a rebuilt
    # artifact: otherwise the repository would describe one model and ship another.
    recorded = shipped.read_artifact("minilm-tools").recipe
    assert recorded == minilm_tools.recipe_key(), (
        f"the shipped minilm-tools was built from recipe {recorded}, but the recipe is now "
        f"{minilm_tools.recipe_key()}: run `nexus-agent models rebuild minilm-tools` and commit the new artifact"
    )


def test_the_shipped_files_match_their_record() -> None:
    art = shipped.read_artifact("minilm-tools")
    assert set(art.files) == {"model.onnx", "tokenizer.json"}
    for name, want in art.files.items():
        assert shipped.file_digest(shipped.artifact_dir("minilm-tools") / name) == want, name


def _fake_artifact(root: Path, model: bytes) -> Path:
    d = root / "minilm-tools"
    d.mkdir(parents=True, exist_ok=True)
    (d / "model.onnx").write_bytes(model)
    (d / "tokenizer.json").write_text("{}")
    files = {n: shipped.file_digest(d / n) for n in ("model.onnx", "tokenizer.json")}
    (d / "artifact.json").write_text(shipped.Artifact("minilm-tools", "r", files).to_json())
    return d


def test_first_use_copies_and_verifies_the_shipped_files_and_never_trains(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(shipped, "ARTIFACTS", tmp_path / "pkg")
    _fake_artifact(tmp_path / "pkg", b"weights-1")
    spec = models.CATALOG["minilm-tools"]
    assert models.store.why_absent(spec) == "not assembled yet"
    path = models.fetch_model("minilm-tools")
    assert (path / "model.onnx").read_bytes() == b"weights-1" and models.is_present(spec)
    models.verify("minilm-tools")
    # a file changed by hand after the copy is found by verify
    (path / "model.onnx").write_bytes(b"weights-X")
    with pytest.raises(models.ModelError, match="does not match the shipped minilm-tools"):
        models.verify("minilm-tools")
    # a package that ships another build makes the cached copy stale, and the next use copies the new one
    _fake_artifact(tmp_path / "pkg", b"weights-2")
    assert "stamp" in (models.store.why_absent(spec) or "")
    assert (models.fetch_model("minilm-tools") / "model.onnx").read_bytes() == b"weights-2"


def test_a_corrupt_shipped_file_is_named_and_nothing_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(shipped, "ARTIFACTS", tmp_path / "pkg")
    d = _fake_artifact(tmp_path / "pkg", b"weights-1")
    (d / "model.onnx").write_bytes(b"truncat")
    with pytest.raises(models.ModelError, match=r"model\.onnx has sha256 .*corrupt or partial install"):
        models.fetch_model("minilm-tools")
    assert not models.is_present(models.CATALOG["minilm-tools"])
    assert not models.store.model_path(models.CATALOG["minilm-tools"]).exists()
    (d / "artifact.json").write_text("{not json")
    with pytest.raises(models.ModelError, match=r"artifact\.json is malformed"):
        models.fetch_model("minilm-tools")


def test_rebuild_writes_a_complete_artifact_and_reports_its_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The real training takes ~20 min in a torch venv; here it is replaced by a copy of the shipped files, so the
    # rebuild must report "identical", and a changed file must be reported as a new hash.
    src = shipped.artifact_dir("minilm-tools")
    calls: list[tuple[Path, int]] = []

    def fake_train(out: Path, base: Path, threads: int = 1) -> None:
        calls.append((out, threads))
        out.mkdir(parents=True)
        for name in ("model.onnx", "tokenizer.json"):
            shutil.copyfile(src / name, out / name)
        (out / "manifest.json").write_text(json.dumps({"steps": minilm_tools.STEPS}))

    monkeypatch.setattr(minilm_tools, "train", fake_train)
    monkeypatch.setattr(minilm_tools, "fetch_model", lambda name: tmp_path / name)
    report = minilm_tools.rebuild(out=tmp_path / "new")
    assert len(calls) == 1 and report.identical
    art = json.loads((tmp_path / "new" / "artifact.json").read_text())
    assert art["recipe"] == minilm_tools.recipe_key() and art["manifest"] == {"steps": minilm_tools.STEPS}
    assert art["files"]["model.onnx"]["sha256"] == shipped.read_artifact("minilm-tools").files["model.onnx"].sha256

    def other_train(out: Path, base: Path, threads: int = 1) -> None:
        fake_train(out, base, threads)
        (out / "model.onnx").write_bytes(b"another model")

    monkeypatch.setattr(minilm_tools, "train", other_train)
    report = minilm_tools.rebuild(out=tmp_path / "other")
    assert not report.identical and report.artifact.files["model.onnx"] == shipped.file_digest(
        tmp_path / "other" / "model.onnx"
    )


@pytest.mark.real_model
def test_fine_tuned_model_fits_its_training_anchors_better_than_stock_minilm() -> None:
    # A check that the shipped model was trained (not a copy of the base): on a sample of training anchors, the
    # tuned model ranks the right tool first more often than stock MiniLM does. Anchors are training data, so
    # this says nothing about unseen queries; bench/routing.py measures those.
    data = json.loads(DEFAULT_SET.read_text())["tools"]
    keys = sorted(data)
    rng = random.Random(0)
    # synthetic requests only (the last two anchors, first sentence and split name, are easy for both models)
    sample = [(rng.choice(data[k]["anchors"][:-2]), i) for i, k in enumerate(keys) if len(data[k]["anchors"]) > 2]
    acc = {}
    for name in ("minilm", "minilm-tools"):
        emb = create_embedder(name)
        docs = emb.embed_documents([data[k]["doc"] for k in keys])
        q = emb.embed_queries([a for a, _ in sample])
        acc[name] = float(np.mean([int(np.argmax(s)) == i for s, (_, i) in zip(q @ docs.T, sample, strict=True)]))
    assert acc["minilm-tools"] > acc["minilm"] + 0.06, acc  # measured 0.81 vs 0.69
    assert create_embedder("minilm").fingerprint() != create_embedder("minilm-tools").fingerprint()
