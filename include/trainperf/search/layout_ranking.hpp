// How the layout search ranks its candidates and keeps the best: faster first (ties by
// the layout, so the answer does not depend on the threads), near-duplicates grouped
// into families (layouts that differ only in how they tune the same decomposition),
// and the k best kept, or the best of the k best families.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <iterator>
#include <map>
#include <set>
#include <vector>

#include "../core/units.hpp"
#include "plan_candidate.hpp"

namespace trainperf {

// A layout's family: every field of the layout and switch but those that only tune
// the same decomposition — interleave, schedule, the first and last stage's layers,
// shard group, data-parallel overlap, tensor-parallel overlap, parameter-gather
// overlap and the rank order. dp, tp, cp, pp, ep, etp, sp, ZeRO, offload, micro-batch, grad-accum,
// recompute and FlashAttention define it.
using layout_family = std::array<int, 13>;

constexpr layout_family family_key(const plan_candidate& c) {
    const parallel_layout& l = c.layout;
    return {l.dp, l.tp, l.cp, l.pp, l.ep, l.etp, int(l.sp), l.zero, int(l.offload), l.micro_batch, l.grad_accum,
            int(l.recompute), int(c.switches.flash_attention)};
}

constexpr bool same_family(const plan_candidate& a, const plan_candidate& b) {
    return family_key(a) == family_key(b);
}

// Of candidates in rank order, the first of each family, at most `top` of them.
inline std::vector<plan_candidate> first_of_each_family(const std::vector<plan_candidate>& ranked,
                                                        std::size_t top) {
    std::vector<plan_candidate> out;
    std::set<layout_family> seen;
    for (const plan_candidate& c : ranked) {
        if (out.size() >= top) break;
        if (seen.insert(family_key(c)).second) out.push_back(c);
    }
    return out;
}

namespace planner_detail {

// Faster first; equal step times are ordered by the layout and switches, so that the
// result does not depend on which thread found what first.
inline bool ranks_before(const plan_candidate& a, const plan_candidate& b) {
    if (a.report.step_time != b.report.step_time) return a.report.step_time < b.report.step_time;
    const auto key = [](const plan_candidate& c) {
        const parallel_layout& l = c.layout;
        return std::array<int, 22>{l.tp, l.cp, l.ep, l.etp, l.pp, l.interleave, l.first_stage_layers, l.last_stage_layers,
                                   int(l.schedule), l.dp, l.micro_batch, l.grad_accum, int(l.sp), l.zero,
                                   l.shard_group, int(l.offload), int(l.recompute), int(l.dp_overlap),
                                   int(c.switches.flash_attention), int(c.switches.tensor_parallel_overlap),
                                   int(c.switches.overlap_parameter_gather), int(c.order)};
    };
    return key(a) < key(b);
}

// Keeps the k best candidates (a max-heap in ranks_before order); with `fold`, the k
// best families, each by its best candidate offered.
//
// Why folding keeps the search exact. Invariant: each family held is held by the best
// of its candidates offered so far. It holds because a family's entry is only ever
// replaced by a better candidate of it, and a family evicted (as the worst held) only
// comes back with a candidate better than the worst held then, which is no worse than
// the evicted entry (the worst held never gets worse: a replacement improves an
// entry, an eviction drops the worst). So at the end the heap holds the k families
// whose best candidates rank first, each by that best. The pruning bounds and the
// check before offer() skip only candidates slower than worst(), the k-th held
// family's best: such a candidate cannot replace its own family's entry (an entry
// held is no slower than worst()) and cannot enter as a new family (it would have to
// beat worst()); the bounds therefore stay exact with folding, and only prune less
// (the k-th family's best is no faster than the k-th layout). Folded, the entries are
// kept in rank order with an index by family, so that an offer costs O(log k) whatever
// --top is.
class top_k {
public:
    explicit top_k(std::size_t k, bool fold = false) : k_(k), fold_(fold) {}
    bool full() const { return k_ > 0 && (fold_ ? ranked_.size() : heap_.size()) >= k_; }
    seconds worst() const { return fold_ ? std::prev(ranked_.end())->report.step_time : heap_.front().report.step_time; }
    void offer(const plan_candidate& c) {
        if (k_ == 0) return;
        if (fold_) return offer_folded(c);
        if (!full()) {
            heap_.push_back(c);
            std::push_heap(heap_.begin(), heap_.end(), ranks_before);
        } else if (ranks_before(c, heap_.front())) {
            std::pop_heap(heap_.begin(), heap_.end(), ranks_before);
            heap_.back() = c;
            std::push_heap(heap_.begin(), heap_.end(), ranks_before);
        }
    }
    // The candidates kept, in no particular order.
    std::vector<plan_candidate>& items() {
        if (fold_) heap_.assign(ranked_.begin(), ranked_.end());
        return heap_;
    }

private:
    struct ranked_first {
        bool operator()(const plan_candidate& a, const plan_candidate& b) const { return ranks_before(a, b); }
    };
    using ranked_set = std::set<plan_candidate, ranked_first>;

    // A family held keeps the better of its entry and c; a new family enters as the
    // unfolded list would, the worst family leaving when k are held.
    void offer_folded(const plan_candidate& c) {
        const layout_family family = family_key(c);
        if (const auto held = by_family_.find(family); held != by_family_.end()) {
            if (!ranks_before(c, *held->second)) return;
            ranked_.erase(held->second);
            held->second = ranked_.insert(c).first;
            return;
        }
        if (full()) {
            const auto last = std::prev(ranked_.end());
            if (!ranks_before(c, *last)) return;
            by_family_.erase(family_key(*last));
            ranked_.erase(last);
        }
        by_family_.emplace(family, ranked_.insert(c).first);
    }

    std::size_t k_;
    bool fold_;
    std::vector<plan_candidate> heap_;
    ranked_set ranked_;                                         // folded: rank order
    std::map<layout_family, ranked_set::iterator> by_family_;   // folded: each family's entry
};

}  // namespace planner_detail
}  // namespace trainperf
