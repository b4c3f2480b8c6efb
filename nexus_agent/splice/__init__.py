"""Compiled tool blocks: KV-cache rows computed ahead of time and spliced into a live llama.cpp context.

``atb`` is the on-disk format of one block (docs/atb-format.md) and the cache that holds loaded blocks.
"""

from nexus_agent.splice.atb import (
    GGML_TYPE_F16,
    ROPE_NEOX,
    ROPE_NORM,
    AtbBlock,
    AtbError,
    AtbHeader,
    AtbMismatch,
    BlockCache,
    ModelFingerprint,
    RopeSet,
    SpliceTarget,
    atb_dir,
    check_compatible,
    header_hash,
    read_atb,
    write_atb,
)

__all__ = [
    "GGML_TYPE_F16",
    "ROPE_NEOX",
    "ROPE_NORM",
    "AtbBlock",
    "AtbError",
    "AtbHeader",
    "AtbMismatch",
    "BlockCache",
    "ModelFingerprint",
    "RopeSet",
    "SpliceTarget",
    "atb_dir",
    "check_compatible",
    "header_hash",
    "read_atb",
    "write_atb",
]
