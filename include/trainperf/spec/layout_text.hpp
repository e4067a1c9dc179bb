// A parallel layout as text. to_string gives the equivalent command-line flags,
//   --gpus 64 --tp 8 --pp 2 --interleave 2 --sp --zero 1 --offload none --batch 2
//   --grad-accum 16 --recompute selective --dp-overlap framework
// (every field; --gpus = dp·tp·cp·pp, --sp only when on; --cp only when above 1,
// --schedule only when not 1f1b, --first-stage-layers, --last-stage-layers,
// --pipeline-layout (in double quotes), --recompute-modules, --shard-group, --ep and --etp
// only when set, so that a layout without them reads as it always has), which
// parse_layout reads back and
// `trainperf predict` accepts. describe gives the one human-readable form the
// CLI prints, e.g. "dp 4 x tp 8 x pp 2 (interleave 2), sp, ZeRO 1, recompute
// selective, micro-batch 2, grad-accum 16" ("dp 8 x tp 8 x cp 2 x pp 4, ..." with
// context parallelism).
#pragma once

#include <array>
#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>

#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "parallel.hpp"

namespace trainperf {

// The flags of the text form, in the order to_string writes them.
enum class layout_flag {
    gpus, tp, cp, pp, interleave, schedule, first_stage_layers, last_stage_layers, pipeline_layout, sp, zero,
    shard_group, offload, batch, grad_accum, recompute, recompute_modules, dp_overlap, ep, etp
};

template <>
struct enum_names<layout_flag> {
    static constexpr std::array<enum_name<layout_flag>, 20> table{{{layout_flag::gpus, "--gpus"},
                                                                   {layout_flag::tp, "--tp"},
                                                                   {layout_flag::cp, "--cp"},
                                                                   {layout_flag::pp, "--pp"},
                                                                   {layout_flag::interleave, "--interleave"},
                                                                   {layout_flag::schedule, "--schedule"},
                                                                   {layout_flag::first_stage_layers,
                                                                    "--first-stage-layers"},
                                                                   {layout_flag::last_stage_layers,
                                                                    "--last-stage-layers"},
                                                                   {layout_flag::pipeline_layout,
                                                                    "--pipeline-layout"},
                                                                   {layout_flag::sp, "--sp"},
                                                                   {layout_flag::zero, "--zero"},
                                                                   {layout_flag::shard_group, "--shard-group"},
                                                                   {layout_flag::offload, "--offload"},
                                                                   {layout_flag::batch, "--batch"},
                                                                   {layout_flag::grad_accum, "--grad-accum"},
                                                                   {layout_flag::recompute, "--recompute"},
                                                                   {layout_flag::recompute_modules,
                                                                    "--recompute-modules"},
                                                                   {layout_flag::dp_overlap, "--dp-overlap"},
                                                                   {layout_flag::ep, "--ep"},
                                                                   {layout_flag::etp, "--etp"}}};
};

// Data-parallel replicas of `gpus` GPUs split tp × cp × pp ways.
constexpr int data_parallel_size(int gpus, int tp, int pp, int cp = 1) {
    const int replica = model_parallel_size(tp, pp, cp);
    require(gpus >= 1 && gpus <= max_gpus, "gpus", gpus, "must be between 1 and 2^22");
    if (gpus % replica != 0)
        detail::fail("gpus", gpus,
                     std::string(cp == 1 ? "must be a multiple of tp x pp = " : "must be a multiple of tp x cp x pp = ") +
                         std::to_string(replica));
    return gpus / replica;
}

inline std::string to_string(const parallel_layout& l) {
    std::string s;
    for (layout_flag f : enum_values<layout_flag>()) {
        std::string value;
        switch (f) {
            case layout_flag::gpus: value = std::to_string(l.gpus()); break;
            case layout_flag::tp: value = std::to_string(l.tp); break;
            case layout_flag::cp:
                if (l.cp == 1) continue;
                value = std::to_string(l.cp);
                break;
            case layout_flag::pp: value = std::to_string(l.pp); break;
            case layout_flag::interleave: value = std::to_string(l.interleave); break;
            case layout_flag::schedule:
                if (l.schedule == pipeline_schedule::one_f_one_b) continue;
                value = to_string(l.schedule);
                break;
            case layout_flag::first_stage_layers:
                if (l.first_stage_layers == 0) continue;
                value = std::to_string(l.first_stage_layers);
                break;
            case layout_flag::last_stage_layers:
                if (l.last_stage_layers == 0) continue;
                value = std::to_string(l.last_stage_layers);
                break;
            case layout_flag::pipeline_layout:
                if (l.pipeline_layout.empty()) continue;
                value = '"' + std::string(l.pipeline_layout) + '"';  // | ( ) * stay literal in a shell
                break;
            case layout_flag::sp:
                if (!l.sp) continue;
                break;
            case layout_flag::zero: value = std::to_string(l.zero); break;
            case layout_flag::shard_group:
                if (l.shard_group == 0) continue;
                value = std::to_string(l.shard_group);
                break;
            case layout_flag::offload: value = to_string(l.offload); break;
            case layout_flag::batch: value = std::to_string(l.micro_batch); break;
            case layout_flag::grad_accum: value = std::to_string(l.grad_accum); break;
            case layout_flag::recompute: value = to_string(l.recompute); break;
            case layout_flag::recompute_modules:
                if (l.recompute_modules.empty()) continue;
                value = names_of(l.recompute_modules, ",");
                break;
            case layout_flag::dp_overlap: value = to_string(l.dp_overlap); break;
            case layout_flag::ep:
                if (l.ep == 1) continue;
                value = std::to_string(l.ep);
                break;
            case layout_flag::etp:
                if (l.etp == 0) continue;
                value = std::to_string(l.etp);
                break;
        }
        if (!s.empty()) s += ' ';
        s += to_string(f);
        if (!value.empty()) s += ' ' + value;
    }
    return s;
}

namespace layout_text_detail {
constexpr bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The next whitespace-separated token of `text` (empty at the end); consumes it.
constexpr std::string_view next_token(std::string_view& text) {
    std::size_t i = 0;
    while (i < text.size() && is_space(text[i])) ++i;
    std::size_t j = i;
    while (j < text.size() && !is_space(text[j])) ++j;
    const std::string_view token = text.substr(i, j - i);
    text.remove_prefix(j);
    return token;
}

// A value without the double quotes to_string puts around it.
constexpr std::string_view unquoted(std::string_view value) {
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') return value.substr(1, value.size() - 2);
    return value;
}

inline int whole_number(std::string_view flag, std::string_view text) {
    long long v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || text.empty())
        detail::fail(flag, '"' + std::string(text) + '"', "must be a whole number");
    require(v >= 0 && v <= (1LL << 30), flag, v, "is out of range");
    return int(v);
}
}  // namespace layout_text_detail

