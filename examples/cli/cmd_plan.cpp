// `trainperf plan`: the fastest layouts that fit, for a model on N GPUs and a global
// batch, found by predicting every valid layout of the framework (with --framework any,
// of every framework, search/framework_search.hpp). By default one layout per family
// (search/layout_search.hpp same_family) in text that fits 120 columns; --wide every
// layout in full with its predict command.
#include "cli.hpp"
#include "parse_units.hpp"
#include "table_output.hpp"
#include "training_flags.hpp"

#include <trainperf/io/plan_json.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/search/framework_search.hpp>
#include <trainperf/search/layout_search.hpp>
#include <trainperf/io/report_table.hpp>
#include <trainperf/search/batch_suggestion.hpp>
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
    bool offload = false, json = false, csv = false, wide = false, no_fold = false, borderline = false;
    std::string train_tokens;
    double deadline_days = 0, price_per_gpu_hour = 0;
    std::string currency = "USD";
    int max_gpus = 0;
};

std::string days_text(const training_run& run) { return fixed(run.days(), 1); }
std::string mwh_text(const training_run& run) { return fixed(run.energy.value() / joules_per_kwh / 1e3, 1); }

std::string cost_header(const training_plan_request& request, const std::string& currency) {
    return request.price_per_gpu_hour > 0 ? "cost (" + currency + ")" : "cost";
}

// Why a GPU count has no layout: none fits in memory, or none reaches the global batch.
std::string no_layout_text(const gpu_count_plan& c) {
    return c.reaches_global_batch ? "no layout fits" : "no layout reaches the global batch";
}

// --wide: every count's run and its fastest layout in full, in one table.
void print_counts_wide(const training_plan_request& request, const training_plan& result,
                       const std::string& currency, std::ostream& out) {
    table t({"GPUs", "tokens/s", "MFU", "days", "GPU-hours", "energy (MWh)", cost_header(request, currency),
             "meets deadline", "fastest layout"});
    for (const gpu_count_plan& c : result.counts) {
        if (!c.best) {
            t.add_row({std::to_string(c.gpus), "-", "-", "-", "-", "-", "-", "-", no_layout_text(c)});
            continue;
        }
        const step_report& r = c.best->report;
        t.add_row({std::to_string(c.gpus), fixed(r.tokens_per_second, 0), fixed(100 * r.mfu, 1) + " %",
                   days_text(*c.run), fixed(c.run->gpu_hours, 0), mwh_text(*c.run),
                   request.price_per_gpu_hour > 0 ? fixed(c.run->cost, 0) : "-", c.meets_deadline ? "yes" : "no",
                   describe(c.best->layout) + describe_changes(*c.best, request.layouts.base.framework,
                                                               request.layouts.base.cluster.order)});
    }
    t.print(out);
}

// The columns of a layout's step in the narrow tables; tokens/s only `with_tokens`.
std::vector<std::string> step_headers(bool with_tokens) {
    if (!with_tokens) return {"step (ms)", "MFU", "mem (GiB)", "bottleneck"};
    return {"step (ms)", "tokens/s", "MFU", "mem (GiB)", "bottleneck"};
}
std::vector<std::string> step_cells(const step_report& r, bool with_tokens) {
    std::vector<std::string> cells{fixed(r.step_time.value() * 1e3, 1), fixed(100 * r.mfu, 1) + " %",
                                   fixed(to_gib(r.memory.total()).value(), 1), std::string(to_string(r.bottleneck))};
    if (with_tokens) cells.insert(cells.begin() + 1, fixed(r.tokens_per_second, 0));
    return cells;
}

template <class T>
void append(std::vector<T>& to, const std::vector<T>& more) {
    to.insert(to.end(), more.begin(), more.end());
}

// A layout printed: its label (a rank, a GPU count), the candidate and the framework it
// runs with (the request's, or with --framework any its own).
struct layout_row {
    std::string label;
    const plan_candidate* candidate;
    const framework_profile* framework;
    rank_order request_order = rank_order::tp_dp_pp;  // the order the request asked for
};

