// The harness's results and its JSON file (schema in benchmarks/data/README.md), and
// the host reference for one output element. Host-only, so the CPU test checks that
// what the harness writes reads back through trainperf::measurement_file_from_json.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <trainperf/io/json.hpp>
#include <trainperf/cost/kernel_model.hpp>
#include <trainperf/core/units.hpp>

#include "gemm_list.hpp"
#include "inputs.hpp"

namespace cublaslt_harness {

struct check_result {
    int samples = 0;
    double max_rel_error = 0;   // |got − reference| / Σ|a·b| over the dot product
    double tolerance = 0;
    bool passed = true;
};

struct timing_result {
    double median_s = 0, p10_s = 0, p90_s = 0;
    int repetitions = 0, buffer_sets = 1;
    std::int32_t algo_id = -1, tile_id = -1;
    float waves_count = 0;
    std::size_t workspace_bytes = 0;     // what the chosen algorithm needs
    bool epilogue_applied = true;        // false: GELU unsupported, timed without it
    std::optional<double> clock_mhz;
    check_result check;
};

// Linear interpolation between order statistics; v must not be empty.
inline double percentile(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    const double pos = q * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const auto hi = std::min(v.size() - 1, lo + 1);
    return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

// Error bound relative to Σ|a·b| (the reference uses the exact stored inputs).
inline double tolerance_for(trainperf::dtype t) {
    switch (t) {
        case trainperf::dtype::bf16:
        case trainperf::dtype::fp16: return 1e-2;   // output rounded to 8/11 bits: ≤ 2⁻⁹ of |c| ≤ Σ|a·b|
        case trainperf::dtype::tf32: return 2e-3;   // inputs cut to 10 mantissa bits: ≤ 2·2⁻¹⁰ of Σ|a·b|
        default: return 1e-5;                       // fp32: accumulation order only
    }
}

inline double gelu(double x) {  // the tanh form; the erf form differs by < 1e-3 absolute
    return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

struct reference_value {
    double expected = 0;   // C(i, j) of batch entry bi, GELU applied if asked
    double scale = 0;      // Σ|a·b| over the dot product
};

// Element (i, j) of the cuBLAS output of batch entry bi, from the generator: A's
// pool elements start at a0, B's at b0, batch entries are a_elems/b_elems apart.
inline reference_value reference(trainperf::dtype t, const lt_problem& p, std::uint64_t a0, std::uint64_t b0,
                                 std::int64_t bi, std::int64_t i, std::int64_t j, bool apply_gelu) {
    double sum = 0, scale = 0;
    for (std::int64_t l = 0; l < p.k; ++l) {
        const double x = stored_value(t, a0 + static_cast<std::uint64_t>(bi * p.a_elems + p.a_index(i, l)));
        const double y = stored_value(t, b0 + static_cast<std::uint64_t>(bi * p.b_elems + p.b_index(l, j)));
        sum += x * y;
        scale += std::abs(x * y);
    }
    return {apply_gelu ? gelu(sum) : sum, scale};
}

// Everything measured so far, and the document written after every GEMM (so a run
// cut short still leaves a readable file).
class report {
public:
    trainperf::measurement_file file;            // provenance, kernel params, layers, records
    nlohmann::json extra_provenance = nlohmann::json::object();
    nlohmann::json settings = nlohmann::json::object();

    void add(const gemm_job& job, const timing_result& t, trainperf::seconds predicted, double peak_flop_rate) {
        const bool gelu_applied = job.gelu && t.epilogue_applied;
        trainperf::gemm_record rec{.group = job.group, .name = job.name, .phase = job.phase, .shape = job.shape,
                                   .epilogue = gelu_applied ? "gelu" : "none",
                                   .measured = trainperf::seconds_of(t.median_s),
                                   .p10 = trainperf::seconds_of(t.p10_s), .p90 = trainperf::seconds_of(t.p90_s),
                                   .repetitions = t.repetitions, .predicted = predicted};
        const double tflops = trainperf::gemm_flops(job.shape).value() / t.median_s / 1e12;
        auto j = trainperf::to_json(rec);
        j["layout"] = to_string(job.op_layout);
        if (job.gelu && !t.epilogue_applied) j["epilogue_unsupported"] = "gelu";
        j["tflops"] = tflops;
        j["peak_fraction"] = tflops * 1e12 / peak_flop_rate;
        j["algo_id"] = t.algo_id;
        j["tile_id"] = t.tile_id;
        j["waves_count"] = t.waves_count;
        j["algo_workspace_bytes"] = t.workspace_bytes;
        j["buffer_sets"] = t.buffer_sets;
        j["sm_clock_mhz"] = t.clock_mhz ? nlohmann::json(*t.clock_mhz) : nlohmann::json(nullptr);
        j["check"] = {{"samples", t.check.samples}, {"max_rel_error", t.check.max_rel_error},
                      {"tolerance", t.check.tolerance}, {"passed", t.check.passed}};
        file.gemms.push_back(std::move(rec));
        entries_.push_back(std::move(j));
    }

    // A GEMM cuBLASLt could not run; listed apart ("failed"), as it has no time.
    void add_failure(const gemm_job& job, const std::string& why) {
        failed_.push_back({{"group", job.group}, {"name", job.name}, {"phase", job.phase},
                           {"m", job.shape.m}, {"n", job.shape.n}, {"k", job.shape.k},
                           {"batch", job.shape.batch}, {"layout", to_string(job.op_layout)},
                           {"error", why}});
    }
    bool any_failed() const { return !failed_.empty(); }

    nlohmann::json document(const std::string& status) const {
        auto doc = trainperf::to_json(file);
        for (const auto& [key, value] : extra_provenance.items()) doc["provenance"][key] = value;
        doc["settings"] = settings;
        doc["status"] = status;
        doc["gemms"] = entries_;
        nlohmann::json layers = nlohmann::json::array();
        for (const auto& l : file.layers) {
            double measured = 0, predicted = 0;
            int timed = 0, missing = 0;
            for (const auto& g : file.gemms)
                if (g.group == l.name) {
                    measured += g.measured.value();
                    predicted += g.predicted ? g.predicted->value() : 0.0;
                    ++timed;
                }
            for (const auto& f : failed_) missing += f.at("group").get<std::string>() == l.name;
            auto j = trainperf::to_json(l);
            j["gemms_timed"] = timed;
            j["gemms_failed"] = missing;
            if (timed > 0) {
                j["measured_s"] = measured;
                j["predicted_s"] = predicted;
                j["rel_error"] = predicted / measured - 1.0;
            }
            layers.push_back(j);
        }
        doc["layers"] = layers;
        doc["failed"] = failed_;
        return doc;
    }

private:
    std::vector<nlohmann::json> entries_;
    nlohmann::json failed_ = nlohmann::json::array();
};

}  // namespace cublaslt_harness
