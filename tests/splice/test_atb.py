"""The .atb block format: round trips, the sparse aligned layout, validation messages, compatibility checks and
the arena-backed BlockCache."""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import os
import pickle
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from nexus_agent.splice.atb_io import atb_dir, check_compatible, read_atb, write_atb
from nexus_agent.splice.cache import BlockCache
from nexus_agent.splice.fingerprint import GGML_TYPE_F16, ROPE_NEOX, ROPE_NORM, ModelFingerprint, RopeSet, SpliceTarget
from nexus_agent.splice.format import HEADER_LAYOUT, HEADER_SIZE, MAGIC, AtbError, AtbHeader, AtbMismatch, header_hash

MIB = 1 << 20

FP = ModelFingerprint(
    arch="qwen2",
    n_layer=3,
    n_head_kv=2,
    head_dim=8,
    n_rot=8,
    n_embd_k=16,
    n_embd_v=16,
    tokenizer_hash=0xDEADBEEF_01234567,
    rope_type=ROPE_NEOX,
    n_ctx_orig=32768,
    rope=(RopeSet(freq_base=1_000_000.0),),
)
HEADER_TOKENS = [151644, 8948, 198, 2610, 525]
TARGET = SpliceTarget(FP, flash_attn=False, v_trans=True, header_hash=header_hash(HEADER_TOKENS))


def make_kv(
    fp: ModelFingerprint, n: int, seed: int = 0
) -> tuple[npt.NDArray[np.uint16], npt.NDArray[np.uint16], npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 1 << 16, size=(fp.n_layer, n, fp.n_embd_k), dtype=np.uint16)
    v = rng.integers(0, 1 << 16, size=(fp.n_layer, n, fp.n_embd_v), dtype=np.uint16)
    tokens = rng.integers(0, 150_000, size=n, dtype=np.int32)
    sens = rng.random(n, dtype=np.float32)
    return k, v, tokens, sens


def write_block(
    path: Path, n: int = 7, m0: int = 5, seed: int = 0, align_log2: int = 12, target: SpliceTarget = TARGET
) -> tuple[npt.NDArray[np.uint16], npt.NDArray[np.uint16], npt.NDArray[np.int32], npt.NDArray[np.float32]]:
    k, v, tokens, sens = make_kv(target.fingerprint, n, seed)
    write_atb(path, target, m0, tokens, sens, k, v, align_log2=align_log2)
    return k, v, tokens, sens


def patch_header(data: bytes, offset: int, fmt: str, *values: object) -> bytes:
    """``data`` with header bytes at ``offset`` replaced and the header checksum recomputed."""
    buf = bytearray(data)
    struct.pack_into(fmt, buf, offset, *values)
    struct.pack_into("<I", buf, 124, zlib.crc32(bytes(buf[:124])))
    return bytes(buf)


# ------------------------------------------------------------------------------------------------- round trip


def test_round_trip_default_alignment_is_sparse_and_aligned(tmp_path: Path) -> None:
    path = tmp_path / "block.atb"
    k, v, tokens, sens = make_kv(FP, 11)
    size = write_atb(path, TARGET, 42, tokens, sens, k, v)
    assert size == path.stat().st_size
    assert not list(tmp_path.glob("*.tmp-*"))

    b = read_atb(path, TARGET)
    h = b.header
    assert b.path == path
    assert (h.n_tokens, h.m0, h.align_log2, h.tokens_offset) == (11, 42, 21, HEADER_SIZE)
    assert h.k_offset == 2 * MIB and h.v_offset == 4 * MIB  # each section on its own 2 MiB boundary
    assert h.k_offset % (1 << 21) == 0 and h.v_offset % (1 << 21) == 0
    assert size == h.file_size == h.v_offset + 3 * 11 * 16 * 2
    assert (h.flash_attn, h.v_trans, h.k_type, h.v_type) == (False, True, GGML_TYPE_F16, GGML_TYPE_F16)
    assert h.header_hash == TARGET.header_hash
    assert h.fingerprint("qwen2") == FP
    assert h.fingerprint_digest() == FP.digest()

    assert b.tokens.dtype == np.int32 and np.array_equal(b.tokens, tokens)
    assert b.sensitivity.dtype == np.float32 and np.array_equal(b.sensitivity, sens)
    assert b.k.dtype == np.uint16 and b.k.shape == (3, 11, 16) and np.array_equal(b.k, k)
    assert b.v.dtype == np.uint16 and b.v.shape == (3, 11, 16) and np.array_equal(b.v, v)
    assert b.k.flags.writeable  # read_atb hands out private copies

    raw = path.read_bytes()
    assert raw[:8] == MAGIC
    table_end = HEADER_SIZE + 11 * 8
    assert raw[table_end : h.k_offset] == bytes(h.k_offset - table_end)  # the gaps read as zeros
    # Written with seek: the gaps are holes, so far fewer blocks are allocated than the logical size.
    assert path.stat().st_blocks * 512 < size // 4