// Layouts in narrow columns, each row after its label, the rest of each beside the table
// or below it, then what the short headers mean. With `with_framework` (a search across
// frameworks) each row's framework follows its label, in place of tokens/s: every row
// of a plan runs the same tokens per step, so its tokens/s follows from its step time.
void print_narrow_table(const std::string& label_header, const std::vector<layout_row>& layouts,
                        bool with_framework, std::ostream& out) {
    const bool with_cp =
        std::any_of(layouts.begin(), layouts.end(), [](const layout_row& l) { return l.candidate->layout.cp > 1; });
    // An MoE model's layouts: their expert-parallel sizes.
    const bool with_experts = std::any_of(layouts.begin(), layouts.end(), [](const layout_row& l) {
        return l.candidate->layout.ep > 1 || l.candidate->layout.etp > 0;
    });
    std::vector<std::vector<std::string>> rows{{label_header}};
    if (with_framework) rows[0].emplace_back("framework");
    append(rows[0], layout_headers(with_cp, with_experts));
    append(rows[0], step_headers(!with_framework));
    std::vector<std::string> rest;
    for (const auto& [label, c, fw, order] : layouts) {
        rows.push_back({label});
        if (with_framework) rows.back().emplace_back(fw->name);
        append(rows.back(), layout_cells(c->layout, with_cp, with_experts));
        append(rows.back(), step_cells(c->report, !with_framework));
        rest.push_back(layout_rest(c->layout, describe_changes(*c, *fw, order), fw->overlap_data_parallel_sync));
    }
    print_with_rest(out, std::move(rows), rest, "other");
    out << wrap_words(layout_legend(with_experts)) << "\n";
    if (with_framework)
        out << wrap_words("framework: its --framework; tokens/s (the step's tokens over its time) is in --wide, "
                          "--json and --csv")
            << "\n";
}

// Narrow: the counts' runs in one table, their fastest layouts in narrow columns in another.
void print_counts_narrow(const training_plan_request& request, const training_plan& result,
                         const std::string& currency, std::ostream& out) {
    table runs({"GPUs", "days", "GPU-hours", "energy (MWh)", cost_header(request, currency), "meets deadline"});
    std::vector<layout_row> layouts;
    for (const gpu_count_plan& c : result.counts) {
        if (!c.best) {
            runs.add_row({std::to_string(c.gpus), "-", "-", "-", "-", no_layout_text(c)});
            continue;
        }
        runs.add_row({std::to_string(c.gpus), days_text(*c.run), fixed(c.run->gpu_hours, 0), mwh_text(*c.run),
                      request.price_per_gpu_hour > 0 ? fixed(c.run->cost, 0) : "-", c.meets_deadline ? "yes" : "no"});
        layouts.push_back(
            {std::to_string(c.gpus), &*c.best, &request.layouts.base.framework, request.layouts.base.cluster.order});
    }
    runs.print(out);
    out << "\nThe fastest layout of each GPU count:\n";
    print_narrow_table("GPUs", layouts, false, out);
}

// --global-batch is required; without it the error suggests one for the run's sequence,
// a multiple of `gpus` (search/batch_suggestion.hpp).
void require_global_batch(const CLI::App* sub, const training_setup& s, int gpus, const std::string& multiple_of) {
    if (sub->get_option("--global-batch")->count() > 0) return;
    const int seq = sequence_length(s);
    const long long batch = suggested_global_batch(seq, gpus);
    throw usage_error("--global-batch: required (samples per optimizer step); e.g. --global-batch " +
                      std::to_string(batch) + ": " + count_text(double(batch) * seq) + " tokens per step at seq " +
                      std::to_string(seq) + " (about " + count_text(suggested_tokens_per_step) +
                      " is usual in pre-training), a multiple of " + multiple_of);
}

