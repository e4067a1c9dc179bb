// Prices one micro-batch on a pipeline stage: the workload's ops (workload/stage.hpp)
// with cost/kernel_model.hpp for GEMMs and memory-bound kernels and cost/comm.hpp for
// collectives, the host's time to issue them beside the GPU's, tensor-parallel overlap
// and context parallelism's KV ring; then the stages of a pipeline from the parts of
// one (stage_pricer, price_micro_batch, price_pipeline). cost/step.hpp schedules the result.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

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
#include "../workload/ops.hpp"
#include "../workload/step_ops.hpp"
#include "comm.hpp"
#include "comm_sms.hpp"
#include "kernel_model.hpp"
#include "price_memo.hpp"

namespace trainperf {

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
    // An MoE model's token dispatch and combine per micro-batch: what the shared experts
    // do not hide (all of it without the shared-expert overlap; the step hides part of it
    // with Megatron-Core's EP overlap, cost/step.hpp exposed_expert_parallel_comm), and
    // what they hide (not in the total).
    seconds expert_parallel_comm = seconds_of(0.0);
    seconds expert_parallel_hidden = seconds_of(0.0);
    // Of the dispatch and combine, what compute beside them could hide: each collective's
    // time × the share of the SMs its kernels leave to that compute (cost/comm_sms.hpp).
    seconds expert_parallel_hideable = seconds_of(0.0);
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
        return compute() + tensor_parallel_comm + pipeline_comm + context_parallel_comm + expert_parallel_comm;
    }
    constexpr seconds gpu_compute() const { return gpu_forward + gpu_backward + gpu_recompute; }
    constexpr seconds host_compute() const { return host_forward + host_backward + host_recompute; }
    // The passes the host bounds: more of the compute time waits on the host than on the GPU.
    constexpr bool host_bound() const { return host_compute() > gpu_compute(); }
};

// A collective of the stage, count (and recompute) times.
constexpr seconds price_collective(const stage_op<collective_op>& op, const cluster_spec& c) {
    return (op.count + op.recomputed) * collective_time(op.op, c);
}

