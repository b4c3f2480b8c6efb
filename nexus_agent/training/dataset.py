"""The fine-tuning set: for each registry tool, its retrieval document and the requests that should find it.

Anchors (the "queries" side of a training pair) are the tool's first ``n_synthetic`` short synthetic requests
(the rest stay held out for τ calibration, as in the router), its situational requests (context, then the ask),
its indirect requests (without the words of its name) that pass two checks, the first sentence of its
description, and its name split into words, in that order. The checks drop an indirect request that uses a
server-mate's name word the tool's own document lacks (it leans to that sibling) or shares no word with the tool's
document (the model drifted off the tool). Everything comes from the
tool definition; the shipped set is
``training/data/tuning_set.json``, rebuilt with::

    python -m nexus_agent.training.dataset --registry data/mcp-registry

Shape::

    {"version": 2, "registry_hash": "...", "tools": {"<server>__<tool>": {"server": ..., "doc": ...,
     "anchors": [...]}}}
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from nexus_agent.registry import Registry, load_registry
from nexus_agent.routing.docs import DocConfig, split_identifier, tool_document
from nexus_agent.routing.query import expand_query
from nexus_agent.routing.router import RouterConfig
from nexus_agent.routing.synth import INDIRECT_CACHE, SITUATIONAL_CACHE, queries_for
from nexus_agent.signature import first_sentence
from nexus_agent.training.synth import grounded_in, leans_to_sibling, sibling_stems

VERSION = 3  # 2: situational requests added to the anchors; 3: indirect requests
DEFAULT_SET = Path(__file__).parent / "data" / "tuning_set.json"


def build_set(registry: Registry, n_synthetic: int | None = None) -> dict[str, Any]:
    """The training set for every tool of ``registry`` (see module docstring)."""
    n = RouterConfig().retrieval.n_synthetic_indexed if n_synthetic is None else n_synthetic
    tools = registry.profile(None)
    synth = queries_for(tools)
    situational = queries_for(tools, SITUATIONAL_CACHE)
    indirect = queries_for(tools, INDIRECT_CACHE)
    out: dict[str, Any] = {}
    for t in tools:
        stems = sibling_stems(t, tools)
        paraphrases = [
            q for q in indirect.get(t.qualified_name, []) if grounded_in(q, t) and not leans_to_sibling(q, stems)
        ]
        anchors = [*synth.get(t.qualified_name, [])[:n], *situational.get(t.qualified_name, []), *paraphrases]
        anchors.append(first_sentence(" ".join(t.description.split())))
        anchors.append(split_identifier(t.name))
        # the router expands chat abbreviations before embedding a query, so train on what it will see
        anchors = list(dict.fromkeys(expand_query(a) for a in anchors if a.strip()))
        out[t.qualified_name] = {"server": t.server, "doc": tool_document(t, DocConfig()), "anchors": anchors}
    return {"version": VERSION, "registry_hash": registry.content_hash(), "tools": out}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="build the router fine-tuning set from a tool registry")
    ap.add_argument("--registry", required=True)
    ap.add_argument("--out", type=Path, default=DEFAULT_SET)
    args = ap.parse_args(argv)
    data = build_set(load_registry(args.registry))
    args.out.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    n_anchors = sum(len(v["anchors"]) for v in data["tools"].values())
    print(f"{len(data['tools'])} tools, {n_anchors} anchors → {args.out}")


if __name__ == "__main__":
    main()
