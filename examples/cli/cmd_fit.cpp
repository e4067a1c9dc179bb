// `trainperf fit`: the largest micro-batch that fits, for every precision recipe and
// optimizer, under the layout and framework given.
#include "cli.hpp"
#include "training_flags.hpp"

#include <trainperf/spec/layout_text.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/cost/step.hpp>

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
    const training_setup base = opt.flags.build();
    const gpu_spec& gpu = base.cluster.gpu;
    const int seq = sequence_length(base);
    std::vector<precision_kind> precisions;
    for (precision_kind p : all_precisions)
        if (gpu.supports(recipe(p).math) && (!opt.precision_given || p == base.precision.kind)) precisions.push_back(p);
    std::vector<optimizer_kind> optimizers;
    for (optimizer_kind k : all_optimizers)
        if (!opt.optimizer_given || k == base.optimizer) optimizers.push_back(k);
    // largest[optimizer][precision]
    std::vector<std::vector<int>> largest;
    for (optimizer_kind k : optimizers) {
        largest.emplace_back();
        for (precision_kind p : precisions) {
            training_setup s = base;
            s.precision = recipe(p);
            s.optimizer = k;
            largest.back().push_back(max_micro_batch(s));
        }
    }
    if (opt.json) {
        nlohmann::json rows = nlohmann::json::array();
        for (std::size_t i = 0; i < optimizers.size(); ++i)
            for (std::size_t j = 0; j < precisions.size(); ++j)
                rows.push_back({{"optimizer", std::string(to_string(optimizers[i]))},
                                {"precision", std::string(to_string(precisions[j]))},
                                {"max_micro_batch", largest[i][j]}});
        nlohmann::json j{{"gpu", std::string(gpu.name)}, {"model", std::string(base.model.name)}, {"seq", seq},
                         {"framework", std::string(base.framework.name)},
                         {"finetune", std::string(to_string(base.finetune.mode))}, {"fits", rows}};
        if (base.finetune.freezes_base()) {
            j["lora_rank"] = base.finetune.rank;
            j["lora_targets"] = lora_targets_text(base.finetune.targets);
        }
        print_json(out, j);
        return;
    }
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
    for (precision_kind p : precisions) header.emplace_back(to_string(p));
    table t(header);
    for (std::size_t i = 0; i < optimizers.size(); ++i) {
        std::vector<std::string> row{std::string(to_string(optimizers[i]))};
        for (int b : largest[i]) row.push_back(std::to_string(b));
        t.add_row(row);
    }
    t.print(out);
    // Fine-tuning recipes checkpoint activations (PEFT's gradient checkpointing): say
    // what the given recipe fits with it when the layout does not recompute.
    if (base.finetune.freezes_base() && base.layout.recompute != recompute_mode::full) {
        training_setup s = base;
        s.layout.recompute = recompute_mode::full;
        out << "\nWith --recompute full (gradient checkpointing): " << max_micro_batch(s) << " for "
            << base.precision.name << " and " << to_string(base.optimizer) << ".\n";
    }
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