// A host call's cost in the framework's bare ops (spec/framework.hpp eager_host_costs). A
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
        case host_call::compiled_graph: return c.compiled_graph;
        case host_call::dispatch_mode: return c.dispatch_mode;
        case host_call::gradient_hook:
        case host_call::graph_launch: break;
    }
    return c.op;
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
constexpr tp_overlap_method tp_overlap_method_of(const gemm_op& g, int tp) {
    const std::string_view n = g.name;
    const bool column = n == "qkv" || n == "q" || n == "k" || n == "v" || n == "ffn_up" || n == "ffn_gate";
    const bool row = n == "attention_out" || n == "ffn_down";
    if (g.phase == op_phase::forward) {
        if (column) return {double(tp), 1};
        if (row) return {4, 16};
    } else if (g.phase == op_phase::backward_data) {
        if (row) return {double(tp), 1};
        if (column) return {1, 16};
    } else if (g.phase == op_phase::backward_weight && column) {
        return {1, 16};
    }
    return {};
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
class stage_pricer;
inline stage_pricer price_stage_parts(checked_view s, const layout_groups& groups);

class stage_pricer {
public:
    stage_pricer(const gpu_spec& gpu, const kernel_params& k, const cluster_spec* cluster,
                 const eager_host_costs& host = {}, seconds bare_op = seconds_of(0.0))
        : kernels_(gpu, k), cluster_(cluster), host_(host), bare_op_(bare_op), sms_(gpu.sm_count) {
        set_launch_costs();
    }

    // The sums an op adds to from here on: those of one of the stage's parts
    // (workload/stage.hpp stage_section). Every sum is linear in the ops' counts.
    void section(stage_section part) {
        at_ = std::size_t(part);
        set_launch_costs();
    }

    // Tensor-parallel communication overlapped with the layer's GEMMs (Transformer
    // Engine userbuffers, Megatron-Core --tp-comm-overlap; needs sequence parallelism).
    void overlap_tensor_parallel(int tp) { tp_overlap_ = tp; }

    // An MoE layer's shared experts beside its dispatch and combine (moe_run::
    // shared_expert_overlap): price_stage_parts tells the shared experts' GEMMs by their
    // section; ops given one by one hide nothing.
    void overlap_shared_experts() { shared_.assign(sections_.size(), shared_sums{}); }

    // Each layer's passes replayed from CUDA graphs (framework_profile::cuda_graphs): the
    // host launches none of the layer's kernels (the workload's replay calls stand in).
    void graph_layers() {
        graphed_ = true;
        set_launch_costs();
    }

    // Each layer compiled with torch.compile (framework_profile::compiled): its kernels
    // launched by the generated wrapper (eager_host_costs::compiled_launch).
    void compile_layers() {
        compiled_ = true;
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
            const seconds one = collective_price(c.op);
            sections_[at_][stage_sums::ring + (c.op.phase == op_phase::forward ? 0 : 1)] += c.count * one.value();
            sections_[at_][stage_sums::ring + 2] += c.recomputed * one.value();
            return;
        }
        stage_sums& at = sections_[at_];
        const double t = (c.count + c.recomputed) * collective_price(c.op).value();
        if (c.part == step_part::expert_parallel) {
            at[stage_sums::expert_parallel_comm] += t;
            at[stage_sums::expert_parallel_hideable] += t * compute_share_beside(c.op, *cluster_);
            return;
        }
        at[c.part == step_part::pipeline ? stage_sums::pipeline_comm : stage_sums::tensor_parallel_comm] += t;
    }
    void operator()(const stage_op<host_op>& h) {
        add_host(h.part, h.count * h.op.count, h.recomputed * h.op.count, host_call_cost(host_, h.op.call));
    }

    // The micro-batch of the ops as they came (one stage, counts as emitted).
    micro_batch_times result() const {
        stage_sums all = sections_[0];
        for (std::size_t i = 1; i < sections_.size(); ++i) all.add(sections_[i], 1.0, ring_);
        shared_sums shared{};
        for (const shared_sums& s : shared_) shared.add(s, 1.0);
        return finish(all, shared_.empty() ? nullptr : &shared);
    }

    // A stage of `layers` layers built from the parts' sums (ops emitted for a
    // one-layer stage with its head and embedding, workload/stage.hpp stage_shape{1}):
    // `layers` × a layer's + the head's (last stage) + the embedding's (first) + the
    // stage's own, with `pipeline_comm` for the stage's sends (the sends of the
    // layout's interleave).
    // An MoE model's stage: `moe_layers` of its layers are MoE layers (their dense part
    // and their experts), the others dense.
    // The multi-token prediction modules run where the shape says (the last stage unless
    // a custom pipeline layout puts them elsewhere).
    micro_batch_times stage(const stage_shape& shape, seconds pipeline_comm) const {
        stage_sums t = sections_[std::size_t(stage_section::stage)];
        t.add(sections_[std::size_t(stage_section::layer)], shape.layers - shape.moe_layers, ring_);
        if (shape.moe_layers > 0) {
            t.add(sections_[std::size_t(stage_section::moe_layer)], shape.moe_layers, ring_);
            t.add(sections_[std::size_t(stage_section::experts)], shape.moe_layers, ring_);
        }
        if (shape.head) t.add(sections_[std::size_t(stage_section::head)], 1.0, ring_);
        if (shape.mtp) t.add(sections_[std::size_t(stage_section::mtp)], 1.0, ring_);
        if (shape.embedding) t.add(sections_[std::size_t(stage_section::embedding)], 1.0, ring_);
        t[stage_sums::pipeline_comm] = pipeline_comm.value();
        if (shared_.empty()) return finish(t);
        const shared_sums shared = shared_of(shape);
        return finish(t, &shared);
    }
    micro_batch_times stage(double layers, bool first, bool last, seconds pipeline_comm,
                            double moe_layers = 0) const {
        return stage(stage_shape{layers, first, last, moe_layers, last}, pipeline_comm);
    }

    // The stage's sends as priced (of the layout the ops were emitted for).
    seconds pipeline_comm() const {
        return seconds_of(sections_[std::size_t(stage_section::stage)][stage_sums::pipeline_comm]);
    }

private:
    // The sink for the ops of a checked setup (price_stage_parts): its GEMMs pass
    // validate by construction (workload/ops.hpp checked_shape) and are priced without
    // it; every other op as the public operators do.
    // With the shared-expert overlap (Shared), the shared experts' GEMMs and the dispatch's
    // collectives are also summed apart: a second sink, so that the usual one tests nothing.
    template <bool Shared>
    class checked_setup_sink {
    public:
        explicit checked_setup_sink(stage_pricer& p) : p_(p) {}
        void section(stage_section part) { p_.section(part); }
        TRAINPERF_ALWAYS_INLINE void operator()(const stage_op<gemm_op>& g) {
            if constexpr (Shared)
                if (p_.shared_expert_gemm(g.op)) return p_.price_shared_expert_gemm(g);
            p_.price(g);
        }
        TRAINPERF_ALWAYS_INLINE void operator()(const stage_op<collective_op>& c) {
            p_(c);
            if constexpr (Shared)
                if (c.part == step_part::expert_parallel) p_.add_dispatch(c);
        }
        template <class Op>
        TRAINPERF_ALWAYS_INLINE void operator()(const stage_op<Op>& op) {
            p_(op);
        }

    private:
        stage_pricer& p_;
    };
    friend stage_pricer price_stage_parts(checked_view s, const layout_groups& groups);

    // A GEMM whose shape passes validate.
    void price(const stage_op<gemm_op>& g) {
        // A projection whose tensor-parallel communication it overlaps: chunked, on
        // fewer SMs; never part of the attention core.
        if (tp_overlap_ > 1)
            if (const tp_overlap_method method = tp_overlap_method_of(g.op, tp_overlap_); method.chunks > 0) {
                const seconds time = overlapped_gemm_time(g.op.shape, method);
                sections_[at_][stage_sums::tp_overlap_capacity] += (g.count + g.recomputed) * time.value();
                return add_gemm(g, time);
            }
        add_gemm(g, gemm_time(g.op.shape));
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


    // The collective's time on the pricer's cluster (cost/comm.hpp collective_time).
    seconds collective_price(const collective_op& op) {
        return collectives_.time(op, [this](const collective_op& o) { return collective_time(o, *cluster_); });
    }

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
                                     tp_overlap_capacity = 15, expert_parallel_comm = 16,
                                     expert_parallel_hideable = 17;
        static constexpr std::size_t ring = 18, core = 21, core_bytes = 24, core_launches = 27;
        static constexpr std::size_t without_ring = ring, size = 30;
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

    // The shared-expert overlap's sums, per pass (index + 0, 1, 2): the dispatch's
    // collectives (tokens, probabilities, and with etp > 1 their all-gathers), the
    // combine's, the shared experts' first linear's GEMMs and their second's.
    struct shared_sums {
        static constexpr std::size_t dispatch = 0, combine = 3, first = 6, second = 9, size = 12;
        std::array<double, size> sums{};
        constexpr double& operator[](std::size_t i) { return sums[i]; }
        constexpr double operator[](std::size_t i) const { return sums[i]; }
        constexpr void add(const shared_sums& o, double n) {
            for (std::size_t i = 0; i < size; ++i) sums[i] += n * o.sums[i];
        }
    };
    // A stage's, weighted as stage() weighs the sections (only MoE layers and the
    // multi-token prediction modules have any).
    shared_sums shared_of(const stage_shape& shape) const {
        shared_sums s{};
        s.add(shared_[std::size_t(stage_section::moe_layer)], shape.moe_layers);
        s.add(shared_[std::size_t(stage_section::experts)], shape.moe_layers);
        if (shape.mtp) s.add(shared_[std::size_t(stage_section::mtp)], 1.0);
        return s;
    }

    // The sums into times: memory-bound ops priced per pass, each pass the larger of
    // the GPU's time and the host's, tensor-parallel overlap, the KV ring, and with the
    // shared-expert overlap (`shared`) what the shared experts hide of the dispatch.
    micro_batch_times finish(const stage_sums& a, const shared_sums* shared = nullptr) const {
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
        // The shared-expert overlap: per pass the dispatch hides behind the shared
        // experts' first linear and the combine behind their second, each pair on two
        // streams; the GEMMs run on the SMs the collectives leave them (as the layers are
        // alike, per layer and per stage the same).
        seconds expert_parallel_comm = seconds_of(a[stage_sums::expert_parallel_comm]);
        const seconds expert_parallel_hidden = seconds_of(shared ? hidden_by_shared_experts(*shared) : 0.0);
        expert_parallel_comm -= expert_parallel_hidden;
        return {.forward = std::max(gpu_forward, host_forward),
                .backward = std::max(gpu_backward, host_backward),
                .recompute = std::max(gpu_recompute, host_recompute),
                .tensor_parallel_comm = tensor_parallel_comm,
                .pipeline_comm = seconds_of(a[stage_sums::pipeline_comm]),
                .tensor_parallel_hidden = tensor_parallel_hidden,
                .context_parallel_comm = context_parallel_comm,
                .context_parallel_ring = context_parallel_ring,
                .expert_parallel_comm = expert_parallel_comm,
                .expert_parallel_hidden = expert_parallel_hidden,
                .expert_parallel_hideable = seconds_of(a[stage_sums::expert_parallel_hideable]),
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
    // An MoE layer's shared-expert GEMM: its dense part's MLP (the layer's; a multi-token
    // prediction module's, whose section also holds its routed experts and router, by the
    // dense FFN's names, workload/layer.hpp; shared_ffn_hidden > 0, spec/setup.hpp).
    bool shared_expert_gemm(const gemm_op& g) const {
        if (g.block != layer_block::mlp) return false;
        if (at_ == std::size_t(stage_section::moe_layer)) return true;
        return at_ == std::size_t(stage_section::mtp) && g.name.starts_with("ffn_");
    }
    // A shared-expert GEMM: Megatron-Core turns the shared experts' userbuffers overlap
    // off with theirs (shared_experts.py@d98e8a64), so it is priced whole; its time, by the
    // linear it belongs to (ffn_down the second; the gate and up projections the first,
    // fc1, whose activation follows it) and pass, is what the dispatch and combine hide
    // behind. Out of line: the usual prediction has none.
    TRAINPERF_NOINLINE void price_shared_expert_gemm(const stage_op<gemm_op>& g) {
        const seconds time = gemm_time(g.op.shape);
        const std::size_t slot = g.op.name == "ffn_down" ? shared_sums::second : shared_sums::first;
        shared_[at_][slot + (g.part == step_part::forward ? 0 : 1)] += g.count * time.value();
        shared_[at_][slot + 2] += g.recomputed * time.value();
        add_gemm(g, time);
    }
    // Per pass, the dispatch behind the shared experts' first linear and the combine
    // behind their second: what is hidden. A collective of time D beside GEMMs of time W
    // that its kernels leave the share r of the SMs: while it runs the GEMMs progress
    // r·D, so the pair takes max(D, W + (1 − r)·D) and min(W, r·D) of D is hidden (the
    // sums hold r·D; ASSUMPTION: the GEMMs' time scales with the SMs they have).
    TRAINPERF_NOINLINE static double hidden_by_shared_experts(const shared_sums& a) {
        double hidden = 0;
        for (std::size_t pass = 0; pass < 3; ++pass)
            hidden += std::min(a[shared_sums::dispatch + pass], a[shared_sums::first + pass]) +
                      std::min(a[shared_sums::combine + pass], a[shared_sums::second + pass]);
        return hidden;
    }
    // A dispatch or combine collective's time × the share of the SMs it leaves to compute,
    // by pass. Hidden behind nothing: the routing metadata's, before the dispatch and
    // waited on, and the combine's forward reduce-scatter over etp, which Megatron-Core runs
    // in combine_preprocess on the main stream before the side stream's second linear
    // starts (token_dispatcher.py@d98e8a64; its backward all-gather is paired).
    TRAINPERF_NOINLINE void add_dispatch(const stage_op<collective_op>& c) {
        const std::string_view n = c.op.name;
        const bool combine = n.starts_with("moe_combine");
        if (!combine && !n.starts_with("moe_dispatch") && !n.starts_with("moe_probabilities")) return;
        if (n == "moe_combine_reduce_scatter" && c.op.phase == op_phase::forward) return;
        const double t = collective_price(c.op).value() * compute_share_beside(c.op, *cluster_);
        const std::size_t slot = combine ? shared_sums::combine : shared_sums::dispatch;
        shared_[at_][slot + (c.op.phase == op_phase::forward ? 0 : 1)] += c.count * t;
        shared_[at_][slot + 2] += c.recomputed * t;
    }
    void add(step_part part, double count, double recomputed, seconds time) {
        sections_[at_][stage_sums::gpu + (part == step_part::forward ? 0 : 1)] += count * time.value();
        sections_[at_][stage_sums::gpu + 2] += recomputed * time.value();
    }
    // What the host spends launching a kernel of the section now priced, from Python in
    // forward and from the engine in backward (nothing in a graphed layer; from the
    // generated wrapper, the same in both passes, in a compiled layer).
    void set_launch_costs() {
        // A layer's sections (a dense layer, an MoE layer's dense part); an MoE layer's
        // routed experts run eagerly (their token counts change from step to step:
        // ASSUMPTION, not captured in graphs, not compiled).
        const bool layer = at_ == std::size_t(stage_section::layer) || at_ == std::size_t(stage_section::moe_layer);
        const bool launches = !(graphed_ && layer);
        if (compiled_ && layer) {
            launch_cost_ = {host_.compiled_launch, host_.compiled_launch};
            gemm_launch_cost_ = host_.compiled_launch;
            return;
        }
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
    bool compiled_ = false;
    std::array<double, 2> launch_cost_{};                                  // forward, backward
    double gemm_launch_cost_ = 0;
    int sms_ = 1;
    gemm_price_memo memo_;
    collective_price_memo collectives_;
    std::array<stage_sums, 7> sections_{};  // by stage_section
    std::size_t at_ = 0;                     // the section ops add to
    bool ring_ = false;                      // a KV ring's sends were priced
    std::vector<shared_sums> shared_;        // by stage_section; empty without the shared-expert overlap
};

// The same for ops already collected in lists (micro_batch_workload), e.g. a workload
// a program has inspected or changed.
inline micro_batch_times price_micro_batch(const stage_workload& w, const training_setup& s) {
    const kernel_params k = kernel_params_of(s);
    stage_pricer pricer(s.cluster.gpu, k, &s.cluster, s.framework.host, s.cluster.host.eager_op_time);
    if (overlaps_tensor_parallel(s)) pricer.overlap_tensor_parallel(s.layout.tp);
    // The lists carry no sections: with CUDA graphs every kernel's launch is still
    // charged here (an upper bound; predict() charges the graphed layers' none),
    // compiled layers' launches as eager ones, and the shared experts hide none of the
    // dispatch (their GEMMs are not told apart from the dense layers').
    for (const auto& op : w.gemms) pricer(op);
    for (const auto& op : w.memory) pricer(op);
    for (const auto& op : w.collectives) pricer(op);
    for (const auto& op : w.host) pricer(op);
    for (const auto& op : w.attention) pricer(op);
    return pricer.result();
}

// The parts of a stage priced once (one layer, the head, the embedding, the stage's
// own sends), from which stage_pricer::stage builds a stage of any number of layers.
// `groups` must be groups_of(s) (workload/stage.hpp).
inline stage_pricer price_stage_parts(checked_view s, const layout_groups& groups) {
    const kernel_params k = kernel_params_of(s);
    stage_pricer pricer(s->cluster.gpu, k, &s->cluster, s->framework.host, s->cluster.host.eager_op_time);
    if (overlaps_tensor_parallel(s)) pricer.overlap_tensor_parallel(s->layout.tp);
    if (s->framework.cuda_graphs) pricer.graph_layers();
    if (s->framework.compiled) pricer.compile_layers();
    if (s->moe.shared_expert_overlap) {
        pricer.overlap_shared_experts();
        for_each_stage_op(s, one_layer_of_each(s->model), groups, stage_pricer::checked_setup_sink<true>(pricer));
    } else {
        for_each_stage_op(s, one_layer_of_each(s->model), groups, stage_pricer::checked_setup_sink<false>(pricer));
    }
    return pricer;
}

inline stage_pricer price_stage_parts(checked_view s) { return price_stage_parts(s, groups_of(s)); }

// One micro-batch on each stage of the pipeline.
struct pipeline_times {
    micro_batch_times bottleneck{};    // the stage whose micro-batch takes longest: it paces the steady state
    seconds others = seconds_of(0.0);  // the other stages' micro-batches, summed: the fill and drain
    seconds others_weight_gradient = seconds_of(0.0);  // their weight-gradient GEMMs (what zb-h1 defers)
};

// The MoE layers of the middle stage that holds the most (the others are taken to be
// like it: ASSUMPTION, they differ only where dense layers reach past the first stage or
// the MoE layers alternate with dense ones).
constexpr double busiest_middle_moe_layers(const transformer_config& m, const pipeline_split& split, int pp) {
    if (!has_moe(m)) return 0;
    int most = 0;
    for (int stage = 1; stage + 1 < pp; ++stage)
        most = std::max(most, moe_layers_in(m.moe, split.first + (stage - 1) * split.middle, split.middle));
    return most;
}

namespace pricer_detail {
// Under a custom pipeline layout (spec/pipeline_layout.hpp) every rank as the layout
// fills it, over all its virtual stages: the rank with the most work paces the steady
// state (ASSUMPTION, as for an even split: the interleaved schedule's virtual stages
// of one rank taken as equal; their differences are not scheduled). On a tie the last.
TRAINPERF_NOINLINE inline pipeline_times layout_stage_times(const stage_pricer& parts, const training_setup& s,
                                                            seconds pipeline_comm) {
    const std::vector<pipeline_rank_load> ranks = pipeline_rank_loads(s.layout.pipeline_layout, s.model, s.layout.pp);
    std::vector<micro_batch_times> times;
    times.reserve(ranks.size());
    for (const pipeline_rank_load& r : ranks)
        times.push_back(parts.stage(
            stage_shape{double(r.layers), r.embedding, r.loss, double(r.moe_layers), r.mtp > 0}, pipeline_comm));
    std::size_t slowest = times.size() - 1;
    for (std::size_t r = 0; r + 1 < times.size(); ++r)
        if (times[r].total() > times[slowest].total()) slowest = r;
    pipeline_times out{.bottleneck = times[slowest]};
    for (std::size_t r = 0; r < times.size(); ++r) {
        if (r == slowest) continue;
        out.others += times[r].total();
        out.others_weight_gradient += times[r].gpu_weight_gradient;
    }
    return out;
}
}  // namespace pricer_detail

// The stages of the layout's split (spec/parallel.hpp pipeline_split_of): the first (its
// layers and the embedding), pp − 2 middle ones, the last (its layers, head and loss);
// with pp = 1 one stage does all. Each with `pipeline_comm` for its sends. On a tie the
// last stage is the bottleneck. A custom pipeline layout: each rank as it fills it.
inline pipeline_times pipeline_stage_times(const stage_pricer& parts, const training_setup& s,
                                           seconds pipeline_comm) {
    const auto& l = s.layout;
    if (!l.pipeline_layout.empty()) return pricer_detail::layout_stage_times(parts, s, pipeline_comm);
    const pipeline_split split = pipeline_split_of(s.model, l);
    const moe_config& moe = s.model.moe;
    if (l.pp == 1) return {.bottleneck = parts.stage(split.first, true, true, pipeline_comm, moe_layers(s.model))};
    const micro_batch_times first =
        parts.stage(split.first, true, false, pipeline_comm, moe_layers_in(moe, 0, split.first));
    const micro_batch_times last = parts.stage(split.last, false, true, pipeline_comm,
                                               moe_layers_in(moe, s.model.layers - split.last, split.last));
    const double middles = l.pp - 2.0;
    const micro_batch_times middle =
        middles > 0 ? parts.stage(split.middle, false, false, pipeline_comm, busiest_middle_moe_layers(s.model, split, l.pp))
                    : micro_batch_times{};
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

inline pipeline_times price_pipeline(checked_view s) {
    const stage_pricer parts = price_stage_parts(s);
    return pipeline_stage_times(parts, s, parts.pipeline_comm());
}

// Forward, backward and recompute of one micro-batch on the pipeline stage that paces
// the step (the last one in an even split: head and loss), with the tensor-parallel
// collectives and pipeline sends it waits for.
inline micro_batch_times price_micro_batch(checked_view s) { return price_pipeline(s).bottleneck; }

}  // namespace trainperf
