// The step: prices the workload's ops (kernel_model.hpp for GEMMs and memory-bound
// kernels, comm.hpp for collectives and host transfers) and schedules them: the 1F1B
// pipeline (interleaved or not) with its bubble, data-parallel synchronisation exposed
// or overlapped as the layout and the framework profile say, the optimizer step, the
// input pipeline; then throughput, MFU/HFU, memory and the bottleneck.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "attributes.hpp"
#include "comm.hpp"
#include "enum_names.hpp"
#include "error.hpp"
#include "flops.hpp"
#include "framework.hpp"
#include "hardware.hpp"
#include "host.hpp"
#include "kernel_model.hpp"
#include "limits.hpp"
#include "memory.hpp"
#include "ops.hpp"
#include "parallel.hpp"
#include "setup.hpp"
#include "units.hpp"
#include "workload.hpp"

namespace trainperf {

// host: the step is bound by the host issuing eager ops (the GPU waits for work).
enum class bottleneck_kind { compute, communication, optimizer, bubble, data, memory, host };

template <>
struct enum_names<bottleneck_kind> {
    static constexpr std::array<enum_name<bottleneck_kind>, 7> table{
        {{bottleneck_kind::compute, "compute"}, {bottleneck_kind::communication, "communication"},
         {bottleneck_kind::optimizer, "optimizer"}, {bottleneck_kind::bubble, "bubble"},
         {bottleneck_kind::data, "data"}, {bottleneck_kind::memory, "memory"}, {bottleneck_kind::host, "host"}}};
};

// Where one step's time goes (all on the critical path, so they add up).
struct step_time_breakdown {
    seconds forward_backward = seconds_of(0.0);  // GEMMs and elementwise, incl. recompute
    seconds communication = seconds_of(0.0);     // exposed TP, PP and DP communication
    seconds optimizer = seconds_of(0.0);         // optimizer step and per-step host work
    seconds bubble = seconds_of(0.0);            // pipeline fill and drain
    seconds data = seconds_of(0.0);              // input pipeline stall

    constexpr seconds total() const { return forward_backward + communication + optimizer + bubble + data; }
};

// Per micro-batch, on one pipeline stage (in a report: the slowest, which paces the
// step). Each pass takes the larger of the
// GPU's time for its kernels and the host's time to issue them (eager mode queues
// kernels asynchronously: the GPU runs behind the host unless the host is slower);
// both are kept.
struct micro_batch_times {
    seconds forward = seconds_of(0.0);
    seconds backward = seconds_of(0.0);
    seconds recompute = seconds_of(0.0);
    seconds tensor_parallel_comm = seconds_of(0.0);
    seconds pipeline_comm = seconds_of(0.0);
    seconds tensor_parallel_hidden = seconds_of(0.0);  // behind the GEMMs it overlaps or the host's issue time (not in the total)
    // Context parallelism's KV ring: what its sends leave exposed beyond the attention
    // core they overlap, per pass (in total()), and the sends' whole time.
    seconds context_parallel_comm = seconds_of(0.0);
    seconds context_parallel_ring = seconds_of(0.0);
    seconds gpu_forward = seconds_of(0.0);     // the GPU's time for the pass's kernels
    seconds gpu_backward = seconds_of(0.0);
    seconds gpu_recompute = seconds_of(0.0);
    seconds host_forward = seconds_of(0.0);    // the host's time to issue them
    seconds host_backward = seconds_of(0.0);
    seconds host_recompute = seconds_of(0.0);
    // The GPU's time for the weight-gradient GEMMs, part of gpu_backward: the W that a
    // zero-bubble schedule defers into the pipeline bubble.
    seconds gpu_weight_gradient = seconds_of(0.0);

    constexpr seconds compute() const { return forward + backward + recompute; }
    constexpr seconds total() const {
        return compute() + tensor_parallel_comm + pipeline_comm + context_parallel_comm;
    }
    constexpr seconds gpu_compute() const { return gpu_forward + gpu_backward + gpu_recompute; }
    constexpr seconds host_compute() const { return host_forward + host_backward + host_recompute; }
    // The passes the host bounds: more of the compute time waits on the host than on the GPU.
    constexpr bool host_bound() const { return host_compute() > gpu_compute(); }
};

// Optimizer offload (ZeRO-Offload) in one step; zero without offload.
struct offload_times {
    seconds gradient_copies = seconds_of(0.0);  // GPU↔host gradient copies, all micro-batches, before overlap
    seconds host_step = seconds_of(0.0);        // the CPU's step: unscale and clip, CPU-Adam, cast to 16 bits
    seconds weights_up = seconds_of(0.0);       // the updated weights copied back to the GPU
};

struct step_report {
    seconds step_time = seconds_of(0.0);
    step_time_breakdown time{};
    micro_batch_times micro_batch{};
    seconds data_parallel_sync = seconds_of(0.0);   // full sync time, before overlap
    offload_times offload{};                        // in time.communication (exposed copies) and time.optimizer
    int gpus = 1;
    long long global_batch = 1;
    int seq = 0;
    double samples_per_second = 0;
    double tokens_per_second = 0;
    flop_rate model_flops_per_gpu = flop_rate::from_value(0.0);     // PaLM model FLOPs per second per GPU
    flop_rate hardware_flops_per_gpu = flop_rate::from_value(0.0);  // the same with recompute
    double mfu = 0;   // model FLOPs utilisation: model_flops_per_gpu / peak (PaLM, no recompute)
    double hfu = 0;   // hardware FLOPs utilisation: hardware_flops_per_gpu / peak (≥ mfu in full training)
    // The bound on hfu: 1, or the GPU's clock under load over its datasheet boost clock
    // where that is higher (gpu_spec::clock_ratio). MFU and HFU are against the
    // datasheet's peaks, quoted at the boost clock; a board that holds a higher clock
    // under load (GeForce cards do) runs its kernels above them.
    double hfu_ceiling = 1;
    // Fine-tuning with a frozen base (LoRA, QLoRA): MFU still counts PaLM's 6·N per token,
    // which includes the frozen weights' gradients that do not run; HFU counts what runs
    // (flops.hpp finetune_hardware_flops_per_sample), so MFU can exceed HFU and 100 %.
    bool frozen_base = false;
    // A causal attention core run by a fused kernel that skips the masked half: MFU
    // (PaLM's count) can exceed HFU (what runs).
    bool causal_attention_skipped = false;
    // fp8 (Transformer Engine): mfu and hfu are against the GPU's dense FP8 peak (the
    // recipe's math); these are the same FLOP rates against its dense bf16 peak, the
    // figure 16-bit runs are quoted against. 0 for other recipes.
    bool fp8 = false;
    double mfu_bf16_peak = 0;
    double hfu_bf16_peak = 0;
    memory_breakdown memory{};
    bytes memory_capacity = bytes_of(0.0);
    bool fits = true;
    bottleneck_kind bottleneck = bottleneck_kind::compute;

