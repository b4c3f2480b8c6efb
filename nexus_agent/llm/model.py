"""``LlamaModel``: owns one llama.cpp model handle (weights + vocabulary) through the low-level API.

The high-level ``llama_cpp.Llama`` class hard-codes ``n_seq_max=1`` and ``kv_unified=False``, which rules
out sidecar sequences and splicing, so Nexus Agent binds the C API directly (``llama_cpp.llama_cpp``).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from pathlib import Path
from types import TracebackType

import llama_cpp.llama_cpp as L

_init_lock = threading.Lock()
_initialised = False
_log_cb: object = None


def init_backend() -> None:
    """Initialise llama.cpp once per process and route its logs: errors/warnings only, unless
    ``NEXUS_LLAMA_VERBOSE=1``. Idempotent and thread-safe."""
    global _initialised, _log_cb
    with _init_lock:
        if _initialised:
            return
        L.llama_backend_init()
        if not os.environ.get("NEXUS_LLAMA_VERBOSE"):

            @ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
            def cb(level: int, text: bytes | None, user: object) -> None:
                # ggml log levels: 1 debug, 2 info, 3 warn, 4 error, 5 continuation
                if level == 4 and text:
                    os.write(2, text)

            _log_cb = cb  # keep a reference: llama.cpp stores only the raw pointer
            L.llama_log_set(cb, ctypes.c_void_p(0))
        _initialised = True


class LlamaModel:
    """A loaded GGUF model. Thread-safe for read-only use (tokenising); free it with ``close()``.

    ``path`` is a GGUF file; short names are resolved above this layer (``nexus_agent.models.resolve``).
    """

    def __init__(self, path: str | os.PathLike[str], n_gpu_layers: int = 0) -> None:
        init_backend()
        self.path: Path = Path(path)
        if not self.path.is_file():
            raise FileNotFoundError(f"no GGUF model at {self.path}")
        mp = L.llama_model_default_params()
        mp.n_gpu_layers = n_gpu_layers
        # AMX guard: the CPU "extra" buffer types repack quantized weights for AMX, and that path
        # segfaults on AMX-capable Xeons (upstream issue 20824). Our wheel is built without AMX too.
        mp.use_extra_bufts = False
        self._model = L.llama_model_load_from_file(str(self.path).encode(), mp)
        if not self._model:
            raise RuntimeError(f"llama.cpp could not load model {self.path}")
        self._vocab = L.llama_model_get_vocab(self._model)
        self.n_vocab: int = L.llama_vocab_n_tokens(self._vocab)
        self.n_layer: int = L.llama_model_n_layer(self._model)
        self.n_embd: int = L.llama_model_n_embd(self._model)
        self.n_ctx_train: int = L.llama_model_n_ctx_train(self._model)
        self.rope_type: int = L.llama_model_rope_type(self._model)
        self.arch: str = self.meta("general.architecture") or "unknown"

    # -- lifetime
    @property
    def handle(self) -> object:
        if not self._model:
            raise RuntimeError("model is closed")
        return self._model

    @property
    def vocab(self) -> object:
        return self._vocab

    def close(self) -> None:
        if self._model:
            L.llama_model_free(self._model)
            self._model = None

    def __enter__(self) -> LlamaModel:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- metadata
    def meta(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(8192)
        n = L.llama_model_meta_val_str(self.handle, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace") if n >= 0 else None

    def arch_int(self, key: str, default: int) -> int:
        """The architecture's metadata ``<arch>.<key>`` as an int (``default`` when absent or empty)."""
        v = self.meta(f"{self.arch}.{key}")
        return int(float(v)) if v not in (None, "") else default

    def arch_float(self, key: str, default: float) -> float:
        """The architecture's metadata ``<arch>.<key>`` as a float (``default`` when absent or empty)."""
        v = self.meta(f"{self.arch}.{key}")
        return float(v) if v not in (None, "") else default

    # -- vocabulary
    def tokenize(self, text: str, add_special: bool = False, parse_special: bool = True) -> list[int]:
        """Token ids of ``text``; ``parse_special`` lets ``<|im_start|>`` etc. map to their special ids."""
        data = text.encode("utf-8")
        n_max = len(data) + 16
        arr = (L.llama_token * n_max)()
        n = L.llama_tokenize(self._vocab, data, len(data), arr, n_max, add_special, parse_special)
        if n < 0:
            n_max = -n
            arr = (L.llama_token * n_max)()
            n = L.llama_tokenize(self._vocab, data, len(data), arr, n_max, add_special, parse_special)
        return list(arr[:n])

    def token_bytes(self, token: int, special: bool = True) -> bytes:
        """The raw bytes of one token (may be a partial UTF-8 sequence)."""
        buf = ctypes.create_string_buffer(256)
        n = L.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, special)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = L.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, special)
        return buf.raw[:n]

    def detokenize(self, tokens: list[int], special: bool = False) -> str:
        return b"".join(self.token_bytes(t, special) for t in tokens).decode("utf-8", "replace")

    def is_eog(self, token: int) -> bool:
        return bool(L.llama_vocab_is_eog(self._vocab, token))

    def eos(self) -> int:
        return int(L.llama_vocab_eos(self._vocab))

    # -- chat template
    def chat_template(self) -> str | None:
        tmpl = L.llama_model_chat_template(self.handle, None)
        return tmpl.decode("utf-8") if tmpl else None

    def apply_chat_template(self, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
        """Render ``messages`` ([{"role", "content"}]) with the model's own template, via jinja2 so
        templates llama.cpp's built-in matcher does not know still work."""
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        tmpl = self.chat_template()
        if not tmpl:
            raise RuntimeError(f"model {self.path.name} has no chat template")
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        text: str = env.from_string(tmpl).render(
            messages=messages, add_generation_prompt=add_generation_prompt, bos_token="", eos_token=""
        )
        return text
