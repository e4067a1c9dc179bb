// A training step as four stages: data loading from storage, host→device
// copy over PCIe, forward+backward on the GPU, gradient sync over the interconnect.
// Run one after another, a step takes their sum; with prefetching (data and copies
// for the next step overlap the current one) it is bound by the slowest stage.
#pragma once

#include <array>
#include <limits>
#include <string_view>
#include <utility>

#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "../core/units.hpp"
#include "../spec/hardware.hpp"
#include "comm.hpp"

namespace trainperf {

enum class pipeline_stage { data, pcie, compute, sync };

constexpr std::string_view to_string(pipeline_stage s) {
    switch (s) {
        case pipeline_stage::data: return "data";
        case pipeline_stage::pcie: return "pcie";
        case pipeline_stage::compute: return "compute";
        case pipeline_stage::sync: return "sync";
    }
    return "?";
}

struct stage_times {
    seconds data = seconds_of(0.0);     // read and decode the batch from storage
    seconds pcie = seconds_of(0.0);     // copy the batch host→device
    seconds compute = seconds_of(0.0);  // forward + backward
    seconds sync = seconds_of(0.0);     // gradient all-reduce (0 on one GPU)
};

constexpr void validate(const stage_times& t) {
    const std::array<std::pair<std::string_view, double>, 4> stages{{
        {"data_seconds", t.data.value()},
        {"pcie_seconds", t.pcie.value()},
        {"compute_seconds", t.compute.value()},
        {"sync_seconds", t.sync.value()},
    }};
    for (const auto& [name, v] : stages) require_in(v, limits::step_time, name);
    require(t.compute.value() > 0, "compute_seconds", t.compute.value(),
            "a step must do some compute");
}

// ---- Deriving stage times -------------------------------------------------------------

// Reading a batch at the storage's sustained read bandwidth.
constexpr seconds data_loading_time(bytes batch, byte_rate storage) {
    require_in(batch.value(), limits::message_size, "batch_bytes");
    require(storage.value() > 0 && storage.value() < std::numeric_limits<double>::infinity(),
            "storage_bytes_per_second", storage.value(), "must be positive and finite");
    return batch / storage;
}

// Copying a batch to the GPU over its host link (gpu_spec::host_link): one transfer,
// latency + bytes / achievable bandwidth.
constexpr seconds host_to_device_time(bytes batch, const link_spec& host) {
    require(host.kind != link_kind::none, "host_link", to_string(host.kind),
            "this GPU has no host link to copy over");
    return p2p_time(batch, host);
}

// The same for a GPU: over its host link, or nothing where the GPU shares DRAM with the
// host (Jetson, gpu_spec::memory_shared_with_host): the batch is already in its memory.
constexpr seconds host_to_device_time(bytes batch, const gpu_spec& gpu) {
    require_in(batch.value(), limits::message_size, "batch_bytes");
    if (gpu.memory_shared_with_host) return seconds_of(0.0);
    return host_to_device_time(batch, gpu.host_link);
}

// Gradient sync for a data-parallel step: the all-reduce of the gradients over dp
// replicas (flat ring in a node, hierarchical across nodes).
constexpr seconds gradient_sync_time(bytes gradients, int dp, const cluster_spec& c) {
    return data_parallel_all_reduce_time(gradients, dp, c);
}

// ---- The report ----------------------------------------------------------------------

struct pipeline_report {
    seconds sequential = seconds_of(0.0);   // data + pcie + compute + sync
    seconds prefetched = seconds_of(0.0);   // max of the four stages
    // GPU utilisation = compute / step time: the share of the step in which the GPU
    // runs forward+backward. Sequential uses the sum, prefetched the slowest stage.
    double gpu_utilization_sequential = 0;
    double gpu_utilization_prefetched = 0;
    // The GPU's idle "bubble" in the sequential step: 1 − gpu_utilization_sequential.
    double idle_share = 0;
    // The slowest stage, which bounds the prefetched step. On a tie compute wins (the
    // GPU is then never idle), otherwise the earlier stage in data, pcie, sync order.
    pipeline_stage bottleneck = pipeline_stage::compute;
};

constexpr pipeline_report analyse(const stage_times& t) {
    validate(t);
    pipeline_report r;
    r.sequential = t.data + t.pcie + t.compute + t.sync;
    r.bottleneck = pipeline_stage::compute;
    seconds slowest = t.compute;
    const std::array<std::pair<pipeline_stage, seconds>, 3> others{{
        {pipeline_stage::data, t.data},
        {pipeline_stage::pcie, t.pcie},
        {pipeline_stage::sync, t.sync},
    }};
    for (const auto& [stage, time] : others)
        if (time > slowest) {
            slowest = time;
            r.bottleneck = stage;
        }
    r.prefetched = slowest;
    r.gpu_utilization_sequential = t.compute / r.sequential;
    r.gpu_utilization_prefetched = t.compute / r.prefetched;
    r.idle_share = 1.0 - r.gpu_utilization_sequential;
    return r;
}

constexpr seconds stage_time(const stage_times& t, pipeline_stage s) {
    switch (s) {
        case pipeline_stage::data: return t.data;
        case pipeline_stage::pcie: return t.pcie;
        case pipeline_stage::compute: return t.compute;
        case pipeline_stage::sync: return t.sync;
    }
    return seconds_of(0.0);
}

}  // namespace trainperf
