# Type stubs for the C++ module nexus_agent._native (native/python/*.cpp).
# Kept honest by tests/native/test_stub.py, which checks every name, parameter name and default here
# against the compiled module's own signatures; edit both together.
from typing import Any, final

import numpy as np
import numpy.typing as npt

def isa() -> str: ...
def available_isas() -> list[str]: ...
def set_isa(name: str) -> None: ...
def scan_i8(
    matrix: npt.NDArray[np.int8],
    row_scales: npt.NDArray[np.float32],
    query: npt.NDArray[np.int8],
    query_scale: float,
    out: npt.NDArray[np.float32] | None = None,
    isa: str | None = None,
) -> npt.NDArray[np.float32]: ...
def topk_f32(scores: npt.NDArray[np.float32], k: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]: ...
def scan_topk_i8(
    matrix: npt.NDArray[np.int8],
    row_scales: npt.NDArray[np.float32],
    query: npt.NDArray[np.int8],
    query_scale: float,
    k: int,
    isa: str | None = None,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], float]: ...
def bench_scan(
    matrix: npt.NDArray[np.int8],
    row_scales: npt.NDArray[np.float32],
    query: npt.NDArray[np.int8],
    query_scale: float,
    iters: int,
    k: int = 0,
    isa: str | None = None,
) -> float: ...
def rope_shift_f16(
    k: npt.NDArray[np.uint16],
    deltas: npt.NDArray[np.int32],
    n_rot: int,
    head_dim: int,
    n_head_kv: int,
    rope_type: int,
    freq_base: float,
    freq_scale: float = 1.0,
    ext_factor: float = 0.0,
    attn_factor: float = 1.0,
    beta_fast: float = 32.0,
    beta_slow: float = 1.0,
    n_ctx_orig: int = 0,
    freq_factors: npt.NDArray[np.float32] | None = None,
) -> None: ...
def write_v_trans(
    dst: bytearray | memoryview | npt.NDArray[Any],
    dst_offset: int,
    n_embd_v: int,
    total_cells: int,
    cell_offset: int,
    src: npt.NDArray[np.uint16],
) -> None: ...
def read_v_trans(
    src_buffer: bytes | bytearray | memoryview | npt.NDArray[Any], src_offset: int, n_embd_v: int, total_cells: int
) -> npt.NDArray[np.uint16]: ...

@final
class Block:
    @property
    def offset(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def block_size(self) -> int: ...
    @property
    def address(self) -> int: ...
    @property
    def freed(self) -> bool: ...
    @property
    def n_views(self) -> int: ...
    def __len__(self) -> int: ...
    def __buffer__(self, flags: int, /) -> memoryview: ...

@final
class BuddyAllocator:
    def __init__(self, capacity_bytes: int) -> None: ...
    def alloc(self, nbytes: int) -> Block: ...
    def free(self, block: Block) -> None: ...
    def stats(self) -> dict[str, Any]: ...
    @property
    def capacity(self) -> int: ...
    @property
    def address(self) -> int: ...
