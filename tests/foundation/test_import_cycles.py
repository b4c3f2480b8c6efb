"""No import cycle between modules: between packages (the layer contract in pyproject.toml sees those too) and inside
one package, between a package and its own modules, or across layers, none of which the contract sees.

An import inside a function or under ``TYPE_CHECKING`` counts: the cycle is in the design even where import order
happens to let it load (``engine.py`` once imported ``engine/splice.py`` inside a method, and ``splice.py`` imported
``engine.py``)."""

from __future__ import annotations

import grimp

PACKAGES = ("nexus_agent", "atb_compiler")


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Each cycle once, as the modules along it (the first one again at the end), shortest way back first found."""
    seen: set[frozenset[str]] = set()
    cycles: list[list[str]] = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is None:
                continue
            cycle = [importer, *back]
            if frozenset(cycle) not in seen:
                seen.add(frozenset(cycle))
                cycles.append(cycle)
    return cycles


def test_no_module_imports_itself_back() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    cycles = import_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)
