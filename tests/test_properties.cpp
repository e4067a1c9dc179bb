// Properties of the model on generated configurations (docs/reliability.md): thousands
// of random but valid setups per run, each checked for finite outputs and for the
// monotonic relations the model must keep whatever its constants. The generator's
// seed is fixed so that a failure reproduces; TRAINPERF_PROPERTY_SEED picks another.
#include <catch2/catch.hpp>

#include <trainperf/cost/comm.hpp>
#include <trainperf/spec/framework.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/cost/userbuffers.hpp>
#include <trainperf/spec/system.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>

using namespace trainperf;

namespace {

std::uint32_t property_seed() {
    const char* s = std::getenv("TRAINPERF_PROPERTY_SEED");
    return s ? static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10)) : 20261202u;
}

template <class T>
const T& pick(std::mt19937& rng, const T* first, std::size_t n) {
    return first[std::uniform_int_distribution<std::size_t>(0, n - 1)(rng)];
}
template <class Container>
const auto& pick(std::mt19937& rng, const Container& c) {
    return pick(rng, c.data(), c.size());
}
int between(std::mt19937& rng, int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
bool coin(std::mt19937& rng) { return between(rng, 0, 1) == 1; }

// A divisor of n, at most `cap`, chosen at random.
int divisor_of(std::mt19937& rng, int n, int cap) {
    std::vector<int> d;
    for (int i = 1; i <= std::min(n, cap); ++i)
        if (n % i == 0) d.push_back(i);
    return pick(rng, d);
}

// One of the recipes the framework runs, chosen at random.
precision_kind precision_run_by(std::mt19937& rng, const framework_profile& fw) {
    std::vector<precision_kind> run;
    for (precision_kind p : all_precisions)
        if (fw.precisions.contains(p)) run.push_back(p);
    return pick(rng, run);
}

recompute_mode recompute_run_by(std::mt19937& rng, const framework_profile& fw) {
    std::vector<recompute_mode> run;
    for (recompute_mode r : enum_values<recompute_mode>())
        if (fw.recompute_modes.contains(r)) run.push_back(r);
    return pick(rng, run);
}

// A random setup that passes validate(), or nothing when the draw is invalid (the
// caller counts and draws again).
std::optional<training_setup> random_setup(std::mt19937& rng) {
    training_setup s;
    const gpu_spec& gpu = pick(rng, gpu_catalog);
    // The models a step prices: the catalog's dense ones (of a mixture of experts only the
    // parameters and FLOPs are modelled).
    static const std::vector<transformer_config> priced = [] {
        std::vector<transformer_config> v;
        for (const transformer_config& m : model_catalog)
            if (!has_moe(m)) v.push_back(m);
        return v;
    }();
    s.model = pick(rng, priced);
    const int gpus_per_node = gpu.gpu_link.kind == link_kind::none ? 1 : pick(rng, std::array{1, 2, 4, 8});
    s.layout.tp = divisor_of(rng, s.model.heads, gpus_per_node);
    s.layout.pp = between(rng, 0, 2) == 0 ? divisor_of(rng, s.model.layers, 8) : 1;
    s.layout.dp = pick(rng, std::array{1, 1, 2, 3, 4, 8, 64});
    s.layout.sp = s.layout.tp > 1 && coin(rng);
    s.layout.zero = s.layout.dp > 1 ? between(rng, 0, 3) : 0;
    s.layout.micro_batch = between(rng, 1, 8);
    s.layout.grad_accum = s.layout.pp > 1 ? s.layout.pp * between(rng, 1, 4) : between(rng, 1, 4);
    s.layout.offload = between(rng, 0, 4) == 0 ? offload_mode::optimizer : offload_mode::none;
    s.layout.dp_overlap = pick(rng, enum_values<dp_overlap_mode>());
    if (s.layout.pp > 1 && coin(rng)) {
        const int v = between(rng, 2, 4);
        if (interleave_splits_layers(s.model, s.layout.pp, v)) s.layout.interleave = v;
    }
    s.framework = pick(rng, framework_profiles);
    s.layout.recompute = recompute_run_by(rng, s.framework);
    s.precision = recipe(precision_run_by(rng, s.framework));
    const int max_seq = s.model.max_seq > 0 ? s.model.max_seq : 4096;
    s.seq = pick(rng, std::array{0, 128, 512, max_seq});
    if (s.seq > max_seq) s.seq = max_seq;
    const int total = s.layout.dp * s.layout.tp * s.layout.pp;
    try {
        s.cluster = build_cluster({.gpu = gpu, .gpus = total, .gpus_per_node = std::min(gpus_per_node, total),
                                   .order = pick(rng, enum_values<rank_order>())});
        validate(s);
    } catch (const trainperf::invalid_argument&) {
        return std::nullopt;
    }
    return s;
}

std::string describe(const training_setup& s) {
    std::ostringstream out;
    out << s.cluster.gpu.name << " " << s.model.name << " seq " << sequence_length(s) << " " << s.precision.name
        << " " << s.framework.name << " gpus/node " << s.cluster.gpus_per_node << " " << to_string(s.layout);
    return out.str();
}

// Runs `check` on `n` valid random setups; the draws that fail validation do not
// count, but must stay a minority (else the generator tests nothing).
void for_random_setups(int n, const std::function<void(const training_setup&)>& check) {
    std::mt19937 rng(property_seed());
    int valid = 0, drawn = 0;
    while (valid < n) {
        ++drawn;
        REQUIRE(drawn < 4 * n);
        const auto s = random_setup(rng);
        if (!s) continue;
        ++valid;
        INFO(describe(*s));
        check(*s);
    }
}

// The setup with one change, if it is still valid.
std::optional<training_setup> changed(training_setup s, const std::function<void(training_setup&)>& change) {
    try {
        change(s);
        validate(s);
    } catch (const trainperf::invalid_argument&) {
        return std::nullopt;
    }
    return s;
}

bytes memory_total(const training_setup& s) { return memory_of(s).breakdown.total(); }

// A whole number from lo to hi, log-uniform: small and huge sizes equally often.
int log_between(std::mt19937& rng, int lo, int hi) {
    std::uniform_real_distribution<double> d(std::log(double(lo)), std::log(hi + 1.0));
    return std::clamp(int(std::exp(d(rng))), lo, hi);
}

// A setup of a made-up model, its sizes anywhere in the ranges validation allows (a
// head of 1 to 65 536, 1 to 2^16 FFN columns, 1 to 2^20 tokens in the vocabulary,
// micro-batches up to 2^30 and sequences up to 2^24 tokens, LoRA of any rank and
// targets), or nothing when it does not pass validate(): the edges the catalog's models
// never reach.
std::optional<training_setup> random_sized_setup(std::mt19937& rng) {
    training_setup s;
    transformer_config& m = s.model;
    m = {.name = "drawn", .layers = log_between(rng, 1, 128), .heads = log_between(rng, 1, 256)};
    m.kv_heads = coin(rng) ? 0 : m.heads / log_between(rng, 1, m.heads);
    while (m.kv_heads > 0 && m.heads % m.kv_heads != 0) --m.kv_heads;
    m.attention_head_dim = between(rng, 0, 3) == 0 ? log_between(rng, 1, 65536) : 0;
    m.hidden = m.heads * log_between(rng, 1, 512);
    m.ffn_hidden = log_between(rng, 1, 1 << 16);
    m.vocab = log_between(rng, 1, 1 << 20);
    m.max_seq = coin(rng) ? 0 : log_between(rng, 1, 1 << 16);
    m.positions = coin(rng) ? position_kind::learned : position_kind::rotary;
    m.ffn = coin(rng) ? ffn_kind::gelu : ffn_kind::swiglu;
    m.code = pick(rng, enum_values<model_code>());
    const gpu_spec& gpu = pick(rng, gpu_catalog);
    const int gpus_per_node = gpu.gpu_link.kind == link_kind::none ? 1 : 8;
    s.layout.tp = pick(rng, std::array{1, 2, 4, 8});
    s.layout.cp = pick(rng, std::array{1, 1, 2, 4});
    s.layout.pp = pick(rng, std::array{1, 1, 2, 4});
    s.layout.sp = s.layout.tp > 1 && coin(rng);
    s.layout.micro_batch = coin(rng) ? log_between(rng, 1, 1 << 30) : between(rng, 1, 8);
    s.layout.grad_accum = s.layout.pp;
    s.framework = pick(rng, framework_profiles);
    s.layout.recompute = recompute_run_by(rng, s.framework);
    s.precision = recipe(precision_run_by(rng, s.framework));
    if (between(rng, 0, 2) == 0 && s.framework.finetune_modes.contains(finetune_mode::lora))
        s.finetune = {.mode = coin(rng) ? finetune_mode::lora : finetune_mode::qlora,
                      .rank = log_between(rng, 1, 65536), .targets = unsigned(between(rng, 1, 127))};
    s.seq = coin(rng) ? log_between(rng, 1, 1 << 24) : 0;
    const int total = s.layout.tp * s.layout.cp * s.layout.pp;
    try {
        s.cluster = build_cluster({.gpu = gpu, .gpus = total, .gpus_per_node = std::min(gpus_per_node, total)});
        validate(s);
    } catch (const trainperf::invalid_argument&) {
        return std::nullopt;
    }
    return s;
}

// Relative slack for comparisons of sums computed in different orders.
constexpr double slack = 1e-9;

}  // namespace

