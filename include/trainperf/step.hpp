// The step-time schedule and its report. Per micro-batch and pipeline stage: the
// layers' forward, backward and recompute ops timed by kernel_model.hpp, tensor-
// parallel collectives and pipeline sends timed by comm.hpp; then the 1F1B pipeline
// with its bubble, data-parallel gradient sync (exposed or overlapped per profile),
// and the optimizer step.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string_view>
#include <vector>

#include "comm.hpp"
#include "dtype.hpp"
#include "error.hpp"
#include "flops.hpp"
#include "framework.hpp"
#include "hardware.hpp"
#include "kernel_model.hpp"
#include "memory.hpp"
#include "model.hpp"
#include "optimizer.hpp"
#include "parallel.hpp"
#include "precision.hpp"
#include "scaling.hpp"
#include "units.hpp"
#include "workload.hpp"

namespace trainperf {

// Everything a prediction depends on: one system, one model, one recipe, one
// layout, one software profile.
struct training_setup {
    cluster_spec cluster{};
    transformer_config model{};
    precision_recipe precision = recipe(precision_kind::bf16);
    optimizer_kind optimizer = optimizer_kind::adamw;
    parallel_layout layout{};
    int seq = 0;                                  // 0: the model's max_seq
    framework_profile framework = megatron_profile;
    std::optional<kernel_params> kernels;         // empty: the GPU architecture's defaults
    // The input pipeline per step (input_pipeline.hpp's first two stages): reading the
    // global batch's share of one GPU from storage and copying it to the device. With
    // prefetching they overlap the step and only what exceeds it is exposed.
    seconds data_loading = seconds_of(0.0);
    seconds host_to_device = seconds_of(0.0);
    bool prefetch = true;
    // Host side of optimizer offload: effective bandwidth of the CPU Adam update.
    // ASSUMPTION: DeepSpeed's CPU-Adam is memory-bound on the host; 50 GB/s is a
    // fraction of a two-socket server's DRAM bandwidth. Replace with a measurement.
    byte_rate host_optimizer_bandwidth = gb_per_second(50.0);
};

enum class bottleneck_kind { compute, communication, optimizer, bubble, data, memory };

constexpr std::string_view to_string(bottleneck_kind b) {
    switch (b) {
        case bottleneck_kind::compute: return "compute";
        case bottleneck_kind::communication: return "communication";
        case bottleneck_kind::optimizer: return "optimizer";
        case bottleneck_kind::bubble: return "bubble";
        case bottleneck_kind::data: return "data";
        case bottleneck_kind::memory: return "memory";
    }
    return "?";
}

// Where one step's time goes (all on the critical path, so they add up).
struct step_time_breakdown {
    seconds forward_backward = seconds_of(0.0);  // GEMMs and elementwise, incl. recompute
    seconds communication = seconds_of(0.0);     // exposed TP, PP and DP communication
    seconds optimizer = seconds_of(0.0);         // optimizer step and per-step host work
    seconds bubble = seconds_of(0.0);            // pipeline fill and drain
    seconds data = seconds_of(0.0);              // input pipeline stall

    constexpr seconds total() const { return forward_backward + communication + optimizer + bubble + data; }
};

// Per micro-batch, on the busiest pipeline stage.
struct micro_batch_times {
    seconds forward = seconds_of(0.0);
    seconds backward = seconds_of(0.0);
    seconds recompute = seconds_of(0.0);
    seconds tensor_parallel_comm = seconds_of(0.0);
    seconds pipeline_comm = seconds_of(0.0);

