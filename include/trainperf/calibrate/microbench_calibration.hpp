// Calibration and blind validation on published single-GPU micro-benchmarks (a table
// read by io/microbench_csv.hpp): which rows a fit may use, the fit itself (Eigen
// least squares), and the prediction of every row with one description per GPU and
// one framework profile. docs/validation.md ("Single GPU, PyTorch eager") reports it.
//
// What is fitted, and on what (everything else is predicted blind):
// - per compute capability, from that board's kernel rows only: the tensor-core and
//   CUDA-core GEMM fractions from the n = 8192 matmuls (below that the host's issue
//   time or wave quantization weigh in), the GPU's per-kernel overhead and memory
//   efficiency from the two largest elementwise sizes;
// - per system, the host's bare op from the elementwise rows the host bounds;
// - for the pytorch-eager profile, from one board (the RTX 3090 Ti): the GEMM call's
//   host cost from the bare n = 128 fp16 matmul, and the module and autograd-node costs
//   from the two BERT-large layer rows its host bounds most clearly (sequence 128,
//   batch 2: forward, and forward with backward).
// The rows a fit used are marked; the error is reported for the held-out rows apart.
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../spec/framework.hpp"
#include "../spec/gpu_catalog.hpp"
#include "../spec/hardware.hpp"
#include "../spec/kernel_params.hpp"
#include "../spec/model_catalog.hpp"
#include "microbench.hpp"
#include "microbench_csv.hpp"

