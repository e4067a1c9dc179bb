// A GPU as a JSON description (schema "trainperf.gpu.v1"): every field of gpu_spec in
// base units, the format `trainperf gpus --json NAME` prints and `--gpu-file` reads.
//
//   {"schema": "trainperf.gpu.v1", "name": "rtx-4090", "full_name": "...",
//    "architecture": "ada", "compute_capability": 89, "sm_count": 128,
//    "boost_clock_hertz": 2.52e9, "sustained_clock_hertz": 2.7e9,
//    "l2_cache_bytes": 75497472, "memory_bytes": 24e9, "memory_reported_bytes": 0,
//    "memory_bandwidth_bytes_per_second": 1.008e12,
//    "peak_dense_flops_per_second": {"fp32": {"rate": 82.6e12, "accumulate": "fp32"},
//                                    ..., "fp8": null},
//    "gpu_link": {link}, "host_link": {link}, "tdp_watts": 450,
//    "memory_shared_with_host": false, "pcie_peer_to_peer": false,
//    "system": {"gpus_per_node": 8, "nvlink_domain": 0, "adapter_gbit_per_s": 0,
//               "host": null}}
//
// The peak of "fp4" (NVFP4 on Blackwell's tensor cores) may be left out (a later
// addition; absent: none, as null).
//
// "system" is the system the GPU is sold in, the defaults of a run's nodes (spec/hardware.hpp
// standard_system; "host" a host object as a system file's, or null); it is optional
// (a later addition; absent: 8-GPU nodes, the generation's adapter, the default host).
//
// A link: {"kind": "pcie", "per_direction_bytes_per_second": 31.5e9,
// "latency_seconds": 1e-5, "efficiency": 0.8}. Every field is required but
// compute_capability and sustained_clock_hertz (later additions; absent: 0, i.e. none
// known and the boost clock); unknown fields,
// wrong types and values out of range are errors naming the file and the field.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../core/dtype.hpp"
#include "../core/limits.hpp"
#include "../core/units.hpp"
#include "../spec/hardware.hpp"
#include "description_file.hpp"
#include "host_json.hpp"

