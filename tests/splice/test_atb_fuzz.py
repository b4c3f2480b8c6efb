"""Hostile .atb input: truncations, byte flips, random bytes and crafted headers with valid checksums must all
end in AtbError (or, for a flip inside a sparse gap no checksum covers, a correct read), never another exception."""

from __future__ import annotations

import struct
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nexus_agent.splice.atb_io import read_atb, write_atb
from nexus_agent.splice.fingerprint import ModelFingerprint, RopeSet, SpliceTarget
from nexus_agent.splice.format import HEADER_LAYOUT, HEADER_SIZE, MAGIC, AtbBlock, AtbError

FP = ModelFingerprint("llama", 2, 1, 8, 8, 8, 8, 12345, 0, 2048, (RopeSet(10000.0),))
TARGET = SpliceTarget(FP, flash_attn=False, v_trans=True, header_hash=99)
N = 3


def _build() -> tuple[bytes, AtbBlock]:
    rng = np.random.default_rng(7)
    k = rng.integers(0, 1 << 16, (FP.n_layer, N, FP.n_embd_k), dtype=np.uint16)
    v = rng.integers(0, 1 << 16, (FP.n_layer, N, FP.n_embd_v), dtype=np.uint16)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "b.atb"
        write_atb(path, TARGET, 4, [10, 20, 30], [0.5, 1.0, 0.0], k, v, align_log2=12)
        return path.read_bytes(), read_atb(path, TARGET)


VALID, ORIGINAL = _build()
H = ORIGINAL.header
TABLE_END = HEADER_SIZE + 8 * N
# Byte ranges covered by a checksum: header, token table, K, V. Everything else is a sparse gap.
COVERED = [(0, TABLE_END), (H.k_offset, H.k_offset + H.k_nbytes), (H.v_offset, H.v_offset + H.v_nbytes)]
assert len(VALID) == H.file_size == H.v_offset + H.v_nbytes


def _covered(offset: int) -> bool:
    return any(a <= offset < b for a, b in COVERED)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as d:
        yield Path(d) / "fuzz.atb"


def _read(path: Path, data: bytes) -> AtbBlock:
    path.write_bytes(data)
    return read_atb(path, TARGET)


def _expect_error(path: Path, data: bytes) -> AtbError:
    with pytest.raises(AtbError) as info:
        _read(path, data)
    return info.value


def _with_header(data: bytes, offset: int, fmt: str, *values: object) -> bytes:
    buf = bytearray(data)
    struct.pack_into(fmt, buf, offset, *values)
    struct.pack_into("<I", buf, 124, zlib.crc32(bytes(buf[:124])))
    return bytes(buf)


def _same_block(b: AtbBlock) -> bool:
    return (
        b.header == H
        and np.array_equal(b.tokens, ORIGINAL.tokens)
        and np.array_equal(b.sensitivity, ORIGINAL.sensitivity)
        and np.array_equal(b.k, ORIGINAL.k)
        and np.array_equal(b.v, ORIGINAL.v)
    )


# ------------------------------------------------------------------------------------------------- (a) truncation

