// `trainperf memory`: memory per GPU for a model (or a bare parameter count) under a
// precision recipe, an optimizer and a parallel layout, and whether it fits.
#include "cli.hpp"

#include <trainperf/hardware/catalog.hpp>
#include <trainperf/io/report_json.hpp>
#include <trainperf/memory.hpp>
#include <trainperf/models/catalog.hpp>

#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace trainperf::cli {
namespace {

struct memory_options {
    std::string gpu, model;
    double params = 0;
    int batch = 1, seq = 0, tp = 1, pp = 1, zero = 0, gpus = 1, grad_accum = 1;
    std::string precision = "bf16", optimizer = "adamw", recompute = "none", offload = "none";
    bool sp = false, fp32_grads = false, json = false;
    // Which flags were given (filled in the callback).
    bool model_given = false, params_given = false, seq_given = false;
    std::vector<std::string> model_only_flags_given;
};

std::string gb(bytes b) { return fixed(to_gb(b).value(), 2); }
std::string gib(bytes b) { return fixed(to_gib(b).value(), 2); }

// Static state of a bare parameter count, split by tp·pp and sharded by ZeRO.
memory_breakdown params_only(double params, const precision_recipe& r, optimizer_kind k,
                             const parallel_layout& p) {
    require(params > 0 && params < 1e16, "params", params, "must be a positive parameter count");
    const double local = params / (p.tp * p.pp);
    const double dp = p.dp;
    memory_breakdown mb;
    mb.weights = bytes_of(local * size_of(r.weights) / (p.zero >= 3 ? dp : 1.0));
    mb.gradients = bytes_of(local * size_of(r.gradients) / (p.zero >= 2 ? dp : 1.0));
    const double shard = p.zero >= 1 ? dp : 1.0;
    const bytes master = bytes_of(r.fp32_master ? local * 4.0 / shard : 0.0);
    const bytes state = optimizer_state_bytes(k, params, r.optimizer_state) / double(p.tp * p.pp) / shard;
    if (p.offload == offload_mode::optimizer) {
        mb.offloaded_to_host = master + state;
    } else {
        mb.master_weights = master;
        mb.optimizer_state = state;
    }
    return mb;
}

void run(const memory_options& opt, std::ostream& out) {
    if (opt.model_given == opt.params_given)
        throw usage_error("memory: give exactly one of --model and --params");
    if (opt.params_given && !opt.model_only_flags_given.empty())
        throw usage_error(opt.model_only_flags_given.front() +
                          ": needs --model (--params gives static state only)");
    const gpu_spec& g = lookup_gpu(opt.gpu);
    precision_recipe r = parse_precision(opt.precision);
    if (opt.fp32_grads) r = with_fp32_gradients(r);
    check_supported(g, r);
    const optimizer_kind k = parse_optimizer(opt.optimizer);
    require(opt.tp >= 1, "tp", opt.tp, "must be at least 1");
    require(opt.pp >= 1, "pp", opt.pp, "must be at least 1");
    require(opt.gpus >= 1, "gpus", opt.gpus, "must be at least 1");
    if (opt.gpus % (opt.tp * opt.pp) != 0)
        throw usage_error("--gpus = " + std::to_string(opt.gpus) + ": must be a multiple of tp x pp = " +
                          std::to_string(opt.tp * opt.pp));
    parallel_layout p{.dp = opt.gpus / (opt.tp * opt.pp), .tp = opt.tp, .pp = opt.pp, .sp = opt.sp,
                      .zero = opt.zero, .offload = parse_offload(opt.offload),
                      .micro_batch = opt.batch, .grad_accum = opt.grad_accum,
                      .recompute = parse_recompute(opt.recompute)};
    validate(p);
    const memory_overheads overheads{};

    memory_breakdown mb;
    std::string subject;
    int seq = opt.seq, max_batch = -1;
    double params = opt.params;
    if (opt.model_given) {
        const transformer_config& m = lookup_model(opt.model);
        if (!opt.seq_given) {
            if (m.max_seq <= 0)
                throw usage_error("--seq: required, model " + std::string(m.name) + " has no max_seq");
            seq = m.max_seq;
        }
        mb = memory_per_gpu(m, r, k, p, seq, overheads);
        max_batch = max_micro_batch(g, m, r, k, p, seq, overheads);
        params = parameter_count(m);
        subject = std::string(m.name);
    } else {
        mb = params_only(opt.params, r, k, p);
        subject = fixed(opt.params / 1e9, 3) + " B parameters";
    }
    const bytes usable = usable_memory(g, overheads);
    const bool fit = mb.total() <= usable;

    if (opt.json) {
        nlohmann::json j{{"gpu", std::string(g.name)},
                         {"parameters", params},
                         {"precision", std::string(r.name)},
                         {"gradients_dtype", std::string(to_string(r.gradients))},
                         {"optimizer", std::string(to_string(k))},
                         {"layout",
                          {{"dp", p.dp}, {"tp", p.tp}, {"pp", p.pp}, {"sp", p.sp}, {"zero", p.zero},
                           {"offload", p.offload == offload_mode::optimizer ? "optimizer" : "none"}}},
                         {"static_only", opt.params_given},
                         {"static_bytes", mb.static_state().value()},
                         {"activation_bytes", mb.activations.value()},
                         {"peak_allocated_bytes", mb.peak_allocated().value()},
                         {"peak_phase", std::string(to_string(mb.peak_phase()))},
                         {"total_bytes", mb.total().value()},
                         {"capacity_bytes", g.memory_capacity.value()},
                         {"usable_bytes", usable.value()},
                         {"offloaded_to_host_bytes", mb.offloaded_to_host.value()},
                         {"fits", fit},
                         {"breakdown", to_json(mb)}};
        if (opt.model_given) {
            j["model"] = subject;
            j["batch"] = opt.batch;
            j["seq"] = seq;
            j["recompute"] = std::string(to_string(p.recompute));
            j["pipeline_stage"] = mb.stage;
            j["max_micro_batch"] = max_batch;
        }
        print_json(out, j);
        return;
    }

    out << "Memory per GPU: " << subject << " on " << g.name << " ("
        << fixed(to_gb(g.memory_capacity).value(), 0) << " GB = "
        << fixed(to_gib(g.memory_capacity).value(), 1) << " GiB)\n"
        << "precision " << r.name << " (gradients " << to_string(r.gradients) << "), optimizer "
        << to_string(k) << ", dp " << p.dp << " x tp " << p.tp << " x pp " << p.pp
        << (p.sp ? " + sp" : "") << ", ZeRO " << p.zero
        << (p.offload == offload_mode::optimizer ? ", optimizer offloaded" : "");
    if (opt.model_given)
        out << ", batch " << opt.batch << " x seq " << seq << ", recompute " << to_string(p.recompute);
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
    out << "\n" << (fit ? "fits" : "does NOT fit") << ": " << fixed(100 * mb.total().value() / usable.value(), 1)
        << " % of usable memory" << (opt.params_given ? " (static state only: no activations)" : "")
        << "\n";
    if (opt.model_given) {
        if (mb.stage > 0) out << "pipeline stage reported: " << mb.stage << " (the one that peaks)\n";
        out << "largest micro-batch that fits: " << max_batch << "\n";
    }
    out << "GB = 1e9 bytes, GiB = 2^30 bytes.\n";
}

const command_registration registration{21, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<memory_options>();
    auto* sub = app.add_subcommand("memory", "Memory per GPU and whether it fits");
    sub->add_option("--gpu", opt->gpu, "GPU name (trainperf gpus)")->required();
    auto* model = sub->add_option("--model", opt->model, "Model name (trainperf models)");
    auto* params = sub->add_option("--params", opt->params,
                                   "Bare parameter count, e.g. 7e9 (static state only)");
    auto* batch = sub->add_option("--batch", opt->batch, "Micro-batch per model replica (default 1)");
    auto* seq = sub->add_option("--seq", opt->seq, "Sequence length (default: the model's max_seq)");
    sub->add_option("--precision", opt->precision, "fp32|tf32|bf16|fp16|bf16-pure|fp8 (default bf16)");
    sub->add_flag("--fp32-grads", opt->fp32_grads, "Keep gradients in fp32 (DeepSpeed/Megatron)");
    sub->add_option("--optimizer", opt->optimizer,
                    "sgd|sgd-momentum|adamw|adamw-fused|adafactor|lion|adam8bit (default adamw)");
    auto* recompute = sub->add_option("--recompute", opt->recompute, "none|selective|full");
    sub->add_option("--tp", opt->tp, "Tensor-parallel size");
    sub->add_option("--pp", opt->pp, "Pipeline stages");
    auto* sp = sub->add_flag("--sp", opt->sp, "Sequence parallelism (with --tp)");
    sub->add_option("--zero", opt->zero, "ZeRO stage 0|1|2|3 (shards over data-parallel GPUs)");
    sub->add_option("--gpus", opt->gpus, "Total GPUs (dp = gpus / (tp x pp))");
    auto* accum = sub->add_option("--grad-accum", opt->grad_accum, "Micro-batches per step");
    sub->add_option("--offload", opt->offload, "none|optimizer (master and optimizer state on host)");
    sub->add_flag("--json", opt->json, "Print one JSON object");
    sub->callback([=, &out] {
        opt->model_given = model->count() > 0;
        opt->params_given = params->count() > 0;
        opt->seq_given = seq->count() > 0;
        opt->model_only_flags_given.clear();
        for (auto* o : {batch, seq, recompute, sp, accum})
            if (o->count() > 0) opt->model_only_flags_given.push_back(o->get_name());
        run(*opt, out);
    });
}};

}  // namespace
}  // namespace trainperf::cli