// Reads to_string's text back: the flags in any order, each at most once; a flag left
// out keeps parallel_layout's default (--gpus: tp·cp·pp). An unknown token, a missing or
// bad value, or an invalid layout throws trainperf::invalid_argument naming it. A
// --pipeline-layout is a view of `text`, which must outlive the layout.
inline parallel_layout parse_layout(std::string_view text) {
    namespace td = layout_text_detail;
    parallel_layout l;
    int gpus = 0;
    std::array<bool, enum_names<layout_flag>::table.size()> seen{};
    for (std::string_view token = td::next_token(text); !token.empty(); token = td::next_token(text)) {
        const layout_flag f = parse_enum<layout_flag>("layout", token);
        const std::string_view flag = to_string(f);
        require(!seen[std::size_t(f)], "layout", flag, "is given twice");
        seen[std::size_t(f)] = true;
        if (f == layout_flag::sp) {
            l.sp = true;
            continue;
        }
        const std::string_view value = td::next_token(text);
        require(!value.empty(), flag, "(missing)", "needs a value");
        switch (f) {
            case layout_flag::gpus: gpus = td::whole_number(flag, value); break;
            case layout_flag::tp: l.tp = td::whole_number(flag, value); break;
            case layout_flag::cp: l.cp = td::whole_number(flag, value); break;
            case layout_flag::pp: l.pp = td::whole_number(flag, value); break;
            case layout_flag::interleave: l.interleave = td::whole_number(flag, value); break;
            case layout_flag::schedule: l.schedule = parse_enum<pipeline_schedule>(flag, value); break;
            case layout_flag::first_stage_layers: l.first_stage_layers = td::whole_number(flag, value); break;
            case layout_flag::last_stage_layers: l.last_stage_layers = td::whole_number(flag, value); break;
            case layout_flag::pipeline_layout: l.pipeline_layout = td::unquoted(value); break;
            case layout_flag::zero: l.zero = td::whole_number(flag, value); break;
            case layout_flag::shard_group: l.shard_group = td::whole_number(flag, value); break;
            case layout_flag::offload: l.offload = parse_enum<offload_mode>(flag, value); break;
            case layout_flag::batch: l.micro_batch = td::whole_number(flag, value); break;
            case layout_flag::grad_accum: l.grad_accum = td::whole_number(flag, value); break;
            case layout_flag::recompute: l.recompute = parse_enum<recompute_mode>(flag, value); break;
            case layout_flag::recompute_modules: l.recompute_modules = parse_recompute_modules(value); break;
            case layout_flag::dp_overlap: l.dp_overlap = parse_enum<dp_overlap_mode>(flag, value); break;
            case layout_flag::ep: l.ep = td::whole_number(flag, value); break;
            case layout_flag::etp: l.etp = td::whole_number(flag, value); break;
            case layout_flag::sp: break;
        }
    }
    l.dp = data_parallel_size(seen[std::size_t(layout_flag::gpus)] ? gpus : model_parallel_size(l.tp, l.pp, l.cp),
                              l.tp, l.pp, l.cp);
    validate(l);
    return l;
}

