// `trainperf fit`: the largest micro-batch that fits, for every precision recipe and
// optimizer, under the layout and framework given.
#include "cli.hpp"
#include "training_flags.hpp"

#include <trainperf/spec/layout_text.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/io/fit_json.hpp>
#include <trainperf/search/fit_table.hpp>

#include <algorithm>
#include <memory>
#include <ostream>

namespace trainperf::cli {
namespace {

struct fit_options {
    training_flags flags;
    bool json = false;
    bool precision_given = false, optimizer_given = false;  // restrict the table to them
};

void run(const fit_options& opt, std::ostream& out) {
    const fit_table f = fit_table_of(
        {.base = opt.flags.build().get(), .only_base_precision = opt.precision_given, .only_base_optimizer = opt.optimizer_given});
    const bool none_fits = std::all_of(f.largest.begin(), f.largest.end(), [](const std::vector<int>& row) {
        return std::all_of(row.begin(), row.end(), [](int b) { return b == 0; });
    });
    // With adapters the table's cells keep the layout's recompute; a micro-batch that fits
    // with full recompute is an answer that fits.
    if (none_fits && !(f.with_full_recompute && *f.with_full_recompute > 0)) answer_does_not_fit();
    if (opt.json) return print_json(out, to_json(f));
    const training_setup& base = f.base;
    const gpu_spec& gpu = base.cluster.gpu;
    const int seq = sequence_length(base);
    out << "Largest micro-batch that fits: " << base.model.name << ", seq " << seq << ", on " << gpu.name << " ("
        << fixed(to_gib(usable_memory(gpu, base.framework)).value(), 1) << " GiB usable), " << base.framework.name << ", "
        << describe(base.layout) << " (micro-batch varied)\n";
    if (base.finetune.freezes_base())
        out << to_string(base.finetune.mode) << ": rank " << base.finetune.rank << " adapters on "
            << lora_targets_text(base.finetune.targets) << ", "
            << fixed(adapter_parameters(base.model, base.finetune) / 1e6, 3)
            << " M trainable parameters (fp32, with their gradients and optimizer state); the base frozen in "
            << (base.finetune.quantized() ? "4-bit NF4 (projections; the rest in 16 bits)" : "16 bits") << "\n";
    out << "0 = not even a micro-batch of 1 fits.\n\n";
    std::vector<std::string> header{"optimizer"};
    for (precision_kind p : f.precisions) header.emplace_back(to_string(p));
    table t(header);
    for (std::size_t i = 0; i < f.optimizers.size(); ++i) {
        std::vector<std::string> row{std::string(to_string(f.optimizers[i]))};
        for (int b : f.largest[i]) row.push_back(std::to_string(b));
        t.add_row(row);
    }
    t.print(out);
    if (f.fp8_fits_less_than_bf16)
        out << "\nfp8 fits less than bf16 here: Transformer Engine keeps an FP8 copy of every Linear weight beside the\n"
               "bf16 one, which outweighs what saving the Linear inputs in FP8 frees at these micro-batches (before\n"
               "Blackwell it frees nothing: a transposed FP8 copy is kept beside each; docs/memory.md, \"Under fp8\").\n";
    // Fine-tuning recipes checkpoint activations (PEFT's gradient checkpointing): say
    // what the given recipe fits with it when the layout does not recompute.
    if (f.with_full_recompute)
        out << "\nWith --recompute full (gradient checkpointing): " << *f.with_full_recompute << " for "
            << base.precision.name << " and " << to_string(base.optimizer) << ".\n";
}

const command_registration registration{31, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<fit_options>();
    auto* sub = app.add_subcommand("fit", "Largest micro-batch that fits, per precision and optimizer");
    opt->flags.add_to(sub, true, flag_set::all_but_batch);
    sub->add_flag("--json", opt->json, "Print one JSON object");
    sub->callback([opt, sub, &out] {
        opt->precision_given = sub->get_option("--precision")->count() > 0;
        opt->optimizer_given = sub->get_option("--optimizer")->count() > 0;
        run(*opt, out);
    });
}};

}  // namespace
}  // namespace trainperf::cli
