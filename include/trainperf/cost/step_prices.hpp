// Prices what runs once per step (workload/step_ops.hpp): the data-parallel
// synchronisation split by when it happens, the optimizer step on the GPU or, offloaded,
// the gradient copies, the CPU's step and the weights copied back (step_prices,
// price_step, optimizer_step_time). cost/step.hpp decides what of it is exposed.
#pragma once

#include <algorithm>

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
#include "stage_pricer.hpp"

namespace trainperf {

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

// Offloaded gradient copies of one GPU by when they run (workload/step_ops.hpp offload_point).
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
    // The compute the same collectives take from what runs beside them, by window:
    // Σ time × the share of the GPU's SMs their kernels hold (cost/comm_sms.hpp). Where a
    // window's collectives are hidden behind compute, that compute runs on the other SMs
    // and the pass lasts this much longer (cost/step.hpp).
    data_parallel_sync sync_sm_time{};
    seconds optimizer = seconds_of(0.0);   // the whole optimizer step, per-step overhead included
    bool offloaded = false;
    offload_copies gradient_copies{};      // offloaded: during backward
    seconds host_step = seconds_of(0.0);   // offloaded: the CPU's part of `optimizer`
    seconds weights_up = seconds_of(0.0);  // offloaded: the copy back, part of `optimizer`
    // fp8: the quantized weights made once a step, in the first micro-batch's forward, or
    // in every micro-batch after ZeRO-3's gathers (workload/fp8.hpp make_fp8_weights_op,
    // step_ops::fp8_weights_every_micro_batch).
    seconds fp8_weights_per_step = seconds_of(0.0);
    seconds fp8_weights_per_micro_batch = seconds_of(0.0);
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

// An offloaded step from its two parts: the CPU's step, then the copy back.
constexpr seconds offloaded_optimizer_time(seconds host_step, seconds weights_up, const training_setup& s) {
    return host_step + weights_up + s.framework.per_step_overhead;
}

// A memory-bound op of the step whose kernels are issued from Python (the optimizer's
// per-tensor loop launches each one): like a pass, the larger of the GPU's time and the
// host's.
inline seconds step_memory_op_time(const memory_op& op, const training_setup& s) {
    const seconds gpu = kernel_detail::memory_op_time(s.cluster.gpu, op, kernel_params_of(s));
    const seconds host = op.launches * s.framework.host.op * s.cluster.host.eager_op_time;
    return std::max(gpu, host);
}

// The optimizer step: on the GPU, or offloaded: the CPU's step, then the copy back
// (ZeRO-Offload without the delayed parameter update runs them in order, before the
// next forward). Plus the framework's per-step host overhead.
inline seconds price_optimizer(const optimizer_work& w, checked_view c) {
    const training_setup& s = c;
    if (w.offloaded)
        return offloaded_optimizer_time(host_step_time(w, s),
                                        host_transfer_time(w.weights_up, s.cluster.gpu, s.cluster.host), s);
    return step_memory_op_time(w.update, s) + s.framework.per_step_overhead;
}

// The step's own ops (step_workload of the setup) priced: data-parallel
// synchronisation by when it runs, the optimizer step and the offloaded copies.
inline step_prices price_step(const step_ops& w, checked_view c) {
    const training_setup& s = c;
    const bool offloaded = w.optimizer.offloaded;
    const offload_copies gradient_copies = offloaded ? price_gradient_copies(w.optimizer, s) : offload_copies{};
    const seconds host_step = offloaded ? host_step_time(w.optimizer, s) : seconds_of(0.0);
    const seconds weights_up = offloaded ? host_transfer_time(w.optimizer.weights_up, s.cluster.gpu, s.cluster.host)
                                         : seconds_of(0.0);
    data_parallel_sync sync, held;
    const double sms = s.cluster.gpu.sm_count;
    for (const auto& op : w.sync) {
        const seconds one = collective_time(op.op, s.cluster);
        const seconds t = op.count * one;
        const seconds sm_time = t * std::min(1.0, collective_sms(op.op, s.cluster) / sms);
        switch (op.when) {
            case sync_point::every_forward:
                sync.per_forward += t;
                held.per_forward += sm_time;
                if (op.per_unit && op.op.kind == collective::all_gather) sync.forward_unit = one;
                break;
            case sync_point::every_micro_batch:
                sync.per_micro_batch += t;
                held.per_micro_batch += sm_time;
                if (op.per_unit && op.op.kind == collective::all_gather) sync.backward_unit = one;
                break;
            case sync_point::end_of_backward:
                sync.end_of_backward += t;
                held.end_of_backward += sm_time;
                break;
            case sync_point::after_optimizer:
                sync.after_optimizer += t;
                held.after_optimizer += sm_time;
                break;
            case sync_point::end_of_step: sync.end_of_step += t; break;  // never beside compute
        }
    }
    return {.sync = sync,
            .sync_sm_time = held,
            .optimizer = offloaded ? offloaded_optimizer_time(host_step, weights_up, s) : price_optimizer(w.optimizer, c),
            .offloaded = offloaded,
            .gradient_copies = gradient_copies,
            .host_step = host_step,
            .weights_up = weights_up,
            .fp8_weights_per_step = w.make_fp8_weights.launches > 0 && !w.fp8_weights_every_micro_batch
                                       ? step_memory_op_time(w.make_fp8_weights, s)
                                       : seconds_of(0.0),
            .fp8_weights_per_micro_batch = w.make_fp8_weights.launches > 0 && w.fp8_weights_every_micro_batch
                                             ? step_memory_op_time(w.make_fp8_weights, s)
                                             : seconds_of(0.0)};
}

// The optimizer step on one GPU (or on its host when offloaded).
inline seconds optimizer_step_time(checked_view s) { return price_optimizer(optimizer_workload(s), s); }


}  // namespace trainperf
