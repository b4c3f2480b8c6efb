#include "radix/radix_tree.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>
#include <string>

namespace nexus::radix {

namespace {
constexpr int32_t kRoot = 0;
constexpr int64_t kChunk = 64;

uint64_t bit(int32_t slot) { return uint64_t{1} << slot; }
int32_t lowest(uint64_t mask) { return static_cast<int32_t>(std::countr_zero(mask)); }
}  // namespace

int64_t common_prefix(const int32_t* a, const int32_t* b, int64_t n) {
    int64_t i = 0;
    while (i + kChunk <= n && std::memcmp(a + i, b + i, kChunk * sizeof(int32_t)) == 0) i += kChunk;
    while (i < n && a[i] == b[i]) ++i;
    return i;
}

RadixTree::RadixTree(int32_t n_slots, int64_t slot_capacity) : n_slots_(n_slots), capacity_(slot_capacity) {
    if (n_slots < 1 || n_slots > kMaxSlots) {
        throw std::invalid_argument("RadixTree: n_slots must be in [1, " + std::to_string(kMaxSlots) + "], got " +
                                    std::to_string(n_slots));
    }
    if (slot_capacity < 1) {
        throw std::invalid_argument("RadixTree: slot_capacity must be >= 1, got " + std::to_string(slot_capacity));
    }
    buf_.assign(static_cast<std::size_t>(n_slots) * static_cast<std::size_t>(slot_capacity), 0);
    len_.assign(static_cast<std::size_t>(n_slots), 0);
    locks_.assign(static_cast<std::size_t>(n_slots), 0);
    last_used_.assign(static_cast<std::size_t>(n_slots), 0);
    const auto pool = static_cast<std::size_t>(2 * n_slots + 1);
    nodes_.assign(pool, Node{});
    free_nodes_.reserve(pool);
    for (auto i = static_cast<int32_t>(pool) - 1; i > kRoot; --i) free_nodes_.push_back(i);
}

void RadixTree::check_slot(int32_t slot) const {
    if (slot < 0 || slot >= n_slots_) {
        throw std::out_of_range("RadixTree: slot " + std::to_string(slot) + " out of range [0, " +
                                std::to_string(n_slots_) + ")");
    }
}

const int32_t* RadixTree::label(const Node& node) const {
    return buf_.data() + static_cast<std::size_t>(lowest(node.through)) * static_cast<std::size_t>(capacity_) +
           node.depth;
}

int32_t RadixTree::find_child(int32_t node, int32_t token) const {
    for (int32_t c = nodes_[node].first_child; c >= 0; c = nodes_[c].next_sibling) {
        if (label(nodes_[c])[0] == token) return c;
    }
    return -1;
}

int32_t RadixTree::new_node() {
    // Cannot run dry: insert() erases the slot first, and n_slots sequences never need more than the pool.
    if (free_nodes_.empty()) throw std::logic_error("RadixTree: node pool exhausted (invariant broken)");
    const int32_t n = free_nodes_.back();
    free_nodes_.pop_back();
    nodes_[n] = Node{};
    ++live_nodes_;
    return n;
}

void RadixTree::free_node(int32_t node) {
    nodes_[node] = Node{};
    free_nodes_.push_back(node);
    --live_nodes_;
}

void RadixTree::unlink(int32_t node) {
    Node& p = nodes_[nodes_[node].parent];
    if (p.first_child == node) {
        p.first_child = nodes_[node].next_sibling;
        return;
    }
    for (int32_t c = p.first_child; c >= 0; c = nodes_[c].next_sibling) {
        if (nodes_[c].next_sibling == node) {
            nodes_[c].next_sibling = nodes_[node].next_sibling;
            return;
        }
    }
}

void RadixTree::replace_child(int32_t parent, int32_t old_child, int32_t new_child) {
    nodes_[new_child].next_sibling = nodes_[old_child].next_sibling;
    nodes_[new_child].parent = parent;
    Node& p = nodes_[parent];
    if (p.first_child == old_child) {
        p.first_child = new_child;
        return;
    }
    for (int32_t c = p.first_child; c >= 0; c = nodes_[c].next_sibling) {
        if (nodes_[c].next_sibling == old_child) {
            nodes_[c].next_sibling = new_child;
            return;
        }
    }
}

int32_t RadixTree::n_children(int32_t node) const {
    int32_t k = 0;
    for (int32_t c = nodes_[node].first_child; c >= 0; c = nodes_[c].next_sibling) ++k;
    return k;
}

Match RadixTree::match(const int32_t* tokens, int64_t n) {
    int32_t cur = kRoot;
    int64_t pos = 0;
    while (pos < n) {
        const int32_t child = find_child(cur, tokens[pos]);
        if (child < 0) break;
        const Node& c = nodes_[child];
        const int64_t k = common_prefix(label(c), tokens + pos, std::min(c.len, n - pos));
        pos += k;
        cur = child;
        if (k < c.len) break;
    }
    Match m;
    if (pos == 0) return m;
    uint64_t best = 0;
    for (uint64_t mask = nodes_[cur].through; mask; mask &= mask - 1) {
        const int32_t s = lowest(mask);
        if (m.slot < 0 || last_used_[s] > best) {
            m.slot = s;
            best = last_used_[s];
        }
    }
    m.length = pos;
    last_used_[m.slot] = ++clock_;
    return m;
}

int64_t RadixTree::lcp(int32_t slot, const int32_t* tokens, int64_t n) const {
    check_slot(slot);
    return common_prefix(this->tokens(slot), tokens, std::min(n, len_[slot]));
}

void RadixTree::insert(int32_t slot, const int32_t* tokens, int64_t n) {
    check_slot(slot);
    if (n < 0 || n > capacity_) {
        throw std::length_error("RadixTree: " + std::to_string(n) + " tokens do not fit a slot of " +
                                std::to_string(capacity_));
    }
    erase(slot);
    last_used_[slot] = ++clock_;
    if (n == 0) return;
    std::memcpy(buf_.data() + static_cast<std::size_t>(slot) * static_cast<std::size_t>(capacity_), tokens,
                static_cast<std::size_t>(n) * sizeof(int32_t));
    len_[slot] = n;
    const uint64_t b = bit(slot);
    int32_t cur = kRoot;
    nodes_[kRoot].through |= b;
    int64_t pos = 0;
    while (pos < n) {
        const int32_t child = find_child(cur, tokens[pos]);
        if (child < 0) {
            const int32_t leaf = new_node();
            Node& l = nodes_[leaf];
            l.parent = cur;
            l.depth = pos;
            l.len = n - pos;
            l.through = b;
            l.ends = b;
            l.next_sibling = nodes_[cur].first_child;
            nodes_[cur].first_child = leaf;
            return;
        }
        const int64_t clen = nodes_[child].len;
        const int64_t k = common_prefix(label(nodes_[child]), tokens + pos, std::min(clen, n - pos));
        if (k == clen) {
            nodes_[child].through |= b;
            cur = child;
            pos += k;
            continue;
        }
        // Split the edge after k tokens: `mid` takes the shared part, the old child keeps the rest below it.
        const int32_t mid = new_node();
        Node& m = nodes_[mid];
        m.depth = nodes_[child].depth;
        m.len = k;
        m.through = nodes_[child].through | b;
        replace_child(cur, child, mid);
        nodes_[child].depth += k;
        nodes_[child].len -= k;
        nodes_[child].parent = mid;
        nodes_[child].next_sibling = -1;
        nodes_[mid].first_child = child;
        cur = mid;
        pos += k;
    }
    nodes_[cur].ends |= b;
}

void RadixTree::erase(int32_t slot) {
    check_slot(slot);
    const int64_t n = len_[slot];
    if (n == 0) return;
    const uint64_t b = bit(slot);
    const int32_t* toks = tokens(slot);
    // The slot's path, root excluded, at most one node per pool entry.
    int32_t path[2 * kMaxSlots + 1];
    int32_t depth = 0;
    int32_t cur = kRoot;
    int64_t pos = 0;
    while (pos < n) {
        cur = find_child(cur, toks[pos]);
        if (cur < 0) throw std::logic_error("RadixTree: slot path missing (invariant broken)");
        path[depth++] = cur;
        pos += nodes_[cur].len;
    }
    nodes_[kRoot].through &= ~b;
    nodes_[cur].ends &= ~b;
    for (int32_t i = 0; i < depth; ++i) nodes_[path[i]].through &= ~b;
    len_[slot] = 0;
    // Bottom-up: drop nodes no slot runs through; fold a node that no slot ends at into its only child.
    for (int32_t i = depth - 1; i >= 0; --i) {
        const int32_t node = path[i];
        if (nodes_[node].through == 0) {
            unlink(node);
            free_node(node);
        } else if (nodes_[node].ends == 0 && n_children(node) == 1) {
            const int32_t child = nodes_[node].first_child;
            nodes_[child].depth = nodes_[node].depth;
            nodes_[child].len += nodes_[node].len;
            replace_child(nodes_[node].parent, node, child);
            free_node(node);
        }
    }
}

void RadixTree::lock(int32_t slot) {
    check_slot(slot);
    ++locks_[slot];
    last_used_[slot] = ++clock_;
}

void RadixTree::unlock(int32_t slot) {
    check_slot(slot);
    if (locks_[slot] == 0) throw std::logic_error("RadixTree: slot " + std::to_string(slot) + " is not locked");
    --locks_[slot];
}

int32_t RadixTree::evict() {
    int32_t victim = -1;
    for (int32_t s = 0; s < n_slots_; ++s) {
        if (locks_[s] == 0 && len_[s] > 0 && (victim < 0 || last_used_[s] < last_used_[victim])) victim = s;
    }
    if (victim >= 0) erase(victim);
    return victim;
}

int32_t RadixTree::acquire() {
    int32_t slot = -1;
    for (int32_t s = 0; s < n_slots_; ++s) {
        if (locks_[s] == 0 && len_[s] == 0 && (slot < 0 || last_used_[s] < last_used_[slot])) slot = s;
    }
    if (slot < 0) slot = evict();
    if (slot >= 0) last_used_[slot] = ++clock_;
    return slot;
}

int64_t RadixTree::size(int32_t slot) const {
    check_slot(slot);
    return len_[slot];
}

const int32_t* RadixTree::tokens(int32_t slot) const {
    check_slot(slot);
    return buf_.data() + static_cast<std::size_t>(slot) * static_cast<std::size_t>(capacity_);
}

int32_t RadixTree::lock_count(int32_t slot) const {
    check_slot(slot);
    return locks_[slot];
}

uint64_t RadixTree::last_used(int32_t slot) const {
    check_slot(slot);
    return last_used_[slot];
}

Stats RadixTree::stats() const {
    Stats s;
    s.n_slots = n_slots_;
    s.nodes = live_nodes_;
    s.node_capacity = static_cast<int32_t>(nodes_.size());
    s.clock = clock_;
    for (int32_t i = 0; i < n_slots_; ++i) {
        s.used_slots += len_[i] > 0;
        s.locked_slots += locks_[i] > 0;
        s.slot_tokens += len_[i];
    }
    // Every live node but the root is reachable; sum their edges by walking the tree.
    int32_t stack[2 * kMaxSlots + 1];
    int32_t top = 0;
    stack[top++] = kRoot;
    while (top) {
        const int32_t n = stack[--top];
        s.unique_tokens += nodes_[n].len;
        for (int32_t c = nodes_[n].first_child; c >= 0; c = nodes_[c].next_sibling) stack[top++] = c;
    }
    return s;
}

std::string RadixTree::check() const {
    uint64_t used = 0;
    for (int32_t s = 0; s < n_slots_; ++s) {
        if (len_[s] > 0) used |= bit(s);
    }
    if (nodes_[kRoot].through != used) return "root mask differs from the non-empty slots";
    int32_t seen = 1;
    int32_t stack[2 * kMaxSlots + 1];
    int32_t top = 0;
    stack[top++] = kRoot;
    while (top) {
        const int32_t n = stack[--top];
        const Node& node = nodes_[n];
        uint64_t below = node.ends;
        int32_t kids = 0;
        for (int32_t c = node.first_child; c >= 0; c = nodes_[c].next_sibling) {
            const Node& child = nodes_[c];
            ++kids;
            if (++seen > static_cast<int32_t>(nodes_.size())) return "more nodes than the pool (cycle?)";
            if (child.parent != n) return "child " + std::to_string(c) + " has the wrong parent";
            if (child.len < 1) return "empty edge at node " + std::to_string(c);
            if (child.depth != node.depth + node.len) return "depth mismatch at node " + std::to_string(c);
            if (child.through == 0) return "node " + std::to_string(c) + " has no slot";
            if ((child.through & ~node.through) != 0) return "child mask not within its parent's";
            // every slot through the child holds the child's label
            for (uint64_t m = child.through; m; m &= m - 1) {
                const int32_t s = lowest(m);
                if (len_[s] < child.depth + child.len) return "slot shorter than the edge it runs through";
                if (common_prefix(tokens(s) + child.depth, label(child), child.len) != child.len) {
                    return "slot " + std::to_string(s) + " disagrees with the label of node " + std::to_string(c);
                }
            }
            for (int32_t d = child.next_sibling; d >= 0; d = nodes_[d].next_sibling) {
                if (label(nodes_[d])[0] == label(child)[0]) return "two children start with the same token";
            }
            below |= child.through;
            stack[top++] = c;
        }
        if (below != node.through) return "node " + std::to_string(n) + " mask differs from its subtree's";
        for (uint64_t m = node.ends; m; m &= m - 1) {
            if (len_[lowest(m)] != node.depth + node.len) return "a slot ends at the wrong depth";
        }
        if (n != kRoot && node.ends == 0 && kids == 1) return "unary node " + std::to_string(n) + " not folded";
    }
    if (seen != live_nodes_) return "live node count differs from the reachable nodes";
    return {};
}

}  // namespace nexus::radix
