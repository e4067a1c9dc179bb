// What the harness times: a transformer layer's training GEMMs (from
// trainperf::layer_gemms) and a calibration sweep of GEMM shapes. Host-only.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <trainperf/cost/kernel_model.hpp>
#include <trainperf/spec/model.hpp>
#include <trainperf/workload/step_ops.hpp>

namespace cublaslt_harness {

// Operand layouts as frameworks pass them to cuBLAS. A GEMM is row-major
// C[m×n] = op(X)·op(Y) (m, n, k as trainperf::gemm_shape has them); cuBLAS, being
// column-major, is called for Cᵀ = op(Y)ᵀ·op(X)ᵀ with its m = n, its n = m, A = Y and
// B = X, and the letters are its (transa, transb):
//   TN  C = X[m×k]·Y[n×k]ᵀ   forward of y = x·Wᵀ, attention scores Q·Kᵀ
//   NN  C = X[m×k]·Y[k×n]    input gradient dx = dy·W, attention P·V
//   NT  C = X[k×m]ᵀ·Y[k×n]   weight gradient (dW)ᵀ = xᵀ·dy
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
    // layer_gemms lists the forward GEMMs first, then per op its input gradient
    // (dgrad_of: dX = dC·op(Y)ᵀ) and its second backward GEMM (wgrad_of: Xᵀ·dC).
    // Forward is TN (Y a weight or K, stored [n×k]) except attention's P·V (NN);
    // the input gradient of a TN GEMM is NN and of an NN one TN; the other is NT.
    std::map<std::string, layout> forward_layout;
    std::map<std::string, int> backward_seen;
    std::vector<gemm_job> jobs;
    for (const auto& op : ops) {
        gemm_job j{.group = layer_name(r), .name = std::string(op.name),
                   .phase = std::string(trainperf::to_string(op.phase)), .shape = op.shape};
        if (op.phase == trainperf::op_phase::forward) {
            j.op_layout = op.name == "attention_context" ? layout::nn : layout::tn;
            j.gelu = op.name == "ffn_up" && m.ffn == trainperf::ffn_kind::gelu;
            forward_layout[j.name] = j.op_layout;
        } else if (backward_seen[j.name]++ == 0) {
            j.op_layout = forward_layout.at(j.name) == layout::tn ? layout::nn : layout::tn;
        } else {
            j.op_layout = layout::nt;
        }
        jobs.push_back(std::move(j));
    }
    return jobs;
}

// The cuBLAS (column-major) call for a job, and where element (i, j) of op(A), op(B)
// and C lives in each operand's storage (elements, from the operand's start).
struct lt_problem {
    std::int64_t m = 0, n = 0, k = 0;   // cuBLAS sizes: m = shape.n, n = shape.m
    std::int64_t batch = 1;
    bool trans_a = false, trans_b = false;
    std::int64_t a_rows = 0, a_cols = 0, lda = 0;   // A as stored (column-major)
    std::int64_t b_rows = 0, b_cols = 0, ldb = 0;
    std::int64_t ldc = 0;
    std::int64_t a_elems = 0, b_elems = 0, c_elems = 0;   // per batch entry (the strides)

    std::int64_t a_index(std::int64_t i, std::int64_t l) const { return trans_a ? l + i * lda : i + l * lda; }
    std::int64_t b_index(std::int64_t l, std::int64_t j) const { return trans_b ? j + l * ldb : l + j * ldb; }
    std::int64_t c_index(std::int64_t i, std::int64_t j) const { return i + j * ldc; }
};

inline lt_problem lt_problem_for(const gemm_job& job) {
    auto whole = [](double v, const char* what) {
        if (!(v >= 1) || v != static_cast<double>(static_cast<std::int64_t>(v)) || v > 2147483647.0)
            throw std::invalid_argument(std::string("gemm ") + what + " = " + std::to_string(v) +
                                        ": must be a positive integer below 2^31");
        return static_cast<std::int64_t>(v);
    };
    lt_problem p;
    p.m = whole(job.shape.n, "n");
    p.n = whole(job.shape.m, "m");
    p.k = whole(job.shape.k, "k");
    p.batch = whole(job.shape.batch, "batch");
    p.trans_a = job.op_layout == layout::tn;
    p.trans_b = job.op_layout == layout::nt;
    p.a_rows = p.trans_a ? p.k : p.m;
    p.a_cols = p.trans_a ? p.m : p.k;
    p.lda = p.a_rows;
    p.b_rows = p.trans_b ? p.n : p.k;
    p.b_cols = p.trans_b ? p.k : p.n;
    p.ldb = p.b_rows;
    p.ldc = p.m;
    p.a_elems = p.m * p.k;
    p.b_elems = p.k * p.n;
    p.c_elems = p.m * p.n;
    return p;
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