def test_round_trip_small_alignment_and_float16_input(tmp_path: Path) -> None:
    path = tmp_path / "small.atb"
    k, v, tokens, sens = make_kv(FP, 600)  # table = 4800 bytes: K starts at the second 4 KiB boundary
    write_atb(path, TARGET, 0, tokens.tolist(), sens.tolist(), k.view(np.float16), v, align_log2=12)
    b = read_atb(path)
    assert b.header.align_log2 == 12
    assert b.header.k_offset == 8192
    assert b.header.v_offset % 4096 == 0 and b.header.v_offset >= b.header.k_offset + k.nbytes
    assert np.array_equal(b.k, k) and np.array_equal(b.v, v) and np.array_equal(b.tokens, tokens)


def test_round_trip_iswa_two_rope_sets(tmp_path: Path) -> None:
    fp = dataclasses.replace(
        FP, arch="gemma3", rope_type=ROPE_NORM, rope=(RopeSet(1e6, 0.125), RopeSet(10000.0, 1.0, 0.5, 1.25, 16.0, 2.0))
    )
    target = SpliceTarget(fp, flash_attn=True, v_trans=False)
    path = tmp_path / "iswa.atb"
    write_block(path, target=target)
    b = read_atb(path, target)
    assert b.header.rope == fp.rope
    assert b.header.flags == 0b110
    assert b.header.fingerprint("gemma3") == fp


def test_rope_values_round_to_float32(tmp_path: Path) -> None:
    # 0.1 is not a float32: the file stores float32(0.1) and a runtime passing the python float 0.1 still matches.
    fp = dataclasses.replace(FP, rope=(RopeSet(10000.0, 0.1),))
    target = SpliceTarget(fp, flash_attn=False, v_trans=True)
    write_block(tmp_path / "r.atb", target=target)
    b = read_atb(tmp_path / "r.atb", target)
    assert b.header.rope[0].freq_scale == float(np.float32(0.1)) != 0.1
    assert b.header.fingerprint_digest() == fp.digest()


def test_overwrite_is_atomic_and_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "b.atb"  # parent folders are created
    write_block(path, seed=1)
    k2, _, _, _ = write_block(path, seed=2)
    assert np.array_equal(read_atb(path).k, k2)
    k, v, tokens, sens = make_kv(FP, 4)
    with pytest.raises(ValueError, match="shape"):
        write_atb(path, TARGET, 0, tokens, sens, k[:, :3], v)
    assert np.array_equal(read_atb(path).k, k2)
    assert sorted(p.name for p in path.parent.iterdir()) == ["b.atb"]


# ------------------------------------------------------------------------------------------------- hashes


