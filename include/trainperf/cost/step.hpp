// The step: schedules the priced workload (cost/stage_pricer.hpp for a micro-batch on a
// stage, cost/step_prices.hpp for what runs once per step): the 1F1B
// pipeline (interleaved or not) with its bubble, data-parallel synchronisation exposed
// or overlapped as the layout and the framework profile say, the optimizer step, the
// input pipeline; then throughput, MFU/HFU, memory and the bottleneck.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "../core/attributes.hpp"
#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "../core/units.hpp"
#include "../spec/framework.hpp"
#include "../spec/hardware.hpp"
#include "../spec/host.hpp"
#include "../spec/parallel.hpp"
#include "../spec/checked_setup.hpp"
#include "../spec/setup.hpp"
#include "../workload/flops.hpp"
#include "../workload/ops.hpp"
#include "../workload/step_ops.hpp"
#include "comm.hpp"
#include "kernel_model.hpp"
#include "memory.hpp"
#include "stage_pricer.hpp"
#include "step_prices.hpp"

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
    // An MoE model's token dispatch and combine per step on the pacing stage, exposed (in
    // time.communication): grad_accum × micro_batch.expert_parallel_comm, or less with
    // the EP overlap (exposed_expert_parallel_comm); and what the shared experts hide of it
    // (grad_accum × micro_batch.expert_parallel_hidden, not in the step).
    seconds moe_dispatch = seconds_of(0.0);
    seconds moe_dispatch_hidden = seconds_of(0.0);
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
    // (workload/flops.hpp finetune_hardware_flops_per_sample), so MFU can exceed HFU and 100 %.
    bool frozen_base = false;
    // A causal attention core run by a fused kernel that skips the masked half: MFU
    // (PaLM's count) can exceed HFU (what runs).
    bool causal_attention_skipped = false;
    // fp8 and nvfp4 (Transformer Engine's quantized Linears): mfu and hfu are against the
    // GPU's dense FP8 or FP4 peak (the recipe's math); these are the same FLOP rates
    // against its dense bf16 peak, the figure 16-bit runs are quoted against. 0 for other
    // recipes.
    bool low_precision = false;
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
        {"micro_batch.expert_parallel_comm", r.micro_batch.expert_parallel_comm.value()},
        {"micro_batch.expert_parallel_hidden", r.micro_batch.expert_parallel_hidden.value()},
        {"micro_batch.expert_parallel_hideable", r.micro_batch.expert_parallel_hideable.value()},
        {"micro_batch.gpu_compute", r.micro_batch.gpu_compute().value()},
        {"micro_batch.host_compute", r.micro_batch.host_compute().value()},
        {"data_parallel_sync", r.data_parallel_sync.value()},
        {"moe_dispatch", r.moe_dispatch.value()},
        {"moe_dispatch_hidden", r.moe_dispatch_hidden.value()},
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

// ---- The schedule ------------------------------------------------------------------------

// FLOPs of one sample for the report, computed once per model, sequence and recompute.
struct flop_counts {
    flops model = flops_of(0.0);      // PaLM's model FLOPs, no recompute (MFU, workload/flops.hpp)
    flops hardware = flops_of(0.0);   // model FLOPs + what recompute repeats (HFU); fine-tuning: what runs
};

// A fused attention kernel skips the masked half of a causal core (FlashAttention's
// count, spec/attention_kernels.hpp): the hardware runs half of PaLM's 12·L·q·s attention
// FLOPs per token, and half of the core's forward where recompute repeats it. MFU keeps
// PaLM's count, so it can exceed HFU.
constexpr bool skips_masked_attention(const training_setup& s) {
    return s.framework.flash_attention && s.model.causal;
}