    constexpr double fraction(seconds part) const { return part / step_time; }
    constexpr double tokens_per_second_per_gpu() const { return tokens_per_second / gpus; }
};

// ---- Post-conditions -------------------------------------------------------------------
// What every report meets whatever the (valid) input (docs/reliability.md): times,
// rates, byte counts finite and not negative; a positive step that its breakdown sums
// to; 0 ≤ MFU ≤ HFU ≤ 1; fits exactly when the busiest GPU's peak is within capacity.
// Returns the first field that breaks one, or an empty string.
inline std::string postcondition_violation(const step_report& r) {
    const auto bad = [](double v) { return !(v >= 0 && v < std::numeric_limits<double>::infinity()); };
    const std::pair<std::string_view, double> fields[] = {
        {"step_time", r.step_time.value()},
        {"time.forward_backward", r.time.forward_backward.value()},
        {"time.communication", r.time.communication.value()},
        {"time.optimizer", r.time.optimizer.value()},
        {"time.bubble", r.time.bubble.value()},
        {"time.data", r.time.data.value()},
        {"micro_batch.forward", r.micro_batch.forward.value()},
        {"micro_batch.backward", r.micro_batch.backward.value()},
        {"micro_batch.recompute", r.micro_batch.recompute.value()},
        {"micro_batch.tensor_parallel_comm", r.micro_batch.tensor_parallel_comm.value()},
        {"micro_batch.pipeline_comm", r.micro_batch.pipeline_comm.value()},
        {"micro_batch.context_parallel_comm", r.micro_batch.context_parallel_comm.value()},
        {"micro_batch.context_parallel_ring", r.micro_batch.context_parallel_ring.value()},
        {"micro_batch.gpu_compute", r.micro_batch.gpu_compute().value()},
        {"micro_batch.host_compute", r.micro_batch.host_compute().value()},
        {"data_parallel_sync", r.data_parallel_sync.value()},
        {"offload.gradient_copies", r.offload.gradient_copies.value()},
        {"offload.host_step", r.offload.host_step.value()},
        {"offload.weights_up", r.offload.weights_up.value()},
        {"samples_per_second", r.samples_per_second},
        {"tokens_per_second", r.tokens_per_second},
        {"model_flops_per_gpu", r.model_flops_per_gpu.value()},
        {"hardware_flops_per_gpu", r.hardware_flops_per_gpu.value()},
        {"mfu", r.mfu},
        {"hfu", r.hfu},
        {"mfu_bf16_peak", r.mfu_bf16_peak},
        {"hfu_bf16_peak", r.hfu_bf16_peak},
        {"memory.total", r.memory.total().value()},
        {"memory.static_state", r.memory.static_state().value()},
        {"memory.activations", r.memory.activations.value()},
        {"memory.offloaded_to_host", r.memory.offloaded_to_host.value()},
        {"memory_capacity", r.memory_capacity.value()}};
    for (const auto& [name, v] : fields)
        if (bad(v)) return std::string(name) + " = " + std::to_string(v) + " (not finite and non-negative)";
    if (!(r.step_time.value() > 0)) return "step_time = 0";
    if (std::abs(r.time.total().value() - r.step_time.value()) > 1e-9 * r.step_time.value())
        return "time breakdown does not sum to step_time";
    const bool mfu_may_exceed_hfu = r.frozen_base || r.causal_attention_skipped;
    if (!((mfu_may_exceed_hfu || r.mfu <= r.hfu * (1 + 1e-12)) && r.hfu <= r.hfu_ceiling * (1 + 1e-12)))
        return "mfu = " + std::to_string(r.mfu) + ", hfu = " + std::to_string(r.hfu) + ", hfu_ceiling = " +
               std::to_string(r.hfu_ceiling) +
               (mfu_may_exceed_hfu ? " (not hfu <= hfu_ceiling)" : " (not mfu <= hfu <= hfu_ceiling)");
    if (r.fits != (r.memory.total() <= r.memory_capacity)) return "fits disagrees with memory and capacity";
    if (r.gpus < 1 || r.global_batch < 1 || r.seq < 1) return "gpus, global_batch or seq below 1";
    return {};
}

// Throws std::logic_error (a defect in trainperf, not in the input) on a broken
// post-condition. predict() checks every report in builds with assertions on
// (TRAINPERF_CHECK_POSTCONDITIONS, default: unless NDEBUG); the tests check always.
inline void check_postconditions(const step_report& r) {
    if (const std::string v = postcondition_violation(r); !v.empty())
        throw std::logic_error("trainperf: a report breaks its post-condition: " + v);
}

#ifndef TRAINPERF_CHECK_POSTCONDITIONS
#ifdef NDEBUG
#define TRAINPERF_CHECK_POSTCONDITIONS 0
#else
#define TRAINPERF_CHECK_POSTCONDITIONS 1
#endif
#endif

// ---- Pricing ---------------------------------------------------------------------------

// A collective of the stage, count (and recompute) times.
constexpr seconds price_collective(const stage_op<collective_op>& op, const cluster_spec& c) {
    return (op.count + op.recomputed) * collective_time(op.op, c);
}

// A host call's cost in the framework's bare ops (framework.hpp eager_host_costs). A
// gradient hook runs a little Python and, for most parameters, one accumulation kernel
// (ASSUMPTION: one op); a graph launch is one call into the driver (ASSUMPTION: one op).
constexpr double host_call_cost(const eager_host_costs& c, host_call call) {
    switch (call) {
        case host_call::view: return c.view;
        case host_call::module: return c.module;
        case host_call::backward_node: return c.backward_node;
        case host_call::function: return c.function;
        case host_call::function_backward: return c.function_backward;
        case host_call::collective: return c.collective;
        case host_call::rng_state: return c.rng_state;
        case host_call::library_module: return c.library_module;
        case host_call::library_module_backward: return c.library_module_backward;
        case host_call::gradient_hook:
        case host_call::graph_launch: break;
    }
    return c.op;
}

// Prices a stage's ops as the workload emits them. GEMMs one by one; memory-bound ops
// are linear in their bytes and launches, so those are summed per part and priced
// once; collectives on the links their group uses. The host's issue time is counted
// beside the GPU's: each kernel launch is one call from Python in forward (a GEMM's
// costs more) and from the C++ autograd engine in backward, plus the workload's
// host ops (views, module calls, autograd nodes), in units of the host's bare op.
//
// Context parallelism's KV ring (step_part::context_parallel) overlaps the attention
// compute: TE issues each step's send of the next KV chunk before the attention on the
// chunk in hand (TransformerEngine transformer_engine/pytorch/attention/
// dot_product_attention/context_parallel.py@d0067d0d; Megatron-Core
// docs/user-guide/features/context_parallel.md@d98e8a64), so per pass (forward,
// backward, recompute) only max(0, ring sends − attention-core time) is exposed. The
// layers are alike, so the rule per layer and per stage give the same sum. The
// attention core's time is its GEMMs and memory-bound ops (op_region::attention_core),
// or the fused attention kernel where the framework has one.
class stage_pricer {
public:
    stage_pricer(const gpu_spec& gpu, const kernel_params& k, const cluster_spec* cluster,
                 const eager_host_costs& host = {}, seconds bare_op = seconds_of(0.0))
        : kernels_(gpu, k), cluster_(cluster), host_(host), bare_op_(bare_op), sms_(gpu.sm_count) {
        set_launch_costs();
    }