// --train-tokens: every GPU count up to --max-gpus, the fastest layout of each, and
// the cheapest and fastest that meet the deadline.
void run_training_plan(const plan_flags& opt, const CLI::App* sub, std::ostream& out) {
    if (sub->get_option("--gpus")->count() > 0)
        throw usage_error("--gpus: with --train-tokens the GPU count is searched; give --max-gpus instead");
    if (sub->get_option("--top")->count() > 0)
        throw usage_error("--top: with --train-tokens each GPU count shows its fastest layout; leave --top out");
    if (opt.no_fold)
        throw usage_error("--no-fold: with --train-tokens each GPU count shows its fastest layout; nothing is folded");
    if (sub->get_option("--currency")->count() > 0 && opt.price_per_gpu_hour == 0)
        throw usage_error("--currency: needs --price-per-gpu-hour");
    training_plan_request request;
    request.layouts.base = opt.flags.build_for_search();
    validate_search_base(request.layouts.base);  // before the checks below read it (the plan checks it again)
    // The node of the system the GPU is sold in unless given (a GB200/GB300 tray holds 4).
    const int node = opt.flags.gpus_per_node > 0 ? opt.flags.gpus_per_node
                                                 : standard_gpus_per_node(request.layouts.base.cluster.gpu);
    require_global_batch(sub, request.layouts.base, node, "a node's " + gpus_text(node));
    request.layouts.global_batch = opt.global_batch;
    request.layouts.max_micro_batch = opt.max_micro_batch;
    request.layouts.allow_offload = opt.offload;
    request.train_tokens = parse_count("--train-tokens", opt.train_tokens);
    request.deadline_days = opt.deadline_days;
    request.price_per_gpu_hour = opt.price_per_gpu_hour;
    request.currency = opt.currency;
    request.gpus_per_node = node;
    if (sub->get_option("--max-gpus")->count() > 0) request.max_gpus = opt.max_gpus;
    plan_options options;
    options.threads = opt.threads;
    const training_plan result = plan_training(request, options);
    // "Does not fit" only where some count's layouts reach the batch and none fits.
    if (std::none_of(result.counts.begin(), result.counts.end(), [](const gpu_count_plan& c) { return c.best; }) &&
        std::any_of(result.counts.begin(), result.counts.end(),
                    [](const gpu_count_plan& c) { return c.reaches_global_batch; }))
        answer_does_not_fit();
    const auto& s = request.layouts.base;
    const command_of command = predict_command_of(opt.flags);
    if (opt.csv) return print_csv(out, training_plan_table(request, result));
    if (opt.json) {
        print_json(out, to_json(request, result, predict_command_of(opt.flags)));
        return;
    }
    // A line as it is (--wide), else wrapped at 120 columns; after `lead` spaces.
    const auto line = [&](const std::string& text, std::size_t lead = 0) {
        out << std::string(lead, ' ')
            << (opt.wide ? text : wrap_words(text, lead + 2, terminal_columns - lead)) << "\n";
    };
    std::string heading = "trainperf plan: " + std::string(s.model.name) + " on " + std::string(s.cluster.gpu.name) +
                          " (" + std::string(s.framework.name) + ", " + std::string(s.precision.name) + ", " +
                          std::string(to_string(s.optimizer)) + "), " + count_text(request.train_tokens) +
                          " tokens, global batch " + std::to_string(request.layouts.global_batch) + " x seq " +
                          std::to_string(sequence_length(s));
    if (request.deadline_days > 0) heading += ", deadline " + fixed(request.deadline_days, 1) + " days";
    line(heading);
    line("GPU counts tried: powers of two up to a node of " + std::to_string(request.gpus_per_node) +
         ", then 1, 2, 3, 4, 6, 8, 12, ... nodes, up to " + std::to_string(request.max_gpus) +
         "; the fastest layout of each (" + fixed(result.wall.value(), 2) + " s)");
    out << "\n";
    if (opt.wide) print_counts_wide(request, result, opt.currency, out);
    else print_counts_narrow(request, result, opt.currency, out);
    const auto show = [&](const char* what, std::optional<std::size_t> at) {
        if (!at) return;
        const gpu_count_plan& c = result.counts[*at];
        std::string run = days_text(*c.run) + " days, " + fixed(c.run->gpu_hours, 0) + " GPU-hours, " +
                          mwh_text(*c.run) + " MWh";
        if (request.price_per_gpu_hour > 0)
            run += ", cost " + fixed(c.run->cost, 0) + " " + opt.currency + " (GPU-hours x price)";
        out << "\n";
        line(std::string(what) + ": " + gpus_text(c.gpus) + ", " + describe(c.best->layout) +
             describe_changes(*c.best, s.framework, s.cluster.order));
        line(run, 2);
        if (opt.wide) out << "  " << command(setup_of(request, c)) << "\n";
        else out << wrap_command(command(setup_of(request, c))) << "\n";
    };
    if (!result.cheapest) {
        out << "\n";
        line("No GPU count up to " + std::to_string(request.max_gpus) + " meets the deadline" +
             (request.deadline_days > 0 ? "" : " (no layout fits)") + ": try a larger --max-gpus" +
             (request.deadline_days > 0 ? " or a later --deadline-days" : "") + ".");
    } else {
        show(request.deadline_days > 0 ? "Cheapest that meets the deadline" : "Cheapest", result.cheapest);
        show(request.deadline_days > 0 ? "Fastest that meets the deadline" : "Fastest", result.fastest);
    }
    out << "\nEnergy: the GPUs' board power (TDP) for the whole run. ASSUMPTION: every GPU draws its board power\n"
           "throughout; an upper bound for the GPUs alone, without hosts, network or cooling. MWh = 1e6 Wh.\n";
    if (!opt.wide) out << "--wide: each GPU count's layout in full in one table.\n";
}

