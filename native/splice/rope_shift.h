// RoPE re-anchoring of F16 K-cache rows: rotate K rows by a per-row position delta, bit-exact with
// llama.cpp's own K-shift (llama_memory_seq_add followed by the next decode).
//
// RoPE is a rotation by an angle linear in the position, so R(p + delta) = R(delta) R(p): K rows stored at
// position p are moved to p + delta by rotating them by delta. llama.cpp's K-shift does exactly this with
// ggml's CPU rope op (ggml_rope_ext_inplace on the F16 K view, build_rope_shift in llama-kv-cache.cpp); this
// kernel reproduces that op's arithmetic operation for operation, so a block compiled at one position and
// spliced at another carries the same bytes as if llama.cpp had shifted it itself.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nexus::splice {

// llama.cpp's LLAMA_ROPE_TYPE_NORM (rotate adjacent pairs (2i, 2i+1); llama, mistral, ...) and
// LLAMA_ROPE_TYPE_NEOX (rotate the halves (i, i + n_rot/2); qwen2, gemma, phi3, ...).
enum class RopeType : int { Norm = 0, Neox = 2 };

// The rope parameters of one cache section, as llama.cpp's K-shift passes them to ggml_rope_ext:
// n_rot = hparams.n_rot, freq_base/freq_scale = the layer's (cparams) rope base and scale, ext_factor /
// attn_factor / beta_fast / beta_slow = cparams.yarn_*, n_ctx_orig = cparams.n_ctx_orig_yarn. The YaRN
// fields only matter when ext_factor != 0.
struct RopeParams {
    int n_rot;          // rotated dims per head: even, 2 <= n_rot <= head_dim
    int head_dim;       // elements per head (n_embd_head_k)
    int n_head_kv;      // heads per K row
    RopeType type;
    float freq_base;    // > 0, finite
    float freq_scale = 1.f;   // > 0, finite
    float ext_factor = 0.f;   // YaRN extrapolation mix; 0 = plain (scaled) RoPE
    float attn_factor = 1.f;  // YaRN magnitude scale (ggml's mscale)
    float beta_fast = 32.f;
    float beta_slow = 1.f;
    int n_ctx_orig = 0;       // >= 0
};

// Rotate n_rows F16 K rows in place by per-row position deltas; row r starts at rows + r*row_stride
// (elements) and holds n_head_kv*head_dim values (head-major); only the first n_rot dims of each head
// rotate (NORM: adjacent pairs; NEOX: halves). freq_factors: nullable, n_rot/2 floats (llama.cpp's
// rope_freqs). Throws std::invalid_argument on bad params (nothing written).
//
// Bit-exact with ggml-cpu's rope on our llama.cpp build for finite inputs; a NaN result is written as
// ggml writes it (0x7E00 with the sign), whatever its payload.
void rope_shift_f16(std::uint16_t* rows, std::size_t n_rows, std::size_t row_stride, const std::int32_t* deltas,
                    const RopeParams& p, const float* freq_factors);

// The half <-> float conversions the kernel uses, exposed for tests. fp16_to_fp32 is exact (as ggml's
// lookup table); fp32_to_fp16 rounds to nearest even like ggml's ggml_compute_fp32_to_fp16 (NaN -> 0x7E00
// with the input's sign, overflow -> inf, subnormal halves rounded correctly).
float fp16_to_fp32(std::uint16_t h);
std::uint16_t fp32_to_fp16(float f);

}  // namespace nexus::splice
