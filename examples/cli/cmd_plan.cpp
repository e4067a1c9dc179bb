// `trainperf plan`: the fastest layouts that fit, for a model on N GPUs and a global
// batch, found by predicting every valid layout.
#include "cli.hpp"
#include "parse_units.hpp"
#include "table_output.hpp"
#include "training_flags.hpp"

#include <trainperf/io/plan_json.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/search/layout_search.hpp>
#include <trainperf/io/report_table.hpp>
#include <trainperf/search/training_plan.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <ostream>
#include <string>

#include <unistd.h>

namespace trainperf::cli {
namespace {

struct plan_flags {
    training_flags flags;
    long long global_batch = 0;
    int max_micro_batch = 0;
    unsigned threads = 0;
    std::size_t top = 10;
    bool offload = false, json = false, csv = false;
    std::string train_tokens;
    double deadline_days = 0, price_per_gpu_hour = 0;
    std::string currency = "USD";
    int max_gpus = 0;
};

std::string days_text(const training_run& run) { return fixed(run.days(), 1); }
std::string mwh_text(const training_run& run) { return fixed(run.energy.value() / joules_per_kwh / 1e3, 1); }

// --train-tokens: every GPU count up to --max-gpus, the fastest layout of each, and
// the cheapest and fastest that meet the deadline.
void run_training_plan(const plan_flags& opt, const CLI::App* sub, std::ostream& out) {
    if (sub->get_option("--gpus")->count() > 0)
        throw usage_error("--gpus: with --train-tokens the GPU count is searched; give --max-gpus instead");
    if (sub->get_option("--top")->count() > 0)
        throw usage_error("--top: with --train-tokens each GPU count shows its fastest layout; leave --top out");
    if (opt.max_gpus == 0) throw usage_error("--max-gpus: required with --train-tokens (the largest GPU count tried)");
    if (sub->get_option("--currency")->count() > 0 && opt.price_per_gpu_hour == 0)
        throw usage_error("--currency: needs --price-per-gpu-hour");
    training_plan_request request;
    request.layouts.base = opt.flags.build().get();
    request.layouts.global_batch = opt.global_batch;
    request.layouts.max_micro_batch = opt.max_micro_batch;
    request.layouts.allow_offload = opt.offload;
    request.train_tokens = parse_count("--train-tokens", opt.train_tokens);
    request.deadline_days = opt.deadline_days;
    request.price_per_gpu_hour = opt.price_per_gpu_hour;
    request.gpus_per_node = opt.flags.gpus_per_node > 0 ? opt.flags.gpus_per_node : default_gpus_per_node;
    request.max_gpus = opt.max_gpus;
    plan_options options;
    options.threads = opt.threads;
    const training_plan result = plan_training(request, options);
    if (std::none_of(result.counts.begin(), result.counts.end(), [](const gpu_count_plan& c) { return c.best; }))
        answer_does_not_fit();
    const auto& s = request.layouts.base;
    const command_of command = predict_command_of(opt.flags);
    if (opt.csv) return print_csv(out, training_plan_table(request, result));
    if (opt.json) {
        print_json(out, to_json(request, result, predict_command_of(opt.flags)));
        return;
    }
    out << "trainperf plan: " << s.model.name << " on " << s.cluster.gpu.name << " (" << s.framework.name << ", "
        << s.precision.name << ", " << to_string(s.optimizer) << "), " << count_text(request.train_tokens)
        << " tokens, global batch " << request.layouts.global_batch << " x seq " << sequence_length(s);
    if (request.deadline_days > 0) out << ", deadline " << fixed(request.deadline_days, 1) << " days";
    out << "\nGPU counts tried: powers of two up to a node of " << request.gpus_per_node
        << ", then 1, 2, 3, 4, 6, 8, 12, ... nodes, up to " << request.max_gpus << "; the fastest layout of each ("
        << fixed(result.wall.value(), 2) << " s)\n\n";
    table t({"GPUs", "tokens/s", "MFU", "days", "GPU-hours", "energy (MWh)",
             request.price_per_gpu_hour > 0 ? "cost (" + opt.currency + ")" : "cost", "meets deadline",
             "fastest layout"});
    for (const gpu_count_plan& c : result.counts) {
        if (!c.best) {
            t.add_row({std::to_string(c.gpus), "-", "-", "-", "-", "-", "-", "-", "no layout fits"});
            continue;
        }
        const step_report& r = c.best->report;
        t.add_row({std::to_string(c.gpus), fixed(r.tokens_per_second, 0), fixed(100 * r.mfu, 1) + " %",
                   days_text(*c.run), fixed(c.run->gpu_hours, 0), mwh_text(*c.run),
                   request.price_per_gpu_hour > 0 ? fixed(c.run->cost, 0) : "-", c.meets_deadline ? "yes" : "no",
                   describe(c.best->layout) + describe_changes(c.best->switches, s.framework)});
    }
    t.print(out);
    const auto show = [&](const char* what, std::optional<std::size_t> at) {
        if (!at) return;
        const gpu_count_plan& c = result.counts[*at];
        out << "\n" << what << ": " << gpus_text(c.gpus) << ", " << describe(c.best->layout)
            << describe_changes(c.best->switches, s.framework) << "\n  " << days_text(*c.run)
            << " days, " << fixed(c.run->gpu_hours, 0) << " GPU-hours, " << mwh_text(*c.run) << " MWh";
        if (request.price_per_gpu_hour > 0)
            out << ", cost " << fixed(c.run->cost, 0) << " " << opt.currency << " (GPU-hours x price)";
        out << "\n  " << command(setup_of(request, c)) << "\n";
    };
    if (!result.cheapest) {
        out << "\nNo GPU count up to " << request.max_gpus << " meets the deadline"
            << (request.deadline_days > 0 ? "" : " (no layout fits)") << ": try a larger --max-gpus"
            << (request.deadline_days > 0 ? " or a later --deadline-days" : "") << ".\n";
    } else {
        show(request.deadline_days > 0 ? "Cheapest that meets the deadline" : "Cheapest", result.cheapest);
        show(request.deadline_days > 0 ? "Fastest that meets the deadline" : "Fastest", result.fastest);
    }
    out << "\nEnergy: the GPUs' board power (TDP) for the whole run. ASSUMPTION: every GPU draws its board power\n"
           "throughout; an upper bound for the GPUs alone, without hosts, network or cooling. MWh = 1e6 Wh.\n";
}

void run(const plan_flags& opt, const CLI::App* sub, std::ostream& out) {
    require(opt.top >= 1 && opt.top <= 1000, "top", opt.top, "must be between 1 and 1000");
    require(opt.threads <= 1024, "threads", opt.threads, "must be at most 1024 (0: one per hardware thread)");
    check_currency(opt.currency);
    if (sub->get_option("--train-tokens")->count() > 0) return run_training_plan(opt, sub, out);
    for (const char* flag : {"--deadline-days", "--price-per-gpu-hour", "--max-gpus", "--currency"})
        if (sub->get_option(flag)->count() > 0) throw usage_error(std::string(flag) + ": needs --train-tokens");
    plan_request request;
    request.base = opt.flags.build().get();
    request.gpus = request.base.layout.gpus();
    request.global_batch = opt.global_batch;
    request.max_micro_batch = opt.max_micro_batch;
    request.allow_offload = opt.offload;
    plan_options options;
    options.top = opt.top;
    options.threads = opt.threads;
    // A search that runs longer than a second shows how far it is, on stderr when it is
    // a terminal (a file or a pipe gets no carriage returns).
    bool progress_shown = false;
    if (isatty(fileno(stderr)))
        options.progress = [&progress_shown](double fraction) {
            std::fprintf(stderr, "\rtrainperf plan: %3.0f %% of the layouts searched", 100.0 * fraction);
            progress_shown = true;
        };
    const plan_result result = plan(request, options);
    if (progress_shown) std::fprintf(stderr, "\r%60s\r", "");
    // No layout fits: "does not fit". No layout reaches the global batch at all is another
    // answer (the text says why), not a memory verdict.
    if (result.best.empty() && result.candidates > 0) answer_does_not_fit();
    const auto& s = request.base;
    if (opt.csv) {
        print_csv(out, plan_table(request, result));
        return;
    }
    if (opt.json) {
        print_json(out, to_json(request, result, predict_command_of(opt.flags)));
        return;
    }
    out << "trainperf plan: " << s.model.name << " on " << request.gpus << " x " << s.cluster.gpu.name << " ("
        << s.framework.name << ", " << s.precision.name << ", " << to_string(s.optimizer)
        << (s.finetune.freezes_base() ? ", " + std::string(to_string(s.finetune.mode)) + " rank " +
                                            std::to_string(s.finetune.rank) + " on " +
                                            lora_targets_text(s.finetune.targets)
                                      : std::string())
        << "), global batch "
        << request.global_batch << " x seq " << sequence_length(s) << "\n"
        << result.candidates << " candidate layouts: " << result.evaluated << " predicted, " << result.pruned
        << " skipped by a bound (cannot fit or cannot enter the top " << opt.top << "), " << result.fitting
        << " of the predicted fit in memory; " << fixed(result.wall.value(), 3) << " s\n\n";
    if (result.best.empty()) {
        if (result.candidates == 0)
            out << "No layout of " << gpus_text(request.gpus) << " reaches a global batch of " << request.global_batch
                << " exactly: it must be a multiple of the data-parallel size dp = gpus / (tp x cp x pp).\n";
        else
            out << "No layout fits. Try more GPUs, --offload, or a smaller global batch.\n";
        return;
    }
    table t({"layout", "step (ms)", "tokens/s", "MFU", "memory (GiB)", "bottleneck"});
    int rank = 1;
    for (const auto& c : result.best)
        t.add_row({std::to_string(rank++) + ". " + describe(c.layout) + describe_changes(c.switches, s.framework),
                   fixed(c.report.step_time.value() * 1e3, 1),
                   fixed(c.report.tokens_per_second, 0), fixed(100 * c.report.mfu, 1) + " %",
                   fixed(to_gib(c.report.memory.total()).value(), 1), std::string(to_string(c.report.bottleneck))});
    t.print(out);
    out << "\nThe same layouts as predict commands (the step of each, with its breakdown):\n";
    rank = 1;
    for (const auto& c : result.best)
        out << rank++ << ". " << predict_command(opt.flags.run_text(setup_of(s, c)), c.layout) << "\n";
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
    auto* json = sub->add_flag("--json", opt->json, "Print one JSON object");
    sub->add_flag("--csv", opt->csv, "Print the layouts kept as CSV: rank and every column of a step row")
        ->excludes(json);
    sub->add_option("--train-tokens", opt->train_tokens,
                    "Plan a whole run on this many tokens (e.g. 2T): search GPU counts up to --max-gpus as well as "
                    "layouts; print the cheapest and the fastest that meet --deadline-days");
    sub->add_option("--deadline-days", opt->deadline_days, "With --train-tokens: the run must end within this many days");
    sub->add_option("--price-per-gpu-hour", opt->price_per_gpu_hour, "With --train-tokens: cost per GPU-hour");
    sub->add_option("--currency", opt->currency,
                    "With --price-per-gpu-hour: its currency, an ISO 4217 code printed beside every cost (default USD)");
    sub->add_option("--max-gpus", opt->max_gpus, "With --train-tokens: the largest GPU count tried (at most 65536)");
    sub->callback([opt, sub, &out] { run(*opt, sub, out); });
}};

}  // namespace
}  // namespace trainperf::cli