inline flop_counts flop_counts_of(checked_view c) {
    const training_setup& s = c;
    const int seq = sequence_length(s);
    const flops model = flops_detail::palm_training_flops_per_sample(s.model, seq);
    const recompute_mode r = s.layout.recompute;
    const bool named_modules = r == recompute_mode::selective && !s.layout.recompute_modules.empty();
    flops hardware =
        s.finetune.freezes_base() ? flops_detail::finetune_hardware_flops_per_sample(s.model, seq, s.finetune, r)
        : named_modules
            ? model + flops_detail::module_recompute_flops_per_sample(s.model, seq, s.layout.recompute_modules)
            : model + flops_detail::recompute_flops_per_sample(s.model, seq, r);
    if (skips_masked_attention(s)) {
        // The layers whose causal half the kernel skips: every one, or the full ones of a
        // sliding-window model (a band has no masked half, workload/layer.hpp); each head's
        // scores over d_qk and context over d_v (latent attention's own widths).
        const transformer_config& m = s.model;
        const double full = windowed_keys_per_query(m, seq) == 0 ? double(m.layers)
                            : m.full_attention_every > 0     ? double(m.layers / m.full_attention_every)
                                                             : 0.0;
        const double core_forward =
            2.0 * full * double(m.heads) * (m.qk_head_dim() + m.v_head_dim()) * double(seq) * seq;
        const bool core_kept = r == recompute_mode::none ||
                               (r == recompute_mode::selective &&
                                !recomputed_modules(s.layout).contains(recompute_module::core_attn));
        const double repeated = core_kept ? 0.0 : 1.0;
        hardware -= flops_of(0.5 * core_forward * (3.0 + repeated));
    }
    return {model, hardware};
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

// An MoE model's dispatch and combine over the step's m micro-batches on the stage that
// paces it: all exposed, or with Megatron-Core's EP overlap (moe_run::a2a_overlap;
// combined_1f1b.py@d98e8a64: "the forward pass of Transformer layers for one micro-batch
// runs in parallel with the backward pass of another ... EP A2A in forward step is hidden
// by the attention/mlp computation in the backward step, and vice versa"; the first
// micro-batch's forward and the last one's backward run alone): in each pair the forward's
// dispatch and combine hide behind the backward's compute and the backward's behind the
// forward's. With A a micro-batch's dispatch and combine, half of it in each pass
// (ASSUMPTION: the backward sends the gradients of what the forward sent; the routing
// metadata, forward only, is small), H its hideable part (each collective's time × the
// share of the SMs its kernels leave to compute, cost/comm_sms.hpp: while the collectives
// run, the compute beside them progresses H/A as fast), and C_f, C_b its forward and
// backward (with recompute) compute, a pass's half takes max(A/2, C + A/2 − H/2) beside
// the other's compute, and A + (m − 1)·(A/2 − min(C_b, H/2) + A/2 − min(C_f, H/2)) stays
// exposed. ASSUMPTION: no layer-by-layer dependency leaves a gap (a lower bound on what
// stays exposed); with pipeline stages the fill and drain (the other stages'
// micro-batches, pipeline_bubble) keep their dispatch whole.
inline seconds exposed_expert_parallel_comm(const training_setup& s, const micro_batch_times& mb) {
    const double m = s.layout.grad_accum;
    const seconds a = mb.expert_parallel_comm;
    if (!s.moe.a2a_overlap) return m * a;
    const seconds half = 0.5 * a, hideable = 0.5 * mb.expert_parallel_hideable;
    return a + (m - 1) * (half - std::min(mb.backward + mb.recompute, hideable) + half - std::min(mb.forward, hideable));
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
    // The quantized weights made once a step run in the first micro-batch's forward (after
    // ZeRO-3's gathers, in every micro-batch's).
    time.forward_backward = m * (mb.compute() + prices.fp8_weights_per_micro_batch) + prices.fp8_weights_per_step;
    time.bubble = pipeline_bubble(s.layout, stages);
    const data_parallel_sync& sync = prices.sync;
    const data_parallel_sync& held = prices.sync_sm_time;
    const seconds zero = seconds_of(0.0);
    const seconds hideable = overlaps_data_parallel_sync(s)
                                 ? s.framework.overlappable_backward_fraction * (mb.backward + mb.recompute)
                                 : zero;
    // What a window's collectives add to the step: the part that outlasts the compute
    // they hide behind, and at least the compute their SMs take from it. Compute C beside
    // a collective of time T holding a share f of the SMs runs at 1 − f while both run:
    // it ends at C + f·T where T < C/(1 − f), else the collective ends last at T, so the
    // pass grows by max(T − C, f·T) (`sm_time` is f·T). A part that runs alone (`alone`:
    // a pass's first unit, gathered before any compute) adds its whole time, the rest its
    // share of f·T. ASSUMPTION: the collective's own time does not change, and the compute
    // loses SMs only (not memory bandwidth).
    const auto exposed = [zero](seconds comm, seconds hidden, seconds sm_time = seconds_of(0.0),
                                seconds alone = seconds_of(0.0)) {
        const seconds beside = comm > zero ? alone + sm_time * ((comm - alone) / comm) : zero;
        return std::max({zero, comm - hidden, beside});
    };
    // The sharded optimizer's parameter all-gather: after the update, or bucket by
    // bucket during the next step's first forward (Megatron-Core
    // --overlap-param-gather: each bucket's gather is waited on by its first use and
    // prefetches the next; ASSUMPTION: the same overlappable share of the forward).
    const seconds after_optimizer =
        overlaps_parameter_gather(s)
            ? exposed(sync.after_optimizer, s.framework.overlappable_backward_fraction * mb.forward,
                      held.after_optimizer)
            : sync.after_optimizer;
    // ZeRO-3: a pass's gathers are prefetched one unit ahead behind the compute of the
    // unit before (FSDP's implicit forward prefetch and BACKWARD_PRE, PyTorch
    // docs/source/notes/fsdp.rst@16d83c2f); the first unit's has nothing to hide behind.
    const seconds hideable_forward =
        overlaps_data_parallel_sync(s) ? s.framework.overlappable_backward_fraction * mb.forward : zero;
    const seconds exposed_forward =
        sync.per_forward > zero ? std::max(sync.forward_unit, exposed(sync.per_forward, hideable_forward,
                                                                      held.per_forward, sync.forward_unit))
                                : zero;
    const seconds exposed_backward = std::max(
        sync.backward_unit, exposed(sync.per_micro_batch, hideable, held.per_micro_batch, sync.backward_unit));
    seconds exposed_sync =
        m * (exposed_forward + exposed_backward) +
        exposed(sync.end_of_backward, exposed(hideable, sync.per_micro_batch), held.end_of_backward) +
        after_optimizer + sync.end_of_step;
    if (prices.offloaded) {
        // ZeRO-Offload: a micro-batch's reductions and its gradient copies to and from
        // the host run on one stream ("copy_grad_stream is disabled because of race
        // with reduce", DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py@v0.12.6), behind its backward where overlapped; the last bucket is
        // reduced and copied after backward has ended, so its share is always exposed.
        // The micro-batches differ: the first copies its gradients down, the middle ones
        // also bring the accumulated ones up, the last brings them up and copies fp32.
        const offload_copies& g = prices.gradient_copies;
        // The last bucket runs alone; the rest beside the backward, its collectives' SMs
        // taken from it (the copies hold none).
        const auto exposed_offload = [&](seconds load, seconds sm_time) {
            return exposed(load, hideable, sm_time, g.last_bucket_share * load);
        };
        const seconds first = sync.per_micro_batch + g.all_but_last;
        const seconds middle = sync.per_micro_batch + g.all_but_last + g.all_but_first;
        const seconds last = sync.per_micro_batch + (m > 1 ? g.all_but_first : zero) + g.last + sync.end_of_backward;
        const seconds each = held.per_micro_batch;
        exposed_sync = m * exposed_forward + (m > 1 ? exposed_offload(first, each) : zero) +
                       std::max(0.0, m - 2) * exposed_offload(middle, each) +
                       exposed_offload(last, each + held.end_of_backward) + after_optimizer + sync.end_of_step;
    }
    time.communication = m * (mb.tensor_parallel_comm + mb.pipeline_comm + mb.context_parallel_comm) +
                         exposed_expert_parallel_comm(s, mb) + exposed_sync;
    time.optimizer = prices.optimizer;
    // Input pipeline: sequential, loading and copying add to the step; prefetched, the
    // step is bound by its slowest stage (cost/input_pipeline.hpp).
    const seconds busy = time.total();
    time.data = s.prefetch ? exposed(std::max(s.data_loading, s.host_to_device), busy)
                           : s.data_loading + s.host_to_device;
    return time;
}

// The report is built in one initialiser that names each field once.
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
    const bool low_precision = quantized_linears(s.precision);
    // fp8, nvfp4: the same rates against the bf16 peak (unused otherwise).
    const flop_rate bf16 = low_precision ? s.cluster.gpu.peak_for(dtype::bf16) : flop_rate::from_value(0.0);

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
            .moe_dispatch = exposed_expert_parallel_comm(s, mb),
            .moe_dispatch_hidden = m * mb.expert_parallel_hidden,
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
            .low_precision = low_precision,
            .mfu_bf16_peak = low_precision ? double(model_flops_per_gpu / bf16) : 0.0,
            .hfu_bf16_peak = low_precision ? double(hardware_flops_per_gpu / bf16) : 0.0,
            .memory = memory.breakdown,
            .memory_capacity = memory.capacity,
            .fits = memory.fits,
            .bottleneck = bottleneck};
}

// One training step of the setup, priced from its op lists.
inline step_report predict(checked_view s) {
    const model_state state = model_state_of(s);
    const layout_groups groups = groups_of(s);
    const stage_pricer parts = price_stage_parts(s, groups);
    step_report r = schedule(s, pipeline_stage_times(parts, s, parts.pipeline_comm()),
                             price_step(step_workload(s, state, groups), s),
                             memory_of(s, state), flop_counts_of(s));
    if constexpr (TRAINPERF_CHECK_POSTCONDITIONS) check_postconditions(r);
    return r;
}

}  // namespace trainperf
