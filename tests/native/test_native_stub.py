"""nexus_agent/_native.pyi is written by hand; this keeps it honest against the compiled module: the same
public names, and for every function and method the same parameter names, order and defaults."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import numpy as np

import nexus_agent
from nexus_agent import _native

STUB = Path(nexus_agent.__file__).resolve().parent / "_native.pyi"
# Dunders the stub may declare although the module does not expose them by name on Python 3.11.
STUB_ONLY = {"__buffer__"}


def _stub_defs() -> dict[str, ast.AST]:
    return {
        node.name: node for node in ast.parse(STUB.read_text()).body if isinstance(node, ast.FunctionDef | ast.ClassDef)
    }


def _stub_params(fn: ast.FunctionDef) -> list[tuple[str, bool]]:
    args = [*fn.args.posonlyargs, *fn.args.args]
    first_default = len(args) - len(fn.args.defaults)
    return [(a.arg, i >= first_default) for i, a in enumerate(args) if a.arg != "self"]


def _native_params(obj: object) -> list[tuple[str, bool]]:
    """Parameter names and has-default flags from pybind11's signature line, e.g. 'f(a: int, b: object = None)'."""
    doc = inspect.getdoc(obj) or ""
    name = getattr(obj, "__name__", "")
    line = next(ln for ln in doc.splitlines() if ln.startswith(f"{name}("))
    inner = line[len(name) + 1 : line.rindex(")")]
    params = []
    for part in re.split(r",\s*(?![^\[]*\])", inner):  # commas outside [...] type brackets
        if not part or part.startswith("self"):
            continue
        pname = part.split(":")[0].strip()
        params.append((pname, "=" in part))
    return params


def test_stub_names_match_module() -> None:
    defs = _stub_defs()
    public = {n for n in dir(_native) if not n.startswith("_")}
    assert set(defs) == public


def test_stub_signatures_match_module() -> None:
    for name, node in _stub_defs().items():
        obj = getattr(_native, name)
        if isinstance(node, ast.FunctionDef):
            assert _stub_params(node) == _native_params(obj), name
            continue
        assert isinstance(node, ast.ClassDef)
        members = {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}
        real = {n for n in dir(obj) if not n.startswith("_") or n in ("__init__", "__len__")}
        real -= {"__init__"} if "__init__" not in members else set()
        # class constants (``MAX_SLOTS: ClassVar[int]``) are names without a signature
        consts = {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
        assert (set(members) | consts) - STUB_ONLY == real, name
        for mname, fn in members.items():
            if mname in STUB_ONLY:
                continue
            getter = any(isinstance(d, ast.Name) and d.id == "property" for d in fn.decorator_list)
            setter = any(isinstance(d, ast.Attribute) and d.attr == "setter" for d in fn.decorator_list)
            if getter or setter:
                assert isinstance(getattr(obj, mname), property), f"{name}.{mname}"
            else:
                assert _stub_params(fn) == _native_params(getattr(obj, mname)), f"{name}.{mname}"


def test_block_really_has_the_buffer_protocol() -> None:
    b = _native.BuddyAllocator(2 << 20).alloc(16)
    assert memoryview(b).nbytes == 16 and np.frombuffer(memoryview(b), np.uint8).shape == (16,)