// The layouts a search kept, fastest first, each with its framework and the setup
// predict rebuilds; `across`: found by a search across frameworks.
struct planned_layouts {
    std::vector<layout_row> rows;
    std::vector<training_setup> setups;
    bool across = false, folded = false;
};

planned_layouts planned_of(const plan_request& request, const plan_result& result) {
    planned_layouts p{.folded = result.folded};
    for (const plan_candidate& c : result.best) {
        p.rows.push_back({std::to_string(p.rows.size() + 1), &c, &request.base.framework, request.base.cluster.order});
        p.setups.push_back(setup_of(request.base, c));
    }
    return p;
}

planned_layouts planned_of(const plan_request& request, const framework_plan_result& result) {
    planned_layouts p{.across = true, .folded = result.folded};
    for (std::size_t i = 0; i < result.best.size(); ++i) {
        p.rows.push_back({std::to_string(i + 1), &result.best[i], &result.framework(i), request.base.cluster.order});
        p.setups.push_back(setup_of(request, result, i));
    }
    return p;
}

// --wide: each layout in full (after its framework, across frameworks), then each as its
// predict command, on long lines.
void print_layouts_wide(const plan_flags& opt, const planned_layouts& p, std::ostream& out) {
    table t({"layout", "step (ms)", "tokens/s", "MFU", "memory (GiB)", "bottleneck"});
    for (const auto& [label, c, fw, order] : p.rows)
        t.add_row({label + ". " + (p.across ? std::string(fw->name) + ": " : "") + describe(c->layout) +
                       describe_changes(*c, *fw, order),
                   fixed(c->report.step_time.value() * 1e3, 1), fixed(c->report.tokens_per_second, 0),
                   fixed(100 * c->report.mfu, 1) + " %", fixed(to_gib(c->report.memory.total()).value(), 1),
                   std::string(to_string(c->report.bottleneck))});
    t.print(out);
    out << "\nThe same layouts as predict commands (the step of each, with its breakdown):\n";
    for (std::size_t i = 0; i < p.rows.size(); ++i)
        out << p.rows[i].label << ". " << predict_command(opt.flags.run_text(p.setups[i]), p.setups[i].layout)
            << "\n";
}

