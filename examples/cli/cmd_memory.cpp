// `trainperf memory`: memory per GPU for a model (or a bare parameter count) under a
// precision recipe, an optimizer and a parallel layout, and whether it fits.
#include "cli.hpp"
#include "fit_report.hpp"
#include "parse_units.hpp"
#include "plot.hpp"
#include "training_flags.hpp"

#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/io/memory_json.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/io/report_table.hpp>

#include <memory>
#include <ostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trainperf::cli {
namespace {

struct memory_options {
    training_flags flags;
    std::string params;
    bool json = false;
    std::string plot, plot_over;
    // Which flags were given (filled in the callback).
    bool model_given = false, params_given = false;
    std::vector<std::string> model_only_flags_given;
};

// At most this many points on a memory plot.
constexpr std::size_t max_plot_points = 64;

// Memory per GPU over a list or range of micro-batches or sequence lengths
// (--plot-over batch=1..32*2 or seq=512..8192*2), as a stacked plot.
void plot_over(const memory_options& opt) {
    const auto eq = opt.plot_over.find('=');
    const std::string name = opt.plot_over.substr(0, eq);
    if (eq == std::string::npos || (name != "batch" && name != "seq"))
        throw usage_error("--plot-over " + opt.plot_over + ": expected batch=VALUES or seq=VALUES, e.g. batch=1..32*2");
    const auto values = parse_value_list("--plot-over " + name + "=", opt.plot_over.substr(eq + 1), true, max_plot_points);
    report_table t = memory_table();
    for (const auto& v : values) {
        training_flags f = opt.flags;
        (name == "batch" ? f.batch : f.seq) = parse_whole_number("--plot-over", v);
        std::optional<checked_setup> s;
        try {
            s.emplace(f.build());
        } catch (const std::invalid_argument& e) {
            throw usage_error("--plot-over at " + name + " = " + v + ": " + e.what());
        }
        add_memory(t, *s, memory_of(*s));
    }
    plot_memory(opt.plot, t, name == "batch" ? "micro_batch" : "seq");
}

std::string gb(bytes b) { return fixed(to_gb(b).value(), 2); }
std::string gib(bytes b) { return fixed(to_gib(b).value(), 2); }

// The same memory path as predict, fit and plan: memory_of(setup) with the framework
// profile's overheads; a bare parameter count gives the static state only.
void run(const memory_options& opt, std::ostream& out) {
    if (opt.model_given == opt.params_given)
        throw usage_error("memory: give exactly one of --model (or --model-file) and --params");
    if (opt.params_given && !opt.model_only_flags_given.empty())
        throw usage_error(opt.model_only_flags_given.front() +
                          ": needs --model (--params gives static state only)");
    if (opt.plot.empty() != opt.plot_over.empty()) throw usage_error("--plot: needs --plot-over, and --plot-over --plot");
    if (!opt.plot.empty() && !opt.model_given) throw usage_error("--plot: needs --model (activations vary with batch and seq)");
    if (!opt.plot.empty()) plot_over(opt);
    // With a model the setup is checked once, as a whole; a bare parameter count checks
    // what its static state needs.
    const std::optional<checked_setup> checked =
        opt.params_given ? std::nullopt : std::optional<checked_setup>(opt.flags.build());
    const training_setup s = checked ? checked->get() : opt.flags.build_without_model();
    const gpu_spec& g = s.cluster.gpu;
    const precision_recipe r = stored_precision(s);
    const optimizer_kind k = s.optimizer;
    const parallel_layout& p = s.layout;

    memory_report report;
    std::string subject;
    int seq = 0, max_batch = -1;
    double params = opt.params_given ? parse_count("--params", opt.params) : 0.0;
    if (opt.model_given) {
        report = memory_of(*checked);
        max_batch = max_micro_batch(*checked);
        seq = sequence_length(s);
        params = parameter_count(s.model);
        subject = std::string(s.model.name);
    } else {
        report = static_state_report(params, s);
        subject = fixed(params / 1e9, 3) + " B parameters";
    }
    const memory_breakdown& mb = report.breakdown;
    const bytes usable = report.capacity;
    const bool fit = report.fits;
    if (!fit) answer_does_not_fit();
    const fit_margin margin = margin_of(report, s.framework.memory);

    if (opt.json) {
        print_json(out, to_json(memory_estimate{.gpu = g,
                                                .parameters = params,
                                                .precision = r,
                                                .optimizer = k,
                                                .layout = p,
                                                .memory = report,
                                                .margin = margin,
                                                .model = opt.model_given ? std::string_view(subject) : "",
                                                .seq = seq,
                                                .max_micro_batch = max_batch}));
        return;
    }

    out << "Memory per GPU: " << subject << " on " << g.name << " ("
        << fixed(to_gb(g.memory_capacity).value(), 0) << " GB datasheet; the device holds "
        << fixed(to_gib(g.device_memory()).value(), 1) << " GiB)\n"
        << "precision " << r.name << " (gradients " << to_string(r.gradients) << "), optimizer "
        << to_string(k) << ", framework " << s.framework.name << "\nlayout " << describe(p);
    if (opt.model_given) out << "; seq " << seq;
    if (s.finetune.freezes_base())
        out << "\n" << to_string(s.finetune.mode) << ": rank " << s.finetune.rank << " adapters on "
            << lora_targets_text(s.finetune.targets)
            << "; the frozen base has no gradients, master or optimizer state; gradients and optimizer state are "
               "the fp32 adapters'";
    out << "\n\n";
    table t({"component", "GB", "GiB"});
    for (const auto& [name, value] : components(mb))
        if (value.value() > 0) t.add_row({std::string(name), gb(value), gib(value)});
    t.add_row({"static state", gb(mb.static_state()), gib(mb.static_state())});
    if (opt.model_given) {
        t.add_row({"peak allocated (" + std::string(to_string(mb.peak_phase())) + ")",
                   gb(mb.peak_allocated()), gib(mb.peak_allocated())});
    }
    t.add_row({"total", gb(mb.total()), gib(mb.total())});
    t.add_row({"usable on " + std::string(g.name), gb(usable), gib(usable)});
    if (mb.offloaded_to_host.value() > 0)
        t.add_row({"offloaded to host memory", gb(mb.offloaded_to_host), gib(mb.offloaded_to_host)});
    t.print(out);
    out << "\n" << (fit ? "fits" : "does NOT fit") << ": " << fixed(100 * report.fraction(), 1)
        << " % of usable memory" << (opt.params_given ? " (static state only: no activations)" : "")
        << "; " << fit_margin_text(margin, s.framework.memory);
    if (opt.model_given) {
        if (mb.stage > 0) out << "pipeline stage reported: " << mb.stage << " (the one that peaks)\n";
        out << "largest micro-batch that fits: " << max_batch << "\n";
    }
    if (!opt.plot.empty()) out << plot_written_note(opt.plot);
    out << "GB = 1e9 bytes, GiB = 2^30 bytes.\n";
}

const command_registration memory_registration{21, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<memory_options>();
    auto* sub = app.add_subcommand("memory", "Memory per GPU and whether it fits");
    opt->flags.add_to(sub, false);
    auto* params = sub->add_option("--params", opt->params,
                                   "Bare parameter count, e.g. 7e9 or 7B (static state only)");
    sub->add_flag("--json", opt->json, "Print one JSON object");
    sub->add_option("--plot", opt->plot,
                    "Plot memory per GPU by component, stacked, with the device's usable memory, over --plot-over, "
                    "to FILE.svg or FILE.png with gnuplot; its data beside it as FILE.csv");
    sub->add_option("--plot-over", opt->plot_over,
                    "With --plot: batch=VALUES or seq=VALUES, a list (1,2,4) or a range (1..32*2, 512..4096+512); "
                    "at most " + std::to_string(max_plot_points) + " points");
    sub->callback([=, &out] {
        opt->model_given = opt->flags.model.given();
        opt->params_given = params->count() > 0;
        opt->model_only_flags_given.clear();
        for (const char* name : {"--batch", "--seq", "--recompute", "--sp", "--grad-accum", "--interleave", "--finetune",
                                 "--lora-rank", "--lora-targets"})
            if (sub->get_option(name)->count() > 0) opt->model_only_flags_given.emplace_back(name);
        for (const char* name : {"batch", "seq"})
            if (opt->plot_over.rfind(std::string(name) + "=", 0) == 0 && sub->get_option(std::string("--") + name)->count() > 0)
                throw usage_error(std::string("--") + name + ": also varied by --plot-over " + opt->plot_over +
                                  "; give one of them");
        run(*opt, out);
    });
}};

}  // namespace
}  // namespace trainperf::cli
