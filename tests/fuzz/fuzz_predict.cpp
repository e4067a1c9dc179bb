// Fuzz target: predict(), memory_of(), max_micro_batch() and plan() on setups built
// from the input's bytes — any GPU and model of the catalogs or a custom model, any
// layout numbers including absurd ones, any recipe, framework and link. Contract: the
// setup is refused with std::invalid_argument, or every report meets its
// post-conditions (cost/step.hpp) and the planner's layouts predict to what it reported.
#include "fuzz_target.hpp"

#include <trainperf/spec/framework.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/search/layout_search.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/spec/system.hpp>

#include <algorithm>
#include <limits>
#include <string>

namespace {
using namespace trainperf;

// Reads the input as a stream of small choices; past its end every choice is 0.
class bytes_reader {
public:
    bytes_reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    unsigned byte() { return at_ < size_ ? data_[at_++] : 0u; }
    // An index below n.
    std::size_t index(std::size_t n) { return byte() % n; }
    // A count that is usually small and sometimes huge or out of range.
    int count() {
        const unsigned b = byte();
        switch (b >> 6) {
            case 0: return int(b & 7) + 1;                   // 1..8
            case 1: return 1 << (b & 15);                     // powers of two up to 2^15
            case 2: return int(b & 63) - 8;                   // -8..55, zero and negatives included
            default: return int(byte() << 24 | byte() << 16 | byte() << 8 | byte());  // any int
        }
    }
    bool flag() { return byte() & 1; }
    // count() × unit, saturated to the int range (the harness must not overflow itself).
    int scaled(long long unit) {
        const long long v = 1LL * count() * unit;
        return static_cast<int>(std::clamp<long long>(v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
    }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t at_ = 0;
};

transformer_config model_from(bytes_reader& in) {
    if (in.byte() % 4 != 0) return model_catalog[in.index(model_catalog.size())];
    transformer_config m;
    m.name = "fuzzed";
    m.layers = in.count();
    m.heads = in.count();
    m.hidden = in.scaled(m.heads);
    m.kv_heads = in.flag() ? 0 : in.count();
    m.ffn_hidden = in.scaled(64);
    m.vocab = in.scaled(128);
    m.max_seq = in.scaled(16);
    m.ffn = in.flag() ? ffn_kind::swiglu : ffn_kind::gelu;
    m.positions = in.flag() ? position_kind::rotary : position_kind::learned;
    m.norm = in.flag() ? norm_kind::rmsnorm : norm_kind::layernorm;
    m.tied_embeddings = in.flag();
    m.linear_biases = in.flag();
    m.causal = in.flag();
    m.dropout = in.flag();
    return m;
}

void check(const step_report& r) {
    const std::string v = postcondition_violation(r);
    fuzz_require(v.empty(), v.c_str());
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    bytes_reader in(data, size);
    training_setup s;
    const gpu_spec& gpu = gpu_catalog[in.index(gpu_catalog.size())];
    s.model = model_from(in);
    s.layout = {.dp = in.count(), .tp = in.count(), .pp = in.count(), .interleave = in.flag() ? in.count() : 1,
                .sp = in.flag(), .zero = int(in.index(5)), .offload = in.flag() ? offload_mode::optimizer : offload_mode::none,
                .micro_batch = in.count(), .grad_accum = in.count(),
                .recompute = enum_values<recompute_mode>()[in.index(enum_values<recompute_mode>().size())],
                .dp_overlap = enum_values<dp_overlap_mode>()[in.index(enum_values<dp_overlap_mode>().size())]};
    s.precision = recipe(all_precisions[in.index(all_precisions.size())]);
    s.framework = framework_profiles[in.index(framework_profiles.size())];
    s.seq = in.flag() ? 0 : in.count();
    const auto links = enum_values<link_kind>();
    const std::string link(in.flag() ? to_string(links[in.index(links.size())]) : std::string_view{});
    bool valid = true;
    refused_or_fine([&] {
        valid = false;
        // The layout's GPU count, computed without overflow before the layout is validated.
        const long long gpus = product_capped(product_capped(s.layout.dp, s.layout.tp, max_gpus), s.layout.pp, max_gpus);
        s.cluster = build_cluster({.gpu = gpu, .gpus = int(std::min<long long>(gpus, max_gpus + 1LL)),
                                   .gpus_per_node = in.count(), .link = link,
                                   .adapters_per_node = int(in.index(3)),
                                   .order = in.flag() ? rank_order::tp_pp_dp : rank_order::tp_dp_pp,
                                   .sockets_per_node = int(in.index(3)) + 1});
        validate(s);
        valid = true;
    });
    if (!valid) return 0;
    // The pipeline schedule, stage split and hybrid shard group, read last so that the
    // corpus's older entries keep their meaning (an exhausted input reads 0 and false).
    s.layout.schedule = in.flag() ? pipeline_schedule::zero_bubble_h1 : pipeline_schedule::one_f_one_b;
    s.layout.first_stage_layers = in.flag() ? in.count() : 0;
    s.layout.last_stage_layers = in.flag() ? in.count() : 0;
    s.layout.shard_group = in.flag() ? in.count() : 0;
    refused_or_fine([&] {
        const step_report r = predict(s);
        check(r);
        const memory_report m = memory_of(s);
        fuzz_require(m.breakdown.total() == r.memory.total(), "memory_of and predict disagree");
        const int largest = max_micro_batch(s);
        fuzz_require(largest >= 0, "a negative largest micro-batch");
    });
    // A small search around the setup: its GPU count and global batch, bounded.
    if (s.layout.gpus() <= 16 && s.layout.global_batch() <= 64 && s.model.layers <= 96) {
        refused_or_fine([&] {
            // A space of at most 2^16 layouts (a larger one is refused, which is fine):
            // the corpus replays under the sanitizers in CI.
            const plan_result p = plan({.base = s, .gpus = s.layout.gpus(), .global_batch = s.layout.global_batch(),
                                        .allow_offload = in.flag()},
                                       {.top = 3, .threads = 1, .max_candidates = 1 << 16});
            for (const plan_candidate& c : p.best) {
                check(c.report);
                const step_report again = predict(setup_of(s, c));
                fuzz_require(again.step_time.value() == c.report.step_time.value() ||
                                 std::abs(again.step_time.value() / c.report.step_time.value() - 1) < 1e-9,
                             "a planned layout predicts to a different step time");
            }
        });
    }
    return 0;
}
