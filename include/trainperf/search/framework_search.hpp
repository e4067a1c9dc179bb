// Search across frameworks: the same layout search (search/layout_search.hpp plan) run
// once per framework profile, the request's setup with that profile in place of its
// framework, and the layouts of all of them ranked together by the planner's own order.
// A profile whose software does not train the request's fixed parts — its number
// recipe, optimizer or fine-tuning mode (spec/setup.hpp require_framework_trains) — is
// left out and reported with the reason; anything else the request gets wrong is an
// error, as for plan().
//
// Each profile is searched as it is given: switches a caller chooses for every
// framework (FlashAttention on or off, the gradient format of --grad-reduce-dtype) are
// set on each profile before the call, as they would be set on one.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../core/error.hpp"
#include "../spec/framework.hpp"
#include "../spec/setup.hpp"
#include "layout_search.hpp"

namespace trainperf {

// A framework left out of the search, and why (the message validate gives, naming it).
struct skipped_framework {
    std::string framework;
    std::string reason;
};

// Every framework was left out: one error naming each with its reason, or the one reason
// itself where all give the same (then it is not about frameworks: 32 heads over tp 3).
[[noreturn]] inline void fail_no_framework_runs(const std::vector<skipped_framework>& skipped) {
    require(!skipped.empty(), "frameworks", 0, "must name at least one framework profile");
    const bool same = std::all_of(skipped.begin(), skipped.end(),
                                  [&](const skipped_framework& s) { return s.reason == skipped.front().reason; });
    if (same && skipped.size() > 1) throw invalid_argument(skipped.front().reason);
    std::string names, reasons;
    for (const skipped_framework& s : skipped) {
        names += (names.empty() ? "" : ",") + s.framework;
        reasons += (reasons.empty() ? "" : "; ") + s.reason;
    }
    detail::fail("frameworks", names,
                 "none of them runs this setup as a whole (each reason on its own; a framework named as offering "
                 "one part may lack another): " + reasons);
}

struct framework_plan_result {
    std::vector<framework_profile> searched;  // the profiles planned, in the order given
    std::vector<skipped_framework> skipped;   // the profiles that do not train the request's recipe
    std::vector<plan_candidate> best;         // fastest first, over every framework searched
    std::vector<std::size_t> framework_of;    // of each of best: its profile's index in `searched`
    long long candidates = 0;                 // the per-framework counts (plan_result), summed
    long long evaluated = 0;
    long long pruned = 0;
    long long fitting = 0;
    long long borderline = 0;
    bool only_borderline = false;             // every layout that fits is (plan_result::only_borderline)
    bool folded = false;                      // at most one layout per (framework, family)
    seconds wall = seconds_of(0.0);           // time the whole search took

    const framework_profile& framework(std::size_t i) const { return searched[framework_of[i]]; }
};

// The request with `fw` in place of its setup's framework.
inline plan_request with_framework(const plan_request& r, const framework_profile& fw) {
    plan_request out = r;
    out.base.framework = fw;
    return out;
}

// The setup best[i] predicts: its framework's request, the candidate's layout and
// switches (setup_of, layout_search.hpp); predict() of it gives best[i]'s step.
inline training_setup setup_of(const plan_request& r, const framework_plan_result& result, std::size_t i) {
    return setup_of(with_framework(r, result.framework(i)).base, result.best[i]);
}

namespace framework_search_detail {

// Why `fw`'s software does not train the request's recipe, optimizer, fine-tuning mode
// or mixture of experts (its token dispatcher); empty when it does.
inline std::string refusal(const plan_request& r, const framework_profile& fw) {
    try {
        const training_setup s = with_framework(r, fw).base;
        require_framework_trains(s);
        require_framework_rank_order(s);
        if (has_moe(s.model)) setup_detail::require_framework_dispatches(s);
    } catch (const invalid_argument& e) {
        return e.what();
    }
    return {};
}

// The candidates of every framework's plan in the planner's order (ties: the earlier
// framework first), at most `top`. Each plan holds its framework's `top` fastest
// (families, when folded), so the merged top holds those of the whole space; a family
// is one framework's (layout_search.hpp family_key with the framework).
inline void merge(std::vector<std::pair<plan_candidate, std::size_t>>& all, std::size_t top,
                  framework_plan_result& out) {
    std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
        return planner_detail::ranks_before(a.first, b.first);
    });
    if (all.size() > top) all.resize(top);
    for (auto& [c, f] : all) {
        out.best.push_back(std::move(c));
        out.framework_of.push_back(f);
    }
}

}  // namespace framework_search_detail

// Every valid layout of every framework in `frameworks` that trains the request's
// recipe, optimizer and fine-tuning mode; keeps the options.top fastest that fit (with
// options.fold_variants, the fastest of options.top distinct (framework, family) pairs).
// A progress callback gets the fraction of all frameworks' spaces done. Throws when no
// framework trains the request, naming each one's reason.
inline framework_plan_result plan_across(const plan_request& request, std::span<const framework_profile> frameworks,
                                         const plan_options& options = {}) {
    using namespace framework_search_detail;
    require(!frameworks.empty(), "frameworks", 0, "must name at least one framework profile");
    const auto start = std::chrono::steady_clock::now();
    framework_plan_result out;
    out.folded = options.fold_variants;
    std::vector<std::pair<plan_candidate, std::size_t>> all;
    std::vector<std::size_t> borderline_only;  // of `searched`: the frameworks whose fits are all borderline
    bool any_firm = false;
    for (std::size_t i = 0; i < frameworks.size(); ++i) {
        const framework_profile& fw = frameworks[i];
        if (std::string why = refusal(request, fw); !why.empty()) {
            out.skipped.push_back({std::string(fw.name), std::move(why)});
            continue;
        }
        plan_options each = options;
        if (options.progress)
            each.progress = [&options, i, n = frameworks.size()](double f) { options.progress((double(i) + f) / double(n)); };
        plan_result r = plan(with_framework(request, fw), each);
        // A framework whose every fitting layout is borderline competes only where no
        // other has a firm one (plan_options::firm_fit).
        if (r.only_borderline) borderline_only.push_back(out.searched.size());
        else if (!r.best.empty()) any_firm = true;
        out.candidates += r.candidates;
        out.evaluated += r.evaluated;
        out.pruned += r.pruned;
        out.fitting += r.fitting;
        out.borderline += r.borderline;
        for (plan_candidate& c : r.best) all.emplace_back(std::move(c), out.searched.size());
        out.searched.push_back(fw);
    }
    if (out.searched.empty()) fail_no_framework_runs(out.skipped);
    if (any_firm)
        std::erase_if(all, [&](const auto& c) {
            return std::find(borderline_only.begin(), borderline_only.end(), c.second) != borderline_only.end();
        });
    out.only_borderline = !any_firm && !borderline_only.empty();
    merge(all, options.top, out);
    out.wall = seconds_of(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return out;
}

}  // namespace trainperf
