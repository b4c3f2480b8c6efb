"""Attention observation on llama.cpp (CPU, flash attention off): which queries the eviction policies score with.

The native :class:`~nexus_agent.native.Observer` is installed as the context's eval callback. While a lane that
has a KV budget decodes, it copies every layer's post-RoPE Q rows (the ``Qcur-<il>`` ROPE node) of the last tokens
of each batch into that lane's :class:`~nexus_agent.native.QRing`; the engine commits them with the batch's
positions. Scores are then Q·Kᵀ against K read from the sequence state (:mod:`nexus_agent.kv.attention`).

Why Q rather than llama.cpp's own softmaxed attention (``kq_soft_max``, the other mode of the same callback): its
columns are KV *cells*, and the public API does not say which position a cell holds once several sequences share
the cache; and copying it costs n_kv × n_head floats per query per layer where Q costs n_head × head_dim.
``bench/eviction.py`` measures both captures against no callback (docs/measurements.md#kv-eviction).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from nexus_agent.llm.model import LlamaModel
from nexus_agent.native import Observer, QRing

MODE_OFF, MODE_Q, MODE_KQ = 0, 1, 2


@dataclass(frozen=True)
class AttnShape:
    """The attention geometry of a model: layers, query heads, KV heads, head dimension (K and V)."""

    n_layer: int
    n_head: int
    n_head_kv: int
    head_dim: int

    @classmethod
    def of(cls, model: LlamaModel) -> AttnShape:
        n_head = model.arch_int("attention.head_count", 0)
        if n_head <= 0:
            raise ValueError(f"{model.path.name}: no attention.head_count in the GGUF metadata")
        return cls(
            n_layer=model.n_layer,
            n_head=n_head,
            n_head_kv=model.arch_int("attention.head_count_kv", n_head),
            head_dim=model.arch_int("attention.key_length", model.n_embd // n_head),
        )

    def ring(self, capacity: int) -> QRing:
        """An empty ring for the last ``capacity`` query rows of one sequence."""
        return QRing(self.n_layer, self.n_head, self.head_dim, capacity)


class AttentionObserver:
    """Owns the native eval-callback state of one context. Create it before the context (its address goes into
    the context parameters) and keep it for the context's lifetime."""

    def __init__(self, shape: AttnShape, kq_window: int = 16) -> None:
        self.shape = shape
        self.native = Observer(shape.n_layer, kq_window)

    @property
    def callback(self) -> tuple[int, int]:
        """(function address, user-data address) for :class:`~nexus_agent.llm.ContextConfig.eval_callback`."""
        return Observer.callback_address(), self.native.address

    @contextmanager
    def capture(self, ring: QRing) -> Iterator[QRing]:
        """Q rows of every batch decoded inside the block are staged into ``ring`` (the caller commits each batch
        with its positions, or aborts it)."""
        self.native.target(ring)
        self.native.mode = MODE_Q
        try:
            yield ring
        finally:
            self.native.mode = MODE_OFF
            self.native.target(None)

    @contextmanager
    def capture_kq(self) -> Iterator[Observer]:
        """llama.cpp's softmaxed attention rows of every batch decoded inside the block (cells, not positions)."""
        self.native.mode = MODE_KQ
        try:
            yield self.native
        finally:
            self.native.mode = MODE_OFF
