// `trainperf calibrate`: fits the kernel model to a cuBLASLt measurement file
// (trainperf-cublaslt --sweep) on 3 of every 4 sweep shapes, reports the error on the
// held-out shapes and on the layers' GEMMs, and saves the parameters as a calibration
// file for `predict --calibration`. Needs no GPU.
#include "cli.hpp"

#include <trainperf/calibrate/calibration.hpp>
#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/io/calibration_json.hpp>

#include <ctime>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>

namespace trainperf::cli {
namespace {

struct calibrate_options {
    std::string measurements, output;
    bool json = false;
};

std::string today() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[16];
    std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
    return buf;
}

std::string summary_text(const error_summary& e) {
    return std::to_string(e.points) + " GEMMs: mean |error| " + fixed(100 * e.mean_abs_rel_error, 1) + " %, max " +
           fixed(100 * e.max_abs_rel_error, 1) + " %, bias " + fixed(100 * e.mean_rel_error, 1) + " %";
}

void run(const calibrate_options& opt, std::ostream& out) {
    const std::filesystem::path in = opt.measurements;
    const auto file = load_measurements(in);
    const gpu_spec& gpu = lookup_gpu(file.provenance.gpu);
    const auto sweep = sweep_measurements(file);
    const auto layers = layer_measurements(file);
    const auto r = calibrate_with_holdout(gpu, sweep, layers, default_kernel_params(gpu.architecture));
    const kernel_params& p = r.calibration.params;
    const std::filesystem::path path =
        opt.output.empty() ? in.parent_path() / (file.provenance.gpu + ".calibration.json")
                           : std::filesystem::path(opt.output);
    save_calibration(path, {.gpu = file.provenance.gpu, .params = p, .dataset = in.filename().string(),
                            .created = today(), .fit = r.fit, .held_out = r.held_out,
                            .layer_totals = r.layer_totals});
    if (opt.json) return print_json(out, to_json(r, file.provenance.gpu, path.string()));
    out << file.provenance.gpu_name << " (" << file.provenance.gpu << "): " << sweep.size() << " sweep GEMMs, "
        << layers.size() << " layers\n"
        << "fitted: peak_fraction " << fixed(p.peak_fraction, 3) << ", tile " << p.tile_m << "x" << p.tile_n
        << ", k_half " << fixed(p.k_half, 1) << ", memory_efficiency " << fixed(p.memory_efficiency, 3)
        << (r.calibration.memory_efficiency_fitted ? "" : " (not identified by the data: kept)")
        << ", launch " << fixed(p.launch_overhead.value() * 1e6, 2) << " us\n"
        << "fit (sweep):       " << summary_text(r.fit) << "\n"
        << "held out (sweep):  " << summary_text(r.held_out) << "\n";
    if (!layers.empty()) {
        out << "layer GEMMs:       " << summary_text(r.layer_gemms) << "\n";
        table t({"layer", "measured (us)", "predicted (us)", "error"});
        for (const auto& l : r.layers)
            t.add_row({l.name, fixed(l.measured.value() * 1e6, 1), fixed(l.predicted.value() * 1e6, 1),
                       fixed(100 * l.rel_error, 1) + " %"});
        t.print(out);
    }
    out << "wrote " << path.string() << "\n";
}

const command_registration calibrate_registration{50, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<calibrate_options>();
    auto* sub = app.add_subcommand("calibrate", "Fit the kernel model to a trainperf-cublaslt measurement file");
    sub->add_option("measurements", opt->measurements, "JSON written by trainperf-cublaslt --sweep")->required();
    sub->add_option("--out", opt->output, "Calibration file to write (default: <gpu>.calibration.json beside it)");
    sub->add_flag("--json", opt->json, "Print one JSON object");
    sub->callback([opt, &out] { run(*opt, out); });
}};

}  // namespace
}  // namespace trainperf::cli