    // The sums an op adds to from here on: those of one of the stage's parts
    // (workload.hpp stage_section). Every sum is linear in the ops' counts.
    void section(stage_section part) {
        at_ = std::size_t(part);
        set_launch_costs();
    }

    // Tensor-parallel communication overlapped with the layer's GEMMs (Transformer
    // Engine userbuffers, Megatron-Core --tp-comm-overlap; needs sequence parallelism).
    void overlap_tensor_parallel(int tp) { tp_overlap_ = tp; }

    // Each layer's passes replayed from CUDA graphs (framework_profile::cuda_graphs): the
    // host launches none of the layer's kernels (the workload's replay calls stand in).
    void graph_layers() {
        graphed_ = true;
        set_launch_costs();
    }

    void operator()(const stage_op<gemm_op>& g) {
        validate(g.op.shape);
        price(g);
    }
    void operator()(const stage_op<attention_op>& a) {
        const seconds time = kernels_.attention_time(a.op);
        add(a.part, a.count, a.recomputed, time);
        // What a context-parallel ring hides behind.
        sections_[at_][stage_sums::core + (a.part == step_part::forward ? 0 : 1)] += a.count * time.value();
        sections_[at_][stage_sums::core + 2] += a.recomputed * time.value();
        add_host(a.part, a.count, a.recomputed, launch_cost_[a.part == step_part::forward ? 0 : 1]);
    }
    TRAINPERF_ALWAYS_INLINE void operator()(const stage_op<memory_op>& m) {
        const std::size_t part = m.part == step_part::forward ? 0 : 1;
        stage_sums& at = sections_[at_];
        const double moved = m.op.moved.value(), launches = m.op.launches;
        const double cost = launch_cost_[part];
        at[stage_sums::bytes + part] += m.count * moved;
        at[stage_sums::launches + part] += m.count * launches;
        at[stage_sums::host_calls + part] += m.count * launches * cost;
        if (m.op.region == op_region::attention_core) {
            at[stage_sums::core_bytes + part] += m.count * moved;
            at[stage_sums::core_launches + part] += m.count * launches;
        }
        if (m.recomputed == 0) return;  // the sums below would each add 0
        at[stage_sums::bytes + 2] += m.recomputed * moved;
        at[stage_sums::launches + 2] += m.recomputed * launches;
        at[stage_sums::host_calls + 2] += m.recomputed * launches * cost;
        if (m.op.region == op_region::attention_core) {
            at[stage_sums::core_bytes + 2] += m.recomputed * moved;
            at[stage_sums::core_launches + 2] += m.recomputed * launches;
        }
    }
    void operator()(const stage_op<collective_op>& c) {
        if (cluster_ == nullptr) return;
        if (c.part == step_part::context_parallel) {
            ring_ = true;
            const seconds one = collective_time(c.op, *cluster_);
            sections_[at_][stage_sums::ring + (c.op.phase == op_phase::forward ? 0 : 1)] += c.count * one.value();
            sections_[at_][stage_sums::ring + 2] += c.recomputed * one.value();
            return;
        }
        stage_sums& at = sections_[at_];
        at[c.part == step_part::pipeline ? stage_sums::pipeline_comm : stage_sums::tensor_parallel_comm] +=
            price_collective(c, *cluster_).value();
    }
    void operator()(const stage_op<host_op>& h) {
        add_host(h.part, h.count * h.op.count, h.recomputed * h.op.count, host_call_cost(host_, h.op.call));
    }

    // The sink for the ops of a setup that passes validate(training_setup)
    // (step_detail::price_stage_parts): its GEMMs pass validate by construction (ops.hpp
    // checked_shape) and are priced without it; every other op as above.
    class of_checked_setup {
    public:
        explicit of_checked_setup(stage_pricer& p) : p_(p) {}
        void section(stage_section part) { p_.section(part); }
        TRAINPERF_ALWAYS_INLINE void operator()(const stage_op<gemm_op>& g) { p_.price(g); }
        template <class Op>
        TRAINPERF_ALWAYS_INLINE void operator()(const stage_op<Op>& op) {
            p_(op);
        }

    private:
        stage_pricer& p_;
    };

    // The micro-batch of the ops as they came (one stage, counts as emitted).
    micro_batch_times result() const {
        stage_sums all = sections_[0];
        for (std::size_t i = 1; i < sections_.size(); ++i) all.add(sections_[i], 1.0, ring_);
        return finish(all);
    }

    // A stage of `layers` layers built from the parts' sums (ops emitted for a
    // one-layer stage with its head and embedding, workload.hpp stage_shape{1}):
    // `layers` × a layer's + the head's (last stage) + the embedding's (first) + the
    // stage's own, with `pipeline_comm` for the stage's sends (the sends of the
    // layout's interleave).
    micro_batch_times stage(double layers, bool first, bool last, seconds pipeline_comm) const {
        stage_sums t = sections_[std::size_t(stage_section::stage)];
        t.add(sections_[std::size_t(stage_section::layer)], layers, ring_);
        if (last) t.add(sections_[std::size_t(stage_section::head)], 1.0, ring_);
        if (first) t.add(sections_[std::size_t(stage_section::embedding)], 1.0, ring_);
        t[stage_sums::pipeline_comm] = pipeline_comm.value();
        return finish(t);
    }

    // The stage's sends as priced (of the layout the ops were emitted for).
    seconds pipeline_comm() const {
        return seconds_of(sections_[std::size_t(stage_section::stage)][stage_sums::pipeline_comm]);
    }

private:
    // A GEMM whose shape passes validate.
    void price(const stage_op<gemm_op>& g) {
        // A projection whose tensor-parallel communication it overlaps: chunked, on
        // fewer SMs; never part of the attention core.
        if (tp_overlap_ > 1)
            if (const tp_overlap_method method = tp_overlap_method_of(g.op); method.chunks > 0) {
                const seconds time = overlapped_gemm_time(g.op.shape, method);
                sections_[at_][stage_sums::tp_overlap_capacity] += (g.count + g.recomputed) * time.value();
                return add_gemm(g, time);
            }
        add_gemm(g, gemm_time(g.op.shape));
    }