namespace trainperf::io {

inline constexpr std::string_view gpu_schema = "trainperf.gpu.v1";

// The accumulate mode each peak is quoted with: tensor-core floats accumulate in fp32
// (the mode training uses; GeForce datasheets also quote a 2x fp16-accumulate rate, which
// is not this one), int8 in int32, fp32 on the CUDA cores in fp32.
constexpr std::string_view peak_accumulate(dtype t) { return t == dtype::int8 ? "int32" : "fp32"; }

// Ranges a real device falls in; anything outside is a typo or a unit mistake. ASSUMPTION:
// tighter than core/limits.hpp's (which bound what the engine can compute), since a file is
// typed by hand: each is one to two orders of magnitude beyond the catalog's extremes.
namespace gpu_ranges {
inline constexpr double min_rate = 1e9, max_rate = 1e17;          // FLOP/s: 1 GFLOP/s .. 100 PFLOP/s
inline constexpr double min_memory = 1e8, max_memory = 1e13;      // bytes: 100 MB .. 10 TB
inline constexpr double min_bandwidth = 1e9, max_bandwidth = 1e14;  // B/s: 1 GB/s .. 100 TB/s
inline constexpr double max_link = 1e13;                          // B/s per direction: 10 TB/s
inline constexpr double min_clock = 1e8, max_clock = 1e10;        // Hz: 100 MHz .. 10 GHz
inline constexpr double max_l2 = 1073741824.0;                    // bytes: 1 GiB
inline constexpr double max_tdp = 5000;                           // W
}  // namespace gpu_ranges

inline nlohmann::json link_to_json(const link_spec& l) {
    return {{"kind", std::string(to_string(l.kind))},
            {"per_direction_bytes_per_second", l.per_direction.value()},
            {"latency_seconds", l.latency.value()},
            {"efficiency", l.efficiency}};
}

inline link_spec link_from_json(const nlohmann::json& j, std::string_view context) {
    require_nesting(j, context, max_description_depth);
    namespace dd = description_detail;
    dd::only_keys(j, context, {"kind", "per_direction_bytes_per_second", "latency_seconds", "efficiency"});
    link_spec l;
    l.kind = dd::enum_value<link_kind>(j, context, "kind");
    const double rate = dd::number(j, context, "per_direction_bytes_per_second", 0, gpu_ranges::max_link, "B/s");
    require(l.kind == link_kind::none || rate > 0, dd::path_of(context, "per_direction_bytes_per_second"), rate,
            "must be positive for a " + std::string(to_string(l.kind)) + " link");
    l.per_direction = byte_rate::from_value(rate);
    l.latency = seconds_of(dd::number(j, context, "latency_seconds", 0, 1, "s"));
    const double eff = dd::number(j, context, "efficiency", 0, 1, "(a fraction)");
    require(eff > 0, dd::path_of(context, "efficiency"), eff, "must be in (0, 1]");
    l.efficiency = eff;
    return l;
}

// Figures computed from a GPU's fields ("derived", io/description_file.hpp check_derived):
// the device memory a process sees (memory_reported_bytes where given, else memory_bytes,
// the datasheet's) in GB (1e9 B) and GiB (2^30 B), and the ridge point of each number
// format it has: its dense peak over the memory bandwidth, the operations (FLOP; int8:
// integer operations) per byte of DRAM traffic above which a kernel can be compute-bound
// (Williams et al. 2009, "Roofline: An Insightful Visual Performance Model").
inline nlohmann::json gpu_derived(const gpu_spec& g) {
    nlohmann::json ridge = nlohmann::json::object();
    for (dtype t : all_dtypes)
        if (const auto p = g.peak.of(t)) ridge[std::string(to_string(t))] = p->value() / g.memory_bandwidth.value();
    return {{"device_memory_GB", g.device_memory().value() / 1e9},
            {"device_memory_GiB", g.device_memory().value() / 1073741824.0},
            {"ridge_point_ops_per_byte", ridge}};
}

inline nlohmann::json gpu_to_json(const gpu_spec& g) {
    nlohmann::json peaks = nlohmann::json::object();
    for (dtype t : all_dtypes) {
        const auto p = g.peak.of(t);
        peaks[std::string(to_string(t))] =
            p ? nlohmann::json{{"rate", p->value()}, {"accumulate", std::string(peak_accumulate(t))}} : nlohmann::json();
    }
    return {{"schema", std::string(gpu_schema)},
            {"name", std::string(g.name)},
            {"full_name", std::string(g.full_name)},
            {"architecture", std::string(to_string(g.architecture))},
            {"compute_capability", g.compute_capability},
            {"sm_count", g.sm_count},
            {"boost_clock_hertz", g.boost_clock.value()},
            {"sustained_clock_hertz", g.sustained_clock.value()},
            {"l2_cache_bytes", g.l2_cache.value()},
            {"memory_bytes", g.memory_capacity.value()},
            {"memory_reported_bytes", g.memory_reported.value()},
            {"memory_bandwidth_bytes_per_second", g.memory_bandwidth.value()},
            {"peak_dense_flops_per_second", peaks},
            {"gpu_link", link_to_json(g.gpu_link)},
            {"host_link", link_to_json(g.host_link)},
            {"tdp_watts", g.tdp_watts},
            {"memory_shared_with_host", g.memory_shared_with_host},
            {"pcie_peer_to_peer", g.pcie_peer_to_peer},
            {"system", {{"gpus_per_node", g.system.gpus_per_node},
                        {"nvlink_domain", g.system.nvlink_domain},
                        {"adapter_gbit_per_s", g.system.adapter_gbit_per_s},
                        {"host", g.system.host ? host_to_json(*g.system.host) : nlohmann::json()}}},
            {"derived", gpu_derived(g)}};
}

// The GPU a description holds. Names are kept for the program's lifetime (keep_text).
inline gpu_spec gpu_from_json(const nlohmann::json& j) {
    require_nesting(j, "", max_description_depth);
    namespace dd = description_detail;
    namespace r = gpu_ranges;
    dd::only_keys(j, "",
                  {"schema", "name", "full_name", "architecture", "compute_capability", "sm_count",
                   "boost_clock_hertz", "sustained_clock_hertz", "l2_cache_bytes",
                   "memory_bytes", "memory_reported_bytes", "memory_bandwidth_bytes_per_second",
                   "peak_dense_flops_per_second", "gpu_link", "host_link", "tdp_watts", "memory_shared_with_host",
                   "pcie_peer_to_peer", "system", "derived"});
    dd::schema(j, gpu_schema);
    gpu_spec g;
    g.name = keep_text(dd::name_text(j, "", "name"));
    g.full_name = keep_text(dd::text(j, "", "full_name", 128));
    g.architecture = dd::enum_value<gpu_architecture>(j, "", "architecture");
    g.sm_count = dd::integer(j, "", "sm_count", 1, 1024);
    // Both change the answer (the attention kernel a framework runs, the GEMMs' clock):
    // required, never a silent default (compute capability 0: not a CUDA GPU).
    g.compute_capability = dd::integer(j, "", "compute_capability", 0, 199);
    g.boost_clock = hertz::from_value(dd::number(j, "", "boost_clock_hertz", r::min_clock, r::max_clock, "Hz"));
    const double sustained = dd::number(j, "", "sustained_clock_hertz", 0, r::max_clock, "Hz (0: the boost clock)");
    require(sustained == 0 || sustained >= r::min_clock, "sustained_clock_hertz", sustained,
            "must be 0 (the boost clock) or a clock the board holds");
    g.sustained_clock = hertz::from_value(sustained);
    g.l2_cache = bytes_of(dd::number(j, "", "l2_cache_bytes", 0, r::max_l2, "bytes"));
    g.memory_capacity = bytes_of(dd::number(j, "", "memory_bytes", r::min_memory, r::max_memory, "bytes"));
    const double reported = dd::number(j, "", "memory_reported_bytes", 0, r::max_memory, "bytes (0: unknown)");
    require(reported == 0 || reported >= r::min_memory, "memory_reported_bytes", reported,
            "must be 0 (unknown: memory_bytes stands in) or at least 1e8 bytes");
    g.memory_reported = bytes_of(reported);
    g.memory_bandwidth = byte_rate::from_value(
        dd::number(j, "", "memory_bandwidth_bytes_per_second", r::min_bandwidth, r::max_bandwidth, "B/s"));

    const auto& peaks = dd::field(j, "", "peak_dense_flops_per_second");
    const std::string pctx = "peak_dense_flops_per_second";
    dd::require_object(peaks, pctx);
    for (const auto& [key, value] : peaks.items()) {
        (void)value;
        require(find_enum<dtype>(key).has_value() && key == to_string(*find_enum<dtype>(key)), pctx + "." + key,
                dd::shown(value), "unknown dtype; known: " + enum_name_list<dtype>(", "));
    }
    bool any = false;
    for (dtype t : all_dtypes) {
        const std::string name(to_string(t));
        if (t == dtype::fp4 && !peaks.contains(name)) continue;  // a later addition: absent, none
        const auto& p = dd::field(peaks, pctx, name);
        if (p.is_null()) continue;  // no such unit or mode on this GPU
        const std::string ctx = pctx + "." + name;
        dd::only_keys(p, ctx, {"rate", "accumulate"});
        const double rate = dd::number(p, ctx, "rate", r::min_rate, r::max_rate, t == dtype::int8 ? "op/s" : "FLOP/s");
        const std::string acc = dd::text(p, ctx, "accumulate", 16);
        require(acc == peak_accumulate(t), ctx + ".accumulate", "\"" + acc + "\"",
                "must be \"" + std::string(peak_accumulate(t)) + "\": trainperf models " + name +
                    (t == dtype::int8 ? " with int32 accumulation" : " with fp32 accumulation (as training runs)") +
                    "; give the datasheet's rate for that mode (dense, not with sparsity)");
        const flop_rate v = flop_rate::from_value(rate);
        switch (t) {
            case dtype::fp32: g.peak.fp32 = v; break;
            case dtype::tf32: g.peak.tf32 = v; break;
            case dtype::fp16: g.peak.fp16 = v; break;
            case dtype::bf16: g.peak.bf16 = v; break;
            case dtype::fp8: g.peak.fp8 = v; break;
            case dtype::int8: g.peak.int8 = v; break;
            case dtype::fp4: g.peak.fp4 = v; break;
        }
        any = true;
    }
    require(any, pctx, "(all null)", "at least one math mode needs a rate");

    g.gpu_link = link_from_json(dd::field(j, "", "gpu_link"), "gpu_link");
    require(g.gpu_link.kind != link_kind::infiniband, "gpu_link.kind", "infiniband",
            "is the link between nodes (a system file's inter_node_link), not between GPUs of a node");
    g.host_link = link_from_json(dd::field(j, "", "host_link"), "host_link");
    require(g.host_link.kind == link_kind::pcie || g.host_link.kind == link_kind::nvlink ||
                g.host_link.kind == link_kind::none,
            "host_link.kind", to_string(g.host_link.kind),
            "must be pcie, nvlink (NVLink-C2C to a Grace CPU) or none (memory shared with the host)");
    g.tdp_watts = dd::number(j, "", "tdp_watts", 1, r::max_tdp, "W");
    g.memory_shared_with_host = dd::boolean(j, "", "memory_shared_with_host");
    g.pcie_peer_to_peer = dd::boolean(j, "", "pcie_peer_to_peer");
    if (j.contains("system")) {
        const auto& sys = j.at("system");
        dd::require_object(sys, "system");
        dd::only_keys(sys, "system", {"gpus_per_node", "nvlink_domain", "adapter_gbit_per_s", "host"});
        g.system.gpus_per_node = dd::integer(sys, "system", "gpus_per_node", 0, 1024);
        g.system.nvlink_domain = dd::integer(sys, "system", "nvlink_domain", 0, limits::max_gpus_per_node);
        g.system.adapter_gbit_per_s = dd::number(sys, "system", "adapter_gbit_per_s", 0, 1e5, "Gb/s (0: the generation's)");
        const auto& host = dd::field(sys, "system", "host");
        if (!host.is_null()) g.system.host = host_from_json(host, "system.host");
    }
    validate(g);  // the library's own ranges (core/limits.hpp) besides the stricter ones above
    validate_system(g);
    dd::check_derived(j, gpu_derived(g));
    return g;
}

// `trainperf --gpu-file PATH`: the GPU the file describes; errors name the file.
inline gpu_spec load_gpu_file(const std::filesystem::path& path) {
    const auto j = read_description_file(path);
    return with_file_context(path, [&] { return gpu_from_json(j); });
}

inline void save_gpu_file(const std::filesystem::path& path, const gpu_spec& g) {
    write_description_file(path, gpu_to_json(g));
}

}  // namespace trainperf::io
