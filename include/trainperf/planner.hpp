// Search over parallel layouts: for a model, a system of N GPUs and a global batch,
// every (tp, pp, interleave, dp, ZeRO stage, micro-batch, recompute) that is valid
// and fits, ranked by predicted step time. The engine predicts hundreds of
// thousands of layouts per second (benchmarks/bench_engine.cpp), so the search is
// exhaustive rather than heuristic.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "error.hpp"
#include "parallel.hpp"
#include "step.hpp"

namespace trainperf {

struct plan_request {
    training_setup base{};         // system, model, recipe, optimizer, framework, seq
    int gpus = 1;
    long long global_batch = 1;    // samples per optimizer step
    int max_micro_batch = 64;
    bool allow_offload = false;    // also try optimizer offload
};

struct plan_candidate {
    parallel_layout layout{};
    step_report report{};
};

struct plan_result {
    std::vector<plan_candidate> best;  // fastest first
    long long evaluated = 0;           // layouts predicted
    long long fitting = 0;             // of those, layouts that fit in memory
};

inline void validate(const plan_request& r) {
    require(r.gpus >= 1, "gpus", r.gpus, "must be at least 1");
    require(r.global_batch >= 1, "global_batch", r.global_batch, "must be at least 1");
    require(r.max_micro_batch >= 1, "max_micro_batch", r.max_micro_batch, "must be at least 1");
    validate(r.base.model);
}

namespace planner_detail {
inline std::vector<int> divisors(int n) {
    std::vector<int> d;
    for (int i = 1; i <= n; ++i)
        if (n % i == 0) d.push_back(i);
    return d;
}
}  // namespace planner_detail

// Every valid layout of request.gpus GPUs reaching request.global_batch exactly;
// keeps the `top` fastest that fit.
inline plan_result plan(const plan_request& request, std::size_t top = 10) {
    validate(request);
    const auto& m = request.base.model;
    const int per_node = request.base.cluster.gpus_per_node;
    plan_result result;
    std::vector<plan_candidate> fitting;
    for (int tp : planner_detail::divisors(request.gpus)) {
        if (tp > per_node || m.heads % tp != 0) continue;
        if (m.effective_kv_heads() % tp != 0 && tp % m.effective_kv_heads() != 0) continue;
        for (int pp : planner_detail::divisors(request.gpus / tp)) {
            if (pp > m.layers) continue;
            const int dp = request.gpus / (tp * pp);
            for (int interleave : {1, 2, 4}) {
                if (interleave > 1 && (pp == 1 || m.layers % (pp * interleave) != 0)) continue;
                for (int b = 1; b <= request.max_micro_batch; b *= 2) {
                    if (request.global_batch % (1LL * b * dp) != 0) continue;
                    const int accum = int(request.global_batch / (1LL * b * dp));
                    for (int zero = 0; zero <= (dp > 1 ? 3 : 0); ++zero)
                        for (auto offload : {offload_mode::none, offload_mode::optimizer}) {
                            if (offload == offload_mode::optimizer && !request.allow_offload) continue;
                            for (auto rc : {recompute_mode::none, recompute_mode::selective, recompute_mode::full}) {
                                training_setup s = request.base;
                                s.layout = {.dp = dp, .tp = tp, .pp = pp, .interleave = interleave, .sp = tp > 1,
                                            .zero = zero, .offload = offload, .micro_batch = b,
                                            .grad_accum = accum, .recompute = rc};
                                const step_report report = predict(s);
                                ++result.evaluated;
                                if (!report.fits) continue;
                                ++result.fitting;
                                fitting.push_back({s.layout, report});
                            }
                        }
                }
            }
        }
    }
    const auto faster = [](const plan_candidate& a, const plan_candidate& b) {
        return a.report.step_time < b.report.step_time;
    };
    const std::size_t keep = std::min(top, fitting.size());
    std::partial_sort(fitting.begin(), fitting.begin() + std::ptrdiff_t(keep), fitting.end(), faster);
    fitting.resize(keep);
    result.best = std::move(fitting);
    return result;
}

}  // namespace trainperf