// The default: the layouts in narrow columns with the rest of each beside or below them,
// the fastest as a predict command wrapped with line continuations, and how to see more;
// every line within 120 columns.
void print_layouts_narrow(const plan_flags& opt, const planned_layouts& p, std::ostream& out) {
    print_narrow_table("#", p.rows, p.across, out);
    out << "\nThe fastest layout as a predict command (its step, with the breakdown):\n"
        << wrap_command(predict_command(opt.flags.run_text(p.setups.front()), p.setups.front().layout)) << "\n\n";
    const std::string folds =
        "layouts that differ only in interleave, schedule, stage split, shard group, overlaps or rank order";
    const std::string of_one = p.across ? " of one framework" : "";
    const std::string wide = "--wide: every layout in full, each with its predict command. ";
    out << wrap_words(p.folded ? wide + "Of " + folds + of_one + ", only the fastest is listed (--no-fold: each)."
                               : wide + "Every layout is listed (without --no-fold, of " + folds + of_one +
                                     " only the fastest).")
        << "\n";
}

// "trainperf plan: MODEL on N x GPU (framework, precision, optimizer[, adapters]), global
// batch B x seq S"; `framework`: the request's, or "any framework".
std::string plan_heading(const plan_request& request, const std::string& framework) {
    const auto& s = request.base;
    std::string t = "trainperf plan: " + std::string(s.model.name) + " on " + std::to_string(request.gpus) + " x " +
                    std::string(s.cluster.gpu.name) + " (" + framework + ", " + std::string(s.precision.name) +
                    ", " + std::string(to_string(s.optimizer));
    if (s.finetune.freezes_base())
        t += ", " + std::string(to_string(s.finetune.mode)) + " rank " + std::to_string(s.finetune.rank) + " on " +
             lora_targets_text(s.finetune.targets);
    return t + "), global batch " + std::to_string(request.global_batch) + " x seq " +
           std::to_string(sequence_length(s));
}

// The lines after the heading that say which frameworks were searched and which were
// left out, and why (none for a plan of one framework).
std::vector<std::string> framework_lines(const plan_result&) { return {}; }
std::vector<std::string> framework_lines(const framework_plan_result& result) {
    std::string searched;
    for (const framework_profile& fw : result.searched) searched += (searched.empty() ? "" : ", ") + std::string(fw.name);
    std::vector<std::string> lines{"Frameworks searched: " + searched +
                                   (result.skipped.empty() ? " (every one in the catalog)." : ".")};
    for (const skipped_framework& s : result.skipped) lines.push_back("Left out, " + s.framework + ": " + s.reason);
    return lines;
}

std::string framework_text(const plan_request& request, const plan_result&) {
    return std::string(request.base.framework.name);
}
std::string framework_text(const plan_request&, const framework_plan_result&) { return "any framework"; }

// --csv: the rank and the step row of each layout kept (io/report_table.hpp), its
// framework among the setup's columns.
report_table csv_table(const plan_request& request, const plan_result& result) { return plan_table(request, result); }
report_table csv_table(const plan_request& request, const framework_plan_result& result) {
    std::vector<std::string> columns{"rank"};
    append(columns, step_columns());
    report_table t(std::move(columns));
    for (std::size_t i = 0; i < result.best.size(); ++i) {
        std::vector<table_cell> row{static_cast<long long>(i + 1)};
        append(row, step_row(setup_of(request, result, i), result.best[i].report));
        t.add_row(std::move(row));
    }
    return t;
}