def test_header_hash_is_blake2b_over_int32_le() -> None:
    expected = int.from_bytes(
        hashlib.blake2b(np.array(HEADER_TOKENS, dtype="<i4").tobytes(), digest_size=8).digest(), "little"
    )
    assert header_hash(HEADER_TOKENS) == expected
    assert header_hash(np.array(HEADER_TOKENS, dtype=np.int64)) == expected
    assert header_hash([]) == int.from_bytes(hashlib.blake2b(b"", digest_size=8).digest(), "little")
    assert 0 <= header_hash([1, 2]) < 1 << 64 and header_hash([1, 2]) != header_hash([2, 1])
    with pytest.raises(ValueError):
        header_hash([1.5, 2.0])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        header_hash([1 << 40])


def test_fingerprint_digest_is_stable_across_processes() -> None:
    d = FP.digest()
    assert len(d) == 16 and int(d, 16) >= 0 and d == d.lower()
    code = (
        "from nexus_agent.splice.fingerprint import ModelFingerprint, RopeSet\n"
        f"print(ModelFingerprint('qwen2', 3, 2, 8, 8, 16, 16, {FP.tokenizer_hash}, 2, 32768, (RopeSet(1e6),)).digest())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == d
    for changed in (
        dataclasses.replace(FP, arch="llama"),
        dataclasses.replace(FP, n_layer=4),
        dataclasses.replace(FP, tokenizer_hash=1),
        dataclasses.replace(FP, rope=(RopeSet(1e6, 0.5),)),
        dataclasses.replace(FP, rope=(RopeSet(1e6), RopeSet(1e4))),
    ):
        assert changed.digest() != d


def test_blocks_live_in_a_folder_per_fingerprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEXUS_HOME", str(tmp_path))
    folder = atb_dir(FP)
    assert folder == tmp_path / "atb" / FP.digest()
    write_block(folder / "0123abcd.atb")
    assert read_atb(folder / "0123abcd.atb").header.fingerprint_digest() == folder.name


def test_fingerprint_normalizes_numpy_scalars_and_lists() -> None:
    fp = ModelFingerprint(
        "qwen2",
        np.uint32(3),  # type: ignore[arg-type]
        2,
        8,
        8,
        16,
        16,
        np.uint64(FP.tokenizer_hash),  # type: ignore[arg-type]
        ROPE_NEOX,
        32768,
        [RopeSet(1e6)],  # type: ignore[arg-type]
    )
    assert fp == FP and type(fp.n_layer) is int and fp.digest() == FP.digest()
    hash(fp)


def test_fingerprint_rejects_values_the_header_cannot_hold() -> None:
    with pytest.raises(ValueError, match="1 or 2"):
        dataclasses.replace(FP, rope=())
    with pytest.raises(ValueError, match="rope_type"):
        dataclasses.replace(FP, rope_type=1)
    with pytest.raises(ValueError, match="n_layer"):
        dataclasses.replace(FP, n_layer=70_000)
    with pytest.raises(ValueError, match="freq_base"):
        dataclasses.replace(FP, rope=(RopeSet(float("nan")),))
    with pytest.raises(ValueError, match="freq_scale"):
        dataclasses.replace(FP, rope=(RopeSet(1e4, 1e300),))


# ------------------------------------------------------------------------------------------------- write validation


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"tokens": []}, "non-empty"),
        ({"tokens": [[1, 2]]}, "1-D"),
        ({"tokens": [0.5, 1.0, 2.0, 3.0]}, "integers"),
        ({"tokens": [1, -2, 3, 4]}, "token ids"),
        ({"sensitivity": [1.0, 2.0, 3.0]}, "shape"),
        ({"sensitivity": [1.0, float("nan"), 0.0, 0.0]}, "finite"),
        ({"sensitivity": [1.0, -1.0, 0.0, 0.0]}, ">= 0"),
        ({"k": np.zeros((3, 4, 16), np.float32)}, "uint16"),
        ({"k": np.zeros((3, 4, 8), np.uint16)}, r"n_layer, n_tokens, n_embd_k"),
        ({"v": np.zeros((2, 4, 16), np.uint16)}, r"n_layer, n_tokens, n_embd_v"),
        ({"m0": -1}, "m0"),
        ({"m0": (1 << 31) - 2}, "int32"),
        ({"align_log2": 11}, "align_log2"),
        ({"align_log2": 31}, "align_log2"),
        ({"target": dataclasses.replace(TARGET, k_type=8)}, "k_type"),
        ({"target": dataclasses.replace(TARGET, v_type=0)}, "v_type"),
        ({"target": SpliceTarget(dataclasses.replace(FP, n_rot=9), False, True)}, "n_rot"),
        ({"target": SpliceTarget(dataclasses.replace(FP, n_layer=0), False, True)}, "n_layer"),
    ],
)
def test_write_rejects_bad_arguments(tmp_path: Path, change: dict[str, object], match: str) -> None:
    k, v, tokens, sens = make_kv(FP, 4)
    args: dict[str, object] = {
        "target": TARGET,
        "m0": 0,
        "tokens": tokens,
        "sensitivity": sens,
        "k": k,
        "v": v,
        "align_log2": 12,
    }
    args.update(change)
    with pytest.raises(ValueError, match=match):
        write_atb(tmp_path / "x.atb", **args)  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())


