// Blind validation against published iteration times: parse a table of measured
// runs, describe each run with ONE system description and ONE framework profile,
// predict, and report the errors. No per-row settings exist.
#pragma once

#include <cmath>
#include <istream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "../cost/comm.hpp"
#include "../cost/step.hpp"
#include "../spec/framework.hpp"
#include "../spec/gpu_catalog.hpp"
#include "../spec/hardware.hpp"
#include "../spec/model.hpp"
#include "../spec/parallel.hpp"
#include "../spec/precision.hpp"

namespace trainperf {

// One published measurement (the columns of tests/data/korthikanti2022_table5.csv).
struct published_iteration {
    std::string model;
    int layers = 0, hidden = 0, heads = 0, ffn_hidden = 0, vocab = 0, seq = 0;
    int gpus = 0, tp = 1, pp = 1, dp = 1, interleave = 1;
    int global_batch = 0, micro_batch = 0;
    recompute_mode recompute = recompute_mode::none;
    bool sequence_parallel = false;
    std::string dtype_name;
    double seconds_per_iteration = 0;
};

namespace validation_detail {
inline std::vector<std::string> split_csv_line(const std::string& line) {
    std::vector<std::string> cells;
    std::stringstream in(line);
    std::string cell;
    while (std::getline(in, cell, ',')) cells.push_back(cell);
    return cells;
}
inline int to_int(const std::string& field, const std::string& text) {
    std::size_t used = 0;
    int v = 0;
    try { v = std::stoi(text, &used); } catch (const std::exception&) { used = 0; }
    require(used == text.size() && !text.empty(), field, text, "is not an integer");
    return v;
}
inline double to_double(const std::string& field, const std::string& text) {
    std::size_t used = 0;
    double v = 0;
    try { v = std::stod(text, &used); } catch (const std::exception&) { used = 0; }
    require(used == text.size() && !text.empty() && std::isfinite(v), field, text, "is not a number");
    return v;
}
}  // namespace validation_detail

// Reads the CSV (lines starting with '#' are provenance comments).
inline std::vector<published_iteration> read_published_iterations(std::istream& in) {
    using namespace validation_detail;
    std::vector<published_iteration> rows;
    std::string line;
    bool header = true;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        if (header) { header = false; continue; }
        const auto c = split_csv_line(line);
        require(c.size() == 18, "csv columns", c.size(), "expected 18");
        published_iteration r;
        r.model = c[0];
        r.layers = to_int("layers", c[1]);
        r.hidden = to_int("hidden", c[2]);
        r.heads = to_int("heads", c[3]);
        r.ffn_hidden = to_int("ffn_hidden", c[4]);
        r.vocab = to_int("vocab", c[5]);
        r.seq = to_int("seq_len", c[6]);
        r.gpus = to_int("gpus", c[7]);
        r.tp = to_int("tp", c[8]);
        r.pp = to_int("pp", c[9]);
        r.dp = to_int("dp", c[10]);
        r.interleave = to_int("pp_interleave", c[11]);
        r.global_batch = to_int("global_batch", c[12]);
        r.micro_batch = to_int("micro_batch", c[13]);
        require(c[14] == "full" || c[14] == "selective" || c[14] == "none", "recompute", c[14], "unknown");
        r.recompute = c[14] == "full" ? recompute_mode::full
                      : c[14] == "selective" ? recompute_mode::selective : recompute_mode::none;
        r.sequence_parallel = c[15] == "yes";
        r.dtype_name = c[16];
        r.seconds_per_iteration = to_double("seconds_per_iteration", c[17]);
        require(r.global_batch % (r.micro_batch * r.dp) == 0, "global_batch", r.global_batch,
                "must be a multiple of micro_batch x dp");
        rows.push_back(r);
    }
    return rows;
}

// NVIDIA Selene as Korthikanti et al. describe it: DGX A100 80GB nodes, 8 GPUs on
// NVLink3/NVSwitch, one HDR InfiniBand adapter (200 Gb/s = 25 GB/s each way) per GPU.
inline cluster_spec selene_dgx_a100() {
    return standard_cluster(a100_sxm_80gb::spec, 8);
}

// The run as trainperf sees it: a Megatron GPT (tied embeddings, learned positions,
// GELU, biases), the row's layout, and the one system and profile given.
inline training_setup setup_for(const published_iteration& r, const cluster_spec& system,
                                const framework_profile& profile) {
    training_setup s;
    s.cluster = system;
    s.model = {.name = "published", .layers = r.layers, .hidden = r.hidden, .heads = r.heads,
               .ffn_hidden = r.ffn_hidden, .vocab = r.vocab, .max_seq = r.seq};
    s.precision = parse_precision(r.dtype_name);
    s.optimizer = optimizer_kind::adamw;
    s.layout = {.dp = r.dp, .tp = r.tp, .pp = r.pp, .interleave = r.interleave,
                .sp = r.sequence_parallel, .micro_batch = r.micro_batch,
                .grad_accum = r.global_batch / (r.micro_batch * r.dp), .recompute = r.recompute};
    require(s.layout.gpus() == r.gpus, "gpus", r.gpus, "must equal dp x tp x pp");
    s.seq = r.seq;
    s.framework = profile;
    return s;
}

struct validation_row {
    published_iteration published;
    step_report predicted;
    double relative_error = 0;  // predicted / published − 1
};

struct validation_summary {
    std::vector<validation_row> rows;
    double mean_abs_error = 0;
    double max_abs_error = 0;
};

// `kernels` replaces the architecture's default kernel parameters for every row
// (sensitivity studies, calibrated parameters); it never differs between rows.
inline validation_summary validate_against(const std::vector<published_iteration>& published,
                                           const cluster_spec& system, const framework_profile& profile,
                                           const std::optional<kernel_params>& kernels = std::nullopt) {
    validation_summary v;
    for (const auto& p : published) {
        training_setup setup = setup_for(p, system, profile);
        setup.kernels = kernels;
        validation_row row{p, predict(setup)};
        row.relative_error = row.predicted.step_time.value() / p.seconds_per_iteration - 1.0;
        v.mean_abs_error += std::abs(row.relative_error);
        v.max_abs_error = std::max(v.max_abs_error, std::abs(row.relative_error));
        v.rows.push_back(row);
    }
    if (!v.rows.empty()) v.mean_abs_error /= double(v.rows.size());
    return v;
}

}  // namespace trainperf