    constexpr seconds compute() const { return forward + backward + recompute; }
    constexpr seconds total() const { return compute() + tensor_parallel_comm + pipeline_comm; }
};

struct step_report {
    seconds step_time = seconds_of(0.0);
    step_time_breakdown time{};
    micro_batch_times micro_batch{};
    seconds data_parallel_sync = seconds_of(0.0);   // full sync time, before overlap
    int gpus = 1;
    long long global_batch = 1;
    int seq = 0;
    double samples_per_second = 0;
    double tokens_per_second = 0;
    flop_rate model_flops_per_gpu = flop_rate::from_value(0.0);  // seed formula (DESIGN §2)
    double mfu = 0;   // model FLOPs (3·forward, no recompute) / peak
    double hfu = 0;   // FLOPs the hardware ran, recompute included / peak
    memory_breakdown memory{};
    bytes memory_capacity = bytes_of(0.0);
    bool fits = true;
    bottleneck_kind bottleneck = bottleneck_kind::compute;

    constexpr double fraction(seconds part) const { return part / step_time; }
};

// The memory overheads the framework profile sets.
inline memory_overheads memory_overheads_of(const training_setup& s) {
    const framework_profile& fw = s.framework;
    return {.fp32_logits = fw.fp32_logits, .loss_buffers = fw.loss_buffers,
            .flash_attention = fw.flash_attention, .workspace = fw.workspace,
            .gradient_buckets = fw.gradient_buckets, .gradient_bucket_copy = fw.gradient_bucket_copy,
            .optimizer_temporaries = fw.optimizer_temporaries, .fragmentation = fw.fragmentation};
}

// The recipe as the framework stores it: fp32 main gradients where it keeps them.
inline precision_recipe stored_precision(const training_setup& s) {
    return s.framework.fp32_gradient_accumulation ? with_fp32_gradients(s.precision) : s.precision;
}

namespace step_detail {

inline seconds time_of(const gpu_spec& gpu, const kernel_params& k, const std::vector<gemm_op>& ops,
                       bool attention_core_only = false) {
    seconds t = seconds_of(0.0);
    for (const auto& op : ops)
        if (!attention_core_only || op.region == op_region::attention_core)
            t += gemm_time(gpu, op.shape, k);
    return t;
}

inline seconds time_of(const gpu_spec& gpu, const kernel_params& k, const std::vector<memory_op>& ops,
                       bool attention_core_only = false) {
    seconds t = seconds_of(0.0);
    for (const auto& op : ops)
        if (!attention_core_only || op.region == op_region::attention_core)
            t += memory_op_time(gpu, op.moved, k);
    return t;
}

// Links the tensor-parallel group and the pipeline use: TP stays inside a node;
// consecutive pipeline stages share a node only while tp·pp fits in one.
inline link_spec tensor_parallel_link(const training_setup& s) { return intra_node_link(s.cluster); }
inline link_spec pipeline_link(const training_setup& s) {
    const auto& l = s.layout;
    const bool crosses_nodes = l.tp * l.pp > s.cluster.gpus_per_node;
    return crosses_nodes ? s.cluster.inter_node : intra_node_link(s.cluster);
}

}  // namespace step_detail

// The kernel-model parameters in force: calibrated ones when given, else the
// defaults of the GPU's architecture.
inline kernel_params kernel_params_of(const training_setup& s) {
    return s.kernels ? *s.kernels : default_kernel_params(s.cluster.gpu.architecture);
}

inline int sequence_length(const training_setup& s) { return s.seq > 0 ? s.seq : s.model.max_seq; }

inline void validate(const training_setup& s) {
    validate(s.model);
    validate(s.layout, s.model);
    validate(kernel_params_of(s));
    check_supported(s.cluster.gpu, s.precision);
    require(sequence_length(s) >= 1, "seq", s.seq, "must be at least 1 (the model has no max_seq)");
    require(s.cluster.gpus_per_node >= 1, "gpus_per_node", s.cluster.gpus_per_node, "must be at least 1");
    require(s.layout.tp <= s.cluster.gpus_per_node, "tp", s.layout.tp,
            "must not exceed gpus_per_node (tensor parallelism stays inside a node)");
    require(!(s.layout.offload == offload_mode::optimizer && s.cluster.gpu.memory_shared_with_host), "offload",
            "optimizer", "this GPU shares its memory with the host: offloading frees nothing");
    require(s.data_loading.value() >= 0, "data_loading_s", s.data_loading.value(), "must not be negative");
    require(s.host_to_device.value() >= 0, "host_to_device_s", s.host_to_device.value(), "must not be negative");
}

// Forward, backward and recompute of one micro-batch on the busiest pipeline stage,
// with the tensor-parallel collectives and pipeline sends it waits for.
inline micro_batch_times micro_batch_step(const training_setup& s) {
    const auto& m = s.model;
    const auto& l = s.layout;
    const auto& gpu = s.cluster.gpu;
    const kernel_params k = kernel_params_of(s);
    const auto& fw = s.framework;
    const int seq = sequence_length(s);
    const layer_context ctx{.micro_batch = l.micro_batch, .seq = seq, .tp = l.tp, .sp = l.sp,
                            .math = s.precision.math, .activations = s.precision.activations};

    const auto gemms = layer_forward_gemms(m, ctx);
    const auto backward_gemms = backward_gemms_of(gemms);
    const auto elementwise = layer_forward_memory_ops(m, ctx, fw);
    const auto elementwise_backward = backward_of(elementwise, fw);

    const seconds layer_forward = step_detail::time_of(gpu, k, gemms) + step_detail::time_of(gpu, k, elementwise);
    const seconds layer_backward =
        step_detail::time_of(gpu, k, backward_gemms) + step_detail::time_of(gpu, k, elementwise_backward);
    seconds layer_recompute = seconds_of(0.0);
    if (l.recompute == recompute_mode::full) layer_recompute = layer_forward;
    if (l.recompute == recompute_mode::selective)
        layer_recompute = step_detail::time_of(gpu, k, gemms, true) + step_detail::time_of(gpu, k, elementwise, true);

    // Tensor parallelism: 2 all-reduces of the b·s·h activations per layer forward and
    // 2 in backward (Megatron f/g operators); with sequence parallelism each becomes a
    // reduce-scatter plus an all-gather of the same volume. Full recompute repeats the
    // forward's collectives.
    seconds tp_layer = seconds_of(0.0);
    if (l.tp > 1) {
        const bytes activation = bytes_of(double(l.micro_batch) * seq * m.hidden * size_of(s.precision.activations));
        const link_spec link = step_detail::tensor_parallel_link(s);
        if (l.sp) {
            // Megatron's sequence parallelism keeps only the scattered input of each
            // column-parallel GEMM and all-gathers it again in backward for the weight
            // gradient: 2 more all-gathers per layer (Korthikanti et al. 2022, §4.2.2).
            const seconds gather = all_gather_time(activation, l.tp, link);
            const seconds scatter = reduce_scatter_time(activation, l.tp, link);
            const double forward_pairs = 2.0 + (l.recompute == recompute_mode::full ? 2.0 : 0.0);
            tp_layer = (forward_pairs + 2.0) * (gather + scatter) + 2.0 * gather;
        } else {
            const double per_layer = 4.0 + (l.recompute == recompute_mode::full ? 2.0 : 0.0);
            tp_layer = per_layer * all_reduce_time(activation, l.tp, link);
        }
    }

    // Layers of the busiest stage; the first stage also embeds, the last computes the
    // logits and the loss (with pp = 1 one stage does all three).
    const double layers = std::ceil(double(m.layers) / l.pp);
    const double tokens = double(l.micro_batch) * seq;
    const gemm_shape logits{tokens, double(m.vocab) / l.tp, double(m.hidden), 1, s.precision.math};
    const double a = size_of(s.precision.activations);
    const double loss_bytes_per_element = fw.fp32_logits ? 4.0 : a;
    // Loss: upcast/softmax/cross-entropy forward and its backward, a few passes over b·s·V/t.
    const bytes loss_traffic = bytes_of(tokens * double(m.vocab) / l.tp * loss_bytes_per_element * 4.0);
    const seconds head_forward = gemm_time(gpu, logits, k) + memory_op_time(gpu, loss_traffic, k);
    const seconds head_backward = gemm_time(gpu, dgrad_of(logits), k) + gemm_time(gpu, wgrad_of(logits), k) +
                                  memory_op_time(gpu, loss_traffic, k);
    const seconds embedding = memory_op_time(gpu, bytes_of(3.0 * tokens * m.hidden * a), k);
    const seconds embedding_backward = memory_op_time(gpu, bytes_of(3.0 * tokens * m.hidden * a), k);
    const bool split = l.pp > 1;
    // The last stage is the busiest (logits); the first stage's embedding is tiny.
    const seconds extra_forward = head_forward + (split ? seconds_of(0.0) : embedding);
    const seconds extra_backward = head_backward + (split ? seconds_of(0.0) : embedding_backward);

    micro_batch_times t;
    t.forward = layers * layer_forward + extra_forward;
    t.backward = layers * layer_backward + extra_backward;
    t.recompute = layers * layer_recompute;
    t.tensor_parallel_comm = layers * tp_layer;
    if (split) {
        // Activations forward and gradients backward at each stage boundary, once per
        // virtual stage; Megatron's scatter-gather splits each send over the tp ranks.
        const bytes message = bytes_of(tokens * m.hidden * a / l.tp);
        t.pipeline_comm = 2.0 * l.interleave * p2p_time(message, step_detail::pipeline_link(s));
    }
    return t;
}

// Parameters held (and updated) by one GPU, after tp·pp model splitting.
inline double parameters_per_gpu(const training_setup& s) {
    return parameter_count(s.model) / (double(s.layout.tp) * s.layout.pp);
}

// The optimizer step on one GPU: a memory-bound sweep over its shard of parameters,
// gradients and state, fused into a few multi-tensor kernels or one loop of
// elementwise kernels per tensor; on the host when the optimizer is offloaded.
inline seconds optimizer_step_time(const training_setup& s) {
    const auto& l = s.layout;
    const auto& fw = s.framework;
    const double shard = l.zero >= 1 ? l.dp : 1.0;
    const double params = parameters_per_gpu(s) / shard;
    const double state = optimizer_state_bytes(s.optimizer, s.model, s.precision.optimizer_state).value() /
                         parameter_count(s.model);
    const double grad = size_of(stored_precision(s).gradients);
    const double weights = size_of(s.precision.weights);
    // The update reads the gradient and reads and writes the fp32 master (or the
    // weights themselves) and every state tensor.
    const double update = grad + 2 * (s.precision.fp32_master ? 4.0 : weights) + 2 * state;
    // Around it: the gradient-norm clip reads every gradient; mixed precision copies
    // the master back into the 16-bit weights; a persistent fp32 gradient buffer
    // (Megatron main_grad) is zeroed for the next step.
    const double around = grad + (s.precision.fp32_master ? 4.0 + weights : 0.0) +
                          (fw.fp32_gradient_accumulation ? grad : 0.0);
    const double bytes_per_param = update + around;
    if (l.offload == offload_mode::optimizer) {
        // Gradients down and updated weights up over PCIe, the update on the CPU.
        const link_spec host = s.cluster.gpu.host_link;
        const seconds transfer = p2p_time(bytes_of(params * (grad + weights)), host);
        return transfer + bytes_of(params * bytes_per_param) / s.host_optimizer_bandwidth + fw.per_step_overhead;
    }
    const bool fused = fw.fused_optimizer || is_fused(s.optimizer);
    const auto& gpu = s.cluster.gpu;
    const kernel_params kernels = kernel_params_of(s);
    if (fused) {
        // Multi-tensor apply: a handful of launches, one pass over everything.
        return memory_op_time(gpu, bytes_of(params * bytes_per_param), kernels) + fw.per_step_overhead;
    }
    double tensors = 0;
    for (const auto& t : parameter_tensors(s.model)) tensors += t.count;
    tensors /= double(l.tp) * l.pp;
    const seconds launches = tensors * fw.unfused_kernels_per_tensor * kernels.launch_overhead;
    return launches + bytes_of(params * bytes_per_param * fw.unfused_optimizer_passes) /
                          (gpu.memory_bandwidth * kernels.memory_efficiency) +
           fw.per_step_overhead;
}

// Data-parallel synchronisation of one GPU's shard, split by when it happens.
struct data_parallel_sync {
    seconds per_micro_batch = seconds_of(0.0);   // during every micro-batch's backward
    seconds end_of_backward = seconds_of(0.0);   // once per step, can overlap the last backward
    seconds after_optimizer = seconds_of(0.0);   // once per step, after the update: exposed

