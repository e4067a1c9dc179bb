// What the harness times: a transformer layer's training GEMMs (from
// trainperf::layer_gemms) and a calibration sweep of GEMM shapes. Host-only.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <trainperf/kernel_model.hpp>
#include <trainperf/model.hpp>
#include <trainperf/workload.hpp>

namespace cublaslt_harness {

// cuBLAS (column-major) operand layouts, as frameworks call them for y = x·Wᵀ:
// forward TN, input gradient NN, weight gradient NT.
enum class layout { tn, nn, nt };

inline const char* to_string(layout l) {
    switch (l) {
        case layout::tn: return "TN";
        case layout::nn: return "NN";
        case layout::nt: return "NT";
    }
    return "?";
}

struct gemm_job {
    std::string group;   // "sweep" or the layer's name
    std::string name;    // op name ("qkv", ...) or "sweep"
    std::string phase;   // forward, dgrad, wgrad ("" for the sweep)
    trainperf::gemm_shape shape{};
    layout op_layout = layout::tn;
    bool gelu = false;   // GELU epilogue (FFN up of a GELU model, forward)
};

struct layer_request {
    std::string model;   // catalog name, or "custom"
    int micro_batch = 1, seq = 1, tp = 1;
};

inline std::string layer_name(const layer_request& r) {
    return r.model + " b" + std::to_string(r.micro_batch) + " s" + std::to_string(r.seq) + " tp" +
           std::to_string(r.tp);
}

inline std::vector<gemm_job> layer_jobs(const trainperf::transformer_config& m, const layer_request& r,
                                        trainperf::dtype math) {
    const auto ops = trainperf::layer_gemms(m, r.micro_batch, r.seq, r.tp, math);
    // layer_gemms lists each op's input gradient (dgrad_of) before its second
    // backward GEMM (weight gradient, or attention's other input gradient).
    std::map<std::string, int> backward_seen;
    std::vector<gemm_job> jobs;
    for (const auto& op : ops) {
        gemm_job j{.group = layer_name(r), .name = std::string(op.name),
                   .phase = std::string(trainperf::to_string(op.phase)), .shape = op.shape};
        if (op.phase == trainperf::op_phase::forward) {
            j.op_layout = layout::tn;
            j.gelu = op.name == "ffn_up" && m.ffn == trainperf::ffn_kind::gelu;
        } else {
            j.op_layout = backward_seen[j.name]++ == 0 ? layout::nn : layout::nt;
        }
        jobs.push_back(std::move(j));
    }
    return jobs;
}

// The calibration grid: m, n, k from small to large with transformer-like aspect
// ratios and non-power-of-two sizes (edge tiles, partial waves), plus attention-like
// strided-batched shapes. "small" and "tiny" are subsets for quick runs and tests.
inline std::vector<gemm_job> sweep_jobs(const std::string& size, trainperf::dtype math) {
    std::vector<double> ms, ns, ks;
    std::vector<std::pair<double, double>> attention;  // (seq, head_dim)
    if (size == "full") {
        ms = {128, 512, 1000, 2048, 4096, 8192, 16384};
        ns = {256, 768, 1024, 3072, 5120, 12288};
        ks = {64, 128, 512, 1024, 4096, 8192};
        attention = {{512, 64}, {1024, 64}, {2048, 64}, {4096, 64},
                     {512, 128}, {1024, 128}, {2048, 128}, {4096, 128}};
    } else if (size == "small") {
        ms = {512, 2048, 8192};
        ns = {768, 4096};
        ks = {128, 1024, 8192};
        attention = {{1024, 64}, {2048, 128}};
    } else if (size == "tiny") {
        ms = {256, 1000};
        ns = {512};
        ks = {64, 320};
        attention = {{256, 64}};
    } else {
        throw std::invalid_argument("--sweep-size = " + size + ": must be full, small or tiny");
    }
    std::vector<gemm_job> jobs;
    for (double m : ms)
        for (double n : ns)
            for (double k : ks) jobs.push_back({.group = "sweep", .name = "sweep", .shape = {m, n, k, 1, math}});
    for (auto [s, d] : attention) {
        const double batch = 32;  // e.g. 2 sequences × 16 heads
        jobs.push_back({.group = "sweep", .name = "sweep", .shape = {s, s, d, batch, math}});
        jobs.push_back({.group = "sweep", .name = "sweep", .shape = {s, d, s, batch, math}, .op_layout = layout::nn});
    }
    return jobs;
}

}  // namespace cublaslt_harness