// A plan's answer (one framework's, or across frameworks) as CSV, JSON or text.
template <class Result>
void print_plan(const plan_flags& opt, const plan_request& request, const Result& result, std::ostream& out) {
    // No layout fits: "does not fit". No layout reaches the global batch at all is another
    // answer (the text says why), not a memory verdict.
    if (result.best.empty() && result.candidates > 0) answer_does_not_fit();
    if (opt.csv) return print_csv(out, csv_table(request, result));
    if (opt.json) return print_json(out, to_json(request, result, predict_command_of(opt.flags)));
    const auto line = [&](const std::string& text) { out << (opt.wide ? text : wrap_words(text, 2)) << "\n"; };
    line(plan_heading(request, framework_text(request, result)));
    for (const std::string& l : framework_lines(result)) line(l);
    line(std::to_string(result.candidates) + " candidate layouts: " + std::to_string(result.evaluated) +
         " predicted, " + std::to_string(result.pruned) + " skipped by a bound (cannot fit or cannot enter the top " +
         std::to_string(opt.top) + "), " + std::to_string(result.fitting) + " of the predicted fit in memory" +
         (result.borderline > 0 && !result.only_borderline
              ? " (" + std::to_string(result.borderline) +
                    " of them borderline, set aside: they fit only while the caching allocator's slack and the "
                    "CUDA context stay under twice their assumed sizes; --borderline ranks them too)"
              : std::string()) +
         "; " + fixed(result.wall.value(), 3) + " s");
    if (result.only_borderline)
        line("Every layout that fits is borderline: it fits only while the caching allocator's slack and the CUDA "
             "context stay under twice their assumed sizes (docs/memory.md §6); they are listed.");
    out << "\n";
    if (result.best.empty()) {
        if (result.candidates == 0)
            line("No layout of " + gpus_text(request.gpus) + " reaches a global batch of " +
                 std::to_string(request.global_batch) +
                 " exactly: it must be a multiple of the data-parallel size dp = gpus / (tp x cp x pp).");
        else
            line("No layout fits. Try more GPUs, --offload, or a smaller global batch.");
        return;
    }
    const planned_layouts p = planned_of(request, result);
    if (opt.wide) print_layouts_wide(opt, p, out);
    else print_layouts_narrow(opt, p, out);
}

// The search's options from the flags. A search that runs longer than a second shows
// how far it is, on stderr when it is a terminal (a file or a pipe gets no carriage
// returns); `progress_shown` says whether it did.
plan_options options_of(const plan_flags& opt, bool& progress_shown) {
    plan_options options;
    options.top = opt.top;
    options.threads = opt.threads;
    options.fold_variants = !opt.no_fold;
    options.firm_fit = !opt.borderline;
    if (isatty(fileno(stderr)))
        options.progress = [&progress_shown](double fraction) {
            std::fprintf(stderr, "\rtrainperf plan: %3.0f %% of the layouts searched", 100.0 * fraction);
            progress_shown = true;
        };
    return options;
}

