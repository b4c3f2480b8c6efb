"""Models the project ships inside the package: its own build outputs, reviewed in git like code.

Each lives in ``artifacts/<name>/`` with an ``artifact.json`` that records every file's size and sha256, the recipe
key it was built from (``nexus_agent.training`` computes it) and the training manifest. The store copies the files
into ``$NEXUS_HOME/models`` and checks every hash, so a corrupt install is reported by file name.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nexus_agent.models.errors import ModelError

ARTIFACTS = Path(__file__).parent / "artifacts"
_CHUNK = 1 << 22


@dataclass(frozen=True)
class FileDigest:
    size: int  # bytes
    sha256: str  # hex


@dataclass(frozen=True)
class Artifact:
    name: str
    recipe: str  # the recipe key it was built from
    files: dict[str, FileDigest]
    manifest: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def file_digest(path: Path) -> FileDigest:
    return FileDigest(path.stat().st_size, sha256_file(path))


def artifact_dir(name: str) -> Path:
    return ARTIFACTS / name


def read_artifact(name: str) -> Artifact:
    """The record of shipped model ``name``; ModelError when it is missing or unreadable."""
    path = artifact_dir(name) / "artifact.json"
    try:
        data = json.loads(path.read_text())
        files = {k: FileDigest(int(v["size"]), str(v["sha256"])) for k, v in data["files"].items()}
        return Artifact(str(data["name"]), str(data["recipe"]), files, dict(data.get("manifest", {})))
    except FileNotFoundError as e:
        raise ModelError(f"shipped model {name!r} has no record {path}: the package is incomplete") from e
    except (ValueError, KeyError, TypeError) as e:
        raise ModelError(f"shipped model {name!r}: {path} is malformed ({e})") from e
