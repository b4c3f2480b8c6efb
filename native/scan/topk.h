// Top-k selection over float32 scores.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nexus::scan {

// Writes the min(k, n) best scores and their indices to values/indices, sorted descending; equal scores
// are ordered by lower index first. NaN ranks below every number (and NaNs among themselves by index),
// which keeps the order a strict weak ordering. Returns min(k, n). Allocates only when k > 64.
std::size_t topk_f32(const float* scores, std::size_t n, std::size_t k, std::int64_t* indices, float* values);

}  // namespace nexus::scan