# ------------------------------------------------------------------------------------------------- read validation


def read_error(path: Path, data: bytes, **kw: object) -> AtbError:
    path.write_bytes(data)
    with pytest.raises(AtbError) as info:
        read_atb(path, **kw)  # type: ignore[arg-type]
    return info.value


def test_read_errors_name_path_field_and_problem(tmp_path: Path) -> None:
    good = tmp_path / "good.atb"
    write_block(good)
    data = good.read_bytes()
    h = read_atb(good).header
    bad = tmp_path / "bad.atb"

    e = read_error(bad, b"GGUF" + data[4:])
    assert (e.path, e.field) == (bad, "magic") and "not an .atb file" in e.message
    assert str(e) == f"{bad}: magic: {e.message}"

    e = read_error(bad, patch_header(data, 8, "<H", 2))
    assert e.field == "version" and e.message == "version 2, this build reads 1"

    e = read_error(bad, data[:30] + bytes([data[30] ^ 1]) + data[31:])
    assert e.field == "header_crc" and e.message == "header checksum mismatch: corrupt"

    e = read_error(bad, data[:-1])
    assert e.field == "file" and e.message == f"truncated: needs {h.file_size} bytes, file has {h.file_size - 1}"

    e = read_error(bad, data[:100])
    assert e.message == "truncated: needs 128 bytes, file has 100"

    e = read_error(bad, b"")
    assert "truncated" in e.message

    flipped = bytearray(data)
    flipped[h.v_offset + 3] ^= 0x40
    e = read_error(bad, bytes(flipped))
    assert e.field == "data_crc" and "data checksum mismatch" in e.message
    # Without data verification the corrupt V byte is read as is.
    assert read_atb(bad, verify_data=False).v.tobytes() != read_atb(good).v.tobytes()

    e = read_error(bad, patch_header(data, 20, "<H", 0))
    assert e.field == "n_layer"

    e = read_error(bad, patch_header(data, 116, "<I", h.v_offset + 4096))
    assert e.message.startswith("truncated: needs")


def test_read_rejects_bad_token_table_even_with_valid_checksums(tmp_path: Path) -> None:
    good = tmp_path / "good.atb"
    write_block(good, n=3)
    data = bytearray(good.read_bytes())
    h = read_atb(good).header

    def with_entry(fmt: str, value: object) -> bytes:
        buf = bytearray(data)
        struct.pack_into(fmt, buf, HEADER_SIZE + 8 + (0 if fmt == "<i" else 4), value)
        crc = zlib.crc32(bytes(buf[HEADER_SIZE : HEADER_SIZE + 24]))
        crc = zlib.crc32(bytes(buf[h.k_offset : h.k_offset + h.k_nbytes]), crc)
        crc = zlib.crc32(bytes(buf[h.v_offset : h.v_offset + h.v_nbytes]), crc)
        return patch_header(bytes(buf), 120, "<I", crc)

    bad = tmp_path / "bad.atb"
    assert read_error(bad, with_entry("<i", -5)).field == "tokens"
    assert read_error(bad, with_entry("<f", float("nan"))).field == "sensitivity"
    assert read_error(bad, with_entry("<f", -1.0)).field == "sensitivity"


