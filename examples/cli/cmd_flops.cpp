// `trainperf flops`: FLOPs of training one sample, by the seed formula (what
// reported TFLOP/s use), Narayanan et al.'s closed form and the exact GEMM count.
#include "cli.hpp"
#include "model_flags.hpp"

#include <trainperf/core/limits.hpp>
#include <trainperf/io/flops_json.hpp>
#include <trainperf/workload/flops.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/spec/parallel.hpp>

#include <memory>
#include <ostream>
#include <string>

namespace trainperf::cli {
namespace {

struct flops_options {
    model_flags model;
    int seq = 0;
    bool seq_given = false;  // otherwise the model's training length
    std::string recompute = "none";
    bool causal_savings = false;
    bool json = false;
};

std::string flop_cell(flops f) { return fixed(f.value() / 1e12, 3); }

void run(const flops_options& opt, std::ostream& out) {
    const transformer_config m = opt.model.build(opt.seq);
    const recompute_mode r = parse_recompute(opt.recompute);
    int seq = opt.seq;
    if (!opt.seq_given) {
        if (training_length(m) <= 0)
            throw usage_error("--seq: required, model " + std::string(m.name) + " has no max_seq");
        seq = opt.model.default_seq(m);
    }
    const flop_summary f = flop_summary_of(m, seq, r, {.causal_savings = opt.causal_savings});
    if (opt.json) return print_json(out, to_json(f));
    const flop_breakdown& b = f.exact_forward_layer;
    out << "FLOPs per training sample: " << m.name << ", seq " << seq << " tokens, recompute "
        << to_string(r) << "\n";
    out << "parameters " << fixed(f.parameters / 1e9, 3) << " billion";
    if (has_moe(m))
        out << ", active per token " << fixed(f.active_parameters / 1e9, 3) << " billion (" << m.moe.experts_per_token
            << " of " << m.moe.experts << " routed experts in " << moe_layers(m) << " of " << m.layers << " layers)";
    if (f.mtp_parameters > 0)
        out << ", multi-token prediction " << fixed(f.mtp_parameters / 1e9, 3) << " billion beside";
    out << "\n\n";
    // The seed formula and Narayanan et al.'s are a dense GPT's (h and 4h): not for experts
    // or latent attention.
    const bool dense_formulas = f.dense_formulas;
    table t({"count", "forward TFLOP", "training TFLOP"});
    if (dense_formulas)
        t.add_row({"seed formula (reported TFLOP/s)", flop_cell(f.forward_seed), flop_cell(f.training_seed)});
    t.add_row({"exact GEMMs", flop_cell(f.exact_forward), flop_cell(f.exact_training)});
    if (dense_formulas) t.add_row({"Narayanan 2021 (full recompute)", "-", flop_cell(f.narayanan_full_recompute)});
    t.add_row({has_moe(m) ? "6 x active params x tokens" : "6 x params x tokens", "-", flop_cell(f.six_n_tokens)});
    if (m.mtp_layers > 0) t.add_row({"multi-token prediction modules (beside)", "-", flop_cell(f.mtp_training)});
    t.print(out);
    out << "\nExact forward GEMMs per layer (TFLOP per sample), " << m.layers << " layers"
        << (has_moe(m) || m.sliding_window > 0 ? " (their mean: the layers differ)" : "") << "\n\n";
    table l({"op", "TFLOP"});
    l.add_row({"QKV projection", flop_cell(b.qkv)});
    l.add_row({"attention scores Q.K^T", flop_cell(b.scores)});
    l.add_row({"attention context P.V", flop_cell(b.context)});
    l.add_row({"output projection", flop_cell(b.out_proj)});
    l.add_row({"FFN", flop_cell(b.ffn)});
    l.add_row({"layer total", flop_cell(b.layer())});
    l.add_row({"logits (once per model)", flop_cell(b.logits)});
    l.print(out);
    out << "\n1 TFLOP = 1e12 floating-point operations. Training = forward + backward "
           "(2 x forward)" << (r == recompute_mode::none ? "" : " + recomputed forward") << ".\n";
}

const command_registration flops_registration{20, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<flops_options>();
    auto* sub = app.add_subcommand("flops", "FLOPs of training one sample (seed formula and exact)");
    opt->model.add_to(sub, true);
    auto* seq = sub->add_option("--seq", opt->seq, "Sequence length in tokens (default: the model's training length, train_seq, else its max_seq)")
                    ->check(CLI::Range(1, limits::max_sequence));
    sub->add_option("--recompute", opt->recompute,
                    "Activation recompute: " + enum_name_list<recompute_mode>() + " (default none)");
    sub->add_flag("--causal-savings", opt->causal_savings,
                  "Exact count: attention kernels skip masked blocks (FlashAttention)");
    sub->add_flag("--json", opt->json, "Print one JSON object");
    sub->callback([opt, seq, &out] {
        opt->seq_given = seq->count() > 0;
        run(*opt, out);
    });
}};

}  // namespace
}  // namespace trainperf::cli
