"""Generation on an OpenAI-compatible server (vLLM, SGLang, llama.cpp's ``llama-server``, llama-cpp-python's
server), through the official ``openai`` client: its timeouts, retries and streaming.

Constrained output without logit access. What the server honours is probed once, on first use, with requests whose
constrained answer the model would never write unprompted (so a server that silently ignores a field is caught):

* ``grammar``: a GBNF grammar in the request body (llama.cpp's servers). The exact grammar the in-process sampler
  would apply, so the same greedy picks; such servers also take ``repeat_penalty``, which is sent as the local
  engine uses it (llama-cpp-python's server defaults to 1.1).
* ``json_schema``: OpenAI's ``response_format`` (vLLM, SGLang, llama-server).
* ``json_object``: ``{"type": "json_object", "schema": …}`` (llama-cpp-python's older form).
* ``none``: nothing is enforced; callers validate and repair, as they do locally.

``logprobs``: whether the server returns the first token's top log-probabilities (the relevance judge reads them).

Every failure (unreachable, HTTP 4xx/5xx, a timeout, a model the server does not serve, a reply that is not a
completion or is cut off) raises :class:`RemoteError`, whose message names the server and the cause.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import openai
from pydantic import BaseModel, ConfigDict, Field, field_validator

from nexus_agent.backend.base import JsonConstraint, TokenCallback
from nexus_agent.backend.decision import Choice, Messages
from nexus_agent.engine import Generation
from nexus_agent.kv.segments import Part
from nexus_agent.splice.mode import SpliceMode

Structured = Literal["grammar", "json_schema", "json_object", "none"]
KEY_VARIABLES = ("NEXUS_API_KEY", "OPENAI_API_KEY")
log = logging.getLogger("nexus_agent.backend")

# The probes' constrained answer: a token soup no model writes when asked to say hello.
_PROBE_WORD = "zq7"
_PROBE_SCHEMA = {
    "type": "object",
    "properties": {"x7q": {"type": "string", "enum": [_PROBE_WORD]}},
    "required": ["x7q"],
    "additionalProperties": False,
}
_PROBE_MESSAGES = [{"role": "user", "content": "Say hello."}]


def check_base_url(url: str) -> str:
    """``url`` if it is an http(s) URL, else ValueError saying so (the one check of every place an engine URL enters:
    ``RemoteConfig``, ``AgentConfig.engine``, the config file's ``engine.url``)."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"must be an http:// or https:// base URL, got {url!r}")
    return url


def api_key_from_env() -> str | None:
    """The API key from ``NEXUS_API_KEY``, else ``OPENAI_API_KEY`` (None: the server needs none)."""
    return next((v for k in KEY_VARIABLES if (v := os.environ.get(k))), None)


class RemoteConfig(BaseModel):
    """``url``: the server's OpenAI-compatible base URL (``http://127.0.0.1:8000/v1``). ``model``: the served model's
    name (None: the first one the server lists). ``timeout_s``: per request; ``max_retries``: the client's retries
    on connection errors, 408/409/429 and 5xx."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: str
    model: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=1, ge=0, le=10)

    @field_validator("url")
    @classmethod
    def _http(cls, v: str) -> str:
        return check_base_url(v).rstrip("/")


@dataclass(frozen=True)
class Capabilities:
    """What the server serves and honours (see the module docstring)."""

    model: str
    owned_by: str
    served: tuple[str, ...]
    structured: Structured
    logprobs: bool

    def summary(self) -> str:
        lp = "yes" if self.logprobs else "no"
        return f"model {self.model}; constrained output: {self.structured}; logprobs: {lp}"

    def fallbacks(self) -> list[str]:
        """What falls back, one sentence each (empty when the server honours everything)."""
        out = []
        if self.structured == "none":
            out.append("the server enforces no output format: arguments are validated and repaired afterwards")
        elif self.structured != "grammar":
            out.append(
                f"the server takes no grammar: arguments and the routing decision are constrained through "
                f"{self.structured} instead"
            )
        if not self.logprobs:
            out.append("the server returns no logprobs: the relevance judge reads the model's letter, not its odds")
        return out


class RemoteError(RuntimeError):
    """A request to the server failed; the message names the server and the cause."""

    def __init__(self, server: str, cause: str) -> None:
        super().__init__(f"engine {server}: {cause}")
        self.server = server
        self.cause = cause


@dataclass
class RequestUsage:
    """One request's prompt tokens and the part the server served from its prefix cache (None: not reported)."""

    prompt_tokens: int
    cached_tokens: int | None
    ms: float


@dataclass
class _Reply:
    text: str = ""
    finish: str | None = None
    usage: RequestUsage | None = None
    ttft_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


class RemoteBackend:
    """Generation on an OpenAI-compatible server. Thread-safe: turns of different conversations may call it at once
    (the client's connection pool serves them; nothing here is held across a request)."""

    local = False

    def __init__(self, cfg: RemoteConfig) -> None:
        self.cfg = cfg
        self.label = cfg.url
        self.client = openai.OpenAI(
            base_url=cfg.url,
            api_key=cfg.api_key or api_key_from_env() or "none",  # the client needs some key; local servers ignore it
            timeout=cfg.timeout_s,
            max_retries=cfg.max_retries,
        )
        self._caps: Capabilities | None = None
        self._probe_lock = threading.Lock()
        self.usage: list[RequestUsage] = []  # every completed request, in order (benchmarks read it)

    def turn(self) -> AbstractContextManager[object]:
        return nullcontext()

    def mark(self, lane: int, messages: list[dict[str, str]], parts: list[list[Part]]) -> None:
        """A server keeps no KV budget: nothing to mark."""

    def warm(self, variants: Sequence[Messages], lane: int) -> int:
        return 0  # the server's own prefix cache keeps what repeats

    def prefill(self, variants: Sequence[Messages], lane: int, stop: Callable[[], bool]) -> int:
        return 0  # the server prefills the next request itself (its prefix cache keeps what repeats)

    def decider(self, splice: SpliceMode = SpliceMode.OFF) -> RemoteDecider:
        """Routing's questions on this server (``splice`` is a local notion: ignored)."""
        return RemoteDecider(self)

    def close(self) -> None:
        """Close the client's connection pool."""
        self.client.close()

    # -- capabilities
    def capabilities(self) -> Capabilities:
        """Probe the server once (a failed probe is not kept: the next call tries again)."""
        with self._probe_lock:
            if self._caps is None:
                self._caps = self._probe()
            return self._caps

    def _probe(self) -> Capabilities:
        with self._errors("listing its models"):
            listed = list(self.client.models.list())
        served = tuple(m.id for m in listed)
        if not served:
            raise RemoteError(self.label, "serves no model (GET /models is empty)")
        model = self.cfg.model or served[0]
        if model not in served:
            raise RemoteError(self.label, f"does not serve model {model!r} (it serves: {', '.join(served)})")
        owned_by = next(str(getattr(m, "owned_by", "") or "") for m in listed if m.id == model)
        structured: Structured = "none"
        tries: Sequence[tuple[Structured, dict[str, Any]]] = (
            ("grammar", {"extra_body": {"grammar": f'root ::= "{_PROBE_WORD}"'}}),
            (
                "json_schema",
                {"response_format": {"type": "json_schema", "json_schema": {"name": "probe", "schema": _PROBE_SCHEMA}}},
            ),
            ("json_object", {"response_format": {"type": "json_object", "schema": _PROBE_SCHEMA}}),
        )
        for mode, extra in tries:
            reply = self._refusable(model, max_tokens=16, **extra)
            if reply is not None and _honours(mode, reply.text):
                structured = mode
                break
        lp = self._refusable(model, max_tokens=1, logprobs=True, top_logprobs=5)
        logprobs = lp is not None and bool(lp.extra.get("top_logprobs"))
        return Capabilities(model, owned_by, served, structured, logprobs)

    def _refusable(self, model: str, **kwargs: Any) -> _Reply | None:
        """A probe request; None when the server refuses its fields (HTTP 400/404/422), an error otherwise."""
        try:
            return self._create(dict(model=model, messages=_PROBE_MESSAGES, temperature=0.0, **kwargs), "probing")
        except RemoteError as e:
            if isinstance(e.__cause__, openai.BadRequestError | openai.UnprocessableEntityError | openai.NotFoundError):
                return None
            raise

    # -- requests
    def chat(
        self,
        messages: list[dict[str, str]],
        *,
        lane: int = 0,
        max_tokens: int,
        json: JsonConstraint | None = None,
        repeat_penalty: float = 1.0,
        on_token: TokenCallback | None = None,
        keep: bool = True,
    ) -> Generation:
        """See :meth:`nexus_agent.backend.Backend.chat`; ``lane`` and ``keep`` mean nothing to a server."""
        caps = self.capabilities()
        req: dict[str, Any] = dict(model=caps.model, messages=messages, max_tokens=max_tokens, temperature=0.0)
        extra: dict[str, Any] = {}
        if caps.structured == "grammar":
            extra["repeat_penalty"] = repeat_penalty
        if json is not None:
            req.update(_constraint(caps.structured, json.gbnf, json.schema))
            extra.update(req.pop("extra_body", {}))
        if extra:
            req["extra_body"] = extra
        t0 = time.perf_counter()
        reply = self._stream(req, on_token) if on_token is not None else self._create(req, "generating")
        total = (time.perf_counter() - t0) * 1e3
        u = reply.usage
        return Generation(
            tokens=[],
            text=reply.text,
            n_prompt=u.prompt_tokens if u else 0,
            n_reused=(u.cached_tokens or 0) if u else 0,
            ttft_ms=reply.ttft_ms or total,
            total_ms=total,
            stopped="max_tokens" if reply.finish == "length" else "eog",
        )

    def choose(self, messages: list[dict[str, str]], options: Sequence[str]) -> str | None:
        """The option the model picks, constrained to ``options`` as far as the server allows; None when an
        unconstrained reply names none of them."""
        caps = self.capabilities()
        schema = {
            "type": "object",
            "properties": {"tool": {"type": "string", "enum": list(options)}},
            "required": ["tool"],
            "additionalProperties": False,
        }
        gbnf = "root ::= " + " | ".join(json.dumps(o) for o in options)
        req: dict[str, Any] = dict(model=caps.model, messages=messages, max_tokens=48, temperature=0.0)
        req.update(_constraint(caps.structured, gbnf, schema))
        if caps.structured == "grammar":
            req["extra_body"]["repeat_penalty"] = 1.0
        text = self._create(req, "deciding").text.strip()
        if caps.structured == "grammar":
            return text if text in options else None
        try:
            picked = json.loads(text).get("tool") if caps.structured != "none" else None
        except (ValueError, AttributeError):
            picked = None
        if picked in options:
            return str(picked)
        # unconstrained (or a server that ignored the schema): the longest option the reply names
        named = [o for o in options if o in text]
        return max(named, key=len) if named else None

    def first_token_logprobs(self, messages: list[dict[str, str]], k: int = 20) -> dict[str, float] | None:
        """The top ``k`` log-probabilities of the reply's first token, by token text (None: no logprobs here)."""
        caps = self.capabilities()
        if not caps.logprobs:
            return None
        req: dict[str, Any] = dict(
            model=caps.model, messages=messages, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=k
        )
        reply = self._create(req, "scoring")
        return dict(reply.extra.get("top_logprobs") or {})

    def _create(self, req: dict[str, Any], doing: str) -> _Reply:
        t0 = time.perf_counter()
        with self._errors(doing):
            res = self.client.chat.completions.create(**req)
        if not getattr(res, "choices", None):
            raise RemoteError(self.label, f"returned no completion while {doing} (no choices in the reply)")
        choice = res.choices[0]
        content = choice.message.content if choice.message is not None else None
        if content is None:
            raise RemoteError(self.label, f"returned a completion without text while {doing}")
        out = _Reply(text=content, finish=choice.finish_reason, usage=self._usage(res, t0))
        lp = getattr(choice, "logprobs", None)
        if lp is not None and lp.content:
            out.extra["top_logprobs"] = {t.token: float(t.logprob) for t in (lp.content[0].top_logprobs or [])}
        return out

    def _stream(self, req: dict[str, Any], on_token: TokenCallback) -> _Reply:
        t0 = time.perf_counter()
        out = _Reply()
        parts: list[str] = []
        with self._errors("streaming the answer"):
            stream = self.client.chat.completions.create(**req, stream=True, stream_options={"include_usage": True})
            with stream:
                for chunk in stream:
                    if chunk.usage is not None:
                        out.usage = self._usage(chunk, t0)
                    for choice in chunk.choices or []:
                        delta = choice.delta.content if choice.delta is not None else None
                        if delta:
                            if not parts:
                                out.ttft_ms = (time.perf_counter() - t0) * 1e3
                            parts.append(delta)
                            on_token(delta)
                        if choice.finish_reason is not None:
                            out.finish = choice.finish_reason
        if out.finish is None:
            raise RemoteError(self.label, "the answer's stream ended without a finish reason (cut off)")
        out.text = "".join(parts)
        if out.usage is None:
            self.usage.append(RequestUsage(0, None, (time.perf_counter() - t0) * 1e3))
        return out

    def _usage(self, res: Any, t0: float) -> RequestUsage:
        u = getattr(res, "usage", None)
        details = getattr(u, "prompt_tokens_details", None) if u is not None else None
        cached = getattr(details, "cached_tokens", None) if details is not None else None
        rec = RequestUsage(int(getattr(u, "prompt_tokens", 0) or 0), cached, (time.perf_counter() - t0) * 1e3)
        self.usage.append(rec)
        # the server's prefix cache, where it says (vLLM with --enable-prompt-tokens-details, SGLang, llama-server)
        log.info("%s: %d prompt tokens, %s cached, %.0f ms", self.label, rec.prompt_tokens, cached, rec.ms)
        return rec

    @contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """Map the client's exceptions to :class:`RemoteError` (the original is its ``__cause__``)."""
        try:
            yield
        except openai.APITimeoutError as e:
            raise RemoteError(self.label, f"timed out after {self.cfg.timeout_s:g} s while {doing}") from e
        except openai.APIConnectionError as e:
            cause = e.__cause__ or e
            raise RemoteError(self.label, f"unreachable while {doing} ({cause})") from e
        except openai.APIStatusError as e:
            raise RemoteError(self.label, f"HTTP {e.status_code} while {doing}: {_message(e)}") from e
        except (openai.OpenAIError, ValueError) as e:  # an undecodable or malformed body
            raise RemoteError(self.label, f"sent an invalid response while {doing}: {e}") from e


def _constraint(mode: Structured, gbnf: str, schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The request fields that constrain a reply under ``mode``."""
    if mode == "grammar":
        return {"extra_body": {"grammar": gbnf}}
    body = dict(schema) if schema is not None else {"type": "object"}
    if mode == "json_schema":
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "reply", "schema": body}}}
    if mode == "json_object":
        return {"response_format": {"type": "json_object", "schema": body}}
    return {}


def _honours(mode: Structured, text: str) -> bool:
    """Whether a probe's reply is the constrained answer (a server that ignored the field answers hello)."""
    if mode == "grammar":
        return text.strip() == _PROBE_WORD
    try:
        return bool(json.loads(text) == {"x7q": _PROBE_WORD})
    except ValueError:
        return False


def _message(e: openai.APIStatusError) -> str:
    """The server's error message, else the body's start."""
    body = e.body
    if isinstance(body, Mapping):
        err = body.get("error", body)
        msg = err.get("message") if isinstance(err, Mapping) else err
        if msg:
            return str(msg)[:300]
    return str(e.message)[:300]


# Without logprobs, the answer the model writes stands for this many nats either way: beyond any threshold, so the
# answer decides, and no stronger than a clear logit answer.
LETTER_ODDS = 5.0


class RemoteDecider:
    """Routing's questions (:mod:`nexus_agent.backend.decision`) on the server: a choice is its constrained output
    (a grammar of the names, or a JSON schema whose field is an enum of them), log-odds come from the first token's
    top log-probabilities. Lanes and compiled blocks are local notions: a server ignores them (its own prefix cache
    finds what repeats)."""

    def __init__(self, backend: RemoteBackend) -> None:
        self.backend = backend
        self.label = backend.label

    def choose(self, messages: Messages, names: Sequence[str], *, lane: int, stable: Sequence[str] = ()) -> Choice:
        picked = self.backend.choose(messages, list(names))
        return Choice(picked, [1.0 if n == picked else 0.0 for n in names])

    def log_odds(self, messages: Messages, yes: Sequence[str], no: Sequence[str], *, lane: int) -> float:
        """From the first token's top log-probabilities (a spelling outside them counts at the lowest one returned,
        its upper bound), or, on a server without logprobs, the answer it writes, as ±``LETTER_ODDS``."""
        yes_set, no_set = {w.strip() for w in yes}, {w.strip() for w in no}
        top = self.backend.first_token_logprobs(messages)
        if top:
            floor = min(top.values())
            y = [v for t, v in top.items() if t.strip() in yes_set] or [floor]
            n = [v for t, v in top.items() if t.strip() in no_set] or [floor]
            return float(np.logaddexp.reduce(y) - np.logaddexp.reduce(n))
        said = self.backend.choose(messages, [no[0].strip(), yes[0].strip()])
        return LETTER_ODDS if said is not None and said.strip() in yes_set else -LETTER_ODDS

    def separable(self, yes: Sequence[str], no: Sequence[str]) -> bool:
        return not {w.strip() for w in yes} & {w.strip() for w in no}

    def head(self, variants: Sequence[Messages]) -> int:
        return 0  # the server tokenises; its prefix cache keeps the head

    def warm(self, variants: Sequence[Messages], *, lane: int) -> int:
        return 0

    def settle(self) -> None:
        pass
