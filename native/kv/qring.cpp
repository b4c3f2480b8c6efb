#include "kv/qring.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace nexus::kv {

QRing::QRing(int32_t n_layer, int32_t n_head, int32_t head_dim, int32_t capacity)
    : n_layer_(n_layer), n_head_(n_head), head_dim_(head_dim), cap_(capacity) {
    if (n_layer < 1 || n_head < 1 || head_dim < 1 || capacity < 1) {
        throw std::invalid_argument("QRing: n_layer, n_head, head_dim and capacity must be >= 1");
    }
    q_.assign(static_cast<size_t>(cap_) * static_cast<size_t>(n_layer_) * row_floats(), 0.0f);
    pos_.assign(static_cast<size_t>(cap_), 0);
    layer_staged_.assign(static_cast<size_t>(n_layer_), 0);
}

float* QRing::slot_row(int64_t slot, int32_t layer) {
    return q_.data() + (static_cast<size_t>(slot) * static_cast<size_t>(n_layer_) + static_cast<size_t>(layer)) *
                           row_floats();
}

bool QRing::stage(int32_t layer, const float* data, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1, size_t nb2) {
    if (layer < 0 || layer >= n_layer_ || data == nullptr || ne0 != head_dim_ || ne1 != n_head_ || ne2 < 1) {
        return false;
    }
    if (nb1 < static_cast<size_t>(ne0) * sizeof(float) || nb2 < static_cast<size_t>(ne1) * nb1) return false;
    if (layer_staged_[static_cast<size_t>(layer)] || (pending_ >= 0 && pending_ != ne2)) return false;
    pending_ = ne2;
    const int64_t k = std::min<int64_t>(cap_, ne2);
    const auto* base = reinterpret_cast<const unsigned char*>(data);
    for (int64_t j = 0; j < k; ++j) {
        const int64_t tok = ne2 - k + j;
        float* dst = slot_row((head_ + j) % cap_, layer);
        for (int64_t h = 0; h < ne1; ++h) {
            std::memcpy(dst + h * ne0, base + static_cast<size_t>(tok) * nb2 + static_cast<size_t>(h) * nb1,
                        static_cast<size_t>(ne0) * sizeof(float));
        }
    }
    layer_staged_[static_cast<size_t>(layer)] = 1;
    ++staged_;
    return true;
}

bool QRing::commit(const int32_t* pos, int64_t n_tokens) {
    const bool ok = pos != nullptr && staged_ == n_layer_ && pending_ == n_tokens;
    if (!ok) {
        abort();
        return false;
    }
    const int64_t k = std::min<int64_t>(cap_, n_tokens);
    for (int64_t j = 0; j < k; ++j) pos_[static_cast<size_t>((head_ + j) % cap_)] = pos[n_tokens - k + j];
    head_ = (head_ + k) % cap_;
    count_ = std::min<int64_t>(cap_, count_ + k);
    pending_ = -1;
    staged_ = 0;
    std::fill(layer_staged_.begin(), layer_staged_.end(), 0);
    return true;
}

void QRing::abort() {
    if (staged_ > 0) clear();  // staging may have overwritten held rows
    pending_ = -1;
    staged_ = 0;
    std::fill(layer_staged_.begin(), layer_staged_.end(), 0);
}

void QRing::clear() {
    head_ = 0;
    count_ = 0;
    pending_ = -1;
    staged_ = 0;
    std::fill(layer_staged_.begin(), layer_staged_.end(), 0);
}

void QRing::copy_out(float* q, int32_t* pos) const {
    const size_t slot_floats = static_cast<size_t>(n_layer_) * row_floats();
    const int64_t first = (head_ - count_ + cap_) % cap_;
    for (int64_t i = 0; i < count_; ++i) {
        const int64_t s = (first + i) % cap_;
        std::memcpy(q + static_cast<size_t>(i) * slot_floats, q_.data() + static_cast<size_t>(s) * slot_floats,
                    slot_floats * sizeof(float));
        pos[i] = pos_[static_cast<size_t>(s)];
    }
}

}  // namespace nexus::kv
