"""Synthetic example queries per tool, generated offline by the local LLM from the tool definition alone.

Why: user requests are terse and indirect ("whats my gh username again"), while tool descriptions are API prose.
Embedding a handful of plausible requests next to each tool (Tool2Vec/Toolshed) bridges that vocabulary gap.
The queries come only from the tool's own name, description and signature, never from evaluation data.

The result is a JSON cache shipped with the package (``routing/data/synthetic_queries.json``)::

    {"model": "...", "prompt_version": 2, "seed": 0, "n": 8, "style": "short",
     "tools": {"<server>__<tool>": {"hash": "<tool content hash>", "model": "...", "queries": ["...", ...]}}}

Regenerate (resumable; entries whose tool hash still matches are kept; ``--shard I/K`` runs write separate
files whose ``tools`` maps are disjoint, to be merged)::

    python -m nexus_agent.routing.synth --registry ../shared/mcp-registry --model qwen1.5b [--style situational]

Two styles, each in its own cache file:

* ``short`` (``synthetic_queries.json``): terse chat requests, 8 per tool. The router indexes the first 6
  (for embedders that want them) and keeps the rest for τ calibration.
* ``situational`` (``synthetic_situational.json``): 4 per tool, one or two sentences that give some context
  before the ask ("We've got a picnic in Lisbon on Saturday. Is it going to rain?"). Real requests come in both
  shapes, and an embedder tuned on terse requests alone ranks long, context-heavy ones poorly. Used only as
  fine-tuning anchors.

Every entry records its model; a run with another ``--model`` regenerates the entries made by a different
model. Both files feed the fine-tuning set (:mod:`nexus_agent.routing.tune`). Both styles were made with
qwen1.5b (about 10–13 s per tool on one core).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nexus_agent.registry import Tool, load_registry
from nexus_agent.signature import SignatureOptions, first_sentence, signature

PROMPT_VERSION = 2
DEFAULT_CACHE = Path(__file__).parent / "data" / "synthetic_queries.json"
SITUATIONAL_CACHE = Path(__file__).parent / "data" / "synthetic_situational.json"

_SYSTEM = (
    "You write realistic requests that users type to an AI assistant. "
    "Given one tool, write short requests that this exact tool would handle. "
    "Vary wording: terse chat, questions, commands, casual phrasing. Use concrete made-up names and values. "
    "Many requests should state the user's goal rather than the operation, the way people really ask. "
    "Refer to things concretely (owner/repo, #123, file paths, names, dates) when the tool takes them. "
    "Do not mention the tool name. Output one request per line, no numbering, nothing else."
)


# One worked example (a made-up tool, not from any registry) shows the model the wanted output shape; without
# it the 0.5B coder model answers with code calls or API paths instead of user requests.
_EXAMPLE_USER = (
    'Service: weather\nTool: get_forecast(city: string, days?: integer, units?: "metric"|"imperial")\n'
    "What it does: Get the weather forecast for a city for the next days.\n\n"
    "Write {n} different user requests for this tool, one per line."
)
_EXAMPLE_ANSWER = (
    "forecast for tokyo next 5 days pls\n"
    "will it rain in Lisbon this weekend?\n"
    "Do I need a jacket in Chicago tomorrow?\n"
    "show me the 3-day outlook for Berlin in fahrenheit\n"
    "how hot is it going to get in Madrid this week\n"
    "weather next few days, Oslo\n"
    "Is Thursday going to be sunny in Seattle?\n"
    "give me a metric forecast for Nairobi for the coming week"
)


_SYSTEM_SITUATIONAL = (
    "You write realistic messages that users send to an AI assistant. "
    "Given one tool, write requests that this exact tool would handle. "
    "Each request is one or two sentences: the user first gives a bit of context (what they are working on, "
    "why they need it), then asks, the way people write in a chat. Vary the situations and the wording. "
    "Use concrete made-up names and values (owner/repo, #123, file paths, IDs, dates) when the tool takes them. "
    "Do not mention the tool name. Output one request per line, no numbering, nothing else."
)
_EXAMPLE_ANSWER_SITUATIONAL = (
    "I'm flying to Tokyo on Friday and still packing, what does the weather look like there for the next 5 days?\n"
    "We've got a picnic planned in Lisbon on Saturday. Is it going to rain?\n"
    "My colleague in Chicago is American, so give me the 3-day outlook there in fahrenheit for her.\n"
    "Thinking of cycling to work in Oslo all next week; how cold will the mornings get?"
)


@dataclass(frozen=True)
class Style:
    """One way of phrasing requests: its prompt, how many per tool, and where its cache lives."""

    name: str
    system: str
    example_answer: str
    n: int
    cache: Path
    tokens_per_query: int  # generation budget


STYLES = {
    "short": Style("short", _SYSTEM, _EXAMPLE_ANSWER, 8, DEFAULT_CACHE, 30),
    "situational": Style("situational", _SYSTEM_SITUATIONAL, _EXAMPLE_ANSWER_SITUATIONAL, 4, SITUATIONAL_CACHE, 60),
}


def _method_hint(tool: Tool) -> str:
    """Consolidated tools (``method`` enum) need requests for every variant, or only the first gets covered."""
    props = tool.input_schema.get("properties") or {}
    for key in ("method", "operation", "action"):
        spec = props.get(key)
        if isinstance(spec, dict) and isinstance(spec.get("enum"), list):
            vals = ", ".join(str(v) for v in spec["enum"])
            return f"\nIt has a '{key}' parameter with variants: {vals}. Cover different variants."
    return ""


def build_prompt(tool: Tool, n: int, style: Style = STYLES["short"]) -> list[dict[str, str]]:
    """Chat messages asking for ``n`` requests for ``tool`` (shape: OpenAI-style message list)."""
    desc = " ".join(tool.description.split())
    if len(desc) > 400:
        desc = first_sentence(desc)[:400]
    sig = signature(tool, SignatureOptions(max_enum=8))
    user = (
        f"Service: {tool.server}\nTool: {sig}\nWhat it does: {desc}{_method_hint(tool)}\n\n"
        f"Write {n} different user requests for this tool, one per line."
    )
    n_example = style.example_answer.count("\n") + 1
    return [
        {"role": "system", "content": style.system},
        {"role": "user", "content": _EXAMPLE_USER.format(n=n_example)},
        {"role": "assistant", "content": style.example_answer},
        {"role": "user", "content": user},
    ]


_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


def parse_queries(text: str, tool: Tool, n: int) -> list[str]:
    """Lines of the completion, cleaned; drops echoes of the tool name and duplicates."""
    out: list[str] = []
    for raw in text.splitlines():
        line = _BULLET.sub("", raw).strip().strip('"').strip()
        if len(line) < 8 or len(line) > 240 or line.endswith(":"):
            continue
        if tool.name.lower() in line.lower() and "_" in tool.name:
            continue
        if line.lower() not in (q.lower() for q in out):
            out.append(line)
    return out[:n]


def load_cache(path: Path = DEFAULT_CACHE) -> dict[str, Any]:
    if not path.exists():
        return {"tools": {}}
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def queries_for(tools: Iterable[Tool], path: Path = DEFAULT_CACHE) -> dict[str, list[str]]:
    """Cached queries for ``tools`` whose definition hash still matches (others get none)."""
    entries = load_cache(path).get("tools", {})
    out: dict[str, list[str]] = {}
    for t in tools:
        e = entries.get(t.qualified_name)
        if e and e.get("hash") == t.content_hash():
            out[t.qualified_name] = list(e["queries"])
    return out


def generate(
    tools: list[Tool],
    model_path: Path,
    out: Path,
    n: int = 8,
    seed: int = 0,
    n_threads: int = 2,
    style: Style = STYLES["short"],
) -> None:
    """Generate (resumably) ``n`` queries in ``style`` for every tool in ``tools`` into ``out``."""
    from llama_cpp import Llama

    cache = load_cache(out)
    default_model = cache.get("model", model_path.name)  # entries without their own "model" were made by it
    for e in cache.get("tools", {}).values():
        e.setdefault("model", default_model)
    cache.update(
        {"model": model_path.name, "prompt_version": PROMPT_VERSION, "seed": seed, "n": n, "style": style.name}
    )
    entries: dict[str, Any] = cache.setdefault("tools", {})

    def stale(t: Tool) -> bool:
        e = entries.get(t.qualified_name, {})
        # an entry made by another model is regenerated too, so a run with a better model upgrades the cache
        return bool(e.get("hash") != t.content_hash() or e.get("model", cache.get("model")) != model_path.name)

    todo = [t for t in tools if stale(t)]
    print(f"{len(tools) - len(todo)} cached, {len(todo)} to generate", file=sys.stderr)
    if not todo:
        return
    llm = Llama(
        str(model_path),
        n_ctx=2048,
        n_threads=n_threads,
        n_threads_batch=n_threads,
        seed=seed,
        verbose=False,
        use_extra_bufts=False,
    )
    t0 = time.monotonic()
    for i, tool in enumerate(todo):
        llm.reset()
        res: Any = llm.create_chat_completion(
            build_prompt(tool, n, style),  # type: ignore[arg-type]  # plain role/content dicts
            max_tokens=style.tokens_per_query * n,
            temperature=0.7,
            top_p=0.95,
            seed=seed,
        )
        text = res["choices"][0]["message"]["content"] or ""
        entries[tool.qualified_name] = {
            "hash": tool.content_hash(),
            "model": model_path.name,
            "queries": parse_queries(text, tool, n),
        }
        if i % 5 == 4 or i == len(todo) - 1:
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_suffix(".tmp")
            tmp.write_text(json.dumps(cache, indent=1, ensure_ascii=False, sort_keys=True), encoding="utf-8")
            tmp.replace(out)
            rate = (time.monotonic() - t0) / (i + 1)
            print(f"[{i + 1}/{len(todo)}] {tool.qualified_name}  {rate:.1f}s/tool", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--profile", default=None)
    ap.add_argument("--model", default="qwen1.5b", help="model short name or GGUF path (the shipped files: qwen1.5b)")
    ap.add_argument("--style", choices=sorted(STYLES), default="short")
    ap.add_argument("--out", type=Path, default=None, help="cache file (default: the style's shipped file)")
    ap.add_argument("-n", type=int, default=None, help="requests per tool (default: the style's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shard", default=None, help="I/K: only every K-th tool from the I-th (parallel runs)")
    args = ap.parse_args(argv)
    from nexus_agent.routing.modelpath import resolve_model

    tools = load_registry(args.registry).profile(args.profile)
    if args.shard:
        try:
            i, k = (int(x) for x in args.shard.split("/"))
        except ValueError:
            ap.error(f"--shard {args.shard!r}: expected I/K with integers, e.g. 0/4")
        if not 0 <= i < k:
            ap.error(f"--shard {args.shard!r}: need 0 <= I < K")
        tools = tools[i::k]
    style = STYLES[args.style]
    out = args.out or style.cache
    generate(tools, resolve_model(args.model), out, args.n or style.n, args.seed, args.threads, style)


if __name__ == "__main__":
    main()
