// `trainperf scale`: speedup N / (1 + (N−1)·r), efficiency and wasted GPU-equivalents.
#include "cli.hpp"
#include "plot.hpp"
#include "table_output.hpp"
#include "training_flags.hpp"

#include <trainperf/spec/layout_text.hpp>
#include <trainperf/io/report_table.hpp>
#include <trainperf/cost/scaling.hpp>
#include <trainperf/search/data_parallel_scaling.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/io/scaling_json.hpp>

#include <memory>
#include <ostream>

namespace trainperf::cli {

namespace {
// Speedup, efficiency and wasted GPUs at N for a given r (and the curve 1…N).
void print_scaling(std::ostream& out, int gpus, double r, bool table, bool json, bool csv, const std::string& plot) {
    const scaling_point at = scaling_at(gpus, r);  // validates gpus and r
    if (csv || !plot.empty()) {
        const report_table curve = scaling_table(gpus, r);
        if (!plot.empty()) plot_formula_scaling(plot, curve);
        if (csv) return print_csv(out, curve);
    }
    if (json) return print_json(out, scaling_json(gpus, r, table));
    out << "Scaling with communication fraction r = " << r
        << "  (speedup = N / (1 + (N-1) * r))\n"
        << "  GPUs:        " << gpus << '\n'
        << "  speedup:     " << fixed(at.speedup, 3) << "x one GPU\n"
        << "  efficiency:  " << fixed(100 * at.efficiency, 1) << " % (speedup / GPUs)\n"
        << "  wasted:      " << fixed(at.wasted_gpus, 3) << " GPU-equivalents (GPUs - speedup)\n";
    if (table) {
        out << '\n';
        cli::table t({"GPUs", "speedup (x)", "efficiency (%)", "wasted (GPU-equivalents)"});
        for (const auto& p : scaling_curve(gpus, r))
            t.add_row({std::to_string(p.gpus), fixed(p.speedup, 3), fixed(100 * p.efficiency, 1),
                       fixed(p.wasted_gpus, 3)});
        t.print(out);
    }
    if (!plot.empty()) out << '\n' << plot_written_note(plot);
}

struct scale_options {
    training_flags flags;  // its --gpus is N
    double r = 0;
    bool table = false;
    bool json = false;
    bool csv = false;
    std::string plot;
};

// r derived from the engine: the replica of the other flags on 1…N/(tp·pp) replicas.
void print_engine_scaling(std::ostream& out, const scale_options& opt, const CLI::Option* r_flag) {
    if (r_flag->count() > 0) throw usage_error("--r: give either --r or --gpu/--model, not both");
    if (opt.flags.gpus < 2) throw usage_error("--gpus: at least 2 GPUs are needed to derive r");
    const training_setup s = opt.flags.build().get();
    const int replicas = s.layout.dp;
    const engine_scaling scaling = data_parallel_scaling(s, replicas);  // sets dp = 1…replicas
    const report_table curve = scaling_table(scaling);
    if (!opt.plot.empty()) plot_engine_scaling(opt.plot, curve);
    if (opt.csv) return print_csv(out, curve);
    if (opt.json) return print_json(out, to_json(scaling));
    out << "Data-parallel scaling of " << s.model.name << " on " << s.cluster.gpu.name << " ("
        << s.framework.name << "), 1 to " << replicas << " replicas of " << describe(s.layout) << "\n"
        << "r derived from the engine at " << replicas << " replicas: " << fixed(scaling.r, 4) << "\n"
        << "speedup counts replicas (throughput vs one replica); efficiency = speedup / replicas.\n\n";
    cli::table t({"replicas", "GPUs", "engine speedup (x)", "N/(1+(N-1)r) (x)", "engine efficiency (%)"});
    for (const auto& p : scaling.points)
        if (opt.table || p.replicas == 1 || p.replicas == replicas)
            t.add_row({std::to_string(p.replicas), std::to_string(p.gpus), fixed(p.engine_speedup, 3),
                       fixed(p.formula_speedup, 3), fixed(100 * p.engine_speedup / p.replicas, 1)});
    t.print(out);
    if (scaling.above_linear)
        out << "\nThe engine scales above the replica count: each replica's step is shorter with more replicas"
            << (s.layout.zero >= 1 ? "\n(ZeRO " + std::to_string(s.layout.zero) + " shards the optimizer step over them)" : "")
            << ". The formula, r >= 0, cannot exceed N.\n";
    if (!scaling.one_replica_fits)
        out << "One replica does not fit in memory: its throughput, the baseline of every speedup, is what it\n"
               "would run at with enough memory.\n";
    if (!opt.plot.empty()) out << '\n' << plot_written_note(opt.plot);
}

const command_registration scale_registration{40, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<scale_options>();
    auto* sub = app.add_subcommand(
        "scale", "Speedup, efficiency and wasted GPUs vs GPU count: N / (1 + (N-1) r), with r "
                 "given (--r) or derived from the engine (--gpu --model ...)");
    opt->flags.add_to(sub, false);
    auto* r = sub->add_option("--r", opt->r, "communication overhead fraction r in [0, 1] (0 = perfect scaling)");
    sub->add_flag("--table", opt->table, "also print the curve for 1..N GPUs");
    auto* json = sub->add_flag("--json", opt->json, "print one JSON object");
    sub->add_flag("--csv", opt->csv, "print the curve 1..N as CSV (units in the column names)")->excludes(json);
    sub->add_option("--plot", opt->plot,
                    "plot the speedup (engine and formula) to FILE.svg or FILE.png with gnuplot; its data beside "
                    "it as FILE.csv");
    sub->callback([opt, r, sub, &out] {
        const bool engine = opt->flags.model.given() || !opt->flags.gpu.empty() || !opt->flags.gpu_file.empty();
        if (engine) return print_engine_scaling(out, *opt, r);
        if (r->count() == 0) throw usage_error("--r: required unless --gpu and --model are given");
        // The formula takes N and r only: any other flag would be silently ignored.
        for (const CLI::Option* o : sub->get_options())
            if (o->count() > 0 && o != r && !o->check_name("--gpus") && !o->check_name("--table") &&
                !o->check_name("--json") && !o->check_name("--csv") && !o->check_name("--plot"))
                throw usage_error(o->get_name() + ": used only with --gpu and --model (the engine's curve), not with --r");
        if (opt->flags.gpus < 1) throw usage_error("--gpus: required (N >= 1)");
        print_scaling(out, opt->flags.gpus, opt->r, opt->table, opt->json, opt->csv, opt->plot);
    });
}};
}  // namespace

}  // namespace trainperf::cli
