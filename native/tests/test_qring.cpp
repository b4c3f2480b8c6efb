// QRing (the observation window of KV eviction): random batches with random strides against a reference that keeps
// every row ever committed; the ring must hold exactly the last `capacity` of them, oldest first. Also the refusals:
// wrong shape, a layer staged twice, layers with different token counts, a commit before every layer was staged.
// Run under ASan/UBSan by scripts/native-sanitize.
#include <cstdint>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include "../kv/qring.h"
#include "check.h"

using nexus::kv::QRing;

namespace {

void check_random(uint32_t seed) {
    std::mt19937 rng(seed);
    const int32_t n_layer = 1 + static_cast<int32_t>(rng() % 4), n_head = 1 + static_cast<int32_t>(rng() % 3);
    const int32_t dim = 1 + static_cast<int32_t>(rng() % 9), cap = 1 + static_cast<int32_t>(rng() % 20);
    QRing ring(n_layer, n_head, dim, cap);
    // reference: every committed token's rows [n_layer][n_head][dim] and position
    std::vector<std::vector<float>> ref_rows;
    std::vector<int32_t> ref_pos;
    int32_t next_pos = 0;
    for (int step = 0; step < 60; ++step) {
        const int64_t n_tok = 1 + static_cast<int64_t>(rng() % 40);
        const size_t pad = rng() % 3;  // padded strides, as a ggml view may have
        const size_t nb1 = (static_cast<size_t>(dim) + pad) * sizeof(float);
        const size_t nb2 = nb1 * static_cast<size_t>(n_head) + pad * sizeof(float);
        std::vector<std::vector<float>> batch_rows(static_cast<size_t>(n_tok),
                                                   std::vector<float>(static_cast<size_t>(n_layer * n_head * dim)));
        for (int32_t l = 0; l < n_layer; ++l) {
            std::vector<unsigned char> buf(nb2 * static_cast<size_t>(n_tok));
            for (int64_t t = 0; t < n_tok; ++t)
                for (int32_t h = 0; h < n_head; ++h)
                    for (int32_t d = 0; d < dim; ++d) {
                        const float v = static_cast<float>(rng() % 100000) / 7.0f;
                        auto* p = reinterpret_cast<float*>(buf.data() + static_cast<size_t>(t) * nb2 +
                                                           static_cast<size_t>(h) * nb1) + d;
                        *p = v;
                        batch_rows[static_cast<size_t>(t)][static_cast<size_t>((l * n_head + h) * dim + d)] = v;
                    }
            NEXUS_CHECK(ring.stage(l, reinterpret_cast<const float*>(buf.data()), dim, n_head, n_tok, nb1, nb2),
                        "stage refused layer %d", l);
            NEXUS_CHECK(!ring.stage(l, reinterpret_cast<const float*>(buf.data()), dim, n_head, n_tok, nb1, nb2),
                        "a layer staged twice must be refused");
        }
        if (rng() % 7 == 0) {  // a failed decode: nothing enters, the ring empties
            ring.abort();
            ref_rows.clear();
            ref_pos.clear();
            NEXUS_CHECK(ring.count() == 0, "abort after staging must empty the ring");
            continue;
        }
        std::vector<int32_t> pos(static_cast<size_t>(n_tok));
        for (auto& p : pos) p = next_pos++;
        NEXUS_CHECK(ring.commit(pos.data(), n_tok), "commit refused");
        for (int64_t t = 0; t < n_tok; ++t) {
            ref_rows.push_back(batch_rows[static_cast<size_t>(t)]);
            ref_pos.push_back(pos[static_cast<size_t>(t)]);
        }
        const size_t keep = std::min<size_t>(static_cast<size_t>(cap), ref_rows.size());
        NEXUS_CHECK(ring.count() == static_cast<int64_t>(keep), "count %lld, expected %zu",
                    static_cast<long long>(ring.count()), keep);
        std::vector<float> q(keep * static_cast<size_t>(n_layer * n_head * dim));
        std::vector<int32_t> p(keep);
        ring.copy_out(q.data(), p.data());
        for (size_t i = 0; i < keep; ++i) {
            const size_t r = ref_rows.size() - keep + i;
            NEXUS_CHECK(p[i] == ref_pos[r], "seed %u: position %zu is %d, expected %d", seed, i, p[i], ref_pos[r]);
            for (size_t e = 0; e < ref_rows[r].size(); ++e)
                NEXUS_CHECK(q[i * ref_rows[r].size() + e] == ref_rows[r][e], "seed %u: row %zu element %zu", seed, i, e);
        }
    }
}

void check_refusals() {
    QRing ring(2, 2, 4, 8);
    std::vector<float> q(2 * 2 * 4 * 3, 1.0f);
    const size_t nb1 = 4 * sizeof(float), nb2 = 2 * nb1;
    NEXUS_CHECK(!ring.stage(0, q.data(), 3, 2, 2, nb1, nb2), "head_dim mismatch accepted");
    NEXUS_CHECK(!ring.stage(0, q.data(), 4, 3, 2, nb1, nb2), "n_head mismatch accepted");
    NEXUS_CHECK(!ring.stage(2, q.data(), 4, 2, 2, nb1, nb2), "layer out of range accepted");
    NEXUS_CHECK(!ring.stage(0, nullptr, 4, 2, 2, nb1, nb2), "null data accepted");
    NEXUS_CHECK(!ring.stage(0, q.data(), 4, 2, 2, 2, nb2), "a row stride shorter than a row accepted");
    NEXUS_CHECK(ring.stage(0, q.data(), 4, 2, 3, nb1, nb2), "a good stage refused");
    NEXUS_CHECK(!ring.stage(1, q.data(), 4, 2, 2, nb1, nb2), "another token count in the same batch accepted");
    const int32_t pos[3] = {0, 1, 2};
    NEXUS_CHECK(!ring.commit(pos, 3), "commit before every layer was staged accepted");
    NEXUS_CHECK(ring.count() == 0 && ring.staged_layers() == 0, "a refused commit must leave an empty ring");
    bool threw = false;
    try {
        QRing bad(0, 1, 1, 1);
    } catch (const std::invalid_argument&) {
        threw = true;
    }
    NEXUS_CHECK(threw, "n_layer 0 accepted");
}

}  // namespace

int main() {
    check_refusals();
    for (uint32_t seed = 1; seed <= 40; ++seed) check_random(seed);
    std::printf("test_qring: OK\n");
    return 0;
}