    constexpr seconds per_step_total(double micro_batches) const {
        return micro_batches * per_micro_batch + end_of_backward + after_optimizer;
    }
};

// ZeRO 0 keeps whole gradients and all-reduces them once per step; ZeRO-1 reduce-
// scatters them instead and all-gathers the updated weights after its shard's update.
// ZeRO-2 keeps only its gradient shard, so it reduce-scatters after every micro-batch;
// ZeRO-3 also gathers the weights for every micro-batch's forward and backward
// (Rajbhandari et al. 2020, §5 and §7: 1.5× the all-reduce volume per pass). A
// reduce-scatter or an all-gather is half an all-reduce on the same topology.
inline data_parallel_sync data_parallel_sync_time(const training_setup& s) {
    const auto& l = s.layout;
    if (l.dp == 1) return {};
    const double params = parameters_per_gpu(s);
    const auto half_all_reduce = [&](double bytes_per_param) {
        return 0.5 * data_parallel_all_reduce_time(bytes_of(params * bytes_per_param), l.dp, s.cluster);
    };
    const double grad = size_of(stored_precision(s).gradients);
    const double weights = size_of(s.precision.weights);
    switch (l.zero) {
        case 0: return {.end_of_backward = 2.0 * half_all_reduce(grad)};
        case 1: return {.end_of_backward = half_all_reduce(grad), .after_optimizer = half_all_reduce(weights)};
        case 2: return {.per_micro_batch = half_all_reduce(grad), .after_optimizer = half_all_reduce(weights)};
        default: return {.per_micro_batch = half_all_reduce(grad) + 2.0 * half_all_reduce(weights)};
    }
}

inline step_report predict(const training_setup& s) {
    validate(s);
    const auto& l = s.layout;
    const auto& gpu = s.cluster.gpu;
    const int seq = sequence_length(s);
    step_report r;
    r.seq = seq;
    r.gpus = l.gpus();
    r.global_batch = l.global_batch();
    r.micro_batch = micro_batch_step(s);

    // 1F1B (interleaved) pipeline: m micro-batches in the steady state plus a fill and
    // drain of (p−1)/v micro-batch times (Narayanan et al. 2021).
    const double m = l.grad_accum;
    const auto& mb = r.micro_batch;
    const double bubble_units = (l.pp - 1.0) / l.interleave;
    r.time.forward_backward = m * mb.compute();
    r.time.bubble = bubble_units * mb.total();
    seconds communication = m * (mb.tensor_parallel_comm + mb.pipeline_comm);

    // Data-parallel sync: where the profile buckets it, communication during a
    // micro-batch hides behind that micro-batch's backward (the end-of-backward
    // reduction behind what is left of the last one); the rest is exposed.
    const data_parallel_sync sync = data_parallel_sync_time(s);
    r.data_parallel_sync = sync.per_step_total(m);
    const seconds hideable = s.framework.overlap_data_parallel_sync
                                 ? s.framework.overlappable_backward_fraction * (mb.backward + mb.recompute)
                                 : seconds_of(0.0);
    const auto exposed = [](seconds comm, seconds hidden) { return std::max(seconds_of(0.0), comm - hidden); };
    const seconds exposed_sync = m * exposed(sync.per_micro_batch, hideable) +
                                 exposed(sync.end_of_backward, exposed(hideable, sync.per_micro_batch)) +
                                 sync.after_optimizer;
    // Tied embeddings split over the first and last pipeline stage: their gradients
    // are all-reduced between those two stages every step (Megatron).
    if (l.pp > 1 && s.model.tied_embeddings) {
        const double grad = size_of(stored_precision(s).gradients);
        const bytes embedding = bytes_of(double(s.model.vocab) * s.model.hidden / l.tp * grad);
        communication += all_reduce_time(embedding, 2, step_detail::pipeline_link(s));
    }
    r.time.communication = communication + exposed_sync;
    r.time.optimizer = optimizer_step_time(s);
    // Input pipeline: sequential, loading and copying add to the step; prefetched, the
    // step is bound by its slowest stage (Lab 08's four-stage model).
    const seconds busy = r.time.total();
    r.time.data = s.prefetch ? std::max(seconds_of(0.0), std::max(s.data_loading, s.host_to_device) - busy)
                             : s.data_loading + s.host_to_device;
    r.step_time = r.time.total();

    // Throughput and FLOP rates.
    r.samples_per_second = double(r.global_batch) / r.step_time.value();
    r.tokens_per_second = r.samples_per_second * seq;
    const flops seed = training_flops_per_sample(s.model, seq, l.recompute) * double(r.global_batch);
    const flops model = training_flops_per_sample(s.model, seq, recompute_mode::none) * double(r.global_batch);
    const flops hardware = exact_training_flops_per_sample(s.model, seq, l.recompute) * double(r.global_batch);
    const flop_rate peak = gpu.peak_for(s.precision.math);
    r.model_flops_per_gpu = seed / r.step_time / double(r.gpus);
    r.mfu = (model / r.step_time / double(r.gpus)) / peak;
    r.hfu = (hardware / r.step_time / double(r.gpus)) / peak;

    // Memory: peak allocated per GPU as the framework holds it.
    const memory_overheads overheads = memory_overheads_of(s);
    r.memory = memory_per_gpu(s.model, stored_precision(s), s.optimizer, l, seq, overheads);
    r.memory_capacity = usable_memory(gpu, overheads);
    r.fits = r.memory.total() <= r.memory_capacity;

    // The bottleneck: what the step spends most of its time on, unless it does not fit.
    const std::array<std::pair<bottleneck_kind, seconds>, 5> parts{{
        {bottleneck_kind::compute, r.time.forward_backward},
        {bottleneck_kind::communication, r.time.communication},
        {bottleneck_kind::optimizer, r.time.optimizer},
        {bottleneck_kind::bubble, r.time.bubble},
        {bottleneck_kind::data, r.time.data},
    }};
    r.bottleneck = std::max_element(parts.begin(), parts.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; })->first;
    if (!r.fits) r.bottleneck = bottleneck_kind::memory;
    return r;
}

