// The last query rows of one sequence, every layer: the observation window of KV eviction (issue 26).
//
// llama.cpp computes each layer's post-RoPE Q for a whole ubatch and then drops it. The observer
// (native/python/bind_observe.cpp) copies the last `capacity` token rows of each layer here as the graph runs, so
// the eviction policies can score cached blocks by the attention those queries pay them (Q·Kᵀ against K read from
// the sequence's state). Plain C++: no ggml, no Python; tested alone under the sanitizers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nexus::kv {

class QRing {
public:
    // Rows are float32 [n_head][head_dim]; one per layer per token. capacity >= 1.
    QRing(int32_t n_layer, int32_t n_head, int32_t head_dim, int32_t capacity);

    // Copy the last min(capacity, ne2) tokens of one layer's Q tensor into the slots the next commit fills.
    // Layout as ggml's: ne0 = head_dim, ne1 = n_head, ne2 = n_tokens; element stride 4 bytes (float32), nb1 / nb2
    // byte strides. Returns false (and copies nothing) on a shape that does not fit, or a layer staged twice or
    // with another token count than the other layers of the same batch.
    bool stage(int32_t layer, const float* data, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1, size_t nb2);

    // The staged batch was n_tokens tokens at positions pos[0..n_tokens): its last rows enter the ring.
    // Returns false (and drops the staged rows, emptying the ring) unless every layer was staged for exactly
    // n_tokens tokens.
    bool commit(const int32_t* pos, int64_t n_tokens);

    // Forget the rows of a batch that failed before commit. Staging overwrote ring slots, so the ring empties.
    void abort();
    void clear();

    int64_t count() const { return count_; }
    int32_t capacity() const { return cap_; }
    int32_t n_layer() const { return n_layer_; }
    int32_t n_head() const { return n_head_; }
    int32_t head_dim() const { return head_dim_; }
    int32_t staged_layers() const { return staged_; }

    // Oldest first: q is float32 [count][n_layer][n_head][head_dim], pos int32 [count].
    void copy_out(float* q, int32_t* pos) const;

private:
    size_t row_floats() const { return static_cast<size_t>(n_head_) * static_cast<size_t>(head_dim_); }
    float* slot_row(int64_t slot, int32_t layer);

    int32_t n_layer_, n_head_, head_dim_, cap_;
    std::vector<float> q_;      // [cap][n_layer][n_head][head_dim]
    std::vector<int32_t> pos_;  // [cap]
    std::vector<uint8_t> layer_staged_;
    int64_t head_ = 0;   // the slot the next row goes to
    int64_t count_ = 0;  // rows held, <= cap
    int64_t pending_ = -1;  // token count of the batch being staged; -1 when none
    int32_t staged_ = 0;
};

}  // namespace nexus::kv
