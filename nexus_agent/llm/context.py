"""``LlamaContext``: owns one llama.cpp context (KV cache + batch) and exposes decode, logits, sequence
edits and per-sequence state, with every native precondition checked before the call.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

import llama_cpp.llama_cpp as L
import numpy as np

from nexus_agent.llm.model import LlamaModel


class DecodeError(RuntimeError):
    """llama_decode failed (e.g. the KV cache is full). The context is left as it was before the call
    for the tokens of the failing batch; earlier batches of the same call stay decoded.

    ``rc`` is llama_decode's return code: 1 means no KV cells were free for the batch (evicting can help)."""

    def __init__(self, message: str, rc: int) -> None:
        super().__init__(message)
        self.rc = rc


@dataclass(frozen=True)
class ContextConfig:
    """Context parameters.

    For bit-exact comparisons use ``flash_attn=False``, an f16 K cache, one thread and a fixed ubatch: those choices
    each move outputs by about 1e-2 nats otherwise (docs/measurements.md#compiled-tool-blocks).
    """

    n_ctx: int = 4096
    n_batch: int = 512
    n_ubatch: int = 512
    n_seq_max: int = 4
    kv_unified: bool = True  # needed for seq_cp between sequences (sidecar, radix arena, splicing)
    flash_attn: bool = False
    n_threads: int = 2
    embeddings: bool = False
    pooling: int = -1  # LLAMA_POOLING_TYPE_UNSPECIFIED: the model's own default
    seed: int = 0
    # llama.cpp's eval callback (ggml_backend_sched_eval_callback) as (function address, user-data address), e.g.
    # a native attention Observer (nexus_agent/kv/observe.py); None: no callback, graphs run in one piece
    eval_callback: tuple[int, int] | None = None