// The stage pricer takes a validated setup's GEMMs unchecked (workload/ops.hpp checked_shape):
// validation must bound every size the workload derives from the setup.
TEST_CASE("every GEMM and attention op of a valid setup passes its own validation", "[properties]") {
    struct checked_ops {
        void operator()(const stage_op<gemm_op>& g) const { validate(g.op.shape); }
        void operator()(const stage_op<attention_op>& a) const { validate(a.op); }
        void operator()(const stage_op<memory_op>&) const {}
        void operator()(const stage_op<collective_op>&) const {}
        void operator()(const stage_op<host_op>&) const {}
    };
    std::mt19937 rng(property_seed());
    int valid = 0;
    const int draws = 20000;
    for (int i = 0; i < draws; ++i) {
        const auto s = random_sized_setup(rng);
        if (!s) continue;
        ++valid;
        try {
            for_each_stage_op(*s, checked_ops{});
        } catch (const trainperf::invalid_argument& e) {
            FAIL_CHECK(describe(*s) << " (" << s->model.hidden << " hidden, " << s->model.heads << " heads of "
                                    << s->model.head_dim() << ", ffn " << s->model.ffn_hidden << ", vocab "
                                    << s->model.vocab << ", lora " << int(s->finetune.mode) << ") emits " << e.what());
        }
    }
    CHECK(valid >= draws / 20);  // the generator reaches valid setups, edges among them
}

