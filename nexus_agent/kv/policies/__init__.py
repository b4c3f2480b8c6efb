"""KV eviction policies, one file each, in one registry.

A policy turns an :class:`~nexus_agent.kv.policies.base.Observation` (the observed queries' attention over the
lane's cached cells, grouped in 32-token blocks) into one priority per block; :func:`nexus_agent.kv.select.
select_blocks` keeps the forced blocks (the attention sink, the recent window, whatever the radix arena or a
splice still references) and then the highest priorities.

==========  =====================================================================================================
name        priority
==========  =====================================================================================================
streaming   recency only: the sink plus the most recent blocks (StreamingLLM)
h2o         attention accumulated over every observed query and eviction step, deterministic top-K (H2O)
snapkv      the observation window's attention, pooled over neighbouring tokens, deterministic top-K (SnapKV)
nexus       direct score + λ × walk bridge score + recency tie-break, n-averaged weighted-reservoir priority
            (paper 000, Eqs. 1–6; defaults of §5.1)
lore        reliability-weighted projected leave-one-out deletion cost over the window and M sampled
            continuations (paper 002, Eqs. 1–7; defaults of Table 4)
keydiff     minus each key's cosine to the mean key, no query (KeyDiff); the one that needs no attention
kvzip       max attention from a teacher-forced "repeat the text" pass over the scored text (KVzip)
==========  =====================================================================================================

Inside the memory manager (:mod:`nexus_agent.kv.memory`) the same classes are scorers: each turn's results are
scored once, cell by cell (``block`` 1), when the turn completes.
"""

from __future__ import annotations

from nexus_agent.kv.policies.base import Observation, Policy
from nexus_agent.kv.policies.h2o import H2O
from nexus_agent.kv.policies.keydiff import KeyDiff
from nexus_agent.kv.policies.kvzip import KVzip
from nexus_agent.kv.policies.lore import Lore
from nexus_agent.kv.policies.nexus import Nexus
from nexus_agent.kv.policies.snapkv import SnapKV
from nexus_agent.kv.policies.streaming import Streaming

POLICIES: dict[str, type[Policy]] = {p.name: p for p in (Streaming, H2O, SnapKV, Nexus, Lore, KeyDiff, KVzip)}
# what ``--evict`` / ``AgentConfig.evict`` / ``EngineConfig.evict`` accept: a policy, or none (keep every token)
EVICT_CHOICES = (*POLICIES, "none")


def check_evict(name: str) -> str:
    """``name`` if it is one of :data:`EVICT_CHOICES`, else ValueError naming them (the one check of every place
    an eviction policy enters)."""
    if name not in EVICT_CHOICES:
        raise ValueError(f"unknown eviction policy {name!r}; choose one of {', '.join(EVICT_CHOICES)}")
    return name


def make_policy(name: str, seed: int = 0) -> Policy:
    """A fresh policy by registry name (ValueError naming the choices for any other)."""
    cls = POLICIES.get(name)
    if cls is None:
        raise ValueError(f"unknown eviction policy {name!r}; choose one of {', '.join(POLICIES)}")
    return cls(seed=seed)


__all__ = ["EVICT_CHOICES", "POLICIES", "Observation", "Policy", "check_evict", "make_policy"]
