// How firm a "fits" / "does not fit" verdict is: the margin between what the GPU must
// hold and what it can use, and, where that margin is smaller than what the model
// assumes rather than derives, the assumption that decides the verdict.
//
// Two terms of every memory estimate are ASSUMPTIONS, not derived from the workload
// (spec/framework.hpp memory_overheads, docs/memory.md §6):
//   - the caching allocator's slack (cost/allocator_slack.hpp): with plain segments
//     `fragmentation` × the allocated peak (5-8 % in the catalog profiles), since how
//     much is reserved beyond the allocated peak depends on the order of allocations,
//     which this model does not follow; with expandable segments the partly used pages
//     of its pools;
//   - the CUDA context, outside the allocator (`cuda_context`, 500 MiB): PyTorch
//     measured 287 MB of device memory in use (total − free, one small tensor allocated) with lazy module
//     loading and 667 MB without (pytorch/pytorch PR #85692, CUDA_MODULE_LOADING).
// A verdict is firm when moving either term between none and twice its value leaves
// it unchanged; otherwise the report names the term that decides it.
#pragma once

#include <array>

#include "../core/enum_names.hpp"
#include "../core/units.hpp"
#include "memory.hpp"

namespace trainperf {

// What a borderline verdict depends on; `none` for a firm one.
enum class deciding_assumption { none, allocator_slack, cuda_context };

template <>
struct enum_names<deciding_assumption> {
    static constexpr std::array<enum_name<deciding_assumption>, 3> table{
        {{deciding_assumption::none, "none"},
         {deciding_assumption::allocator_slack, "allocator-slack"},
         {deciding_assumption::cuda_context, "cuda-context"}}};
};

struct fit_margin {
    bytes margin = bytes_of(0);  // usable − total: what is left (negative: how much is over)
    deciding_assumption decided_by = deciding_assumption::none;
    // The assumed term as the estimate counts it (the fragmentation bytes, or the
    // context), when one decides the verdict.
    bytes assumed = bytes_of(0);

    constexpr bool borderline() const { return decided_by != deciding_assumption::none; }
};

// The margin of `report` (of a setup whose framework holds `o`) and the assumption, if
// any, that decides it: the allocator's slack first (the less certain term), then the
// context.
constexpr fit_margin margin_of(const memory_report& report, const memory_overheads& o) {
    const bytes margin = report.capacity - report.breakdown.total();
    const bytes slack = report.breakdown.fragmentation;
    // Either term taken out (margin + term) or doubled (margin − term) flips the sign.
    const auto decides = [&](bytes term) {
        return term.value() > 0 && (margin.value() >= 0 ? margin < term : -margin.value() <= term.value());
    };
    if (decides(slack)) return {margin, deciding_assumption::allocator_slack, slack};
    if (decides(o.cuda_context)) return {margin, deciding_assumption::cuda_context, o.cuda_context};
    return {margin, deciding_assumption::none, bytes_of(0)};
}

}  // namespace trainperf
