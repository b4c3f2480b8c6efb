"""Bounded KV memory for long agent traces (issue 26; papers 000 Nexus Sampling and 002 LORE-KV).

Layers: ``native/kv`` + ``native/python/bind_observe.cpp`` (the eval callback that copies each layer's post-RoPE Q
as llama.cpp computes it) → :mod:`observe` (the Python owner of that callback) → :mod:`attention` (block attention
of the observed queries over the cached cells, from K and V read out of the sequence state) → :mod:`policies` (one
file per eviction policy, one registry) and :mod:`select` (the selection, written once) → :mod:`evictor` (the engine
side: when a lane reaches its budget, drop the unselected 32-token blocks and compact positions).
"""
