"""Writing and reading ``.atb`` files (docs/atb-format.md): :func:`write_atb` writes one atomically,
:func:`read_atb` maps, validates and copies one, :func:`check_compatible` decides whether a block fits a running
context. :func:`map_atb` is the validated mapping both the reader and :class:`~nexus_agent.splice.cache.BlockCache`
load from.

Reading never trusts the file: every field is range-checked, every offset and size is checked against the file's
length before anything past the header is touched, and any malformed input raises
:class:`~nexus_agent.splice.format.AtbError`.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat
import struct
import threading
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from nexus_agent.paths import nexus_home
from nexus_agent.splice.fingerprint import ROPE_NAMES, ROPE_PARAMS, U32, ModelFingerprint, RopeSet, SpliceTarget, f32
from nexus_agent.splice.format import (
    ALIGN_LOG2_MAX,
    ALIGN_LOG2_MIN,
    DEFAULT_ALIGN_LOG2,
    F16_LE,
    HEADER_SIZE,
    MAX_POS,
    TABLE_DTYPE,
    VERSION,
    AtbBlock,
    AtbError,
    AtbHeader,
    AtbMismatch,
    header_problem,
    type_name,
)


def atb_dir(fingerprint: ModelFingerprint) -> Path:
    """The folder of a model's blocks: ``$NEXUS_HOME/atb/<fingerprint digest>/`` (not created here; write_atb
    creates missing parent folders). Each block in it is ``<rendering hash>.atb``, named by the compiler."""
    return nexus_home() / "atb" / fingerprint.digest()


# ---------------------------------------------------------------------------------------------- writing


def _as_f16_bits(name: str, x: npt.ArrayLike, shape: tuple[int, int, int], dims: str) -> npt.NDArray[np.uint16]:
    arr = np.asarray(x)
    if arr.dtype == np.float16:
        arr = arr.view(np.uint16)
    if arr.dtype != np.uint16:
        raise ValueError(f"{name} must hold F16 bit patterns as uint16 (or float16), got dtype {arr.dtype}")
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape ({dims}) = {shape}, got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=F16_LE)


def write_atb(
    path: str | os.PathLike[str],
    target: SpliceTarget,
    m0: int,
    tokens: Sequence[int] | npt.NDArray[np.integer[Any]],
    sensitivity: Sequence[float] | npt.NDArray[np.floating[Any]],
    k: npt.NDArray[Any],
    v: npt.NDArray[Any],
    align_log2: int = DEFAULT_ALIGN_LOG2,
) -> int:
    """Writes a block; returns the file's logical size in bytes.

    ``target`` gives the fingerprint, the attention mode (flash_attn, v_trans), the K/V types (F16 only) and the
    header hash the block was compiled after; ``m0`` is the position of the first token. ``tokens`` are n >= 1 ids
    in 0..2**31-1, ``sensitivity`` n finite values >= 0, ``k`` (n_layer, n, n_embd_k) and ``v`` (n_layer, n,
    n_embd_v) uint16 F16 bit patterns (float16 arrays are taken bitwise). The K and V sections start at
    multiples of ``2**align_log2`` bytes (12..30; default 2 MiB), written with seek so the gaps are sparse holes.

    Atomic: the file is written as ``<path>.tmp-<pid>-<thread>``, fsynced and renamed over ``path``. Invalid
    arguments raise ValueError before anything is written.
    """
    fp = target.fingerprint
    tok = np.asarray(tokens)
    if tok.ndim != 1 or tok.size == 0:
        raise ValueError(f"tokens must be a non-empty 1-D sequence, got shape {tok.shape}")
    if tok.dtype.kind not in "iu":
        raise ValueError(f"tokens must be integers, got dtype {tok.dtype}")
    if int(tok.min()) < 0 or int(tok.max()) > MAX_POS:
        raise ValueError(f"token ids must be in 0..{MAX_POS}, got {int(tok.min())}..{int(tok.max())}")
    n = int(tok.size)
    sens_in = np.asarray(sensitivity)
    if sens_in.shape != (n,):
        raise ValueError(f"sensitivity must have shape ({n},) like tokens, got {sens_in.shape}")
    if sens_in.dtype.kind not in "fiu":
        raise ValueError(f"sensitivity must be real numbers, got dtype {sens_in.dtype}")
    with np.errstate(over="ignore", invalid="ignore"):
        sens = sens_in.astype(np.float32)
    if not np.all(np.isfinite(sens)) or np.any(sens < 0):
        raise ValueError("sensitivity must be finite float32 values >= 0")
    k_le = _as_f16_bits("k", k, (fp.n_layer, n, fp.n_embd_k), "n_layer, n_tokens, n_embd_k")
    v_le = _as_f16_bits("v", v, (fp.n_layer, n, fp.n_embd_v), "n_layer, n_tokens, n_embd_v")
    if not isinstance(m0, int | np.integer) or m0 < 0:
        raise ValueError(f"m0 must be an integer >= 0, got {m0!r}")
    if not isinstance(align_log2, int | np.integer) or not ALIGN_LOG2_MIN <= align_log2 <= ALIGN_LOG2_MAX:
        raise ValueError(f"align_log2 must be in {ALIGN_LOG2_MIN}..{ALIGN_LOG2_MAX}, got {align_log2!r}")

    table = np.empty(n, dtype=TABLE_DTYPE)
    table["token"] = tok
    table["sensitivity"] = sens
    table_bytes = table.tobytes()
    align = 1 << int(align_log2)
    k_offset = _align_up(HEADER_SIZE + len(table_bytes), align)
    v_offset = _align_up(k_offset + k_le.nbytes, align)
    if v_offset > U32:
        raise ValueError(f"block too large: the V section would start at byte {v_offset}, past the u32 offset limit")
    k_mv = k_le.data.cast("B")
    v_mv = v_le.data.cast("B")
    data_crc = zlib.crc32(v_mv, zlib.crc32(k_mv, zlib.crc32(table_bytes)))
    header = AtbHeader(
        version=VERSION,
        v_trans=bool(target.v_trans),
        flash_attn=bool(target.flash_attn),
        k_type=target.k_type,
        v_type=target.v_type,
        rope_type=fp.rope_type,
        align_log2=int(align_log2),
        arch_hash=fp.arch_hash,
        n_layer=fp.n_layer,
        head_dim=fp.head_dim,
        n_rot=fp.n_rot,
        n_head_kv=fp.n_head_kv,
        n_embd_k=fp.n_embd_k,
        n_embd_v=fp.n_embd_v,
        tokenizer_hash=fp.tokenizer_hash,
        n_ctx_orig=fp.n_ctx_orig,
        rope=tuple(RopeSet(*(f32(x) for x in rs.values())) for rs in fp.rope),
        m0=int(m0),
        header_hash=target.header_hash,
        n_tokens=n,
        k_offset=k_offset,
        v_offset=v_offset,
        data_crc=data_crc,
    )
    problem = header_problem(header)
    if problem is not None:
        raise ValueError(f"cannot write {path}: {problem[0]}: {problem[1]}")
    head = header.to_bytes()

    dest = Path(path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f"{dest.name}.tmp-{os.getpid()}-{threading.get_native_id()}")
    try:
        with open(tmp, "wb") as f:
            f.write(head)
            f.write(table_bytes)
            f.seek(k_offset)  # the gap stays a sparse hole
            f.write(k_mv)
            f.seek(v_offset)
            f.write(v_mv)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return header.file_size


def _align_up(x: int, align: int) -> int:
    return (x + align - 1) // align * align


# ---------------------------------------------------------------------------------------------- reading


def check_compatible(header: AtbHeader, target: SpliceTarget, path: Path | None = None) -> None:
    """Raises AtbMismatch unless the block can be spliced into ``target``'s context.

    Compared: architecture (its crc32), n_layer, n_head_kv, head_dim, n_rot, n_embd_k, n_embd_v, tokenizer_hash,
    rope_type, n_ctx_orig, the RoPE sets (count, then each value exactly after rounding the runtime's to float32),
    flash attention, K and V types, header hash, and m0 when the target names one. ``v_trans`` is not compared:
    V is stored token-major whatever layout the compiling context used. The message names the field, the file's
    value and the runtime's, e.g. ``compiled for n_layer=24, the running model has 28``.
    """
    fp = target.fingerprint

    def fail(field: str, message: str) -> AtbMismatch:
        return AtbMismatch(message, path, field)

    if header.arch_hash != fp.arch_hash:
        raise fail(
            "arch",
            f"compiled for another architecture (arch hash {header.arch_hash:#010x}), "
            f"the running model is {fp.arch} ({fp.arch_hash:#010x})",
        )
    for name in ("n_layer", "n_head_kv", "head_dim", "n_rot", "n_embd_k", "n_embd_v", "n_ctx_orig"):
        mine, theirs = getattr(header, name), getattr(fp, name)
        if mine != theirs:
            raise fail(name, f"compiled for {name}={mine}, the running model has {theirs}")
    if header.tokenizer_hash != fp.tokenizer_hash:
        raise fail(
            "tokenizer_hash",
            f"compiled for tokenizer_hash={header.tokenizer_hash:#018x}, "
            f"the running model has {fp.tokenizer_hash:#018x}",
        )
    if header.rope_type != fp.rope_type:
        raise fail(
            "rope_type",
            f"compiled for rope_type={header.rope_type} ({ROPE_NAMES.get(header.rope_type, '?')}), "
            f"the running model has {fp.rope_type} ({ROPE_NAMES.get(fp.rope_type, '?')})",
        )
    if len(header.rope) != len(fp.rope):
        raise fail("rope", f"compiled with {len(header.rope)} RoPE set(s), the running model has {len(fp.rope)}")
    for i, (mine_rs, theirs_rs) in enumerate(zip(header.rope, fp.rope, strict=True)):
        for pname, mine_x, theirs_x in zip(ROPE_PARAMS, mine_rs.values(), theirs_rs.values(), strict=True):
            try:
                same = f32(theirs_x) == mine_x
            except (OverflowError, TypeError, struct.error):
                same = False
            if not same:
                raise fail(
                    f"rope[{i}].{pname}",
                    f"compiled for rope[{i}].{pname}={mine_x!r}, the running model has {theirs_x!r}",
                )
    if header.flash_attn != target.flash_attn:
        on_off = {True: "on", False: "off"}
        raise fail(
            "flash_attn",
            f"compiled with flash attention {on_off[header.flash_attn]}, "
            f"this context has it {on_off[bool(target.flash_attn)]}",
        )
    for name in ("k_type", "v_type"):
        mine, theirs = getattr(header, name), getattr(target, name)
        if mine != theirs:
            raise fail(
                name,
                f"compiled with {name}={mine} ({type_name(mine)}), this context has {theirs} ({type_name(theirs)})",
            )
    if header.header_hash != target.header_hash:
        raise fail(
            "header_hash",
            f"compiled after other header tokens (hash {header.header_hash:#018x}), "
            f"this context's header hash is {target.header_hash:#018x}",
        )
    if target.m0 is not None and header.m0 != target.m0:
        raise fail("m0", f"compiled at m0={header.m0}, this context expects m0={target.m0}")


FileSig = tuple[int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns


def file_sig(st: os.stat_result) -> FileSig:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass
class MappedAtb:
    """A validated file, mapped read-only for the duration of a ``with map_atb(...)`` block."""

    header: AtbHeader
    mm: mmap.mmap
    sig: FileSig
    tokens: npt.NDArray[np.int32]
    sensitivity: npt.NDArray[np.float32]


def _read_head(fd: int, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            break
        out += chunk
    return out


@contextlib.contextmanager
def map_atb(path: Path, target: SpliceTarget | None, verify_data: bool) -> Iterator[MappedAtb]:
    """Opens, maps and validates ``path``: header, sizes vs the file length, compatibility (when ``target`` is
    given), data checksum (when ``verify_data``) and the token table's values. Every failure is an AtbError."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)  # O_NONBLOCK: opening a FIFO must not hang
    except OSError as e:
        raise AtbError(f"cannot open: {e.strerror or e}", path, "file") from e
    try:
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise AtbError("not a regular file", path, "file")
            size = st.st_size
            head = _read_head(fd, min(size, HEADER_SIZE))
        except OSError as e:
            raise AtbError(f"cannot read: {e.strerror or e}", path, "file") from e
        header = AtbHeader.from_bytes(head, path)
        if size < header.file_size:
            raise AtbError(f"truncated: needs {header.file_size} bytes, file has {size}", path, "file")
        if target is not None:
            check_compatible(header, target, path)
        try:
            mm = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        except (OSError, ValueError, OverflowError) as e:
            raise AtbError(f"cannot map: {e}", path, "file") from e
    finally:
        os.close(fd)  # the mapping keeps its own reference to the file
    try:
        if verify_data and _data_crc(mm, header) != header.data_crc:
            raise AtbError("data checksum mismatch: corrupt token table, K or V", path, "data_crc")
        tokens, sensitivity = _read_table(mm, header)
        if np.any(tokens < 0):
            raise AtbError(f"negative token id {int(tokens.min())}", path, "tokens")
        if not np.all(np.isfinite(sensitivity)) or np.any(sensitivity < 0):
            raise AtbError("sensitivity values must be finite and >= 0", path, "sensitivity")
        yield MappedAtb(header, mm, file_sig(st), tokens, sensitivity)
    finally:
        with contextlib.suppress(BufferError):  # a leaked view only delays the unmap to garbage collection
            mm.close()


def _data_crc(mm: mmap.mmap, h: AtbHeader) -> int:
    with memoryview(mm) as mv:
        crc = zlib.crc32(mv[HEADER_SIZE : HEADER_SIZE + h.tokens_nbytes])
        crc = zlib.crc32(mv[h.k_offset : h.k_offset + h.k_nbytes], crc)
        return zlib.crc32(mv[h.v_offset : h.v_offset + h.v_nbytes], crc)


def _read_table(mm: mmap.mmap, h: AtbHeader) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    table = np.frombuffer(mm, dtype=TABLE_DTYPE, count=h.n_tokens, offset=HEADER_SIZE)
    return table["token"].astype(np.int32), table["sensitivity"].astype(np.float32)


def f16_section(mm: mmap.mmap, offset: int, count: int) -> npt.NDArray[Any]:
    return np.frombuffer(mm, dtype=F16_LE, count=count, offset=offset)


def copy_kv(mm: mmap.mmap, h: AtbHeader) -> tuple[npt.NDArray[np.uint16], npt.NDArray[np.uint16]]:
    n_k, n_v = h.k_nbytes // 2, h.v_nbytes // 2
    k = f16_section(mm, h.k_offset, n_k).astype(np.uint16).reshape(h.n_layer, h.n_tokens, h.n_embd_k)
    v = f16_section(mm, h.v_offset, n_v).astype(np.uint16).reshape(h.n_layer, h.n_tokens, h.n_embd_v)
    return k, v


def read_atb(path: str | os.PathLike[str], target: SpliceTarget | None = None, verify_data: bool = True) -> AtbBlock:
    """Reads and validates a block; with ``target``, also checks it can be spliced there (:func:`check_compatible`).

    The file is memory-mapped read-only and validated in this order: magic, version, header checksum, every
    header field, section offsets and sizes against the file's length, compatibility with ``target``, the data
    checksum (when ``verify_data``) and the token table's values. The returned arrays are private, writeable
    copies; the mapping is closed before returning. Any malformed, unreadable or incompatible file raises
    AtbError (AtbMismatch for incompatibility); nothing is read outside the file.

    A file truncated by another process *while* it is being read can still fault (SIGBUS) on the mapping; blocks
    are written atomically (:func:`write_atb`), so that takes a writer that does not follow the format's rules.
    """
    p = Path(path)
    with map_atb(p, target, verify_data) as m:
        k, v = copy_kv(m.mm, m.header)
        return AtbBlock(m.header, m.tokens, m.sensitivity, k, v, p)