    // Transformer Engine's default overlap method per GEMM (transformer_engine/pytorch/
    // module/base.py initialize_ub@d0067d0d): ring_exchange (QKV and FC1 forward,
    // their input all-gathered chunk by chunk; proj and FC2 dgrad) splits the GEMM
    // into tp chunks and drives the ring with 1 SM; pipeline (proj and FC2 forward,
    // reduce-scattered chunk by chunk) splits it into 4 and gives the communication 16
    // SMs; bulk (QKV and FC1 dgrad and wgrad) overlaps a whole collective with an
    // unsplit GEMM on 16 SMs; the proj/FC2 wgrad overlaps nothing of its own.
    struct tp_overlap_method {
        double chunks = 0;     // 0: not overlapped
        double comm_sms = 0;   // SMs the communication kernels hold meanwhile
    };
    tp_overlap_method tp_overlap_method_of(const gemm_op& g) const {
        const std::string_view n = g.name;
        const bool column = n == "qkv" || n == "q" || n == "k" || n == "v" || n == "ffn_up" || n == "ffn_gate";
        const bool row = n == "attention_out" || n == "ffn_down";
        if (g.phase == op_phase::forward) {
            if (column) return {double(tp_overlap_), 1};
            if (row) return {4, 16};
        } else if (g.phase == op_phase::backward_data) {
            if (row) return {double(tp_overlap_), 1};
            if (column) return {1, 16};
        } else if (g.phase == op_phase::backward_weight && column) {
            return {1, 16};
        }
        return {};
    }
    // The GEMM cut into `chunks` along its rows (tokens), each chunk priced by the
    // kernel model, on the SMs the communication leaves it.
    seconds overlapped_gemm_time(const gemm_shape& g, const tp_overlap_method& method) const {
        gemm_shape chunk = g;
        chunk.m = std::max(1.0, g.m / method.chunks);
        const double sms = std::max(1, sms_);
        return method.chunks * kernels_.gemm_time(chunk, checked_shape) *
               (sms / std::max(1.0, sms - method.comm_sms));
    }

    // A layer's GEMMs repeat shapes (FFN up's dgrad is FFN down's forward; the attention
    // core's batched GEMMs share theirs) and transposes (the kernel model prices m × n
    // and n × m alike: it tries every tile in both orientations, and the bytes are
    // symmetric; tests/test_kernel_model.cpp holds it to that): each distinct shape, m
    // and n in either order, is priced once, remembered in a small open-addressed table
    // (a slot holds a shape once its bit in `filled_` is set; a shape looks from its hash
    // slot on; a full table prices anew). The slots are written before they are read, so
    // the table needs no initialisation beyond its mask; a copy of the pricer starts with
    // an empty table (its priced parts are what a copy is for).
    class gemm_memo {
    public:
        gemm_memo() = default;
        gemm_memo(const gemm_memo&) {}
        gemm_memo& operator=(const gemm_memo&) {
            filled_ = 0;
            return *this;
        }

        template <class Price>
        seconds time(const gemm_shape& g, Price&& price) {
            constexpr std::size_t slots = std::size_t(1) << slot_bits;
            const double lo = std::min(g.m, g.n), hi = std::max(g.m, g.n);
            std::size_t slot = slot_of(lo, hi, g);
            for (std::size_t probe = 0; probe < slots; ++probe, slot = (slot + 1) & (slots - 1)) {
                priced& p = slots_[slot];
                const std::uint32_t bit = std::uint32_t(1) << slot;
                if (!(filled_ & bit)) {
                    const seconds t = price(g);
                    p = {lo, hi, g.k, g.batch, g.math, t.value()};
                    filled_ |= bit;
                    return t;
                }
                if (p.lo == lo && p.hi == hi && p.k == g.k && p.batch == g.batch && p.math == g.math)
                    return seconds_of(p.time);
            }
            return price(g);
        }

    private:
        // The slot: the sides' bits mixed (the odd multipliers keep a shape apart from
        // one with k and a side swapped; shapes that differ only in batch or math share
        // a first slot and probe on), then Fibonacci hashing, the top bits of the
        // product with 2^64/φ (Knuth, The Art of Computer Programming, Vol. 3, §6.4,
        // multiplicative hashing).
        static std::size_t slot_of(double lo, double hi, const gemm_shape& g) {
            const auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
            const std::uint64_t h = (bits(lo) ^ (bits(hi) * 3) ^ (bits(g.k) * 5)) * 0x9E3779B97F4A7C15ULL;
            return std::size_t(h >> (64 - slot_bits));
        }
        static constexpr int slot_bits = 5;
        static_assert(slot_bits <= 5, "filled_ holds one bit per slot in 32 bits");
        // A priced shape: lo ≤ hi are its m and n in order.
        struct priced {
            double lo, hi, k, batch;
            dtype math;
            double time;
        };
        std::array<priced, std::size_t(1) << slot_bits> slots_;  // read only where filled_ has the bit
        std::uint32_t filled_ = 0;
    };

    seconds gemm_time(const gemm_shape& g) {
        return memo_.time(g, [this](const gemm_shape& shape) { return kernels_.gemm_time(shape, checked_shape); });
    }

    // What the ops add up to, as plain numbers (seconds; bytes, launches and bare host
    // ops for the memory-bound ops and the host), per pass (forward, backward,
    // recompute: index + 0, 1, 2) where it matters. One array, so that a stage adds a
    // part's sums in one loop; the KV ring's sends and the attention core they overlap
    // last, added only where a ring was priced (finish reads them only then).
    struct stage_sums {
        static constexpr std::size_t gpu = 0;  // GEMMs, fused attention
        static constexpr std::size_t bytes = 3, launches = 6;  // memory-bound ops, priced once per pass
        static constexpr std::size_t host_calls = 9;           // in bare ops
        static constexpr std::size_t weight_gradient = 12, tensor_parallel_comm = 13, pipeline_comm = 14,
                                     tp_overlap_capacity = 15;
        static constexpr std::size_t ring = 16, core = 19, core_bytes = 22, core_launches = 25;
        static constexpr std::size_t without_ring = ring, size = 28;
        static_assert(core_launches + 3 == size, "every sum has a slot");
        std::array<double, size> sums{};

        constexpr double& operator[](std::size_t i) { return sums[i]; }
        constexpr double operator[](std::size_t i) const { return sums[i]; }
        constexpr void add(const stage_sums& o, double n, bool with_ring) {
            for (std::size_t i = 0; i < without_ring; ++i) sums[i] += n * o.sums[i];
            if (with_ring)
                for (std::size_t i = without_ring; i < size; ++i) sums[i] += n * o.sums[i];
        }
    };