// The human-readable form: dp × tp × pp always (× cp after tp when above 1), then what differs from the plain
// layout (interleave, sp, offload, dp-overlap), then ZeRO, recompute, micro-batch and
// grad-accum.
inline std::string describe(const parallel_layout& l) {
    std::string s = "dp " + std::to_string(l.dp) + " x tp " + std::to_string(l.tp);
    if (l.cp > 1) s += " x cp " + std::to_string(l.cp);
    s += " x pp " + std::to_string(l.pp);
    if (l.interleave > 1) s += " (interleave " + std::to_string(l.interleave) + ")";
    if (l.first_stage_layers > 0 || l.last_stage_layers > 0) {
        s += " (layers: first stage ";
        s += l.first_stage_layers > 0 ? std::to_string(l.first_stage_layers) : "even";
        s += ", last stage ";
        s += l.last_stage_layers > 0 ? std::to_string(l.last_stage_layers) : "even";
        s += ")";
    }
    if (!l.pipeline_layout.empty()) s += " (layout " + std::string(l.pipeline_layout) + ")";
    if (l.schedule != pipeline_schedule::one_f_one_b) s += ", " + std::string(to_string(l.schedule));
    if (l.sp) s += ", sp";
    s += ", ZeRO " + std::to_string(l.zero);
    if (l.shard_group > 0)
        s += " (shards of " + std::to_string(l.shard_group) + ", " + std::to_string(l.shard_replicas()) +
             " replicas)";
    if (l.offload != offload_mode::none) s += ", " + std::string(to_string(l.offload)) + " offload";
    s += ", recompute " + std::string(to_string(l.recompute));
    if (!l.recompute_modules.empty()) s += " (" + names_of(l.recompute_modules, ", ") + ")";
    s += ", micro-batch " + std::to_string(l.micro_batch) + ", grad-accum " + std::to_string(l.grad_accum);
    if (l.dp_overlap != dp_overlap_mode::framework) s += ", dp-overlap " + std::string(to_string(l.dp_overlap));
    if (l.ep > 1 || l.etp > 0) s += ", experts over ep " + std::to_string(l.ep) + " x etp " + std::to_string(l.expert_tp());
    return s;
}

}  // namespace trainperf