// Data-parallel scaling as the engine predicts it: the same replica (micro-batch,
// tp, pp, grad-accum) on 1…max_replicas replicas. speedup(N) = throughput(N) /
// throughput(1); r is the communication fraction that the textbook formula
// N / (1 + (N−1)·r) needs to match the engine at max_replicas.
struct engine_scaling_point {
    int replicas = 1;
    int gpus = 1;
    double engine_speedup = 1;
    double formula_speedup = 1;   // N / (1 + (N−1)·r) with the derived r
};

struct engine_scaling {
    double r = 0;                 // derived at max_replicas
    std::vector<engine_scaling_point> points;
};

inline engine_scaling data_parallel_scaling(training_setup s, int max_replicas) {
    require(max_replicas >= 2, "gpus", max_replicas, "at least 2 data-parallel replicas are needed to derive r");
    std::vector<double> throughput;
    for (int n = 1; n <= max_replicas; ++n) {
        s.layout.dp = n;
        throughput.push_back(predict(s).samples_per_second);
    }
    engine_scaling result;
    const double top = throughput.back() / throughput.front();
    // Overlapped sync can make the engine scale perfectly; r is then 0.
    result.r = implied_r(max_replicas, std::clamp(top, 1.0, double(max_replicas)));
    for (int n = 1; n <= max_replicas; ++n)
        result.points.push_back({n, n * s.layout.tp * s.layout.pp, throughput[n - 1] / throughput.front(),
                                 speedup(n, result.r)});
    return result;
}

}  // namespace trainperf