    // The sums into times: memory-bound ops priced per pass, each pass the larger of
    // the GPU's time and the host's, tensor-parallel overlap and the KV ring.
    micro_batch_times finish(const stage_sums& a) const {
        seconds tensor_parallel_comm = seconds_of(a[stage_sums::tensor_parallel_comm]);
        seconds tensor_parallel_hidden = seconds_of(0.0);
        if (tp_overlap_ > 1) {
            // What the overlapped GEMMs do not cover stays exposed (ASSUMPTION: the
            // layer's collectives and GEMMs are matched in aggregate, not pair by pair).
            const seconds capacity = seconds_of(a[stage_sums::tp_overlap_capacity]);
            const seconds exposed = std::max(seconds_of(0.0), tensor_parallel_comm - capacity);
            tensor_parallel_hidden = tensor_parallel_comm - exposed;
            tensor_parallel_comm = exposed;
        }
        const auto memory = [&](std::size_t part) {
            return kernels_.memory_time(bytes_of(a[stage_sums::bytes + part]), a[stage_sums::launches + part]);
        };
        const seconds gpu_forward = seconds_of(a[stage_sums::gpu]) + memory(0);
        const seconds gpu_backward = seconds_of(a[stage_sums::gpu + 1]) + memory(1);
        const seconds gpu_recompute = seconds_of(a[stage_sums::gpu + 2]) + memory(2);
        const seconds host_forward = a[stage_sums::host_calls] * bare_op_;
        const seconds host_backward = a[stage_sums::host_calls + 1] * bare_op_;
        const seconds host_recompute = a[stage_sums::host_calls + 2] * bare_op_;
        {
            // Where the host is slower, the GPU idles between kernels: the tensor-parallel
            // collectives (on the GPU, in stream order) run in that idle time, so a pass
            // takes max(host, GPU + collectives), not their sum past the host.
            // ASSUMPTION: the forward's and the backward's idle time only; the recompute
            // runs inside the backward layer by layer and its idle time is already the
            // data-parallel sync's window (step_times), which would use it twice.
            const seconds zero = seconds_of(0.0);
            const seconds slack =
                std::max(zero, host_forward - gpu_forward) + std::max(zero, host_backward - gpu_backward);
            const seconds hidden = std::min(slack, tensor_parallel_comm);
            tensor_parallel_comm -= hidden;
            tensor_parallel_hidden += hidden;
        }
        seconds context_parallel_comm = seconds_of(0.0), context_parallel_ring = seconds_of(0.0);
        for (std::size_t pass = 0; ring_ && pass < 3; ++pass) {  // only a ring has sums here
            const seconds ring = seconds_of(a[stage_sums::ring + pass]);
            if (!(ring > seconds_of(0.0))) continue;  // no KV ring (cp = 1): nothing to hide
            const seconds core = seconds_of(a[stage_sums::core + pass]) +
                                 kernels_.memory_time(bytes_of(a[stage_sums::core_bytes + pass]),
                                                      a[stage_sums::core_launches + pass]);
            context_parallel_ring += ring;
            context_parallel_comm += std::max(seconds_of(0.0), ring - core);
        }
        return {.forward = std::max(gpu_forward, host_forward),
                .backward = std::max(gpu_backward, host_backward),
                .recompute = std::max(gpu_recompute, host_recompute),
                .tensor_parallel_comm = tensor_parallel_comm,
                .pipeline_comm = seconds_of(a[stage_sums::pipeline_comm]),
                .tensor_parallel_hidden = tensor_parallel_hidden,
                .context_parallel_comm = context_parallel_comm,
                .context_parallel_ring = context_parallel_ring,
                .gpu_forward = gpu_forward,
                .gpu_backward = gpu_backward,
                .gpu_recompute = gpu_recompute,
                .host_forward = host_forward,
                .host_backward = host_backward,
                .host_recompute = host_recompute,
                .gpu_weight_gradient = seconds_of(a[stage_sums::weight_gradient])};
    }

    // A GEMM's sums: the GPU's time and the host's calls per pass, the weight gradients
    // (what zero-bubble schedules defer), the attention core a KV ring hides behind.
    void add_gemm(const stage_op<gemm_op>& g, seconds time) {
        const std::size_t part = g.part == step_part::forward ? 0 : 1;
        const double cost = part == 0 ? gemm_launch_cost_ : launch_cost_[1];
        stage_sums& at = sections_[at_];
        const double t = time.value();
        at[stage_sums::gpu + part] += g.count * t;
        at[stage_sums::host_calls + part] += g.count * cost;
        if (g.op.phase == op_phase::backward_weight) at[stage_sums::weight_gradient] += g.count * t;
        const bool core = g.op.region == op_region::attention_core;
        if (core) at[stage_sums::core + part] += g.count * t;
        if (g.recomputed == 0) return;  // the sums below would each add 0
        at[stage_sums::gpu + 2] += g.recomputed * t;
        at[stage_sums::host_calls + 2] += g.recomputed * cost;
        if (core) at[stage_sums::core + 2] += g.recomputed * t;
    }
    void add(step_part part, double count, double recomputed, seconds time) {
        sections_[at_][stage_sums::gpu + (part == step_part::forward ? 0 : 1)] += count * time.value();
        sections_[at_][stage_sums::gpu + 2] += recomputed * time.value();
    }
    // What the host spends launching a kernel of the section now priced, from Python in
    // forward and from the engine in backward (nothing in a graphed layer).
    void set_launch_costs() {
        const bool launches = !(graphed_ && at_ == std::size_t(stage_section::layer));
        launch_cost_ = {launches ? host_.op : 0.0, launches ? host_.backward_launch : 0.0};
        gemm_launch_cost_ = launches ? host_.op * host_.gemm : 0.0;
    }
    void add_host(step_part part, double count, double recomputed, double cost) {
        sections_[at_][stage_sums::host_calls + (part == step_part::forward ? 0 : 1)] += count * cost;
        sections_[at_][stage_sums::host_calls + 2] += recomputed * cost;
    }
    kernel_cost_model kernels_;
    const cluster_spec* cluster_;
    eager_host_costs host_;
    seconds bare_op_;
    int tp_overlap_ = 0;
    bool graphed_ = false;
    std::array<double, 2> launch_cost_{};                                  // forward, backward
    double gemm_launch_cost_ = 0;
    int sms_ = 1;
    gemm_memo memo_;
    std::array<stage_sums, 4> sections_{};  // by stage_section
    std::size_t at_ = 0;                     // the section ops add to
    bool ring_ = false;                      // a KV ring's sends were priced
};

// The same for ops already collected in lists (micro_batch_workload), e.g. a workload
// a program has inspected or changed.
inline micro_batch_times price_micro_batch(const stage_workload& w, const training_setup& s) {
    const kernel_params k = kernel_params_of(s);
    stage_pricer pricer(s.cluster.gpu, k, &s.cluster, s.framework.host, s.cluster.host.eager_op_time);
    if (overlaps_tensor_parallel(s)) pricer.overlap_tensor_parallel(s.layout.tp);
    // The lists carry no sections: with CUDA graphs every kernel's launch is still
    // charged here (an upper bound; predict() charges the graphed layers' none).
    for (const auto& op : w.gemms) pricer(op);
    for (const auto& op : w.memory) pricer(op);
    for (const auto& op : w.collectives) pricer(op);
    for (const auto& op : w.host) pricer(op);
    for (const auto& op : w.attention) pricer(op);
    return pricer.result();
}

// The parts of a stage priced once (one layer, the head, the embedding, the stage's
// own sends), from which stage_pricer::stage builds a stage of any number of layers.
namespace step_detail {
// For a setup that passes validate(s); `groups` must be groups_of(s) (workload.hpp).
inline stage_pricer price_stage_parts(const training_setup& s, const layout_groups& groups) {
    const kernel_params k = kernel_params_of(s);
    stage_pricer pricer(s.cluster.gpu, k, &s.cluster, s.framework.host, s.cluster.host.eager_op_time);
    if (overlaps_tensor_parallel(s)) pricer.overlap_tensor_parallel(s.layout.tp);
    if (s.framework.cuda_graphs) pricer.graph_layers();
    for_each_stage_op(s, stage_shape{1, true, true}, groups, stage_pricer::of_checked_setup(pricer));
    return pricer;
}
}  // namespace step_detail

inline stage_pricer price_stage_parts(const training_setup& s) {
    validate(s);
    return step_detail::price_stage_parts(s, groups_of(s));
}

// One micro-batch on each stage of the pipeline.
struct pipeline_times {
    micro_batch_times bottleneck{};    // the stage whose micro-batch takes longest: it paces the steady state
    seconds others = seconds_of(0.0);  // the other stages' micro-batches, summed: the fill and drain
    seconds others_weight_gradient = seconds_of(0.0);  // their weight-gradient GEMMs (what zb-h1 defers)
};

// The stages of the layout's split (parallel.hpp pipeline_split_of): the first (its
// layers and the embedding), pp − 2 middle ones, the last (its layers, head and loss);
// with pp = 1 one stage does all. Each with `pipeline_comm` for its sends. On a tie the
// last stage is the bottleneck.
inline pipeline_times pipeline_stage_times(const stage_pricer& parts, const training_setup& s,
                                           seconds pipeline_comm) {
    const auto& l = s.layout;
    const pipeline_split split = pipeline_split_of(s.model, l);
    if (l.pp == 1) return {.bottleneck = parts.stage(split.first, true, true, pipeline_comm)};
    const micro_batch_times first = parts.stage(split.first, true, false, pipeline_comm);
    const micro_batch_times last = parts.stage(split.last, false, true, pipeline_comm);
    const double middles = l.pp - 2.0;
    const micro_batch_times middle =
        middles > 0 ? parts.stage(split.middle, false, false, pipeline_comm) : micro_batch_times{};
    const micro_batch_times* slowest = &last;
    if (first.total() > slowest->total()) slowest = &first;
    if (middles > 0 && middle.total() > slowest->total()) slowest = &middle;
    const double copies = slowest == &middle ? middles - 1 : middles;  // the middle stages besides the slowest
    const auto others = [&](auto part) {
        seconds sum = copies * part(middle);
        if (slowest != &first) sum += part(first);
        if (slowest != &last) sum += part(last);
        return sum;
    };
    return {.bottleneck = *slowest,
            .others = others([](const micro_batch_times& t) { return t.total(); }),
            .others_weight_gradient = others([](const micro_batch_times& t) { return t.gpu_weight_gradient; })};
}

inline pipeline_times price_pipeline(const training_setup& s) {
    const stage_pricer parts = price_stage_parts(s);
    return pipeline_stage_times(parts, s, parts.pipeline_comm());
}

// Forward, backward and recompute of one micro-batch on the pipeline stage that paces
// the step (the last one in an even split: head and loss), with the tensor-parallel
// collectives and pipeline sends it waits for.
inline micro_batch_times price_micro_batch(const training_setup& s) { return price_pipeline(s).bottleneck; }

// Data-parallel synchronisation of one GPU's shard, split by when it happens.
struct data_parallel_sync {
    seconds per_forward = seconds_of(0.0);       // during every micro-batch's forward (ZeRO-3 gathers)
    seconds forward_unit = seconds_of(0.0);      // the first unit's gather of a forward: not prefetched
    seconds backward_unit = seconds_of(0.0);     // the same in backward
    seconds per_micro_batch = seconds_of(0.0);   // during every micro-batch's backward
    seconds end_of_backward = seconds_of(0.0);   // once per step, can overlap the last backward
    seconds after_optimizer = seconds_of(0.0);   // once per step, after the update: exposed
    seconds end_of_step = seconds_of(0.0);       // once per step, never overlapped

