// Transposed-V copies. A blocked transpose: for a tile of cells, walk each V dimension's run, so both the
// token-major rows and the transposed runs are touched in cache-line-sized pieces.
#include "v_trans.h"

#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace nexus::splice {
namespace {

constexpr std::size_t kMax = std::numeric_limits<std::size_t>::max();
constexpr std::size_t kTile = 64;  // cells per tile

[[noreturn]] void bad(const char* fn, const std::string& msg) {
    throw std::invalid_argument(std::string(fn) + ": " + msg);
}

bool mul_ok(std::size_t a, std::size_t b, std::size_t& out) {
    if (a != 0 && b > kMax / a) return false;
    out = a * b;
    return true;
}

// Checks one call; returns false when there is nothing to copy. `region` is the transposed side, `rows` the
// token-major side.
bool check(const char* fn, const std::uint8_t* region, std::size_t region_len, std::size_t n_embd_v,
           std::size_t total_cells, std::size_t cell_offset, const std::uint8_t* rows, std::size_t n_cells,
           std::size_t stride, std::size_t elem_size, const char* stride_name) {
    if (elem_size == 0) bad(fn, "elem_size must be >= 1");
    if (cell_offset > total_cells || n_cells > total_cells - cell_offset) {
        bad(fn, "cells [" + std::to_string(cell_offset) + ", " + std::to_string(cell_offset) + "+" +
                    std::to_string(n_cells) + ") do not fit total_cells = " + std::to_string(total_cells));
    }
    std::size_t cells_elems = 0, region_bytes = 0, row_bytes = 0;
    if (!mul_ok(n_embd_v, total_cells, cells_elems) || !mul_ok(cells_elems, elem_size, region_bytes)) {
        bad(fn, "n_embd_v * total_cells * elem_size overflows size_t");
    }
    if (region_bytes > region_len) {
        bad(fn, "the transposed region needs " + std::to_string(region_bytes) + " bytes, the buffer has " +
                    std::to_string(region_len));
    }
    if (!mul_ok(n_embd_v, elem_size, row_bytes)) bad(fn, "n_embd_v * elem_size overflows size_t");
    if (n_cells == 0 || n_embd_v == 0) return false;
    if (region == nullptr || rows == nullptr) bad(fn, "null buffer");
    if (n_cells > 1 && stride < row_bytes) {
        bad(fn, std::string(stride_name) + " (" + std::to_string(stride) + " bytes) is shorter than a row of " +
                    std::to_string(row_bytes) + " bytes");
    }
    std::size_t span = 0;
    if (!mul_ok(n_cells - 1, stride, span) || span > kMax - row_bytes) bad(fn, "the rows' extent overflows size_t");
    const std::size_t rows_bytes = span + row_bytes;
    const auto r0 = reinterpret_cast<std::uintptr_t>(rows);
    const auto t0 = reinterpret_cast<std::uintptr_t>(region);
    if (r0 > std::numeric_limits<std::uintptr_t>::max() - rows_bytes ||
        t0 > std::numeric_limits<std::uintptr_t>::max() - region_bytes) {
        bad(fn, "buffer extent wraps the address space");
    }
    if (r0 < t0 + region_bytes && t0 < r0 + rows_bytes) bad(fn, "the token-major rows overlap the transposed region");
    return true;
}

// kToTrans: rows -> region (write), else region -> rows (read); the source side is the const one. ES: the
// element size as a constant (so the copy is one load and store), or 0 for a runtime size.
template <std::size_t ES, bool kToTrans, class Region, class Rows>
void copy(Region* region, std::size_t n_embd_v, std::size_t total_cells, std::size_t cell_offset, Rows* rows,
          std::size_t n_cells, std::size_t stride, std::size_t es_runtime) {
    const std::size_t es = ES ? ES : es_runtime;
    for (std::size_t c0 = 0; c0 < n_cells; c0 += kTile) {
        const std::size_t c1 = n_cells - c0 < kTile ? n_cells : c0 + kTile;
        for (std::size_t d = 0; d < n_embd_v; ++d) {
            Region* run = region + (d * total_cells + cell_offset) * es;
            for (std::size_t c = c0; c < c1; ++c) {
                if constexpr (kToTrans) {
                    std::memcpy(run + c * es, rows + c * stride + d * es, ES ? ES : es);
                } else {
                    std::memcpy(rows + c * stride + d * es, run + c * es, ES ? ES : es);
                }
            }
        }
    }
}

template <bool kToTrans, class Region, class Rows>
void dispatch(Region* region, std::size_t n_embd_v, std::size_t total_cells, std::size_t cell_offset, Rows* rows,
              std::size_t n_cells, std::size_t stride, std::size_t es) {
    switch (es) {
        case 2: copy<2, kToTrans>(region, n_embd_v, total_cells, cell_offset, rows, n_cells, stride, es); break;
        case 4: copy<4, kToTrans>(region, n_embd_v, total_cells, cell_offset, rows, n_cells, stride, es); break;
        default: copy<0, kToTrans>(region, n_embd_v, total_cells, cell_offset, rows, n_cells, stride, es); break;
    }
}

}  // namespace

void write_v_trans(std::uint8_t* dst, std::size_t dst_len, std::size_t n_embd_v, std::size_t total_cells,
                   std::size_t cell_offset, const std::uint8_t* src, std::size_t n_cells, std::size_t src_stride_bytes,
                   std::size_t elem_size) {
    if (!check("write_v_trans", dst, dst_len, n_embd_v, total_cells, cell_offset, src, n_cells, src_stride_bytes,
               elem_size, "src_stride_bytes")) {
        return;
    }
    dispatch<true>(dst, n_embd_v, total_cells, cell_offset, src, n_cells, src_stride_bytes, elem_size);
}

void read_v_trans(const std::uint8_t* src, std::size_t src_len, std::size_t n_embd_v, std::size_t total_cells,
                  std::size_t cell_offset, std::uint8_t* dst, std::size_t n_cells, std::size_t dst_stride_bytes,
                  std::size_t elem_size) {
    if (!check("read_v_trans", src, src_len, n_embd_v, total_cells, cell_offset, dst, n_cells, dst_stride_bytes,
               elem_size, "dst_stride_bytes")) {
        return;
    }
    dispatch<false>(src, n_embd_v, total_cells, cell_offset, dst, n_cells, dst_stride_bytes, elem_size);
}

}  // namespace nexus::splice