TEST_CASE("every report of a valid setup meets its post-conditions", "[properties]") {
    for_random_setups(3000, [](const training_setup& s) {
        const step_report r = predict(s);
        CHECK(postcondition_violation(r).empty());
        CHECK(r.time.total().value() == Approx(r.step_time.value()).epsilon(slack));
        // MFU counts PaLM's FLOPs; a fused causal kernel runs half the attention core.
        if (!r.causal_attention_skipped && !r.frozen_base) CHECK(r.mfu <= r.hfu * (1 + slack));
        CHECK(r.hfu <= r.hfu_ceiling * (1 + slack));
        CHECK(r.hfu_ceiling == std::max(1.0, s.cluster.gpu.clock_ratio()));
    });
}

// Transformer Engine's userbuffers (the tensor-parallel overlap with sequence
// parallelism, cost/userbuffers.hpp) hold the whole sequence, whatever tp: a layout that
// turns them on (tp from 1, or sp) grows by them. Compared without them.
double memory_apart_from_userbuffers(const training_setup& s) {
    const bytes ub = userbuffer_bytes(s.model, stored_precision(s), s.layout, sequence_length(s), s.framework);
    return memory_total(s).value() - ub.value();
}

TEST_CASE("memory does not grow with tp, ZeRO stage, sequence parallelism or offload (but its buckets)", "[properties]") {
    for_random_setups(2000, [](const training_setup& s) {
        const double base = memory_apart_from_userbuffers(s);
        if (const auto more_tp = changed(s, [](training_setup& t) {
                t.layout.tp *= 2;
                t.cluster = build_cluster({.gpu = t.cluster.gpu, .gpus = t.layout.dp * t.layout.tp * t.layout.pp,
                                           .gpus_per_node = t.cluster.gpus_per_node, .order = t.cluster.order});
            })) {
            INFO("tp x 2");
            CHECK(memory_apart_from_userbuffers(*more_tp) <= base * (1 + slack));
        }
        if (const auto more_zero = changed(s, [](training_setup& t) { ++t.layout.zero; })) {
            INFO("ZeRO stage + 1");
            CHECK(memory_apart_from_userbuffers(*more_zero) <= base * (1 + slack));
        }
        // Op-level checkpointing keeps the sequence-parallel reduce-scatters' outputs (to
        // spare their communication in the recompute), which with t = 2 outweigh what the
        // split of the layer input saves (docs/memory.md §4).
        if (const auto with_sp = changed(s, [](training_setup& t) { t.layout.sp = true; });
            with_sp && s.layout.recompute != recompute_mode::op_selective) {
            INFO("sequence parallelism");
            CHECK(memory_apart_from_userbuffers(*with_sp) <= base * (1 + slack));
        }
        // Offload moves state to the host, but DeepSpeed allocates its reduce buckets at
        // full size (5e8 elements, two with overlap_comm) whatever the model's size, so
        // for small or widely sharded models the total can grow: what does not grow is
        // the memory apart from the communication buffers. Megatron-Core keeps FP8 primary
        // weights with an offloaded optimizer only under delayed scaling: the others give
        // their FP8 weights up for 16-bit ones (spec/setup.hpp fp8_primary_weights).
        if (const auto offloaded = changed(s, [](training_setup& t) { t.layout.offload = offload_mode::optimizer; });
            offloaded && fp8_primary_weights(*offloaded) == fp8_primary_weights(s)) {
            INFO("optimizer offload");
            const auto without_buffers = [](const training_setup& t) {
                const memory_breakdown m = memory_of(t).breakdown;
                return (m.peak_allocated() - m.buffers).value();
            };
            CHECK(without_buffers(*offloaded) <= without_buffers(s) * (1 + slack));
        }
    });
}

