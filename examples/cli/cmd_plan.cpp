// `trainperf plan`: the fastest layouts that fit, for a model on N GPUs and a global
// batch, found by predicting every valid layout.
#include "cli.hpp"
#include "training_flags.hpp"

#include <trainperf/io/plan_json.hpp>
#include <trainperf/layout_text.hpp>
#include <trainperf/planner.hpp>

#include <cstdio>
#include <iostream>
#include <memory>
#include <ostream>
#include <string>

namespace trainperf::cli {
namespace {

struct plan_flags {
    training_flags flags;
    long long global_batch = 0;
    int max_micro_batch = 0;
    unsigned threads = 0;
    std::size_t top = 10;
    bool offload = false, json = false;
};

void run(const plan_flags& opt, std::ostream& out) {
    require(opt.top >= 1 && opt.top <= 1000, "top", opt.top, "must be between 1 and 1000");
    require(opt.threads <= 1024, "threads", opt.threads, "must be at most 1024 (0: one per hardware thread)");
    plan_request request;
    request.base = opt.flags.build();
    request.gpus = request.base.layout.gpus();
    request.global_batch = opt.global_batch;
    request.max_micro_batch = opt.max_micro_batch;
    request.allow_offload = opt.offload;
    plan_options options;
    options.top = opt.top;
    options.threads = opt.threads;
    // A search that runs longer than a second shows how far it is, on stderr.
    bool progress_shown = false;
    options.progress = [&progress_shown](double fraction) {
        std::fprintf(stderr, "\rtrainperf plan: %3.0f %% of the layouts searched", 100.0 * fraction);
        progress_shown = true;
    };
    const plan_result result = plan(request, options);
    if (progress_shown) std::fprintf(stderr, "\r%60s\r", "");
    const auto& s = request.base;
    // Each layout found as the predict command that reproduces its step.
    const std::string run = opt.flags.run_text(s);
    if (opt.json) {
        nlohmann::json j = to_json(request, result);
        for (std::size_t i = 0; i < result.best.size(); ++i)
            j["best"][i]["predict_command"] = predict_command(run, result.best[i].layout);
        print_json(out, j);
        return;
    }
    out << "trainperf plan: " << s.model.name << " on " << request.gpus << " x " << s.cluster.gpu.name << " ("
        << s.framework.name << ", " << s.precision.name << ", " << to_string(s.optimizer) << "), global batch "
        << request.global_batch << " x seq " << sequence_length(s) << "\n"
        << result.candidates << " candidate layouts: " << result.evaluated << " predicted, " << result.pruned
        << " skipped by a bound (cannot fit or cannot enter the top " << opt.top << "), " << result.fitting
        << " of the predicted fit in memory; " << fixed(result.wall.value(), 3) << " s\n\n";
    if (result.best.empty()) {
        if (result.candidates == 0)
            out << "No layout of " << request.gpus << " GPUs reaches a global batch of " << request.global_batch
                << " exactly: it must be a multiple of the data-parallel size dp = gpus / (tp x pp).\n";
        else
            out << "No layout fits. Try more GPUs, --offload, or a smaller global batch.\n";
        return;
    }
    table t({"layout", "step (ms)", "tokens/s", "MFU", "memory (GiB)", "bottleneck"});
    int rank = 1;
    for (const auto& c : result.best)
        t.add_row({std::to_string(rank++) + ". " + describe(c.layout), fixed(c.report.step_time.value() * 1e3, 1),
                   fixed(c.report.tokens_per_second, 0), fixed(100 * c.report.mfu, 1) + " %",
                   fixed(to_gib(c.report.memory.total()).value(), 1), std::string(to_string(c.report.bottleneck))});
    t.print(out);
    out << "\nThe same layouts as predict commands (the step of each, with its breakdown):\n";
    rank = 1;
    for (const auto& c : result.best) out << rank++ << ". " << predict_command(run, c.layout) << "\n";
}

const command_registration registration{32, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<plan_flags>();
    auto* sub = app.add_subcommand("plan", "Best layouts for a model on N GPUs (exhaustive search)");
    opt->flags.add_to(sub, true, flag_set::system_only);
    sub->add_option("--global-batch", opt->global_batch, "Samples per optimizer step")->required();
    sub->add_option("--max-micro-batch", opt->max_micro_batch,
                    "Largest micro-batch tried (default 0: every divisor of the per-replica batch)");
    sub->add_option("--threads", opt->threads, "Search threads (default 0: one per hardware thread)");
    sub->add_option("--top", opt->top, "How many layouts to show (default 10)");
    sub->add_flag("--offload", opt->offload, "Also try optimizer offload to the host");
    sub->add_flag("--json", opt->json, "Print one JSON object");
    sub->callback([opt, &out] { run(*opt, out); });
}};

}  // namespace
}  // namespace trainperf::cli