namespace trainperf {

// A row as the engine sees it: the benchmark (or, for a "best" row, the sweep it is
// the best of), the GPU, and the measured time or rate.
struct microbench_point {
    io::microbench_row row;
    std::string gpu;                    // catalog name
    std::vector<bench_case> cases;      // one, or the sweep of a best row
    bool best = false;
    double measured_rate = 0;           // TFLOP/s, or GB/s for elementwise rows
};

namespace microbench_detail {

// Catalog names of the devices the source names only by their device name.
inline std::string catalog_gpu(const io::microbench_row& r) {
    if (!r.gpu.empty()) return r.gpu;
    if (r.device_name == "A6000") return "rtx-a6000";
    if (r.device_name == "RTX 4090") return "rtx-4090";
    detail::fail("line " + std::to_string(r.line) + " device_name", r.device_name, "is not a known GPU");
}

inline dtype storage_of(const io::microbench_row& r) {
    if (r.dtype == "fp16") return dtype::fp16;
    if (r.dtype == "fp32" || r.dtype == "fp32 (torch.float32)") return dtype::fp32;
    detail::fail("line " + std::to_string(r.line) + " dtype", r.dtype, "is not fp16 or fp32");
}

// The sizes a "best" row is the best of (the notebook's own lists).
inline std::vector<bench_case> best_sweep(bench_kind kind, dtype storage, const transformer_config& model) {
    std::vector<bench_case> cases;
    if (kind == bench_kind::matmul) {
        for (double n : {128.0, 512.0, 2048.0, 8192.0}) cases.push_back({kind, storage, n, 0, 0, {}});
        return cases;
    }
    const bool bert = model.code == model_code::bert;
    const std::vector<int> seqs = bert ? std::vector<int>{128, 512} : std::vector<int>{512, 1024};
    const std::vector<int> batches = bert ? std::vector<int>{2, 4, 8, 16, 32, 64, 128}
                                          : std::vector<int>{2, 4, 8, 16, 32, 64};
    for (int s : seqs)
        for (int b : batches) cases.push_back({kind, storage, 0, b, s, model});
    return cases;
}

}  // namespace microbench_detail

inline microbench_point to_point(const io::microbench_row& r) {
    namespace md = microbench_detail;
    microbench_point p;
    p.row = r;
    p.gpu = md::catalog_gpu(r);
    std::string kind = r.kind;
    if (kind.size() > 5 && kind.substr(kind.size() - 5) == "_best") {
        p.best = true;
        kind = kind.substr(0, kind.size() - 5);
    }
    const dtype storage = md::storage_of(r);
    const std::map<std::string, bench_kind> kinds{{"matmul", bench_kind::matmul},
                                                  {"elementwise_scale_fp32", bench_kind::elementwise},
                                                  {"linear_h_to_4h", bench_kind::linear},
                                                  {"linear_h_to_4h_gelu", bench_kind::linear_activation},
                                                  {"ffn_block", bench_kind::mlp_block},
                                                  {"attention_block", bench_kind::attention_block},
                                                  {"layer_forward", bench_kind::layer_forward},
                                                  {"layer_forward_backward", bench_kind::layer_forward_backward}};
    const auto k = kinds.find(kind);
    require(k != kinds.end(), "line " + std::to_string(r.line) + " kind", r.kind, "is not a known benchmark");
    transformer_config model{};
    if (k->second != bench_kind::matmul && k->second != bench_kind::elementwise) model = lookup_model(r.model);
    if (p.best) {
        p.cases = md::best_sweep(k->second, storage, model);
    } else {
        p.cases.push_back({k->second, storage, r.n, r.batch, r.seq, model});
    }
    p.measured_rate = k->second == bench_kind::elementwise ? r.gb_per_s.value_or(0) : r.tflops.value_or(0);
    require(p.measured_rate > 0, "line " + std::to_string(r.line) + " rate", p.measured_rate, "must be positive");
    return p;
}

// ---- The fitted parameters -----------------------------------------------------------

struct microbench_fit {
    std::map<int, fitted_kernel_params> kernels;   // by compute capability
    std::map<std::string, double> eager_op_time;   // seconds, by GPU (its host)
    eager_host_costs host{};                        // the profile's fitted host costs
    std::vector<int> fit_lines;                     // rows a fit used
};

// The system of a GPU of the table: its catalog entry, the kernel parameters of its
// compute capability (fit.kernels, else the library's defaults), its host's bare op
// where fitted, the pytorch-eager profile with the fit's host costs; fp32 matmuls on
// TF32 as in NVIDIA's containers.
inline bench_system microbench_system(const std::string& gpu_name, const microbench_fit& fit) {
    bench_system sys;
    sys.gpu = lookup_gpu(gpu_name);
    sys.kernels = default_kernel_params(sys.gpu);
    if (const auto f = fit.kernels.find(fitted_compute_capability(sys.gpu)); f != fit.kernels.end())
        sys.kernels = with_fit(sys.kernels, f->second);
    if (const auto h = fit.eager_op_time.find(gpu_name); h != fit.eager_op_time.end())
        sys.eager_op_time = seconds_of(h->second);
    sys.framework = pytorch_eager_profile;
    sys.framework.host = fit.host;
    sys.fp32_matmul_on_tf32 = true;
    return sys;
}

// The predicted rate of a point: the benchmark's work over its time (the best over
// the sweep for a best row).
inline double predicted_rate(const microbench_point& p, const bench_system& sys) {
    double best = 0;
    for (const auto& c : p.cases) {
        const double t = predict_bench(c, sys).time.value();
        const double scale = c.kind == bench_kind::elementwise ? 1e9 : 1e12;
        best = std::max(best, bench_work(c) / t / scale);
    }
    return best;
}

// ---- The fit ---------------------------------------------------------------------------

namespace microbench_detail {

// x minimising Σ (a_i·x − 1)² (relative errors of a time proportional to 1/x).
inline double scale_fit(const std::vector<double>& a) {
    require(!a.empty(), "fit", 0, "has no rows");
    Eigen::VectorXd col(Eigen::Index(a.size()));
    for (std::size_t i = 0; i < a.size(); ++i) col(Eigen::Index(i)) = a[i];
    const Eigen::VectorXd ones = Eigen::VectorXd::Ones(col.size());
    return col.colPivHouseholderQr().solve(ones)(0);
}

inline double median(std::vector<double> v) {
    require(!v.empty(), "fit", 0, "has no rows");
    std::sort(v.begin(), v.end());
    const std::size_t h = v.size() / 2;
    return v.size() % 2 ? v[h] : 0.5 * (v[h - 1] + v[h]);
}

}  // namespace microbench_detail

// Fits on the table's rows as the header says; `host_board` is the board whose rows
// fit the profile's host costs.
inline microbench_fit fit_microbench(const std::vector<microbench_point>& points,
                                     const std::string& host_board = "rtx-3090-ti") {
    namespace md = microbench_detail;
    microbench_fit fit;
    fit.host = pytorch_eager_profile.host;
    std::map<std::string, std::vector<const microbench_point*>> by_gpu;
    for (const auto& p : points)
        if (!p.best) by_gpu[p.gpu].push_back(&p);

    for (const auto& [gpu_name, rows] : by_gpu) {
        const gpu_spec gpu = lookup_gpu(gpu_name);
        const kernel_params prior = default_kernel_params(gpu.architecture);
        fitted_kernel_params f{gpu.compute_capability, gpu.name, 0, 0, 0, 0};
        const auto seconds_of_row = [](const microbench_point& p) {
            const bench_case& c = p.cases.front();
            return bench_work(c) / (p.measured_rate * (c.kind == bench_kind::elementwise ? 1e9 : 1e12));
        };
        // Elementwise: the rows the host bounds give its bare op; the two largest sizes
        // give the GPU's per-kernel overhead L and bandwidth (t = L + bytes / (BW·e)).
        // Where the smaller of the two gains from the L2 cache (L would come out
        // negative: the data does not determine L), the architecture's prior L is kept
        // and e comes from the largest alone.
        std::vector<double> host;
        std::vector<const microbench_point*> elementwise;
        for (const auto* p : rows) {
            const bench_case& c = p->cases.front();
            if (c.kind != bench_kind::elementwise) continue;
            elementwise.push_back(p);
            const double gpu_time = 8 * c.n / (gpu.memory_bandwidth.value() * prior.memory_efficiency);
            if (gpu_time < 0.5 * seconds_of_row(*p)) {
                host.push_back(seconds_of_row(*p));
                fit.fit_lines.push_back(p->row.line);
            }
        }
        if (!host.empty()) fit.eager_op_time[gpu_name] = md::median(host);
        double launch = prior.launch_overhead.value();
        if (elementwise.size() >= 2) {
            std::sort(elementwise.begin(), elementwise.end(),
                      [](const auto* a, const auto* b) { return a->cases.front().n < b->cases.front().n; });
            const auto* big = elementwise.back();
            const auto* next = elementwise[elementwise.size() - 2];
            const double b1 = 8 * next->cases.front().n, b2 = 8 * big->cases.front().n;
            const double t1 = seconds_of_row(*next), t2 = seconds_of_row(*big);
            require(t2 > t1, "line " + std::to_string(big->row.line) + " time", t2,
                    "must exceed the smaller elementwise size's time to fit a bandwidth");
            const double rate = (b2 - b1) / (t2 - t1);
            if (t1 - b1 / rate >= 0) launch = t1 - b1 / rate;
            require(t2 > launch, "line " + std::to_string(big->row.line) + " time", t2,
                    "must exceed the per-kernel overhead");
            f.memory_efficiency = b2 / ((t2 - launch) * gpu.memory_bandwidth.value());
            fit.fit_lines.push_back(big->row.line);
            fit.fit_lines.push_back(next->row.line);
        }
        // GEMMs with n >= 8192 (the GPU's time; wave quantization negligible): the
        // fraction of peak at the clock under load, tensor cores and CUDA cores apart.
        std::vector<double> tensor, cuda_core;
        kernel_params unit = prior;
        unit.peak_fraction = 1.0;
        unit.cuda_core_fraction = 1.0;
        const kernel_cost_model at_peak(gpu, unit);
        for (const auto* p : rows) {
            const bench_case& c = p->cases.front();
            if (c.kind != bench_kind::matmul || c.n < 8192) continue;
            const bool on_cuda_cores = c.storage == dtype::fp32 && !gpu.supports(dtype::tf32);
            const dtype math = c.storage == dtype::fp32 && !on_cuda_cores ? dtype::tf32 : c.storage;
            const double ideal = at_peak.gemm_compute_time({c.n, c.n, c.n, 1, math}).value();
            require(seconds_of_row(*p) > launch, "line " + std::to_string(p->row.line) + " time",
                    seconds_of_row(*p), "must exceed the per-kernel overhead");
            (on_cuda_cores ? cuda_core : tensor).push_back(ideal / (seconds_of_row(*p) - launch));
            fit.fit_lines.push_back(p->row.line);
        }
        if (!tensor.empty()) f.peak_fraction = 1.0 / md::scale_fit(tensor);
        if (!cuda_core.empty()) f.cuda_core_fraction = 1.0 / md::scale_fit(cuda_core);
        if (f.peak_fraction > 0 && f.memory_efficiency > 0) {
            // One board per compute capability: a second would silently replace the first.
            require(!fit.kernels.contains(f.compute_capability), "gpu", gpu_name,
                    "is a second board of compute capability " + std::to_string(f.compute_capability) +
                        " with kernel rows; fit one board per compute capability");
            // What the fit gives must be a valid parameter set (no NaN, in range).
            f.launch_overhead_us = launch * 1e6;
            validate(with_fit(prior, f));
            fit.kernels[f.compute_capability] = f;
        }
    }

    // The profile's host costs on the host board.
    const auto board = by_gpu.find(host_board);
    require(board != by_gpu.end(), "host_board", host_board, "has no rows in the table");
    const bench_system sys = microbench_system(host_board, fit);
    const double bare = sys.eager_op_time.value();
    int gemm_rows = 0;
    for (const auto* p : board->second) {
        const bench_case& c = p->cases.front();
        if (c.kind == bench_kind::matmul && c.n == 128 && c.storage == dtype::fp16) {
            require(++gemm_rows == 1, "host_board", host_board, "has more than one fp16 n = 128 matmul row");
            fit.host.gemm = bench_work(c) / (p->measured_rate * 1e12) / bare;
            fit.fit_lines.push_back(p->row.line);
        }
    }
    // Host time is linear in the module and node costs: h = h0 + M·module + N·node.
    // Least squares on the relative error over the host-bound layer rows.
    std::vector<std::array<double, 3>> eq;  // M/t, N/t, 1 − h0/t
    for (const auto* p : board->second) {
        const bench_case& c = p->cases.front();
        const bool layer = c.kind == bench_kind::layer_forward || c.kind == bench_kind::layer_forward_backward;
        if (!layer || c.model.code != model_code::bert || c.seq != 128 || c.batch > 2) continue;
        const double t = bench_work(c) / (p->measured_rate * 1e12);
        const auto host_with = [&](double module, double node) {
            bench_system s = microbench_system(host_board, fit);
            s.framework.host.module = module;
            s.framework.host.backward_node = node;
            return predict_bench(c, s).host.value();
        };
        const double h0 = host_with(0, 0);
        eq.push_back({(host_with(1, 0) - h0) / t, (host_with(0, 1) - h0) / t, 1 - h0 / t});
        fit.fit_lines.push_back(p->row.line);
    }
    require(!eq.empty(), "host fit", host_board, "has no host-bound layer rows");
    Eigen::MatrixXd a(Eigen::Index(eq.size()), 2);
    Eigen::VectorXd b(Eigen::Index(eq.size()));
    for (std::size_t i = 0; i < eq.size(); ++i) {
        a(Eigen::Index(i), 0) = eq[i][0];
        a(Eigen::Index(i), 1) = eq[i][1];
        b(Eigen::Index(i)) = eq[i][2];
    }
    const Eigen::VectorXd x = a.colPivHouseholderQr().solve(b);
    fit.host.module = x(0);
    fit.host.backward_node = x(1);
    validate(fit.host);
    std::sort(fit.fit_lines.begin(), fit.fit_lines.end());
    fit.fit_lines.erase(std::unique(fit.fit_lines.begin(), fit.fit_lines.end()), fit.fit_lines.end());
    return fit;
}

// The library's own constants as a fit: what spec/kernel_params.hpp and spec/framework.hpp
// ship (the per-system bare ops are not library constants: they describe the hosts
// the table was measured on, and come from the fit).
inline microbench_fit shipped_fit(const microbench_fit& hosts) {
    microbench_fit f;
    for (const auto& k : fitted_kernel_defaults) f.kernels[k.compute_capability] = k;
    f.eager_op_time = hosts.eager_op_time;
    f.host = pytorch_eager_profile.host;
    f.fit_lines = hosts.fit_lines;
    return f;
}

// ---- Validation -------------------------------------------------------------------------

struct microbench_result {
    const microbench_point* point = nullptr;
    double predicted_rate = 0;
    double time_error = 0;     // predicted time / measured time − 1 (= measured rate / predicted − 1)
    bool used_in_fit = false;
    bool host_bound = false;   // the host's issue time sets the predicted time
};

inline std::vector<microbench_result> validate_microbench(const std::vector<microbench_point>& points,
                                                          const microbench_fit& fit) {
    std::vector<microbench_result> out;
    for (const auto& p : points) {
        const bench_system sys = microbench_system(p.gpu, fit);
        microbench_result r;
        r.point = &p;
        r.predicted_rate = predicted_rate(p, sys);
        r.time_error = p.measured_rate / r.predicted_rate - 1;
        r.used_in_fit = std::find(fit.fit_lines.begin(), fit.fit_lines.end(), p.row.line) != fit.fit_lines.end();
        if (!p.best) {
            const auto pred = predict_bench(p.cases.front(), sys);
            r.host_bound = pred.host > pred.gpu;
        }
        out.push_back(r);
    }
    return out;
}

}  // namespace trainperf
