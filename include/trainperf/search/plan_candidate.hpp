// One candidate of the layout search (search/layout_search.hpp): a parallel layout, the
// framework switches it runs with (the profile's own, or turned off where the search
// tried without them), and its prediction; the setup it predicts, and its switches in
// words.
#pragma once

#include <string>
#include <string_view>

#include "../cost/step.hpp"
#include "../spec/framework.hpp"
#include "../spec/parallel.hpp"
#include "../spec/setup.hpp"

namespace trainperf {

// The framework switches a candidate runs with (spec/framework.hpp): the profile's own, or
// turned off where the search tried without them.
struct framework_switches {
    bool flash_attention = false;
    bool tensor_parallel_overlap = false;
    bool overlap_parameter_gather = false;
    friend constexpr bool operator==(const framework_switches&, const framework_switches&) = default;
};

constexpr framework_switches switches_of(const framework_profile& fw) {
    return {fw.flash_attention, fw.tensor_parallel_overlap, fw.overlap_parameter_gather};
}

constexpr void apply(const framework_switches& w, framework_profile& fw) {
    fw.flash_attention = w.flash_attention;
    fw.tensor_parallel_overlap = w.tensor_parallel_overlap;
    fw.overlap_parameter_gather = w.overlap_parameter_gather;
}

// What differs from `base` in words (", FlashAttention off, ..."); empty when nothing does.
inline std::string describe_changes(const framework_switches& w, const framework_profile& base) {
    std::string t;
    const auto word = [&](bool on, bool was, std::string_view name) {
        if (on != was) t += ", " + std::string(name) + (on ? " on" : " off");
    };
    word(w.flash_attention, base.flash_attention, "FlashAttention");
    word(w.tensor_parallel_overlap, base.tensor_parallel_overlap, "tp-comm-overlap");
    word(w.overlap_parameter_gather, base.overlap_parameter_gather, "overlap-param-gather");
    return t;
}

// A candidate: its layout, its switches, its prediction, and how the job numbers its
// ranks (the search tries the framework's other order where the job spans several
// NVLink domains: which groups a domain holds).
struct plan_candidate {
    parallel_layout layout{};
    framework_switches switches{};
    step_report report{};
    rank_order order = rank_order::tp_dp_pp;
};

// The setup a candidate predicts: the request's with the candidate's layout, switches
// and rank order.
inline training_setup setup_of(const training_setup& base, const plan_candidate& c) {
    training_setup s = base;
    s.layout = c.layout;
    s.cluster.order = c.order;
    apply(c.switches, s.framework);
    return s;
}

// What differs from the request's framework and rank order in words (", tp-comm-overlap
// off, rank order tp-pp-dp").
inline std::string describe_changes(const plan_candidate& c, const framework_profile& base, rank_order base_order) {
    return describe_changes(c.switches, base) +
           (c.order == base_order ? std::string() : ", rank order " + std::string(to_string(c.order)));
}

}  // namespace trainperf