def test_read_rejects_missing_files_folders_and_fifos(tmp_path: Path) -> None:
    with pytest.raises(AtbError) as info:
        read_atb(tmp_path / "missing.atb")
    assert info.value.field == "file" and "cannot open" in info.value.message
    with pytest.raises(AtbError) as info:
        read_atb(tmp_path)
    assert info.value.field == "file"
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.atb"
        os.mkfifo(fifo)
        with pytest.raises(AtbError) as info:
            read_atb(fifo)  # must not block waiting for a writer
        e = info.value
        assert e.message == "not a regular file"


def test_atb_error_pickles_with_its_attributes() -> None:
    e = AtbMismatch("compiled for n_layer=24, the running model has 28", Path("/x.atb"), "n_layer")
    e2 = pickle.loads(pickle.dumps(e))
    assert type(e2) is AtbMismatch and (e2.path, e2.field, str(e2)) == (e.path, e.field, str(e))
    assert str(AtbError("m")) == "m" and str(AtbError("m", field="f")) == "f: m"


def test_header_to_bytes_from_bytes_round_trip(tmp_path: Path) -> None:
    write_block(tmp_path / "b.atb")
    raw = (tmp_path / "b.atb").read_bytes()[:HEADER_SIZE]
    h = AtbHeader.from_bytes(raw)
    assert h.to_bytes() == raw
    assert AtbHeader.from_bytes(h.to_bytes()) == h
    assert [name for name, _, _ in HEADER_LAYOUT][-1] == "header_crc"


# ------------------------------------------------------------------------------------------------- compatibility


def _fp(**kw: object) -> SpliceTarget:
    return dataclasses.replace(TARGET, fingerprint=dataclasses.replace(FP, **kw))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("target", "field", "message"),
    [
        (_fp(arch="llama"), "arch", "another architecture"),
        (_fp(n_layer=28), "n_layer", "compiled for n_layer=3, the running model has 28"),
        (_fp(n_head_kv=4), "n_head_kv", "compiled for n_head_kv=2, the running model has 4"),
        (_fp(head_dim=16), "head_dim", "head_dim=8"),
        (_fp(n_rot=4), "n_rot", "n_rot=8"),
        (_fp(n_embd_k=32), "n_embd_k", "n_embd_k=16"),
        (_fp(n_embd_v=32), "n_embd_v", "n_embd_v=16"),
        (_fp(tokenizer_hash=7), "tokenizer_hash", "tokenizer_hash="),
        (_fp(rope_type=ROPE_NORM), "rope_type", "rope_type=2 (NEOX)"),
        (_fp(n_ctx_orig=8192), "n_ctx_orig", "n_ctx_orig=32768"),
        (_fp(rope=(RopeSet(1e6), RopeSet(1e4))), "rope", "1 RoPE set(s), the running model has 2"),
        (_fp(rope=(RopeSet(10000.0),)), "rope[0].freq_base", "rope[0].freq_base=1000000.0"),
        (_fp(rope=(RopeSet(1e6, 0.5),)), "rope[0].freq_scale", "freq_scale"),
        (_fp(rope=(RopeSet(1e6, ext_factor=1.0),)), "rope[0].ext_factor", "ext_factor"),
        (_fp(rope=(RopeSet(1e6, attn_factor=0.5),)), "rope[0].attn_factor", "attn_factor"),
        (_fp(rope=(RopeSet(1e6, beta_fast=16.0),)), "rope[0].beta_fast", "beta_fast"),
        (_fp(rope=(RopeSet(1e6, beta_slow=2.0),)), "rope[0].beta_slow", "beta_slow"),
        (
            dataclasses.replace(TARGET, flash_attn=True),
            "flash_attn",
            "compiled with flash attention off, this context has it on",
        ),
        (dataclasses.replace(TARGET, k_type=8), "k_type", "compiled with k_type=1 (F16), this context has 8 (Q8_0)"),
        (dataclasses.replace(TARGET, v_type=0), "v_type", "v_type=1"),
        (
            dataclasses.replace(TARGET, header_hash=header_hash([1])),
            "header_hash",
            "compiled after other header tokens",
        ),
        (dataclasses.replace(TARGET, m0=6), "m0", "compiled at m0=5, this context expects m0=6"),
    ],
)
def test_each_mismatch_names_its_field(tmp_path: Path, target: SpliceTarget, field: str, message: str) -> None:
    path = tmp_path / "b.atb"
    write_block(path, m0=5)
    header = read_atb(path).header
    with pytest.raises(AtbMismatch) as info:
        check_compatible(header, target)
    assert info.value.field == field and message in info.value.message
    assert str(info.value).startswith(f"{field}: ")
    with pytest.raises(AtbMismatch) as info:
        read_atb(path, target)
    assert info.value.path == path and str(info.value).startswith(f"{path}: {field}: ")