    constexpr seconds per_step_total(double micro_batches) const {
        return micro_batches * (per_forward + per_micro_batch) + end_of_backward + after_optimizer + end_of_step;
    }
};

// Offloaded gradient copies of one GPU by when they run (workload.hpp offload_point).
struct offload_copies {
    seconds all_but_last = seconds_of(0.0);   // in each micro-batch but the step's last
    seconds all_but_first = seconds_of(0.0);  // in each micro-batch but the step's first
    seconds last = seconds_of(0.0);           // in the last micro-batch (accumulation boundary)
    double last_bucket_share = 0;             // sent after backward has ended

    constexpr seconds per_step(double micro_batches) const {
        return (micro_batches - 1) * (all_but_last + all_but_first) + last;
    }
};

struct step_prices {
    data_parallel_sync sync{};
    seconds optimizer = seconds_of(0.0);   // the whole optimizer step, per-step overhead included
    bool offloaded = false;
    offload_copies gradient_copies{};      // offloaded: during backward
    seconds host_step = seconds_of(0.0);   // offloaded: the CPU's part of `optimizer`
    seconds weights_up = seconds_of(0.0);  // offloaded: the copy back, part of `optimizer`
};

// Work on the host's CPU with the share of it one GPU gets: the slower of its SIMD
// instructions (values / lanes × instructions per register, at cores × clock ×
// host_simd_instructions_per_cycle) and its DRAM traffic (bytes / bandwidth).
constexpr seconds host_compute_time(const host_compute_op& op, const host_share& h) {
    require(op.elements >= 0 && op.elements < 1e18, "host_compute.elements", op.elements,
            "must be finite and not negative");
    require(op.simd_instructions >= 0 && op.simd_instructions < 1e6, "host_compute.simd_instructions",
            op.simd_instructions, "must be finite and not negative");
    require_in(op.moved.value(), limits::message_size, "host_compute.moved_bytes");
    const seconds compute = seconds_of(op.elements / h.simd_lanes * op.simd_instructions /
                                       h.simd_instructions_per_second());
    const seconds memory = op.moved / h.memory_bandwidth;
    return compute > memory ? compute : memory;
}

// The host share of one GPU of the setup: its node's host split over the GPUs of the
// node that run at once.
constexpr host_share host_share_of(const training_setup& s) {
    return share_per_gpu(s.cluster.host, gpus_sharing_a_host(s));
}

// The CPU's step of an offloaded optimizer, its passes one after the other.
constexpr seconds host_step_time(const optimizer_work& w, const training_setup& s) {
    const host_share h = host_share_of(s);
    seconds t = seconds_of(0.0);
    for (const auto& op : w.host_step) t += host_compute_time(op, h);
    return t;
}

constexpr offload_copies price_gradient_copies(const optimizer_work& w, const training_setup& s) {
    offload_copies c;
    c.last_bucket_share = w.last_bucket_share;
    for (const auto& copy : w.gradient_copies) {
        const seconds t = host_transfer_time(copy.op, s.cluster.gpu, s.cluster.host);
        switch (copy.when) {
            case offload_point::all_but_last_micro_batch: c.all_but_last += t; break;
            case offload_point::all_but_first_micro_batch: c.all_but_first += t; break;
            case offload_point::last_micro_batch: c.last += t; break;
        }
    }
    return c;
}

namespace step_detail {
// price_optimizer and price_step below with the setup's kernel parameters
// (kernel_params_of(s)) already checked, as validate(s) checks them.
// An offloaded step from its two parts: the CPU's step, then the copy back.
constexpr seconds offloaded_optimizer_time(seconds host_step, seconds weights_up, const training_setup& s) {
    return host_step + weights_up + s.framework.per_step_overhead;
}

inline seconds price_optimizer(const optimizer_work& w, const training_setup& s, const kernel_params& k) {
    if (w.offloaded)
        return offloaded_optimizer_time(host_step_time(w, s),
                                        host_transfer_time(w.weights_up, s.cluster.gpu, s.cluster.host), s);
    // The update's kernels are issued from Python (a per-tensor loop launches each one);
    // like a pass, it takes the larger of the GPU's time and the host's.
    const seconds gpu = kernel_detail::memory_op_time(s.cluster.gpu, w.update, k);
    const seconds host = w.update.launches * s.framework.host.op * s.cluster.host.eager_op_time;
    return std::max(gpu, host) + s.framework.per_step_overhead;
}

inline step_prices price_step(const step_ops& w, const training_setup& s, const kernel_params& k) {
    const bool offloaded = w.optimizer.offloaded;
    const offload_copies gradient_copies = offloaded ? price_gradient_copies(w.optimizer, s) : offload_copies{};
    const seconds host_step = offloaded ? host_step_time(w.optimizer, s) : seconds_of(0.0);
    const seconds weights_up = offloaded ? host_transfer_time(w.optimizer.weights_up, s.cluster.gpu, s.cluster.host)
                                         : seconds_of(0.0);
    data_parallel_sync sync;
    for (const auto& op : w.sync) {
        const seconds one = collective_time(op.op, s.cluster);
        const seconds t = op.count * one;
        switch (op.when) {
            case sync_point::every_forward:
                sync.per_forward += t;
                if (op.per_unit && op.op.kind == collective::all_gather) sync.forward_unit = one;
                break;
            case sync_point::every_micro_batch:
                sync.per_micro_batch += t;
                if (op.per_unit && op.op.kind == collective::all_gather) sync.backward_unit = one;
                break;
            case sync_point::end_of_backward: sync.end_of_backward += t; break;
            case sync_point::after_optimizer: sync.after_optimizer += t; break;
            case sync_point::end_of_step: sync.end_of_step += t; break;
        }
    }
    return {.sync = sync,
            .optimizer = offloaded ? offloaded_optimizer_time(host_step, weights_up, s)
                                   : price_optimizer(w.optimizer, s, k),
            .offloaded = offloaded,
            .gradient_copies = gradient_copies,
            .host_step = host_step,
            .weights_up = weights_up};
}
}  // namespace step_detail

// The optimizer step: on the GPU, or offloaded: the CPU's step, then the copy back
// (ZeRO-Offload without the delayed parameter update runs them in order, before the
// next forward). Plus the framework's per-step host overhead. The setup's kernel
// parameters are checked first, whether or not the update runs on the GPU.
inline seconds price_optimizer(const optimizer_work& w, const training_setup& s) {
    const kernel_params k = kernel_params_of(s);
    validate(k);
    return step_detail::price_optimizer(w, s, k);
}

// The step's own ops priced: data-parallel synchronisation by when it runs, the
// optimizer step and the offloaded copies. The setup's kernel parameters are checked
// first.
inline step_prices price_step(const step_ops& w, const training_setup& s) {
    const kernel_params k = kernel_params_of(s);
    validate(k);
    return step_detail::price_step(w, s, k);
}

// The optimizer step on one GPU (or on its host when offloaded).
inline seconds optimizer_step_time(const training_setup& s) {
    validate(s);
    return step_detail::price_optimizer(optimizer_workload(s), s, kernel_params_of(s));
}

// ---- The schedule ------------------------------------------------------------------------

// FLOPs of one sample for the report, computed once per model, sequence and recompute.
struct flop_counts {
    flops model = flops_of(0.0);      // PaLM's model FLOPs, no recompute (MFU, flops.hpp)
    flops hardware = flops_of(0.0);   // model FLOPs + what recompute repeats (HFU); fine-tuning: what runs
};

// A fused attention kernel skips the masked half of a causal core (FlashAttention's
// count, attention_kernels.hpp): the hardware runs half of PaLM's 12·L·q·s attention
// FLOPs per token, and half of the core's forward where recompute repeats it. MFU keeps
// PaLM's count, so it can exceed HFU.
constexpr bool skips_masked_attention(const training_setup& s) {
    return s.framework.flash_attention && s.model.causal;
}

namespace step_detail {
// For a setup already validated (validate(s)).
inline flop_counts flop_counts_of(const training_setup& s) {
    const int seq = sequence_length(s);
    const flops model = flops_detail::palm_training_flops_per_sample(s.model, seq);
    const recompute_mode r = s.layout.recompute;
    flops hardware = s.finetune.freezes_base()
                         ? flops_detail::finetune_hardware_flops_per_sample(s.model, seq, s.finetune, r)
                         : model + flops_detail::recompute_flops_per_sample(s.model, seq, r);
    if (skips_masked_attention(s)) {
        const double core_forward = 4.0 * s.model.layers * double(s.model.q_width()) * double(seq) * seq;
        const double repeated = r == recompute_mode::none ? 0.0 : 1.0;
        hardware -= flops_of(0.5 * core_forward * (3.0 + repeated));
    }
    return {model, hardware};
}
}  // namespace step_detail

inline flop_counts flop_counts_of(const training_setup& s) {
    flops_detail::check_seq(s.model, sequence_length(s));
    return step_detail::flop_counts_of(s);
}

// The pipeline's fill and drain. 1F1B: the slowest stage paces m micro-batches and the
// others' micro-batches add once, T = Σᵢ tᵢ + (m − 1)·maxⱼ tⱼ (Zheng et al. 2022,
// "Alpa", OSDI '22, §5.2), which for p equal stages is Narayanan et al.'s (2021) bubble
// of (p − 1) micro-batch times; interleaving over v virtual stages divides it by v
// (Narayanan et al. 2021, §2.2.2). zb-h1 fills it with the deferred weight gradients:
// (p − 1)(F + B − W) instead of (p − 1)(F + B + W) (Qi et al. 2024, §3.1), i.e. 2·W
// less per other stage, never below zero.
constexpr seconds pipeline_bubble(const parallel_layout& l, const pipeline_times& p) {
    if (l.schedule == pipeline_schedule::zero_bubble_h1)
        return std::max(seconds_of(0.0), p.others - 2.0 * p.others_weight_gradient);
    return p.others / double(l.interleave);
}

// One step from its priced parts: m micro-batches at the slowest stage's pace plus the
// pipeline's fill and drain (pipeline_bubble). Data-parallel sync: where it is
// overlapped, communication during a micro-batch hides behind that micro-batch's
// backward (the end-of-backward reduction behind what is left of the last one); the
// rest is exposed.
// step_times gives the parts of the step's time; schedule() the whole report around them
// (the planner ranks candidates by the first and builds the second for those it keeps).
inline step_time_breakdown step_times(const training_setup& s, const pipeline_times& stages,
                                      const step_prices& prices) {
    const micro_batch_times& mb = stages.bottleneck;
    step_time_breakdown time;
    const double m = s.layout.grad_accum;
    time.forward_backward = m * mb.compute();
    time.bubble = pipeline_bubble(s.layout, stages);
    const data_parallel_sync& sync = prices.sync;
    const seconds zero = seconds_of(0.0);
    const seconds hideable = overlaps_data_parallel_sync(s)
                                 ? s.framework.overlappable_backward_fraction * (mb.backward + mb.recompute)
                                 : zero;
    const auto exposed = [zero](seconds comm, seconds hidden) { return std::max(zero, comm - hidden); };
    // The sharded optimizer's parameter all-gather: after the update, or bucket by
    // bucket during the next step's first forward (Megatron-Core
    // --overlap-param-gather: each bucket's gather is waited on by its first use and
    // prefetches the next; ASSUMPTION: the same overlappable share of the forward).
    const seconds after_optimizer =
        s.framework.overlap_parameter_gather
            ? exposed(sync.after_optimizer, s.framework.overlappable_backward_fraction * mb.forward)
            : sync.after_optimizer;
    // ZeRO-3: a pass's gathers are prefetched one unit ahead behind the compute of the
    // unit before (FSDP's implicit forward prefetch and BACKWARD_PRE, PyTorch
    // docs/source/notes/fsdp.rst@16d83c2f); the first unit's has nothing to hide behind.
    const seconds hideable_forward =
        overlaps_data_parallel_sync(s) ? s.framework.overlappable_backward_fraction * mb.forward : zero;
    const seconds exposed_forward =
        sync.per_forward > zero ? std::max(sync.forward_unit, exposed(sync.per_forward, hideable_forward)) : zero;
    const seconds exposed_backward = std::max(sync.backward_unit, exposed(sync.per_micro_batch, hideable));
    seconds exposed_sync = m * (exposed_forward + exposed_backward) +
                           exposed(sync.end_of_backward, exposed(hideable, sync.per_micro_batch)) +
                           after_optimizer + sync.end_of_step;
    if (prices.offloaded) {
        // ZeRO-Offload: a micro-batch's reductions and its gradient copies to and from
        // the host run on one stream ("copy_grad_stream is disabled because of race
        // with reduce", DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py@v0.12.6), behind its backward where overlapped; the last bucket is
        // reduced and copied after backward has ended, so its share is always exposed.
        // The micro-batches differ: the first copies its gradients down, the middle ones
        // also bring the accumulated ones up, the last brings them up and copies fp32.
        const offload_copies& g = prices.gradient_copies;
        const auto exposed_offload = [&](seconds load) { return std::max(g.last_bucket_share * load, load - hideable); };
        const seconds first = sync.per_micro_batch + g.all_but_last;
        const seconds middle = sync.per_micro_batch + g.all_but_last + g.all_but_first;
        const seconds last = sync.per_micro_batch + (m > 1 ? g.all_but_first : zero) + g.last + sync.end_of_backward;
        exposed_sync = m * exposed_forward + (m > 1 ? exposed_offload(first) : zero) + std::max(0.0, m - 2) * exposed_offload(middle) +
                       exposed_offload(last) + after_optimizer + sync.end_of_step;
    }
    time.communication = m * (mb.tensor_parallel_comm + mb.pipeline_comm + mb.context_parallel_comm) + exposed_sync;
    time.optimizer = prices.optimizer;
    // Input pipeline: sequential, loading and copying add to the step; prefetched, the
    // step is bound by its slowest stage (input_pipeline.hpp).
    const seconds busy = time.total();
    time.data = s.prefetch ? exposed(std::max(s.data_loading, s.host_to_device), busy)
                           : s.data_loading + s.host_to_device;
    return time;
}

// The report is built in one initialiser, each field once (assigned field by field,
// GCC clears the whole report first with a `rep stos`, slow to start on small blocks).
inline step_report schedule(const training_setup& s, const pipeline_times& stages, const step_prices& prices,
                            const memory_report& memory, const flop_counts& flop) {
    const auto& l = s.layout;
    const micro_batch_times& mb = stages.bottleneck;
    const int gpus = l.gpus();
    const long long global_batch = l.global_batch();
    const int seq = sequence_length(s);
    const double m = l.grad_accum;
    const step_time_breakdown time = step_times(s, stages, prices);
    const seconds step_time = time.total();
    const double samples_per_second = double(global_batch) / step_time.value();
    const double samples = double(global_batch);
    const flop_rate peak = s.cluster.gpu.peak_for(s.precision.math);
    const flop_rate model_flops_per_gpu = samples * flop.model / step_time / double(gpus);
    const flop_rate hardware_flops_per_gpu = samples * flop.hardware / step_time / double(gpus);
    const bool fp8 = fp8_linears(s.precision);
    // fp8: the same rates against the bf16 peak (unused otherwise).
    const flop_rate bf16 = fp8 ? s.cluster.gpu.peak_for(dtype::bf16) : flop_rate::from_value(0.0);

    // The bottleneck: what the step spends most of its time on, unless it does not fit.
    const std::array<std::pair<bottleneck_kind, seconds>, 5> parts{{
        {bottleneck_kind::compute, time.forward_backward},
        {bottleneck_kind::communication, time.communication},
        {bottleneck_kind::optimizer, time.optimizer},
        {bottleneck_kind::bubble, time.bubble},
        {bottleneck_kind::data, time.data},
    }};
    bottleneck_kind bottleneck = std::max_element(parts.begin(), parts.end(), [](const auto& a, const auto& b) {
                                     return a.second < b.second;
                                 })->first;
    if (bottleneck == bottleneck_kind::compute && mb.host_bound()) bottleneck = bottleneck_kind::host;
    if (!memory.fits) bottleneck = bottleneck_kind::memory;

    return {.step_time = step_time,
            .time = time,
            .micro_batch = mb,
            .data_parallel_sync = prices.sync.per_step_total(m),
            .offload = prices.offloaded
                           ? offload_times{prices.gradient_copies.per_step(m), prices.host_step, prices.weights_up}
                           : offload_times{},
            .gpus = gpus,
            .global_batch = global_batch,
            .seq = seq,
            .samples_per_second = samples_per_second,
            .tokens_per_second = samples_per_second * seq,
            .model_flops_per_gpu = model_flops_per_gpu,
            .hardware_flops_per_gpu = hardware_flops_per_gpu,
            .mfu = model_flops_per_gpu / peak,
            .hfu = hardware_flops_per_gpu / peak,
            .hfu_ceiling = std::max(1.0, s.cluster.gpu.clock_ratio()),
            .frozen_base = s.finetune.freezes_base(),
            .causal_attention_skipped = skips_masked_attention(s),
            .fp8 = fp8,
            .mfu_bf16_peak = fp8 ? double(model_flops_per_gpu / bf16) : 0.0,
            .hfu_bf16_peak = fp8 ? double(hardware_flops_per_gpu / bf16) : 0.0,
            .memory = memory.breakdown,
            .memory_capacity = memory.capacity,
            .fits = memory.fits,
            .bottleneck = bottleneck};
}

// One training step of the setup, priced from its op lists.
inline step_report predict(const training_setup& s) {
    validate(s);
    const model_state state = setup_detail::model_state_of(s);
    const layout_groups groups = groups_of(s);
    const stage_pricer parts = step_detail::price_stage_parts(s, groups);
    step_report r = schedule(s, pipeline_stage_times(parts, s, parts.pipeline_comm()),
                             step_detail::price_step(step_workload(s, state, groups), s, kernel_params_of(s)),
                             memory_detail::report_of(s, state),
                             step_detail::flop_counts_of(s));
    if constexpr (TRAINPERF_CHECK_POSTCONDITIONS) check_postconditions(r);
    return r;
}

}  // namespace trainperf
