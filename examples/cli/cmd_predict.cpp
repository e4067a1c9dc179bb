// `trainperf predict`: one training step on one system, with its breakdown.
#include "cli.hpp"
#include "parse_units.hpp"
#include "fit_report.hpp"
#include "plot.hpp"
#include "table_output.hpp"
#include "training_flags.hpp"

#include <trainperf/search/fit_advice.hpp>
#include <trainperf/io/report_json.hpp>
#include <trainperf/spec/layout_text.hpp>
#include <trainperf/io/report_table.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/cost/training_run.hpp>

#include <memory>
#include <optional>
#include <ostream>

namespace trainperf::cli {
namespace {

struct predict_options {
    training_flags flags;
    std::string train_tokens;
    double price_per_gpu_hour = 0;
    std::string currency = "USD";
    bool json = false, csv = false;
    std::string plot;
};

void print_run(std::ostream& out, const training_run& run, const std::string& currency) {
    out << "\nTraining on " << count_text(run.tokens) << " tokens: " << fixed(run.days(), 2) << " days, "
        << fixed(run.gpu_hours, 0) << " GPU-hours, " << fixed(run.energy.value() / joules_per_kwh, 0)
        << " kWh at board power (upper bound)";
    if (run.cost > 0)
        out << ", cost " << fixed(run.cost, 0) << " " << currency << " (price per GPU-hour x GPU-hours)";
    out << "\n";
}

void print_memory(std::ostream& out, const step_report& r) {
    table mem({"memory per GPU", "GB", "GiB"});
    for (const auto& [name, value] : components(r.memory))
        if (value.value() > 0)
            mem.add_row({std::string(name), fixed(to_gb(value).value(), 2), fixed(to_gib(value).value(), 2)});
    mem.add_row({"total (" + std::string(to_string(r.memory.peak_phase())) + " peak)",
                 fixed(to_gb(r.memory.total()).value(), 2), fixed(to_gib(r.memory.total()).value(), 2)});
    mem.add_row({"usable on the device", fixed(to_gb(r.memory_capacity).value(), 2),
                 fixed(to_gib(r.memory_capacity).value(), 2)});
    mem.print(out);
}

// Optimizer offload: the node's host, this GPU's share of it, and where the time goes.
void print_offload(std::ostream& out, const training_setup& s, const step_report& r) {
    const host_spec& h = s.cluster.host;
    const host_share share = host_share_of(s);
    out << "host per node: " << h.cores << " cores, " << h.simd_lanes << " fp32 SIMD lanes, "
        << fixed(h.clock.value() / 1e9, 2) << " GHz, DRAM " << fixed(h.memory_bandwidth.value() / 1e9, 1)
        << " GB/s; per GPU (" << gpus_sharing_a_host(s) << " share it): " << fixed(share.cores, 2) << " cores, "
        << fixed(share.memory_bandwidth.value() / 1e9, 1) << " GB/s\n";
    table t({"optimizer offload", "ms"});
    t.add_row({"gradient copies GPU <-> host per step (before overlap)", fixed(r.offload.gradient_copies.value() * 1e3, 2)});
    t.add_row({"CPU step (unscale and clip, CPU-Adam, cast to 16 bits)", fixed(r.offload.host_step.value() * 1e3, 2)});
    t.add_row({"updated weights copied back to the GPU", fixed(r.offload.weights_up.value() * 1e3, 2)});
    t.print(out);
    out << "host memory per GPU: " << fixed(to_gb(r.memory.offloaded_to_host).value(), 2) << " GB ("
        << fixed(to_gib(r.memory.offloaded_to_host).value(), 2) << " GiB)\n\n";
}

void print_text(std::ostream& out, const training_flags& flags, const training_setup& s, const step_report& r) {
    out << "trainperf predict: " << s.model.name << " on " << r.gpus << " x " << s.cluster.gpu.name << " ("
        << s.framework.name << ", " << s.precision.name << ", " << to_string(s.optimizer)
        << (s.finetune.freezes_base() ? ", " + std::string(to_string(s.finetune.mode)) : std::string()) << ")\n"
        << "layout " << describe(s.layout) << "; seq " << r.seq << ", global batch " << r.global_batch
        << " samples\n";
    if (const int domains = tensor_parallel_domains(s); domains > 1)
        out << "tensor parallelism (tp " << s.layout.tp << ") spans " << domains << " NVLink domains of "
            << gpus_per_domain(s.cluster) << " GPUs: every layer's tensor-parallel collectives cross the network"
            << (s.framework.tensor_parallel_overlap ? ", exposed (no overlap across domains)" : "") << "\n";
    out << '\n';
    const fit_margin margin = margin_of(memory_report{r.memory, r.memory_capacity, r.fits}, s.framework.memory);
    if (!r.fits) {
        print_memory(out, r);
        out << '\n' << borderline_text(margin, s.framework.memory);
        print_does_not_fit(out, advise_fit(s), [&flags](const training_setup& t) { return flags.run_text(t); });
        out << "GB = 1e9 B, GiB = 2^30 B.\n";
        return;
    }
    table t({"step", "value"});
    t.add_row({"step time", fixed(r.step_time.value() * 1e3, 2) + " ms"});
    t.add_row({"throughput", fixed(r.samples_per_second, 2) + " samples/s"});
    t.add_row({"tokens", fixed(r.tokens_per_second, 0) + " tokens/s"});
    t.add_row({"model FLOP rate per GPU (PaLM, no recompute)", fixed(r.model_flops_per_gpu.value() / 1e12, 1) + " TFLOP/s"});
    t.add_row({r.frozen_base ? "hardware FLOP rate per GPU (what runs: no frozen wgrad, adapters)"
                             : "hardware FLOP rate per GPU (with recompute)",
               fixed(r.hardware_flops_per_gpu.value() / 1e12, 1) + " TFLOP/s"});
    t.add_row({r.low_precision ? s.precision.math == dtype::fp4 ? "MFU / HFU (against the dense FP4 peak)"
                                                                : "MFU / HFU (against the dense FP8 peak)"
                               : "MFU / HFU",
               fixed(100 * r.mfu, 1) + " % / " + fixed(100 * r.hfu, 1) + " %"});
    if (r.low_precision)
        t.add_row({"MFU / HFU against the dense BF16 peak",
                   fixed(100 * r.mfu_bf16_peak, 1) + " % / " + fixed(100 * r.hfu_bf16_peak, 1) + " %"});
    t.add_row({"bottleneck", std::string(to_string(r.bottleneck))});
    t.print(out);
    if (r.frozen_base)
        out << "Fine-tuning (" << to_string(s.finetune.mode) << ", rank " << s.finetune.rank << " on "
            << lora_targets_text(s.finetune.targets)
            << "): MFU counts PaLM's 6N FLOPs per token, including the weight gradients of the frozen base that do "
               "not run, so it can exceed HFU (the FLOPs that run).\n";
    if (r.causal_attention_skipped)
        out << "Fused causal attention: HFU counts the unmasked half of the attention core that the kernel runs; "
               "MFU keeps PaLM's count of the whole core.\n";
    out << '\n';
    table time({"time breakdown", "ms", "share"});
    const auto row = [&](const char* name, seconds v) {
        time.add_row({name, fixed(v.value() * 1e3, 2), fixed(100 * r.fraction(v), 1) + " %"});
    };
    row("forward + backward", r.time.forward_backward);
    row("communication (exposed)", r.time.communication);
    if (s.layout.cp > 1)
        row("  of it, context-parallel KV ring", double(s.layout.grad_accum) * r.micro_batch.context_parallel_comm);
    if (has_moe(s.model))
        row("  of it, MoE token dispatch and combine", r.moe_dispatch);
    row("optimizer", r.time.optimizer);
    row("pipeline bubble", r.time.bubble);
    row("data stall", r.time.data);
    time.print(out);
    if (s.moe.shared_expert_overlap)
        out << "The shared experts hide " << fixed(r.moe_dispatch_hidden.value() * 1e3, 2)
            << " ms of the token dispatch and combine per step (--moe-shared-expert-overlap).\n";
    out << '\n';
    if (s.layout.offload == offload_mode::optimizer) print_offload(out, s, r);
    print_memory(out, r);
    out << "\nfits in memory; " << fit_margin_text(margin, s.framework.memory) << "GB = 1e9 B, GiB = 2^30 B.\n";
    print_speed_advice(out, advise_speed(s), [&flags](const training_setup& t) { return flags.run_text(t); });
}

const command_registration predict_registration{30, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<predict_options>();
    auto* sub = app.add_subcommand("predict", "Predict one training step: time, throughput, MFU, memory");
    opt->flags.add_to(sub);
    auto* json = sub->add_flag("--json", opt->json, "Print one JSON object");
    sub->add_flag("--csv", opt->csv, "Print CSV: a header and one row (every column, units in the names)")->excludes(json);
    sub->add_option("--plot", opt->plot,
                    "Plot the step time by part as a stacked bar to FILE.svg or FILE.png with gnuplot; "
                    "its data beside it as FILE.csv");
    sub->add_option("--train-tokens", opt->train_tokens,
                    "Also estimate a whole run on this many tokens, e.g. 2e12 or 2T");
    sub->add_option("--price-per-gpu-hour", opt->price_per_gpu_hour, "With --train-tokens: cost per GPU-hour");
    sub->add_option("--currency", opt->currency,
                    "With --price-per-gpu-hour: its currency, an ISO 4217 code printed beside the cost (default USD)");
    sub->callback([opt, sub, &out] {
        const checked_setup checked = opt->flags.build();
        const training_setup& s = checked;
        const step_report r = predict(checked);
        if (!r.fits) answer_does_not_fit();
        const bool tokens_given = sub->get_option("--train-tokens")->count() > 0;
        const double train_tokens = tokens_given ? parse_count("--train-tokens", opt->train_tokens) : 0.0;
        if (tokens_given && !(train_tokens >= 1))
            throw usage_error("--train-tokens = " + opt->train_tokens + ": must be at least one token");
        if (tokens_given && opt->csv)
            throw usage_error("--train-tokens: the CSV row has no training-run columns (use --json, or plan --csv)");
        if (opt->price_per_gpu_hour != 0 && train_tokens == 0)
            throw usage_error("--price-per-gpu-hour: needs --train-tokens");
        check_currency(opt->currency);
        if (sub->get_option("--currency")->count() > 0 && opt->price_per_gpu_hour == 0)
            throw usage_error("--currency: needs --price-per-gpu-hour");
        // A layout that does not fit cannot run: no days, GPU-hours or cost for it.
        std::optional<training_run> run;
        if (train_tokens != 0 && r.fits)
            run = estimate_training_run(r, s.cluster.gpu, train_tokens, opt->price_per_gpu_hour, opt->currency);
        report_table row = step_table();
        add_step(row, s, r);
        if (!opt->plot.empty()) {
            if (!r.fits)
                throw usage_error("--plot: the layout does not fit in memory, so it has no step to plot; "
                                  "run without --plot to see what would make it fit");
            plot_step(opt->plot, row);
        }
        if (opt->json) {
            const command_of command = predict_command_of(opt->flags);
            print_json(out, r.fits ? predict_to_json(s, r, run, advise_speed(s), command)
                                   : predict_to_json(s, r, run, advise_fit(s), command));
        } else if (opt->csv) {
            print_csv(out, row);
        } else {
            print_text(out, opt->flags, s, r);
            if (run && r.fits) print_run(out, *run, opt->currency);
            if (run && !r.fits) out << "\nNo training-run estimate: the layout does not fit.\n";
            if (!opt->plot.empty()) out << '\n' << plot_written_note(opt->plot);
        }
    });
}};

}  // namespace
}  // namespace trainperf::cli
