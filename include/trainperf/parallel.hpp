// A parallel layout: how a model and its batch are split over GPUs.
#pragma once

#include <array>
#include <string_view>

#include "enum_names.hpp"
#include "error.hpp"
#include "model.hpp"

namespace trainperf {

enum class recompute_mode { none, selective, full };

template <>
struct enum_names<recompute_mode> {
    static constexpr std::array<enum_name<recompute_mode>, 3> table{{
        {recompute_mode::none, "none"}, {recompute_mode::selective, "selective"}, {recompute_mode::full, "full"}}};
};

constexpr recompute_mode parse_recompute(std::string_view s) { return parse_enum<recompute_mode>("recompute", s); }

enum class offload_mode { none, optimizer };

template <>
struct enum_names<offload_mode> {
    static constexpr std::array<enum_name<offload_mode>, 2> table{{
        {offload_mode::none, "none"}, {offload_mode::optimizer, "optimizer"}}};
};

constexpr offload_mode parse_offload(std::string_view s) { return parse_enum<offload_mode>("offload", s); }

// Whether data-parallel gradient sync overlaps backward: as the framework profile
// does it, or forced on/off.
enum class dp_overlap_mode { framework, on, off };

template <>
struct enum_names<dp_overlap_mode> {
    static constexpr std::array<enum_name<dp_overlap_mode>, 3> table{{
        {dp_overlap_mode::framework, "framework"}, {dp_overlap_mode::on, "on"}, {dp_overlap_mode::off, "off"}}};
};

struct parallel_layout {
    int dp = 1;                  // data-parallel replicas
    int tp = 1;                  // tensor parallel (Megatron), inside a node
    int pp = 1;                  // pipeline stages
    int interleave = 1;          // virtual stages per pipeline rank (1 = plain 1F1B)
    bool sp = false;             // sequence parallelism (needs tp > 1 to matter)
    int zero = 0;                // ZeRO stage 0..3, shards over dp
    offload_mode offload = offload_mode::none;
    int micro_batch = 1;         // samples per micro-batch per model replica
    int grad_accum = 1;          // micro-batches per step per replica
    recompute_mode recompute = recompute_mode::none;
    dp_overlap_mode dp_overlap = dp_overlap_mode::framework;

    constexpr int gpus() const { return dp * tp * pp; }
    constexpr long long global_batch() const { return 1LL * micro_batch * dp * grad_accum; }
};

constexpr void validate(const parallel_layout& p) {
    require(p.dp >= 1, "dp", p.dp, "must be at least 1");
    require(p.tp >= 1, "tp", p.tp, "must be at least 1");
    require(p.pp >= 1, "pp", p.pp, "must be at least 1");
    require(p.interleave >= 1, "interleave", p.interleave, "must be at least 1");
    require(p.zero >= 0 && p.zero <= 3, "zero", p.zero, "must be 0, 1, 2 or 3");
    require(p.micro_batch >= 1, "batch", p.micro_batch, "must be at least 1");
    require(p.grad_accum >= 1, "grad_accum", p.grad_accum, "must be at least 1");
}

// The layout must fit the model: heads split over tp, layers over pp·interleave.
constexpr void validate(const parallel_layout& p, const transformer_config& m) {
    validate(p);
    require(m.heads % p.tp == 0, "tp", p.tp, "must divide the number of attention heads");
    require(m.effective_kv_heads() % p.tp == 0 || p.tp % m.effective_kv_heads() == 0, "tp", p.tp,
            "must divide the number of kv heads (or be a multiple of it)");
    require(p.pp <= m.layers, "pp", p.pp, "must not exceed the number of layers");
    require(p.interleave == 1 || m.layers % (p.pp * p.interleave) == 0, "interleave",
            p.interleave, "pp x interleave must divide the number of layers");
}

}  // namespace trainperf
