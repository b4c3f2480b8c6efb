"""Where text is generated: the in-process llama.cpp engine (:class:`LocalBackend`, the default) or an
OpenAI-compatible server (:class:`RemoteBackend`: vLLM, SGLang, llama.cpp's ``llama-server``, llama-cpp-python's
server). Routing retrieval always stays local; the agent's generation goes through a :class:`Backend`, and routing's
questions to a model through its :class:`Decider`."""

from nexus_agent.backend.base import Backend, JsonConstraint
from nexus_agent.backend.decision import Choice, Decider
from nexus_agent.backend.local import LocalBackend, LocalDecider
from nexus_agent.backend.remote import (
    Capabilities,
    RemoteBackend,
    RemoteConfig,
    RemoteDecider,
    RemoteError,
    api_key_from_env,
    check_base_url,
)

# The engine's lanes, named where routing and the agent ask the backend for text (a server ignores them).
from nexus_agent.engine import CHAT, MAIN, RELEVANCE, SCRATCH, SIDECAR  # isort: skip

__all__ = [
    "CHAT",
    "MAIN",
    "RELEVANCE",
    "SCRATCH",
    "SIDECAR",
    "Backend",
    "Capabilities",
    "Choice",
    "Decider",
    "JsonConstraint",
    "LocalBackend",
    "LocalDecider",
    "RemoteBackend",
    "RemoteConfig",
    "RemoteDecider",
    "RemoteError",
    "api_key_from_env",
    "check_base_url",
]
