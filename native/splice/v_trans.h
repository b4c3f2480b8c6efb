// llama.cpp's transposed V layout (flash attention off, "v_trans"): in a sequence-state blob a layer's V is
// n_embd_v runs of total_cells elements each, i.e. a [n_embd_v][total_cells] matrix of elem_size-byte elements
// (element (d, c) at byte (d*total_cells + c)*elem_size). These copy token-major rows in and out of it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nexus::splice {

// Write n_cells token-major rows (src + c*src_stride_bytes, n_embd_v elements each) into the transposed
// region dst (dst_len bytes, laid out [n_embd_v][total_cells] elements of elem_size bytes) at columns
// cell_offset..cell_offset+n_cells-1. Checks every stride/size first (overflow-safe) and throws
// std::invalid_argument without writing anything on a bad argument: elem_size 0; a region larger than dst_len;
// columns past total_cells; src_stride_bytes shorter than a row (n_cells > 1); null pointers with work to do;
// src rows overlapping the destination region.
void write_v_trans(std::uint8_t* dst, std::size_t dst_len, std::size_t n_embd_v, std::size_t total_cells,
                   std::size_t cell_offset, const std::uint8_t* src, std::size_t n_cells, std::size_t src_stride_bytes,
                   std::size_t elem_size);

// The inverse: read columns cell_offset..cell_offset+n_cells-1 of the transposed region src (src_len bytes) into
// n_cells token-major rows (dst + c*dst_stride_bytes, n_embd_v elements each). Same checks.
void read_v_trans(const std::uint8_t* src, std::size_t src_len, std::size_t n_embd_v, std::size_t total_cells,
                  std::size_t cell_offset, std::uint8_t* dst, std::size_t n_cells, std::size_t dst_stride_bytes,
                  std::size_t elem_size);

}  // namespace nexus::splice
