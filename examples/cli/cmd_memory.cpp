// `trainperf memory`: memory per GPU for a model (or a bare parameter count) under a
// precision recipe, an optimizer and a parallel layout, and whether it fits.
#include "cli.hpp"

#include <trainperf/hardware/catalog.hpp>
#include <trainperf/io/memory_json.hpp>
#include <trainperf/layout_text.hpp>
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
    parallel_layout p{.dp = data_parallel_size(opt.gpus, opt.tp, opt.pp), .tp = opt.tp, .pp = opt.pp, .sp = opt.sp,
                      .zero = opt.zero, .offload = parse_offload(opt.offload),
                      .micro_batch = opt.batch, .grad_accum = opt.grad_accum,
                      .recompute = parse_recompute(opt.recompute)};
    validate(p);
    const framework_profile& overheads = pytorch_eager_profile;

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
        mb = static_state_memory(opt.params, r, k, p);
        subject = fixed(opt.params / 1e9, 3) + " B parameters";
    }
    const bytes usable = usable_memory(g, overheads);
    const bool fit = mb.total() <= usable;

    if (opt.json) {
        print_json(out, to_json(memory_estimate{.gpu = g,
                                                .parameters = params,
                                                .precision = r,
                                                .optimizer = k,
                                                .layout = p,
                                                .memory = {.breakdown = mb, .capacity = usable, .fits = fit},
                                                .model = opt.model_given ? std::string_view(subject) : "",
                                                .seq = seq,
                                                .max_micro_batch = max_batch}));
        return;
    }

    out << "Memory per GPU: " << subject << " on " << g.name << " ("
        << fixed(to_gb(g.memory_capacity).value(), 0) << " GB = "
        << fixed(to_gib(g.memory_capacity).value(), 1) << " GiB)\n"
        << "precision " << r.name << " (gradients " << to_string(r.gradients) << "), optimizer "
        << to_string(k) << "\nlayout " << describe(p);
    if (opt.model_given) out << "; seq " << seq;
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
    sub->add_option("--precision", opt->precision, enum_name_list<precision_kind>() + " (default bf16)");
    sub->add_flag("--fp32-grads", opt->fp32_grads, "Keep gradients in fp32 (DeepSpeed/Megatron)");
    sub->add_option("--optimizer", opt->optimizer, enum_name_list<optimizer_kind>() + " (default adamw)");
    auto* recompute =
        sub->add_option("--recompute", opt->recompute, enum_name_list<recompute_mode>() + " (default none)");
    sub->add_option("--tp", opt->tp, "Tensor-parallel size");
    sub->add_option("--pp", opt->pp, "Pipeline stages");
    auto* sp = sub->add_flag("--sp", opt->sp, "Sequence parallelism (with --tp)");
    sub->add_option("--zero", opt->zero, "ZeRO stage 0|1|2|3 (shards over data-parallel GPUs)");
    sub->add_option("--gpus", opt->gpus, "Total GPUs (dp = gpus / (tp x pp))");
    auto* accum = sub->add_option("--grad-accum", opt->grad_accum, "Micro-batches per step");
    sub->add_option("--offload", opt->offload,
                    enum_name_list<offload_mode>() + " (optimizer: master and optimizer state on the host)");
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
