"""Synthetic example queries per tool, generated offline by the local LLM from the tool definition alone.

Why: user requests are terse and indirect ("whats my gh username again"), while tool descriptions are API prose.
Embedding a handful of plausible requests next to each tool (Tool2Vec/Toolshed) bridges that vocabulary gap.
The queries come only from the tool's own name, description and signature, never from evaluation data.

The result is a JSON cache shipped with the package (``routing/data/synthetic_queries.json``; the runtime loads it
with :mod:`nexus_agent.routing.synth`)::

    {"model": "...", "prompt_version": 2, "seed": 0, "n": 8, "style": "short",
     "tools": {"<server>__<tool>": {"hash": "<tool content hash>", "model": "...", "queries": ["...", ...]}}}

Regenerate (resumable; entries whose tool hash still matches are kept; ``--shard I/K`` runs write separate
files whose ``tools`` maps are disjoint, to be merged)::

    python -m nexus_agent.training.synth --registry data/mcp-registry --model qwen1.5b [--style situational]

Three styles, each in its own cache file:

* ``short`` (``synthetic_queries.json``): terse chat requests, 8 per tool. The router indexes the first 6
  (for embedders that want them) and keeps the rest for τ calibration.
* ``indirect`` (``synthetic_indirect.json``): up to 6 per tool, short requests that may not use the words of the
  tool's name ("LGTM, land it" rather than "merge the pull request"). Users name the effect they want ("shut
  #88", "who has access to acme/api?", "remember that Priya works at Globex"), and the other styles, written by
  a small model looking at the signature, mostly echo the operation's own words. The ban is in the prompt and is
  enforced when parsing. Used only as fine-tuning anchors.
* ``situational`` (``synthetic_situational.json``): 4 per tool, one or two sentences that give some context
  before the ask ("We've got a picnic in Lisbon on Saturday. Is it going to rain?"). Real requests come in both
  shapes, and an embedder tuned on terse requests alone ranks long, context-heavy ones poorly. Used only as
  fine-tuning anchors.

Every entry records its model; a run with another ``--model`` regenerates the entries made by a different
model. All three files feed the fine-tuning set (:mod:`nexus_agent.training.dataset`). All were made with
qwen1.5b (about 10–13 s per tool on one core; indirect ~25 s per tool with two one-thread shards side by side).
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

from nexus_agent import defaults
from nexus_agent.registry import Tool, load_registry
from nexus_agent.routing.docs import DocConfig, split_identifier, tool_document
from nexus_agent.routing.lexical import STOP_WORDS, tokenize
from nexus_agent.routing.modelpath import resolve_model
from nexus_agent.routing.synth import DEFAULT_CACHE, INDIRECT_CACHE, SITUATIONAL_CACHE, load_cache
from nexus_agent.signature import SignatureOptions, first_sentence, signature

PROMPT_VERSION = 2

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


_SYSTEM_INDIRECT = (
    "You write realistic requests that users type to an AI assistant. "
    "Given one tool, write short requests that this exact tool would handle, phrased the way people really ask: "
    "they say what they want to know or the effect they want, in their own everyday words, not the name of the "
    "operation. Mix questions, commands, terse chat and slang. Refer to concrete made-up things (owner/repo, #123, "
    "file paths, names, IDs, dates) when the tool takes them. Never use any of the forbidden words. "
    "Output one request per line, no numbering, nothing else."
)
_EXAMPLE_ANSWER_INDIRECT = (
    "will it rain in Lisbon this weekend?\n"
    "do I need a jacket in Chicago tomorrow?\n"
    "how hot will Madrid be this week\n"
    "Oslo, next few days, in celsius pls\n"
    "is Thursday going to be sunny in Seattle?\n"
    "umbrella or not in London tmrw?"
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
    forbid_name_words: bool = False  # the requests may not use the words of the tool's name


STYLES = {
    "short": Style("short", _SYSTEM, _EXAMPLE_ANSWER, 8, DEFAULT_CACHE, 30),
    "situational": Style("situational", _SYSTEM_SITUATIONAL, _EXAMPLE_ANSWER_SITUATIONAL, 4, SITUATIONAL_CACHE, 60),
    "indirect": Style("indirect", _SYSTEM_INDIRECT, _EXAMPLE_ANSWER_INDIRECT, 6, INDIRECT_CACHE, 30, True),
}


def name_words(name: str) -> list[str]:
    """The words of a tool name that an ``indirect`` request may not use (``merge_pull_request`` → merge, pull,
    request); two-letter words such as ``me`` stay allowed."""
    return [w for w in dict.fromkeys(split_identifier(name).split()) if len(w) >= 3]


def _stem(word: str) -> str:
    # entities/entity, issues/issue, commits/commit: the ban matches any word that starts with the stem
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def sibling_stems(tool: Tool, tools: Iterable[Tool]) -> set[str]:
    """Stems of the name words of ``tool``'s server-mates that ``tool``'s own document never uses.

    An ``indirect`` request that uses one leans to that sibling: asked for ``issue_write`` without "issue", the
    model wrote "update existing pull request #987", a request for ``update_pull_request``. Stop-words ("get")
    are no lean, as in BM25."""
    own = set(re.findall(r"[a-z0-9]+", tool_document(tool, DocConfig()).lower()))
    words = {w for t in tools if t.server == tool.server and t.name != tool.name for w in name_words(t.name)}
    stems = {_stem(w) for w in words - STOP_WORDS}
    return {s for s in stems if not any(w.startswith(s) for w in own)}


def _has_word_starting_with(line: str, stems: Iterable[str]) -> bool:
    words = re.findall(r"[a-z0-9]+", line.lower())
    return any(w.startswith(s) for s in stems for w in words)


def leans_to_sibling(line: str, stems: set[str]) -> bool:
    """Whether ``line`` has a word starting with one of ``stems`` (from :func:`sibling_stems`)."""
    return _has_word_starting_with(line, stems)


def grounded_in(line: str, tool: Tool) -> bool:
    """Whether ``line`` shares a content word with ``tool``'s document (same 5-letter start counts: close/closed).

    Without its name words a small model drifts off the tool ("what's the capital of france?" for ``echo``);
    a request that touches nothing in the tool's description, parameters or options is more likely noise than a
    paraphrase, and would teach the embedder a wrong neighbourhood."""
    doc = set(tokenize(tool_document(tool, DocConfig())))
    prefixes = {w[:5] for w in doc if len(w) >= 5}
    return any(w in doc or (len(w) >= 5 and w[:5] in prefixes) for w in tokenize(line))


def banned_token_ids(vocab: list[str], name: str) -> list[int]:
    """Ids of the tokens that spell a forbidden word of ``name`` or most of it (``vocab[i]`` is token i's text).

    Why: a 1.5B model asked not to use a word uses it anyway ("create an issue …" with "issue" forbidden); a
    logit bias on these tokens makes it find other words ("open a bug report …"). Short tokens that only begin
    a stem (" repo" for "repository") stay allowed, as they are words in their own right."""
    stems = [_stem(w) for w in name_words(name)]
    out = []
    for i, text in enumerate(vocab):
        tok = text.strip().lower()
        if len(tok) < 3:
            continue
        if any(tok.startswith(s) or (len(tok) >= max(4, len(s) - 2) and s.startswith(tok)) for s in stems):
            out.append(i)
    return out


def uses_name_words(line: str, name: str) -> bool:
    """Whether ``line`` contains a word starting with the stem of one of ``name``'s words (case-insensitive)."""
    return _has_word_starting_with(line, [_stem(w) for w in name_words(name)])


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
    ban = f"\nForbidden words: {', '.join(name_words(tool.name))}" if style.forbid_name_words else ""
    user = (
        f"Service: {tool.server}\nTool: {sig}\nWhat it does: {desc}{_method_hint(tool)}{ban}\n\n"
        f"Write {n} different user requests for this tool, one per line."
    )
    n_example = style.example_answer.count("\n") + 1
    example = _EXAMPLE_USER.format(n=n_example)
    if style.forbid_name_words:
        example = example.replace("\n\nWrite", "\nForbidden words: get, forecast\n\nWrite")
    return [
        {"role": "system", "content": style.system},
        {"role": "user", "content": example},
        {"role": "assistant", "content": style.example_answer},
        {"role": "user", "content": user},
    ]


_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


def parse_queries(text: str, tool: Tool, n: int, forbid_name_words: bool = False) -> list[str]:
    """Lines of the completion, cleaned; drops echoes of the tool name, duplicates and (``forbid_name_words``)
    lines that use a word of the tool's name."""
    out: list[str] = []
    for raw in text.splitlines():
        line = _BULLET.sub("", raw).strip().strip('"').strip()
        if len(line) < 8 or len(line) > 240 or line.endswith(":"):
            continue
        if tool.name.lower() in line.lower() and "_" in tool.name:
            continue
        if forbid_name_words and uses_name_words(line, tool.name):
            continue
        if line.lower() not in (q.lower() for q in out):
            out.append(line)
    return out[:n]


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
    vocab: list[str] = []
    if style.forbid_name_words:
        n_vocab = llm.n_vocab()
        vocab = [llm.detokenize([i]).decode("utf-8", errors="replace") for i in range(n_vocab)]
    t0 = time.monotonic()
    for i, tool in enumerate(todo):
        llm.reset()
        bias = {t: -100.0 for t in banned_token_ids(vocab, tool.name)} if vocab else None
        res: Any = llm.create_chat_completion(
            build_prompt(tool, n, style),  # type: ignore[arg-type]  # plain role/content dicts
            max_tokens=style.tokens_per_query * n,
            temperature=0.7,
            top_p=0.95,
            seed=seed,
            logit_bias=bias,
        )
        text = res["choices"][0]["message"]["content"] or ""
        entries[tool.qualified_name] = {
            "hash": tool.content_hash(),
            "model": model_path.name,
            "queries": parse_queries(text, tool, n, style.forbid_name_words),
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
    ap.add_argument(
        "--model", default=defaults.CHAT_MODEL, help="model short name or GGUF path (the shipped files: qwen1.5b)"
    )
    ap.add_argument("--style", choices=sorted(STYLES), default="short")
    ap.add_argument("--out", type=Path, default=None, help="cache file (default: the style's shipped file)")
    ap.add_argument("-n", type=int, default=None, help="requests per tool (default: the style's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shard", default=None, help="I/K: only every K-th tool from the I-th (parallel runs)")
    args = ap.parse_args(argv)
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