_CUTS = sorted(
    {off for _, off, _ in HEADER_LAYOUT}
    | {off + size for _, off, size in HEADER_LAYOUT}
    | set(range(161))
    | {HEADER_SIZE + 4 * N, TABLE_END, TABLE_END + 1, H.k_offset - 1, H.k_offset}
    | {H.k_offset + H.k_nbytes // 2, H.k_offset + H.k_nbytes, H.v_offset - 1, H.v_offset}
    | {H.v_offset + H.v_nbytes // 2, len(VALID) - 1}
)


def test_truncation_at_every_field_boundary_and_section(scratch: Path) -> None:
    for cut in _CUTS:
        e = _expect_error(scratch, VALID[:cut])
        assert e.message.startswith("truncated: needs "), (cut, str(e))
    assert _same_block(_read(scratch, VALID))


@settings(max_examples=150, deadline=None)
@given(cut=st.integers(min_value=0, max_value=len(VALID) - 1))
def test_truncation_anywhere(scratch: Path, cut: int) -> None:
    e = _expect_error(scratch, VALID[:cut])
    assert "truncated" in e.message


# ------------------------------------------------------------------------------------------------- (b) byte flips

_offsets = st.one_of(
    st.integers(0, HEADER_SIZE - 1),
    st.integers(HEADER_SIZE, TABLE_END - 1),
    st.integers(H.k_offset, H.k_offset + H.k_nbytes - 1),
    st.integers(H.v_offset, H.v_offset + H.v_nbytes - 1),
    st.integers(0, len(VALID) - 1),
)


@settings(max_examples=300, deadline=None)
@given(flips=st.lists(st.tuples(_offsets, st.integers(1, 255)), min_size=1, max_size=4))
def test_byte_flips(scratch: Path, flips: list[tuple[int, int]]) -> None:
    buf = bytearray(VALID)
    for offset, mask in flips:
        buf[offset] ^= mask
    changed = [i for i in {o for o, _ in flips} if buf[i] != VALID[i]]
    try:
        block = _read(scratch, bytes(buf))
    except AtbError:
        assert any(_covered(i) for i in changed)
        return
    # Read successfully: every changed byte is in a gap no checksum covers, and the block is intact.
    assert not any(_covered(i) for i in changed)
    assert _same_block(block)


# ------------------------------------------------------------------------------------------------- (c) random bytes


@settings(max_examples=200, deadline=None)
@given(
    prefix=st.sampled_from([b"", MAGIC, MAGIC + b"\x01\x00"]),
    body=st.binary(min_size=0, max_size=600),
)
def test_random_bytes(scratch: Path, prefix: bytes, body: bytes) -> None:
    _expect_error(scratch, prefix + body)


@settings(max_examples=200, deadline=None)
@given(body=st.binary(min_size=124 - len(MAGIC) - 2, max_size=124 - len(MAGIC) - 2), tail=st.binary(max_size=300))
def test_random_header_with_valid_checksum(scratch: Path, body: bytes, tail: bytes) -> None:
    head = MAGIC + b"\x01\x00" + body
    _expect_error(scratch, head + struct.pack("<I", zlib.crc32(head)) + tail)


# ------------------------------------------------------------------------------------------------- (d) hostile fields


@pytest.mark.parametrize(
    ("offset", "fmt", "value", "field"),
    [
        (8, "<H", 0, "version"),
        (10, "<H", 0x8, "flags"),
        (10, "<H", 0x8000, "flags"),
        (12, "<B", 0, "k_type"),
        (13, "<B", 8, "v_type"),
        (14, "<B", 1, "rope_type"),
        (15, "<B", 0, "align_log2"),
        (15, "<B", 11, "align_log2"),
        (15, "<B", 31, "align_log2"),
        (15, "<B", 255, "align_log2"),
        (20, "<H", 0, "n_layer"),
        (20, "<H", 0xFFFF, "v_offset"),  # K would run into V
        (22, "<H", 0, "head_dim"),
        (24, "<H", 0, "n_rot"),
        (24, "<H", 7, "n_rot"),
        (24, "<H", 10, "n_rot"),  # > head_dim
        (26, "<H", 0, "n_head_kv"),
        (28, "<I", 0, "n_embd_k"),
        (28, "<I", 0xFFFFFFFF, "v_offset"),
        (32, "<I", 0, "n_embd_v"),
        (32, "<I", 0xFFFFFFFF, "file"),  # V past the end of the file
        (44, "<I", 0, "n_ctx_orig"),
        (48, "<f", float("nan"), "rope[0].freq_base"),
        (48, "<f", float("inf"), "rope[0].freq_base"),
        (48, "<f", 0.0, "rope[0]"),
        (52, "<f", -1.0, "rope[0]"),
        (64, "<f", float("-inf"), "rope[0].beta_fast"),
        (72, "<f", 1.0, "rope1"),  # set 1 without the iSWA flag
        (96, "<I", 0xFFFFFFFF, "m0"),
        (108, "<I", 0, "n_tokens"),
        (108, "<I", 0xFFFFFFFF, "n_tokens"),
        (108, "<I", 1 << 28, "k_offset"),
        (112, "<I", 0, "k_offset"),
        (112, "<I", 4096 + 1, "k_offset"),
        (112, "<I", 0xFFFFF000, "v_offset"),
        (116, "<I", 4096, "v_offset"),  # V on top of K
        (116, "<I", 0, "v_offset"),
        (116, "<I", 0xFFFFF000, "file"),  # past EOF
        (120, "<I", 0, "data_crc"),
    ],
)
def test_hostile_fields_with_valid_header_checksum(
    scratch: Path, offset: int, fmt: str, value: object, field: str
) -> None:
    e = _expect_error(scratch, _with_header(VALID, offset, fmt, value))
    assert e.field == field, str(e)


def test_two_rope_sets_flag_with_hostile_second_set(scratch: Path) -> None:
    flagged = _with_header(VALID, 10, "<H", 0b101)  # v_trans + iSWA, set 1 still zeros
    assert _expect_error(scratch, flagged).field == "rope[1]"
    assert _expect_error(scratch, _with_header(flagged, 72, "<f", float("nan"))).field == "rope[1].freq_base"


_FIELDS = [(name, off, size) for name, off, size in HEADER_LAYOUT if name not in ("magic", "header_crc")]


@settings(max_examples=300, deadline=None)
@given(
    field=st.sampled_from(_FIELDS),
    data=st.data(),
)
def test_any_field_value_with_valid_checksum(scratch: Path, field: tuple[str, int, int], data: st.DataObject) -> None:
    _, offset, size = field
    value = data.draw(st.binary(min_size=size, max_size=size))
    try:
        block = _read(scratch, _with_header(VALID, offset, f"{size}s", value))
    except AtbError:
        return
    # Fields that need not be checked against anything but the target (m0, hashes...) may read fine;
    # the data must still be exactly the original.
    assert np.array_equal(block.k, ORIGINAL.k) and np.array_equal(block.v, ORIGINAL.v)