void run(const plan_flags& opt, const CLI::App* sub, std::ostream& out) {
    require(opt.top >= 1 && opt.top <= 1000, "top", opt.top, "must be between 1 and 1000");
    require(opt.threads <= 1024, "threads", opt.threads, "must be at most 1024 (0: one per hardware thread)");
    check_currency(opt.currency);
    const bool across = opt.flags.across_frameworks();
    if (sub->get_option("--train-tokens")->count() > 0) {
        if (across)
            throw usage_error("--framework = any: not with --train-tokens (an end-to-end plan searches one "
                              "framework); name one of " + catalog_names(framework_profiles, ", "));
        return run_training_plan(opt, sub, out);
    }
    for (const char* flag : {"--deadline-days", "--price-per-gpu-hour", "--max-gpus", "--currency"})
        if (sub->get_option(flag)->count() > 0) throw usage_error(std::string(flag) + ": needs --train-tokens");
    setup_across_frameworks frameworks;
    plan_request request;
    if (across) frameworks = opt.flags.build_across();
    request.base = across ? frameworks.base : opt.flags.build_for_search();
    // Checked before the batch's checks read it (plan() checks it again); across
    // frameworks each framework's setup is checked by the search (framework_search.hpp).
    if (!across) validate_search_base(request.base);
    request.gpus = request.base.layout.gpus();
    require_global_batch(sub, request.base, request.gpus, "the " + gpus_text(request.gpus));
    request.global_batch = opt.global_batch;
    request.max_micro_batch = opt.max_micro_batch;
    request.allow_offload = opt.offload;
    bool progress_shown = false;
    const plan_options options = options_of(opt, progress_shown);
    const auto searched = [&] {
        if (progress_shown) std::fprintf(stderr, "\r%60s\r", "");
    };
    if (across) {
        const framework_plan_result result = plan_across(request, frameworks.frameworks, options);
        searched();
        return print_plan(opt, request, result, out);
    }
    const plan_result result = plan(request, options);
    searched();
    print_plan(opt, request, result, out);
}

const command_registration plan_registration{32, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<plan_flags>();
    auto* sub = app.add_subcommand("plan", "Best layouts for a model on N GPUs (exhaustive search)");
    opt->flags.add_to(sub, true, flag_set::system_only);
    sub->get_option("--framework")
        ->description(catalog_names(framework_profiles) +
                      "|any: the framework whose software runs the layouts; any: every framework, ranked together, "
                      "each leaving out what its software does not run (default pytorch-eager)");
    sub->add_option("--global-batch", opt->global_batch,
                    "Required: samples per optimizer step (without it, the error suggests one)");
    sub->add_option("--max-micro-batch", opt->max_micro_batch,
                    "Largest micro-batch tried (default 0: every divisor of the per-replica batch)");
    sub->add_option("--threads", opt->threads, "Search threads (default 0: one per hardware thread)");
    sub->add_option("--top", opt->top, "How many layouts to show (default 10)");
    sub->add_flag("--offload", opt->offload, "Also try optimizer offload to the host");
    auto* json = sub->add_flag("--json", opt->json, "Print one JSON object");
    auto* csv = sub->add_flag("--csv", opt->csv, "Print the layouts kept as CSV: rank and every column of a step row")
                    ->excludes(json);
    sub->add_flag("--wide", opt->wide,
                  "Print each layout in full with its predict command, on lines as long as they are (default: "
                  "narrow columns within 120)")
        ->excludes(json)
        ->excludes(csv);
    sub->add_flag("--borderline", opt->borderline,
                  "Rank borderline layouts too: those that fit only while the caching allocator's slack and the CUDA "
                  "context stay under twice their assumed sizes (default: set aside, counted)");
    sub->add_flag("--no-fold", opt->no_fold,
                  "List every layout (default: of layouts that differ only in interleave, schedule, stage split, "
                  "shard group, overlaps or rank order, only the fastest)");
    sub->add_option("--train-tokens", opt->train_tokens,
                    "Plan a whole run on this many tokens (e.g. 2T): search GPU counts up to --max-gpus as well as "
                    "layouts; print the cheapest and the fastest that meet --deadline-days");
    sub->add_option("--deadline-days", opt->deadline_days, "With --train-tokens: the run must end within this many days");
    sub->add_option("--price-per-gpu-hour", opt->price_per_gpu_hour, "With --train-tokens: cost per GPU-hour");
    sub->add_option("--currency", opt->currency,
                    "With --price-per-gpu-hour: its currency, an ISO 4217 code printed beside every cost (default USD)");
    sub->add_option("--max-gpus", opt->max_gpus,
                    "With --train-tokens: the largest GPU count tried (at most 65536; default " +
                        std::to_string(default_training_plan_max_gpus) + ")");
    sub->callback([opt, sub, &out] { run(*opt, sub, out); });
}};

}  // namespace
}  // namespace trainperf::cli
