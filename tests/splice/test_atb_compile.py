"""``atb-compile``: every rendering of every tool compiled once, malformed schemas named, incremental, verified;
the runtime then finds the blocks without compiling anything itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from atb_compiler.cli import app
from atb_compiler.compile import decision_header, gather_tools, renderings
from nexus_agent.backend import SIDECAR, LocalBackend, LocalDecider
from nexus_agent.backend.session import PrefixCachedLLM
from nexus_agent.engine.blocks import SpliceConfig, Splicer
from nexus_agent.routing.rerank.llm_choice import LLMChoiceReranker


@pytest.fixture
def schemas(registry_dir: Path, tmp_path: Path) -> Path:
    d = tmp_path / "schemas"
    d.mkdir()
    for name in ("create_repository", "list_issues", "fork_repository"):
        shutil.copy(registry_dir / "github" / f"{name}.json", d / f"{name}.json")
    (d / "broken.json").write_text('{"name": "broken", "inputSchema": ')
    return d


def test_compile_names_the_bad_file_compiles_the_rest_and_is_incremental(schemas: Path, tmp_path: Path) -> None:
    out = tmp_path / "atb"
    args = [str(schemas), "--model", "tiny", "-o", str(out), "--threads", "1"]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 1, res.output  # one schema failed, the others compiled
    assert "broken.json" in res.output and "invalid JSON" in res.output
    assert "3 tools, 6 blocks compiled, 0 unchanged" in res.output
    files = list(out.glob("*/*.atb"))
    assert len(files) == 6 and len({f.parent for f in files}) == 1  # one folder: the model's fingerprint
    (schemas / "broken.json").unlink()
    again = CliRunner().invoke(app, [*args, "--verify"])
    assert again.exit_code == 0, again.output
    assert "0 blocks compiled, 6 unchanged, 6 verified" in again.output
    # a corrupt block is reported by --verify (and the runtime would prefill that line as text)
    blob = bytearray(files[0].read_bytes())
    blob[140] ^= 0xFF
    files[0].write_bytes(bytes(blob))
    bad = CliRunner().invoke(app, [*args, "--verify"])
    assert bad.exit_code == 1 and "checksum" in bad.output


def test_a_missing_path_is_an_error(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, [str(tmp_path / "nope"), "--model", "tiny"])
    assert res.exit_code == 2 and "no such file or folder" in res.output


def test_the_runtime_finds_what_atb_compile_wrote(registry_dir: Path, tmp_path: Path) -> None:
    tools, errors = gather_tools([registry_dir / "github"])
    assert not errors
    tools = tools[:6]
    d = tmp_path / "github"  # the folder names the server, and the line shows it ("[github]")
    d.mkdir()
    for t in tools:
        (d / f"{t.name}.json").write_text(json.dumps(t.to_mcp()))
    out = tmp_path / "atb"
    assert CliRunner().invoke(app, [str(d), "--model", "tiny", "-o", str(out)]).exit_code == 0
    engine = LocalBackend.open("tiny", n_threads=1, n_ctx=2048).engine
    splicer = Splicer(engine, SpliceConfig(mode="on", root=out))
    llm = PrefixCachedLLM(engine, SIDECAR, splicer)
    LLMChoiceReranker(LocalDecider(lambda lane: llm)).rerank("create a repository called demo", tools)
    st = splicer.last
    assert st is not None and st.n_blocks == len(tools) and splicer.compiled == 0
    assert len(renderings(tools)) == 2 * len(tools) and len(decision_header(llm, tools[0])) > 100
