"""Argument values side by side: Nexus Agent's argument writer against llama-cpp-python's own
``chatml-function-calling``, on the same model, the same items and the tool forced, in one run.

For every item of an argument set (``data/eval/arg_values.jsonl`` by default, ``--split check``) the gold tool is
given to both (routing is not measured here):

* ``nexus``: ``ArgumentWriter`` (the compact signature, the schema's grammar, one repair, then ``drop_ungrounded``
  with the value forms of ``agent/forms/``);
* ``nexus_literal``: the same generations, filtered as before the value forms (a value counts only when the
  conversation spells it as it is): the forms' effect alone, at no extra model call;
* ``llama_cpp``: ``Llama(chat_format="chatml-function-calling").create_chat_completion`` with the tool's full JSON
  schema and ``tool_choice`` naming it (llama-cpp-python builds its grammar from the schema).

Both are told today's date (the item's ``now``) where the writer is: a system line for the baseline, the
argument request's date line for ``nexus``. A call is right when ``evaluation/args.py: check_arguments`` finds no
problem (expected values after normalisation, every required parameter, no unknown one, no ``arg_absent`` one).
Accuracy with Wilson 95% intervals, per style too.

    python bench/args_baseline.py [--split check] [--model qwen1.5b] [--limit N] [--json OUT]

Writes ``bench/results/args_baseline.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from common import ROOT, SHARED
from llama_cpp import Llama

from nexus_agent import defaults
from nexus_agent.agent import forms
from nexus_agent.agent.args import ArgumentWriter
from nexus_agent.agent.grounding import conversation_text, drop_ungrounded
from nexus_agent.agent.schema import validate
from nexus_agent.engine import Engine, EngineConfig
from nexus_agent.evaluation.args import check_arguments, load_items, today_of
from nexus_agent.evaluation.stats import wilson_ci
from nexus_agent.models import resolve
from nexus_agent.registry import Tool, load_registry

ARMS = ("nexus", "nexus_literal", "llama_cpp")


def literal(tool: Tool, raw: str, query: str, item: dict[str, Any]) -> dict[str, Any] | None:
    """The writer's JSON filtered without the value forms (as before they existed)."""
    try:
        args = json.loads(raw)
    except json.JSONDecodeError:
        return None
    if validate(tool, args) is not None:
        return None
    saved = dict(forms.FORMS)
    forms.FORMS.clear()
    try:
        text = conversation_text(query, [])
        return drop_ungrounded(tool, args, text, text, today_of(item))
    finally:
        forms.FORMS.update(saved)


def baseline(llm: Llama, tool: Tool, item: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
    messages: list[dict[str, Any]] = []
    if (today := today_of(item)) is not None:
        messages.append({"role": "system", "content": f"Today is {today.isoformat()}, a {today.strftime('%A')}."})
    messages.append({"role": "user", "content": item["query"]})
    spec = {"name": tool.name, "description": tool.description, "parameters": dict(tool.input_schema)}
    try:
        out: Any = llm.create_chat_completion(
            messages=messages,  # type: ignore[arg-type]
            tools=[{"type": "function", "function": spec}],  # type: ignore[list-item]
            tool_choice={"type": "function", "function": {"name": tool.name}},
            temperature=0.0,
            max_tokens=256,
        )
        call = out["choices"][0]["message"]["tool_calls"][0]["function"]
        text = call["arguments"]
        return json.loads(text), text
    except Exception as e:  # a refused grammar, an unparsable reply: the call is wrong, the run goes on
        return None, f"{type(e).__name__}: {e}"


def rate(ok: list[bool]) -> dict[str, Any]:
    k, n = sum(ok), len(ok)
    lo, hi = wilson_ci(k, n)
    return {"n": n, "right": k, "accuracy": k / n if n else 0.0, "ci95": [lo, hi]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--eval", default=str(ROOT / "data" / "eval" / "arg_values.jsonl"))
    ap.add_argument("--split", default="check", help="tune, check or all")
    ap.add_argument("--model", default=defaults.CHAT_MODEL)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json", help="also write the summary here")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "args_baseline"))
    a = ap.parse_args()
    items = [it for it in load_items(Path(a.eval)) if a.split == "all" or it.get("split") == a.split]
    if not items:
        raise SystemExit(f"{a.eval}: no item has split {a.split!r}")
    items = items[: a.limit] if a.limit else items
    reg = load_registry(SHARED / "mcp-registry")
    engine = Engine(EngineConfig(model=a.model, n_ctx=4096))
    writer = ArgumentWriter(engine)
    llm = Llama(model_path=str(resolve(a.model)), chat_format="chatml-function-calling", n_ctx=4096, n_threads=2,
                verbose=False)  # fmt: skip
    rows = []
    t0 = time.perf_counter()
    for i, it in enumerate(items):
        tool = reg.find(it["tool"], it.get("server"))
        res = writer.write(tool, it["query"], [], today_of(it))
        ours = res.arguments
        lit = literal(tool, res.raw, it["query"], it) if ours is not None else None  # raw: the final attempt
        theirs, their_text = baseline(llm, tool, it)
        row = {"id": it["id"], "style": it.get("style", ""), "tool": tool.name, "query": it["query"]}
        for arm, args in (("nexus", ours), ("nexus_literal", lit), ("llama_cpp", theirs)):
            problems = ["no valid arguments"] if args is None else check_arguments(tool, args, it)
            row[arm] = {"arguments": args, "problems": problems, "ok": not problems}
        row["llama_cpp"]["raw"] = their_text
        rows.append(row)
        marks = " ".join(f"{arm} {'ok' if row[arm]['ok'] else 'NO'}" for arm in ARMS)
        print(f"{i + 1}/{len(items)} {it['id']} {it.get('style', '')}: {marks}", flush=True)
    engine.close()
    summary: dict[str, Any] = {arm: rate([r[arm]["ok"] for r in rows]) for arm in ARMS}
    summary["nexus_minus_llama_cpp"] = summary["nexus"]["accuracy"] - summary["llama_cpp"]["accuracy"]
    styles = sorted({r["style"] for r in rows})
    summary["by_style"] = {
        s: {arm: rate([r[arm]["ok"] for r in rows if r["style"] == s]) for arm in ARMS} for s in styles
    }
    summary.update(model=a.model, split=a.split, eval=a.eval, seconds=time.perf_counter() - t0)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1, ensure_ascii=False))
    if a.json:
        Path(a.json).write_text(json.dumps(summary, indent=1))

    def cell(r: dict[str, Any]) -> str:
        return f"{r['accuracy']:.3f} [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}] ({r['right']}/{r['n']})"

    md = [
        f"# Argument values, tool forced: {a.model}, `{Path(a.eval).name}` split {a.split}",
        "",
        "| style | n | nexus | nexus, literal grounding | llama-cpp-python chatml-function-calling |",
        "|---|---|---|---|---|",
        f"| **all** | {len(rows)} | " + " | ".join(cell(summary[arm]) for arm in ARMS) + " |",
    ]
    for s in styles:
        by = summary["by_style"][s]
        md.append(f"| {s} | {by['nexus']['n']} | " + " | ".join(cell(by[arm]) for arm in ARMS) + " |")
    out.with_suffix(".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
