// `trainperf sweep`: one or two flags of `predict` varied over lists or ranges, one
// prediction per point, as a table (text, CSV or JSON: trainperf/io/report_table.hpp).
#include "cli.hpp"
#include "parse_units.hpp"
#include "plot.hpp"
#include "table_output.hpp"
#include "training_flags.hpp"

#include <trainperf/core/enum_names.hpp>
#include <trainperf/io/table_json.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/io/report_table.hpp>
#include <trainperf/cost/step.hpp>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace trainperf::cli {
enum class sweep_parameter {
    batch, grad_accum, seq, gpus, dp, tp, cp, pp, interleave, sp, zero, offload, recompute, dp_overlap,
    precision, optimizer, framework, gpu, link, link_bandwidth, gpus_per_node, flash_attention, tp_comm_overlap,
    schedule, shard_group, model, finetune, lora_rank, lora_targets, fp8_scaling, grad_reduce_dtype,
    overlap_param_gather, reshard_after_forward, cuda_graphs, first_stage_layers, last_stage_layers, rank_order,
    inter_node_bandwidth, sockets_per_node, adapters_per_node, data_ms, pcie_ms, prefetch, compile, nvlink_domain,
    ep, etp, moe_dispatcher, moe_imbalance, moe_capacity_factor, pipeline_layout, moe_a2a_overlap, recompute_modules,
    moe_shared_expert_overlap, fp8_params, expandable_segments
};
}  // namespace trainperf::cli

namespace trainperf {
template <>
struct enum_names<cli::sweep_parameter> {
    using p = cli::sweep_parameter;
    static constexpr std::array<enum_name<p>, 56> table{{{p::batch, "batch"},
                                                          {p::grad_accum, "grad-accum"},
                                                          {p::seq, "seq"},
                                                          {p::gpus, "gpus"},
                                                          {p::dp, "dp"},
                                                          {p::tp, "tp"},
                                                          {p::cp, "cp"},
                                                          {p::pp, "pp"},
                                                          {p::interleave, "interleave"},
                                                          {p::sp, "sp"},
                                                          {p::zero, "zero"},
                                                          {p::offload, "offload"},
                                                          {p::recompute, "recompute"},
                                                          {p::dp_overlap, "dp-overlap"},
                                                          {p::precision, "precision"},
                                                          {p::optimizer, "optimizer"},
                                                          {p::framework, "framework"},
                                                          {p::gpu, "gpu"},
                                                          {p::link, "link"},
                                                          {p::link_bandwidth, "link-bandwidth"},
                                                          {p::gpus_per_node, "gpus-per-node"},
                                                          {p::flash_attention, "flash-attention"},
                                                          {p::tp_comm_overlap, "tp-comm-overlap"},
                                                          {p::schedule, "schedule"},
                                                          {p::shard_group, "shard-group"},
                                                          {p::model, "model"},
                                                          {p::finetune, "finetune"},
                                                          {p::lora_rank, "lora-rank"},
                                                          {p::lora_targets, "lora-targets"},
                                                          {p::fp8_scaling, "fp8-scaling"},
                                                          {p::grad_reduce_dtype, "grad-reduce-dtype"},
                                                          {p::overlap_param_gather, "overlap-param-gather"},
                                                          {p::reshard_after_forward, "reshard-after-forward"},
                                                          {p::cuda_graphs, "cuda-graphs"},
                                                          {p::first_stage_layers, "first-stage-layers"},
                                                          {p::last_stage_layers, "last-stage-layers"},
                                                          {p::rank_order, "rank-order"},
                                                          {p::inter_node_bandwidth, "inter-node-bandwidth"},
                                                          {p::sockets_per_node, "sockets-per-node"},
                                                          {p::adapters_per_node, "adapters-per-node"},
                                                          {p::data_ms, "data-ms"},
                                                          {p::pcie_ms, "pcie-ms"},
                                                          {p::prefetch, "prefetch"},
                                                          {p::compile, "compile"},
                                                          {p::nvlink_domain, "nvlink-domain"},
                                                          {p::ep, "ep"},
                                                          {p::etp, "etp"},
                                                          {p::moe_dispatcher, "moe-dispatcher"},
                                                          {p::moe_imbalance, "moe-imbalance"},
                                                          {p::moe_capacity_factor, "moe-capacity-factor"},
                                                          {p::pipeline_layout, "pipeline-layout"},
                                                          {p::moe_a2a_overlap, "moe-a2a-overlap"},
                                                          {p::recompute_modules, "recompute-modules"},
                                                          {p::moe_shared_expert_overlap, "moe-shared-expert-overlap"},
                                                          {p::fp8_params, "fp8-params"},
                                                          {p::expandable_segments, "expandable-segments"}}};
    static constexpr std::array<enum_name<p>, 1> aliases{{{p::batch, "micro-batch"}}};
};
}  // namespace trainperf