class LlamaContext:
    """One llama.cpp context over a ``LlamaModel``. Not thread-safe: callers serialise (the engine holds
    one coarse lock per turn)."""

    def __init__(self, model: LlamaModel, cfg: ContextConfig | None = None) -> None:
        self.model = model
        self.cfg = cfg = cfg or ContextConfig()
        cp = L.llama_context_default_params()
        cp.n_ctx = cfg.n_ctx
        cp.n_batch = cfg.n_batch
        cp.n_ubatch = cfg.n_ubatch
        cp.n_seq_max = cfg.n_seq_max
        cp.kv_unified = cfg.kv_unified
        cp.n_threads = cfg.n_threads
        cp.n_threads_batch = cfg.n_threads
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_ENABLED if cfg.flash_attn else L.LLAMA_FLASH_ATTN_TYPE_DISABLED
        cp.embeddings = cfg.embeddings
        cp.pooling_type = cfg.pooling
        if cfg.eval_callback is not None:
            fn, user = cfg.eval_callback
            cp.cb_eval = L.ggml_backend_sched_eval_callback(fn)
            cp.cb_eval_user_data = ctypes.c_void_p(user)
        self._ctx = L.llama_init_from_model(model.handle, cp)
        if not self._ctx:
            raise RuntimeError(f"llama.cpp could not create a context (n_ctx={cfg.n_ctx}) for {model.path.name}")
        self._mem = L.llama_get_memory(self._ctx)
        self.n_ctx: int = L.llama_n_ctx(self._ctx)
        self._batch = L.llama_batch_init(cfg.n_batch, 0, cfg.n_seq_max)

    # -- lifetime
    @property
    def handle(self) -> object:
        if not self._ctx:
            raise RuntimeError("context is closed")
        return self._ctx

    def close(self) -> None:
        # Order matters: the batch, then the context; the model is owned by the caller.
        if self._ctx:
            L.llama_batch_free(self._batch)
            L.llama_free(self._ctx)
            self._ctx = None

    def __enter__(self) -> LlamaContext:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- decoding
    def _check_seq(self, seq: int) -> None:
        if not 0 <= seq < self.cfg.n_seq_max:
            raise ValueError(f"sequence id {seq} out of range [0, {self.cfg.n_seq_max})")

    def decode(self, tokens: list[int], pos0: int, seq: int = 0, n_logits: int = 1) -> np.ndarray | None:
        """Decode ``tokens`` at positions ``pos0 ..`` in sequence ``seq``.

        Returns float32 logits of shape [n_logits, n_vocab] for the last ``n_logits`` tokens (None when
        ``n_logits`` is 0). Raises DecodeError if llama.cpp refuses a batch (e.g. KV cache full).
        """
        self._check_seq(seq)
        n = len(tokens)
        if n == 0:
            return None
        if pos0 < 0 or pos0 + n > self.n_ctx:
            raise ValueError(f"positions {pos0}..{pos0 + n} do not fit the context of {self.n_ctx} tokens")
        first_out = n - n_logits
        outs: list[np.ndarray] = []
        b = self._batch
        i = 0
        while i < n:
            nb = min(self.cfg.n_batch, n - i)
            b.n_tokens = nb
            want: list[int] = []
            for j in range(nb):
                b.token[j] = tokens[i + j]
                b.pos[j] = pos0 + i + j
                b.n_seq_id[j] = 1
                b.seq_id[j][0] = seq
                out = (i + j) >= first_out
                b.logits[j] = 1 if out else 0
                if out:
                    want.append(j)
            rc = L.llama_decode(self.handle, b)
            if rc != 0:
                raise DecodeError(
                    f"llama_decode returned {rc} at positions {pos0 + i}..{pos0 + i + nb} (seq {seq})", rc
                )
            for j in want:
                outs.append(self.logits_ith(j))
            i += nb
        return np.stack(outs) if outs else None

    def decode_batch(
        self,
        tokens: Sequence[int],
        positions: Sequence[int],
        seqs: Sequence[int],
        logits_last: bool = True,
        all_logits: bool = False,
    ) -> np.ndarray | None:
        """Decode tokens at explicit positions and sequences in batches of ``n_batch`` (llama.cpp requires each
        sequence's positions in a batch to continue its stored ones without gaps: callers order them).

        Returns the float32 logits [n_vocab] of the last token when ``logits_last``; with ``all_logits`` (at most
        ``n_batch`` tokens) those of every token, [n, n_vocab].
        """
        n = len(tokens)
        if not (n == len(positions) == len(seqs)):
            raise ValueError(f"decode_batch: {n} tokens, {len(positions)} positions, {len(seqs)} sequences")
        if n == 0:
            return None
        for s in set(seqs):
            self._check_seq(s)
        if min(positions) < 0 or max(positions) >= self.n_ctx:
            raise ValueError(f"positions {min(positions)}..{max(positions)} do not fit the context of {self.n_ctx}")
        if all_logits and n > self.cfg.n_batch:
            raise ValueError(f"all_logits needs one batch: {n} tokens > n_batch {self.cfg.n_batch}")
        b = self._batch
        out: np.ndarray | None = None
        for i in range(0, n, self.cfg.n_batch):
            nb = min(self.cfg.n_batch, n - i)
            b.n_tokens = nb
            for j in range(nb):
                b.token[j] = tokens[i + j]
                b.pos[j] = positions[i + j]
                b.n_seq_id[j] = 1
                b.seq_id[j][0] = seqs[i + j]
                b.logits[j] = 1 if (all_logits or (logits_last and i + j == n - 1)) else 0
            rc = L.llama_decode(self.handle, b)
            if rc != 0:
                raise DecodeError(
                    f"llama_decode returned {rc} for a batch of {nb} tokens at positions {positions[i]}…", rc
                )
            if all_logits:
                out = np.stack([self.logits_ith(j) for j in range(nb)])
            elif logits_last and i + nb == n:
                out = self.logits_ith(nb - 1)
        return out

    def logits_ith(self, i: int) -> np.ndarray:
        """A copy of the logits row of output ``i`` of the last batch, float32 [n_vocab]."""
        p = L.llama_get_logits_ith(self.handle, i)
        if not p:
            raise RuntimeError(f"no logits for output {i} of the last batch")
        return np.ctypeslib.as_array(p, shape=(self.model.n_vocab,)).copy()

    def embedding(self, seq: int = 0) -> np.ndarray:
        """The pooled embedding of sequence ``seq`` (float32 [n_embd]); needs ``embeddings=True``."""
        p = L.llama_get_embeddings_seq(self.handle, seq)
        if not p:
            raise RuntimeError("no pooled embedding: create the context with embeddings=True and a pooling type")
        return np.ctypeslib.as_array(p, shape=(self.model.n_embd,)).copy()

    # -- memory: every edit goes through these, with preconditions checked
    def seq_rm(self, seq: int, p0: int = -1, p1: int = -1) -> None:
        if seq >= 0:  # -1 means every sequence
            self._check_seq(seq)
        if not L.llama_memory_seq_rm(self._mem, seq, p0, p1):
            raise RuntimeError(f"llama.cpp refused to remove positions [{p0}, {p1}) of sequence {seq}")

    def seq_cp(self, src: int, dst: int, p0: int = -1, p1: int = -1) -> None:
        self._check_seq(src)
        self._check_seq(dst)
        if not self.cfg.kv_unified:
            # With split streams seq_cp copies a whole stream and wipes the target's prefix.
            raise RuntimeError("seq_cp between sequences needs kv_unified=True")
        L.llama_memory_seq_cp(self._mem, src, dst, p0, p1)

    def seq_add(self, seq: int, p0: int, p1: int, delta: int) -> None:
        self._check_seq(seq)
        L.llama_memory_seq_add(self._mem, seq, p0, p1, delta)

    def seq_pos_max(self, seq: int) -> int:
        """Largest position held by ``seq``, or -1 when empty."""
        self._check_seq(seq)
        return int(L.llama_memory_seq_pos_max(self._mem, seq))

    def seq_pos_min(self, seq: int) -> int:
        self._check_seq(seq)
        return int(L.llama_memory_seq_pos_min(self._mem, seq))

    def clear(self) -> None:
        L.llama_memory_clear(self._mem, True)

    # -- per-sequence state blobs (layout: nexus_agent/splice/blob.py)
    def seq_state(self, seq: int, flags: int = 0) -> bytes:
        self._check_seq(seq)
        n = L.llama_state_seq_get_size_ext(self.handle, seq, flags)
        buf = (ctypes.c_uint8 * n)()
        written = L.llama_state_seq_get_data_ext(self.handle, buf, n, seq, flags)
        if written != n:
            raise RuntimeError(f"state of sequence {seq}: wrote {written} of {n} bytes")
        return bytes(buf)

    def set_seq_state(self, blob: bytes | bytearray | np.ndarray, seq: int, flags: int = 0) -> None:
        """Replace sequence ``seq`` with ``blob`` (llama.cpp removes the sequence first; it cannot append).

        ``blob``: bytes, or a writable bytearray / contiguous uint8 array, which is read in place (no copy)."""
        self._check_seq(seq)
        view = memoryview(blob.data if isinstance(blob, np.ndarray) else blob)
        n = view.nbytes
        buf = (ctypes.c_uint8 * n).from_buffer_copy(view) if view.readonly else (ctypes.c_uint8 * n).from_buffer(view)
        if L.llama_state_seq_set_data_ext(self.handle, buf, n, seq, flags) == 0:
            raise RuntimeError(f"llama.cpp rejected a {n}-byte state blob for sequence {seq}")