def test_compatible_targets_pass(tmp_path: Path) -> None:
    path = tmp_path / "b.atb"
    write_block(path, m0=5)
    h = read_atb(path).header
    check_compatible(h, TARGET)
    check_compatible(h, dataclasses.replace(TARGET, m0=5))
    # V is stored token-major whatever the layout: the running context's v_trans does not matter.
    check_compatible(h, dataclasses.replace(TARGET, v_trans=False))


# ------------------------------------------------------------------------------------------------- BlockCache

# 4 layers x 64 tokens x 512 wide: K and V are 256 KiB each, so a block takes exactly 512 KiB of arena and four
# fill the 2 MiB minimum arena.
CACHE_FP = dataclasses.replace(FP, n_layer=4, n_head_kv=4, head_dim=128, n_rot=128, n_embd_k=512, n_embd_v=512)
CACHE_TARGET = SpliceTarget(CACHE_FP, flash_attn=True, v_trans=False)


def cache_block(path: Path, seed: int) -> npt.NDArray[np.uint16]:
    k, _, _, _ = write_block(path, n=64, seed=seed, target=CACHE_TARGET)
    return k


def test_cache_load_hit_and_views(tmp_path: Path) -> None:
    path = tmp_path / "a.atb"
    k = cache_block(path, 0)
    cache = BlockCache(2 * MIB)
    b1 = cache.load(path, CACHE_TARGET)
    b2 = cache.load(str(path), CACHE_TARGET)
    assert np.array_equal(b1.k, k) and np.array_equal(b2.v, read_atb(path).v)
    assert np.shares_memory(b1.k, b2.k)  # both views of the same arena bytes
    assert not b1.k.flags.writeable and not b1.v.flags.writeable and not b1.tokens.flags.writeable
    assert path in cache and len(cache) == 1
    s = cache.stats()
    assert {key: s[key] for key in ("blocks", "bytes", "hits", "misses", "evictions")} == {
        "blocks": 1,
        "bytes": 512 << 10,
        "hits": 1,
        "misses": 1,
        "evictions": 0,
    }
    with pytest.raises(AtbMismatch, match="flash attention"):
        cache.load(path, dataclasses.replace(CACHE_TARGET, flash_attn=False))