namespace trainperf::cli {
namespace {

// At most this many points in a sweep (both axes together): each is one prediction,
// and a table longer than this is no longer read as a table.
constexpr std::size_t max_sweep_points = 256;

bool numeric(sweep_parameter p) {
    switch (p) {
        case sweep_parameter::batch: case sweep_parameter::grad_accum: case sweep_parameter::seq:
        case sweep_parameter::gpus: case sweep_parameter::dp: case sweep_parameter::tp: case sweep_parameter::cp:
        case sweep_parameter::pp:
        case sweep_parameter::interleave: case sweep_parameter::zero: case sweep_parameter::gpus_per_node:
        case sweep_parameter::shard_group: case sweep_parameter::lora_rank: case sweep_parameter::first_stage_layers:
        case sweep_parameter::last_stage_layers: case sweep_parameter::sockets_per_node:
        case sweep_parameter::adapters_per_node: case sweep_parameter::nvlink_domain:
        case sweep_parameter::ep: case sweep_parameter::etp:
            return true;
        default:
            return false;
    }
}

// The flag of predict that the parameter replaces (dp has none: it sets --gpus).
std::string flag_of(sweep_parameter p) {
    if (p == sweep_parameter::dp) return "--gpus";
    if (p == sweep_parameter::prefetch) return "--no-prefetch";
    return "--" + std::string(to_string(p));
}

// The report-table column that shows the parameter's value.
std::string column_of(sweep_parameter p) {
    switch (p) {
        case sweep_parameter::batch: return "micro_batch";
        case sweep_parameter::link: return "intra_node_link";
        case sweep_parameter::link_bandwidth: return "intra_node_link_GBps";
        case sweep_parameter::inter_node_bandwidth: return "inter_node_link_GBps";
        case sweep_parameter::data_ms: return "data_loading_ms";
        case sweep_parameter::pcie_ms: return "host_to_device_ms";
        default: {
            std::string c(to_string(p));
            for (char& ch : c)
                if (ch == '-') ch = '_';
            return c;
        }
    }
}

struct axis {
    sweep_parameter parameter = sweep_parameter::batch;
    std::string text;                  // NAME=VALUES as given
    std::vector<std::string> values;   // as flag values
};

int parse_int(const axis& a, std::string_view s) { return parse_whole_number("--vary " + a.text, s); }

// A time in ms (data-ms, pcie-ms): a finite number, its range checked where the setup is built.
// A number, `what` naming it in the error ("a number of milliseconds").
double parse_number(const axis& a, const std::string& s, const char* what) {
    std::size_t used = 0;
    double v = 0;
    try {
        v = std::stod(s, &used);
    } catch (const std::exception&) {
        used = 0;
    }
    if (used != s.size() || !std::isfinite(v))
        throw usage_error("--vary " + a.text + ": '" + s + "' is not " + what);
    return v;
}
double parse_milliseconds(const axis& a, const std::string& s) { return parse_number(a, s, "a number of milliseconds"); }

// NAME=VALUES: a list, or for numeric parameters a range (parse_value_list).
axis parse_axis(const std::string& text) {
    axis a;
    a.text = text;
    const auto eq = text.find('=');
    if (eq == std::string::npos)
        throw usage_error("--vary " + text + ": expected NAME=VALUES, e.g. batch=1,2,4 or gpus=8..64*2");
    a.parameter = parse_enum<sweep_parameter>("vary", text.substr(0, eq));
    a.values = parse_value_list("--vary " + text.substr(0, eq) + "=", text.substr(eq + 1), numeric(a.parameter),
                                max_sweep_points);
    return a;
}

// The flags with one parameter set to a value (dp is applied once the others are).
void apply(training_flags& f, std::optional<int>& dp, const axis& a, const std::string& v) {
    switch (a.parameter) {
        case sweep_parameter::batch: f.batch = parse_int(a, v); break;
        case sweep_parameter::grad_accum: f.grad_accum = parse_int(a, v); break;
        case sweep_parameter::seq: f.seq = parse_int(a, v); break;
        case sweep_parameter::gpus: f.gpus = parse_int(a, v); break;
        case sweep_parameter::dp: dp = parse_int(a, v); break;
        case sweep_parameter::tp: f.tp = parse_int(a, v); break;
        case sweep_parameter::cp: f.cp = parse_int(a, v); break;
        case sweep_parameter::pp: f.pp = parse_int(a, v); break;
        case sweep_parameter::interleave: f.interleave = parse_int(a, v); break;
        case sweep_parameter::zero: f.zero = parse_int(a, v); break;
        case sweep_parameter::gpus_per_node: f.gpus_per_node = parse_int(a, v); break;
        case sweep_parameter::sp:
            if (v != "on" && v != "off") throw usage_error("--vary " + a.text + ": sp takes on or off, not '" + v + "'");
            f.sp = v == "on";
            break;
        case sweep_parameter::offload: f.offload = v; break;
        case sweep_parameter::recompute: f.recompute = v; break;
        case sweep_parameter::dp_overlap: f.dp_overlap = v; break;
        case sweep_parameter::precision: f.precision = v; break;
        case sweep_parameter::optimizer: f.optimizer = v; break;
        case sweep_parameter::framework: f.framework = v; break;
        case sweep_parameter::gpu: f.gpu = v; break;
        case sweep_parameter::link: f.link = v; break;
        case sweep_parameter::link_bandwidth: f.link_bandwidth = v; break;
        case sweep_parameter::flash_attention: f.flash_attention = v; break;  // on | off, checked where built
        case sweep_parameter::tp_comm_overlap: f.tp_comm_overlap = v; break;
        case sweep_parameter::schedule: f.schedule = v; break;
        case sweep_parameter::shard_group: f.shard_group = parse_int(a, v); break;
        case sweep_parameter::model: f.model.name = v; break;
        case sweep_parameter::finetune: f.finetune = v; break;
        case sweep_parameter::lora_rank: f.lora_rank = parse_int(a, v); break;
        case sweep_parameter::lora_targets:  // one list per value: q+v is --lora-targets q,v
            f.lora_targets = v;
            std::replace(f.lora_targets.begin(), f.lora_targets.end(), '+', ',');
            break;
        case sweep_parameter::fp8_scaling: f.scaling = v; break;
        case sweep_parameter::grad_reduce_dtype: f.grad_reduce_dtype = v; break;
        case sweep_parameter::overlap_param_gather: f.overlap_param_gather = v; break;
        case sweep_parameter::reshard_after_forward: f.reshard_after_forward = v; break;
        case sweep_parameter::cuda_graphs: f.cuda_graphs = v; break;
        case sweep_parameter::compile: f.compile = v; break;
        case sweep_parameter::fp8_params: f.fp8_params = v; break;
        case sweep_parameter::expandable_segments: f.expandable_segments = v; break;
        case sweep_parameter::first_stage_layers: f.first_stage_layers = parse_int(a, v); break;
        case sweep_parameter::last_stage_layers: f.last_stage_layers = parse_int(a, v); break;
        case sweep_parameter::rank_order: f.rank_order = v; break;
        case sweep_parameter::inter_node_bandwidth: f.inter_node_bandwidth = v; break;
        case sweep_parameter::data_ms: f.data_ms = parse_milliseconds(a, v); break;
        case sweep_parameter::pcie_ms: f.pcie_ms = parse_milliseconds(a, v); break;
        case sweep_parameter::sockets_per_node: f.sockets_per_node = parse_int(a, v); break;
        case sweep_parameter::adapters_per_node: f.adapters_per_node = parse_int(a, v); break;
        case sweep_parameter::nvlink_domain: f.nvlink_domain = parse_int(a, v); break;
        case sweep_parameter::ep: f.ep = parse_int(a, v); break;
        case sweep_parameter::etp: f.etp = parse_int(a, v); break;
        case sweep_parameter::moe_dispatcher: f.moe_dispatcher = v; break;
        case sweep_parameter::moe_imbalance: f.moe_imbalance = parse_number(a, v, "a number"); break;
        case sweep_parameter::moe_capacity_factor: f.moe_capacity_factor = parse_number(a, v, "a number"); break;
        case sweep_parameter::pipeline_layout: f.pipeline_layout = v; break;  // without its cosmetic commas
        case sweep_parameter::recompute_modules: f.recompute_modules = v; break;  // mlp+moe-act: one list
        case sweep_parameter::moe_a2a_overlap:
            if (v != "on" && v != "off")
                throw usage_error("--vary " + a.text + ": moe-a2a-overlap takes on or off, not '" + v + "'");
            f.moe_a2a_overlap = v == "on";
            break;
        case sweep_parameter::moe_shared_expert_overlap:
            if (v != "on" && v != "off")
                throw usage_error("--vary " + a.text + ": moe-shared-expert-overlap takes on or off, not '" + v + "'");
            f.moe_shared_expert_overlap = v == "on";
            break;
        case sweep_parameter::prefetch:  // the inverse of --no-prefetch
            if (v != "on" && v != "off")
                throw usage_error("--vary " + a.text + ": prefetch takes on or off, not '" + v + "'");
            f.no_prefetch = v == "off";
            break;
    }
}

struct sweep_options {
    training_flags flags;
    std::vector<std::string> vary;
    bool csv = false, json = false;
    std::string plot;
};

void run(const sweep_options& opt, const CLI::App* sub, std::ostream& out) {
    if (opt.vary.empty() || opt.vary.size() > 2) throw usage_error("--vary: give one or two parameters to vary");
    std::vector<axis> axes;
    for (const auto& v : opt.vary) axes.push_back(parse_axis(v));
    if (axes.size() == 2 && axes[0].parameter == axes[1].parameter)
        throw usage_error("--vary " + axes[1].text + ": " + std::string(to_string(axes[1].parameter)) +
                          " is varied twice");
    for (const auto& a : axes) {
        if (sub->get_option(flag_of(a.parameter))->count() > 0)
            throw usage_error(flag_of(a.parameter) + ": also varied by --vary " + a.text + "; give one of them");
        for (const auto& b : axes)
            if (a.parameter == sweep_parameter::dp && b.parameter == sweep_parameter::gpus)
                throw usage_error("--vary " + a.text + ": dp and gpus cannot both be varied (gpus = dp x tp x cp x pp)");
    }
    const bool model_varied =
        std::any_of(axes.begin(), axes.end(), [](const axis& a) { return a.parameter == sweep_parameter::model; });
    if (model_varied && sub->get_option("--model-file")->count() > 0)
        throw usage_error("--model-file: the model is varied by --vary model=...; give one of them");
    if (!model_varied && sub->get_option("--model")->count() == 0 && sub->get_option("--model-file")->count() == 0)
        throw usage_error("--model: required (or vary it: --vary model=NAME,NAME)");
    const bool gpu_varied = std::any_of(axes.begin(), axes.end(), [](const axis& a) { return a.parameter == sweep_parameter::gpu; });
    if (!gpu_varied && sub->get_option("--gpu")->count() == 0)
        throw usage_error("--gpu: required (or vary it: --vary gpu=NAME,NAME)");
    const std::size_t points = axes[0].values.size() * (axes.size() == 2 ? axes[1].values.size() : 1);
    if (points > max_sweep_points)
        throw usage_error("--vary: " + std::to_string(points) + " points; a sweep has at most " +
                          std::to_string(max_sweep_points));

    report_table t = step_table();
    const std::vector<std::string> one{""};
    training_setup first_setup;
    for (const auto& v0 : axes[0].values)
        for (const auto& v1 : axes.size() == 2 ? axes[1].values : one) {
            training_flags f = opt.flags;
            std::optional<int> dp;
            std::string at = std::string(to_string(axes[0].parameter)) + " = " + v0;
            apply(f, dp, axes[0], v0);
            if (axes.size() == 2) {
                apply(f, dp, axes[1], v1);
                at += ", " + std::string(to_string(axes[1].parameter)) + " = " + v1;
            }
            try {
                if (dp) {
                    const long long gpus = 1LL * *dp * model_parallel_size(f.tp, f.pp, f.cp);
                    require(*dp >= 1 && gpus <= max_gpus, "dp", *dp,
                            "must be at least 1, with dp x tp x cp x pp at most 2^22");
                    f.gpus = int(gpus);
                }
                const checked_setup s = f.build();
                if (t.rows().empty()) first_setup = s.get();
                add_step(t, s, predict(s));
            } catch (const std::invalid_argument& e) {
                throw usage_error("sweep at " + at + ": " + e.what());
            } catch (const usage_error& e) {
                throw usage_error("sweep at " + at + ": " + e.what());
            }
        }

    std::vector<std::string> varied;
    for (const auto& a : axes) varied.push_back(column_of(a.parameter));
    if (!opt.plot.empty()) plot_sweep(opt.plot, t, varied);
    if (opt.json) {
        print_json(out, sweep_to_json(opt.vary, t));
        return;
    }
    if (opt.csv) {
        print_csv(out, t);
        return;
    }
    const training_setup& s = first_setup;
    out << "trainperf sweep: " << s.model.name << " on " << s.cluster.gpu.name << " (" << s.framework.name << ", "
        << s.precision.name << ", " << to_string(s.optimizer) << "), varying";
    for (const auto& a : axes) out << " " << a.text;
    out << "\n" << t.rows().size() << " points; first point's layout " << describe(s.layout) << "\n\n";
    std::vector<std::string> columns = varied;
    for (const char* c : {"gpus", "global_batch", "step_time_ms", "forward_backward_ms", "communication_ms",
                          "optimizer_ms", "bubble_ms", "data_parallel_sync_ms", "tokens_per_s",
                          "model_tflops_per_gpu", "mfu_percent", "memory_GiB", "fits", "bottleneck"})
        if (std::find(columns.begin(), columns.end(), c) == columns.end()) columns.emplace_back(c);
    print_columns(out, t, columns);
    out << "\nTimes in ms per step (communication: exposed; data_parallel_sync: the full sync before it overlaps\n"
           "backward); tokens_per_s for all GPUs; TFLOP/s per GPU (PaLM model FLOPs); memory per GPU in GiB\n"
           "(2^30 B). A point that does not fit cannot run: it has no step figures (-). --csv or --json give\n"
           "every column.\n";
    if (!opt.plot.empty()) out << plot_written_note(opt.plot);
}

const command_registration sweep_registration{33, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<sweep_options>();
    auto* sub = app.add_subcommand("sweep", "Predict a step over a list or range of one or two parameters");
    opt->flags.add_to(sub, false);  // --gpu may be varied instead; --model is checked in run()
    sub->add_option("--vary", opt->vary,
                    "NAME=VALUES, once or twice: NAME one of " + enum_name_list<sweep_parameter>() +
                        "; VALUES a list (batch=1,2,4; link=nvlink,pcie) or a range (batch=1..8, seq=512..4096+512, "
                        "gpus=8..64*2); at most " + std::to_string(max_sweep_points) + " points")
        ->required();
    auto* json = sub->add_flag("--json", opt->json, "Print one JSON object (every column)");
    sub->add_flag("--csv", opt->csv, "Print CSV (RFC 4180, every column, units in the column names)")->excludes(json);
    sub->add_option("--plot", opt->plot,
                    "Plot tokens/s and memory per GPU against the first parameter (one series per value of the "
                    "second) to FILE.svg or FILE.png with gnuplot; its data beside it as FILE.csv");
    sub->callback([opt, sub, &out] { run(*opt, sub, out); });
}};

}  // namespace
}  // namespace trainperf::cli
