"""Where text is generated: the in-process llama.cpp engine (:class:`LocalBackend`, the default) or an
OpenAI-compatible server (:class:`RemoteBackend`: vLLM, SGLang, llama.cpp's ``llama-server``, llama-cpp-python's
server). Routing retrieval always stays local; the agent's generation goes through a :class:`Backend`."""

from nexus_agent.backend.base import Backend, JsonConstraint
from nexus_agent.backend.local import LocalBackend
from nexus_agent.backend.remote import (
    Capabilities,
    RemoteBackend,
    RemoteConfig,
    RemoteError,
    api_key_from_env,
    check_base_url,
)

__all__ = [
    "Backend",
    "Capabilities",
    "JsonConstraint",
    "LocalBackend",
    "RemoteBackend",
    "RemoteConfig",
    "RemoteError",
    "api_key_from_env",
    "check_base_url",
]