def test_cache_lru_eviction_skips_blocks_in_use(tmp_path: Path) -> None:
    paths = [tmp_path / f"{i}.atb" for i in range(6)]
    ks = [cache_block(p, i) for i, p in enumerate(paths)]
    cache = BlockCache(2 * MIB)
    for p in paths[:4]:
        cache.load(p, CACHE_TARGET)  # results dropped at once: nothing is in use
    cache.load(paths[0], CACHE_TARGET)  # 0 becomes the most recently used; 1 the least
    assert cache.stats()["evictions"] == 0
    held = cache.load(paths[4], CACHE_TARGET)
    assert cache.stats()["evictions"] == 1
    assert paths[1] not in cache and all(p in cache for p in (paths[0], paths[2], paths[3], paths[4]))
    assert np.array_equal(held.k, ks[4])

    # With every cached block in use, nothing is evicted: the load returns a private copy instead.
    in_use = [cache.load(p, CACHE_TARGET) for p in (paths[0], paths[2], paths[3])]
    extra = cache.load(paths[5], CACHE_TARGET)
    s = cache.stats()
    assert s["evictions"] == 1 and s["bypassed"] == 1 and s["blocks"] == 4
    assert extra.k.flags.writeable and np.array_equal(extra.k, ks[5])
    for b, i in zip(in_use, (0, 2, 3), strict=True):
        assert np.array_equal(b.k, ks[i])

    # Once a block's views are gone it can be evicted.
    del in_use[0]
    gc.collect()
    cache.load(paths[1], CACHE_TARGET)
    assert cache.stats()["evictions"] == 2 and paths[0] not in cache and paths[1] in cache
    assert np.array_equal(held.k, ks[4])


def test_cache_block_larger_than_the_arena_is_returned_as_a_copy(tmp_path: Path) -> None:
    big = SpliceTarget(dataclasses.replace(CACHE_FP, n_layer=8), flash_attn=True, v_trans=False)
    path = tmp_path / "big.atb"
    k, _, _, _ = write_block(path, n=300, target=big)  # 8 x 300 x 512 x 2 x 2 bytes > 2 MiB
    cache = BlockCache(2 * MIB)
    b = cache.load(path, big)
    assert np.array_equal(b.k, k) and cache.stats()["bypassed"] == 1 and len(cache) == 0


def test_cache_reloads_a_changed_file_and_old_views_stay_valid(tmp_path: Path) -> None:
    path = tmp_path / "a.atb"
    k_old = cache_block(path, 1)
    cache = BlockCache(2 * MIB)
    old = cache.load(path, CACHE_TARGET)
    k_new = cache_block(path, 2)  # replaced atomically: new inode, size or mtime
    new = cache.load(path, CACHE_TARGET)
    assert cache.stats()["misses"] == 2 and cache.stats()["hits"] == 0
    assert np.array_equal(new.k, k_new) and np.array_equal(old.k, k_old)
    assert cache.load(path, CACHE_TARGET).k.tobytes() == k_new.tobytes()
    assert cache.stats()["hits"] == 1

    # Same size and inode, new mtime: rewritten in place.
    data = bytearray(path.read_bytes())
    st = path.stat()
    with open(path, "r+b") as f:
        f.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    cache.load(path, CACHE_TARGET)
    assert cache.stats()["misses"] == 3

    path.unlink()
    with pytest.raises(AtbError, match="cannot open"):
        cache.load(path, CACHE_TARGET)
    assert path not in cache


def test_cache_discard_clear_and_bad_capacity(tmp_path: Path) -> None:
    a, b = tmp_path / "a.atb", tmp_path / "b.atb"
    cache_block(a, 0)
    cache_block(b, 1)
    cache = BlockCache(4 * MIB)
    held = cache.load(a, CACHE_TARGET)
    cache.load(b, CACHE_TARGET)
    assert cache.discard(a) and not cache.discard(a)
    assert np.array_equal(held.k, read_atb(a).k)  # discarded while in use: the view is still valid
    cache.clear()
    assert len(cache) == 0 and cache.stats()["bytes"] == 0
    del held
    gc.collect()
    assert cache.stats()["arena_used"] == 0
    with pytest.raises(ValueError):
        BlockCache(3 * MIB)