TEST_CASE("step time does not fall with more batch, longer sequences or more recompute", "[properties]") {
    for_random_setups(2000, [](const training_setup& s) {
        const double base = predict(s).step_time.value();
        if (const auto bigger = changed(s, [](training_setup& t) { ++t.layout.micro_batch; })) {
            INFO("micro-batch + 1");
            CHECK(predict(*bigger).step_time.value() >= base * (1 - slack));
        }
        if (const auto more_accum = changed(s, [](training_setup& t) { t.layout.grad_accum += t.layout.pp; })) {
            INFO("grad-accum + pp");
            CHECK(predict(*more_accum).step_time.value() >= base * (1 - slack));
        }
        if (const auto longer = changed(s, [](training_setup& t) { t.seq = 2 * sequence_length(t); })) {
            INFO("seq x 2");
            CHECK(predict(*longer).step_time.value() >= base * (1 - slack));
        }
        const auto with_recompute = [&](recompute_mode m) {
            return changed(s, [m](training_setup& t) { t.layout.recompute = m; });
        };
        const auto none = with_recompute(recompute_mode::none);
        const auto selective = with_recompute(recompute_mode::selective);
        const auto full = with_recompute(recompute_mode::full);
        if (none && selective && full) {
            const double t_none = predict(*none).step_time.value();
            const double t_selective = predict(*selective).step_time.value();
            const double t_full = predict(*full).step_time.value();
            CHECK(t_none <= t_selective * (1 + slack));
            CHECK(t_selective <= t_full * (1 + slack));
        }
    });
}

TEST_CASE("fit and predict agree on the largest micro-batch", "[properties]") {
    for_random_setups(300, [](const training_setup& s) {
        const int largest = max_micro_batch(s);
        training_setup at = s;
        if (largest == 0) {
            at.layout.micro_batch = 1;
            CHECK_FALSE(predict(at).fits);
            return;
        }
        at.layout.micro_batch = largest;
        if (const auto valid = changed(at, [](training_setup&) {})) CHECK(predict(*valid).fits);
        if (const auto beyond = changed(at, [](training_setup& t) { ++t.layout.micro_batch; }))
            CHECK_FALSE(predict(*beyond).fits);
    });
}

TEST_CASE("collectives take longer with more bytes and on slower links", "[properties]") {
    std::mt19937 rng(property_seed());
    for (int i = 0; i < 5000; ++i) {
        const gpu_spec& gpu = pick(rng, gpu_catalog);
        if (gpu.gpu_link.kind == link_kind::none) continue;
        const int gpus = pick(rng, std::array{2, 4, 8, 16, 64, 512, 4096});
        const int per_node = std::min(gpus, pick(rng, std::array{1, 2, 4, 8}));
        const cluster_spec c = build_cluster({.gpu = gpu, .gpus = gpus, .gpus_per_node = per_node});
        const collective kind = pick(rng, enum_values<collective>());
        const int group = kind == collective::p2p ? 2 : gpus;
        const double size = std::ldexp(1.0, between(rng, 0, 36)) * (1 + std::uniform_real_distribution<>(0, 1)(rng));
        const collective_op op{"op", kind, bytes_of(size), {group, std::min(group, per_node)}};
        INFO(gpu.name << " " << to_string(kind) << " over " << group << " GPUs, " << per_node << " per node, " << size
                      << " B");
        const double t = collective_time(op, c).value();
        REQUIRE(std::isfinite(t));
        collective_op bigger = op;
        bigger.size = bytes_of(size * 1.5);
        CHECK(collective_time(bigger, c).value() >= t);
        cluster_spec slower = c;
        slower.intra_node = with_bandwidth(c.intra_node, c.intra_node.achievable() / 2.0);
        slower.inter_node.per_direction = c.inter_node.per_direction / 2.0;
        CHECK(collective_time(op, slower).value() >= t);
    }
}
