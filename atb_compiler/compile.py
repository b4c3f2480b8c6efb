"""What ``atb-compile`` compiles: every candidate line the routing decision can show for a tool, behind the
decision's header, as the runtime renders and tokenises it (``LLMChoiceReranker``, ``PrefixCachedLLM``)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nexus_agent.backend.session import PrefixCachedLLM
from nexus_agent.engine.blocks import BlockStore, SpliceConfig
from nexus_agent.registry import RegistryError, Tool, load_file, tool_files
from nexus_agent.routing.rerank.llm_choice import build_messages, candidate_line, candidate_lines
from nexus_agent.splice.atb_io import read_atb
from nexus_agent.splice.format import AtbError


@dataclass
class CompileReport:
    """``compiled``/``skipped`` (already on disk, same rendering)/``verified`` blocks; ``errors``: one line each."""

    compiled: int = 0
    skipped: int = 0
    verified: int = 0
    bytes: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


def gather_tools(paths: Sequence[Path]) -> tuple[list[Tool], list[str]]:
    """The tools of every JSON file under ``paths``; a malformed file is an error line, the others still load."""
    tools: dict[str, Tool] = {}
    errors: list[str] = []
    for path in paths:
        try:
            files = tool_files(path)
        except RegistryError as e:
            errors.append(str(e))
            continue
        for f, server in files:
            try:
                for t in load_file(f, server):
                    tools.setdefault(t.qualified_name, t)
            except RegistryError as e:
                errors.append(str(e))
    return list(tools.values()), errors


def renderings(tools: Sequence[Tool]) -> list[str]:
    """Each tool's line described and bare, under its bare name, and under ``server__name`` when another tool
    shares the bare name (the decision shows it that way then)."""
    shared = Counter(t.name for t in tools)
    out: list[str] = []
    for t in tools:
        names = [t.name] + ([t.qualified_name] if shared[t.name] > 1 else [])
        for shown in names:
            out += [candidate_line(t, shown, described=True), candidate_line(t, shown, described=False)]
    return list(dict.fromkeys(out))


def decision_header(llm: PrefixCachedLLM, tool: Tool) -> list[int]:
    """The tokens every decision prompt has before its first candidate line (the block's compile header)."""
    parts = llm.render_parts(build_messages("?", [tool], []), candidate_lines([tool]))
    first = next((i for i, p in enumerate(parts) if p.splice), None)
    if first is None:
        raise RuntimeError("the decision prompt does not split into segments for this model's tokenizer")
    return [t for p in parts[:first] for t in p.tokens]


def compile_tools(
    llm: PrefixCachedLLM,
    tools: Sequence[Tool],
    root: Path | None,
    force: bool = False,
    verify: bool = False,
    progress: Callable[[int, int], None] | None = None,
    probe: bool = True,
    context: str | None = None,
) -> CompileReport:
    """Compile (and with ``verify`` re-read and check) every rendering of ``tools`` into ``root``; ``probe``:
    measure each token's context sensitivity too (a second decode; only the ``cacheblend`` repair reads it);
    ``context``: the stand-in compiled behind the header (default: the runtime's, ``SpliceConfig().context``)."""
    rep = CompileReport()
    if not tools:
        return rep
    t0 = time.perf_counter()
    store = BlockStore(llm.engine, root)
    context = SpliceConfig().context if context is None else context
    header = decision_header(llm, tools[0]) + (llm.model.tokenize(context) if context else [])
    lines = renderings(tools)
    for i, line in enumerate(lines):
        # the line's tokens as the decision prompt holds them: every line follows a newline
        body = llm.tokens_in_context(line, before="Tools:\n")
        if body is None:
            rep.errors.append(f"{line.strip()[:60]}: its tokens depend on the text before it; not compiled")
            continue
        path = store.path(header, body)
        if path.is_file() and not force:
            rep.skipped += 1
        else:
            store.compile(header, [body], force=True, probe=probe)
            rep.compiled += 1
        if verify:
            try:
                block = read_atb(path, store.target(header))
                if list(block.tokens) != body:
                    raise AtbError("holds other tokens than the rendering", path, "tokens")
                rep.verified += 1
            except AtbError as e:
                rep.errors.append(str(e))
        rep.bytes += path.stat().st_blocks * 512 if path.is_file() else 0
        if progress:
            progress(i + 1, len(lines))
    rep.seconds = time.perf_counter() - t0
    return rep
