// `trainperf pipeline`: a training step as four stages (data, PCIe, compute, sync),
// run sequentially or prefetched (cost/input_pipeline.hpp).
#include "cli.hpp"
#include "parse_units.hpp"

#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/io/gpu_json.hpp>
#include <trainperf/cost/input_pipeline.hpp>
#include <trainperf/io/pipeline_json.hpp>

#include <limits>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>

namespace trainperf::cli {
namespace {

void print_pipeline(std::ostream& out, const stage_times& t, const pipeline_report& r) {
    const auto ms = [](seconds s) { return fixed(s.value() * 1e3, 3); };
    const auto pct = [](double x) { return fixed(100 * x, 1); };
    cli::table tab({"stage", "time (ms)", "share of sequential step (%)"});
    for (auto s : {pipeline_stage::data, pipeline_stage::pcie, pipeline_stage::compute,
                   pipeline_stage::sync})
        tab.add_row({std::string(to_string(s)), ms(stage_time(t, s)),
                     pct(stage_time(t, s) / r.sequential)});
    tab.print(out);
    out << "  sequential step (sum of stages):      " << ms(r.sequential)
        << " ms, GPU utilisation " << pct(r.gpu_utilization_sequential) << " % (compute / step), idle "
        << pct(r.idle_share) << " %\n"
        << "  prefetched step (slowest stage):      " << ms(r.prefetched)
        << " ms, GPU utilisation " << pct(r.gpu_utilization_prefetched) << " %\n"
        << "  bottleneck:                           " << to_string(r.bottleneck) << " ("
        << ms(stage_time(t, r.bottleneck)) << " ms)\n";
}

struct pipeline_options {
    std::optional<double> data_ms, pcie_ms, sync_ms;
    double compute_ms = 0;
    std::string batch_bytes, storage_bandwidth, host_bandwidth, gpu, gpu_file;
    bool json = false;
};

// A stage time given in ms: finite and not negative, named by its flag.
seconds flag_ms(std::string_view flag, double ms) {
    if (!(ms >= 0 && ms < std::numeric_limits<double>::infinity())) {
        std::ostringstream why;
        why << flag << " = " << ms << ": must be a finite, non-negative time in ms";
        throw usage_error(why.str());
    }
    return milliseconds_of(ms);
}

void run(const pipeline_options& o, std::ostream& out) {
    stage_times t;
    t.compute = flag_ms("--compute-ms", o.compute_ms);
    t.sync = flag_ms("--sync-ms", o.sync_ms.value_or(0.0));

    const bool derive_data = !o.storage_bandwidth.empty();
    const bool gpu_given = !o.gpu.empty() || !o.gpu_file.empty();
    const bool derive_pcie = !o.host_bandwidth.empty() || gpu_given;
    if (!derive_data && !derive_pcie && !o.batch_bytes.empty())
        throw usage_error("--batch-bytes: used only to derive stage times with --storage-bandwidth, "
                          "--host-bandwidth, --gpu or --gpu-file");
    if ((derive_data || derive_pcie) && o.batch_bytes.empty())
        throw usage_error("--storage-bandwidth, --host-bandwidth and --gpu derive stage times "
                          "from --batch-bytes; give it");
    if (derive_data && o.data_ms)
        throw usage_error("give either --data-ms or --storage-bandwidth, not both");
    if (derive_pcie && o.pcie_ms)
        throw usage_error("give either --pcie-ms or --host-bandwidth/--gpu, not both");
    if (!o.host_bandwidth.empty() && gpu_given)
        throw usage_error("give either --host-bandwidth or --gpu/--gpu-file, not both");

    // Parsed only when a derived stage needs it (checked above).
    const auto batch = [&o] { return parse_bytes("--batch-bytes", o.batch_bytes); };
    t.data = derive_data ? data_loading_time(
                               batch(), parse_byte_rate("--storage-bandwidth", o.storage_bandwidth))
                         : flag_ms("--data-ms", o.data_ms.value_or(0.0));
    if (!o.host_bandwidth.empty()) {
        link_spec host{.kind = link_kind::pcie,
                       .per_direction = parse_byte_rate("--host-bandwidth", o.host_bandwidth)};
        t.pcie = host_to_device_time(batch(), host);
    } else if (gpu_given) {
        const gpu_spec g = o.gpu_file.empty() ? lookup_gpu(o.gpu) : io::load_gpu_file(o.gpu_file);
        t.pcie = host_to_device_time(batch(), g);
    } else {
        t.pcie = flag_ms("--pcie-ms", o.pcie_ms.value_or(0.0));
    }

    const pipeline_report r = analyse(t);
    if (o.json) {
        print_json(out, to_json(t, r));
        return;
    }
    out << "Training step as four stages (sequential: one after another; prefetched: the next\n"
           "batch loads and copies while this one computes, so the slowest stage sets the pace)\n";
    print_pipeline(out, t, r);
}

const command_registration pipeline_registration{42, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<pipeline_options>();
    auto* sub = app.add_subcommand(
        "pipeline", "Four-stage training step: data loading, host->device, compute, gradient sync");
    sub->add_option("--data-ms", opt->data_ms, "data loading time per step, ms (default 0)");
    sub->add_option("--pcie-ms", opt->pcie_ms, "host->device copy time per step, ms (default 0)");
    sub->add_option("--compute-ms", opt->compute_ms, "forward+backward time per step, ms")->required();
    sub->add_option("--sync-ms", opt->sync_ms, "gradient sync time per step, ms (default 0)");
    sub->add_option("--batch-bytes", opt->batch_bytes,
                    "batch size in bytes with a unit (e.g. 512MB), to derive data/pcie times");
    sub->add_option("--storage-bandwidth", opt->storage_bandwidth,
                    "sustained storage read rate, e.g. 3GB/s: data = batch / rate");
    sub->add_option("--host-bandwidth", opt->host_bandwidth,
                    "host->device bandwidth per direction, e.g. 25GB/s: pcie = batch / rate");
    sub->add_option("--gpu", opt->gpu, "derive the pcie stage from this catalog GPU's host link")
        ->excludes(sub->add_option("--gpu-file", opt->gpu_file, "... or from this GPU description file's"));
    sub->add_flag("--json", opt->json, "print one JSON object");
    sub->callback([opt, &out] { run(*opt, out); });
}};
}  // namespace

}  // namespace trainperf::cli
