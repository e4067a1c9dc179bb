// `trainperf fit`: the largest micro-batch that fits, for every precision recipe and
// optimizer, under the layout and framework given; with --framework any, one table per
// framework that runs the setup (search/fit_across.hpp).
#include "cli.hpp"
#include "table_output.hpp"
#include "training_flags.hpp"

#include <trainperf/spec/layout_text.hpp>
#include <trainperf/cost/memory.hpp>
#include <trainperf/io/fit_json.hpp>
#include <trainperf/search/fit_across.hpp>
#include <trainperf/search/fit_table.hpp>

#include <algorithm>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace trainperf::cli {
namespace {

struct fit_options {
    training_flags flags;
    bool json = false;
    bool precision_given = false, optimizer_given = false;  // restrict the table to them
};

// Whether some cell of the table fits. With adapters the table's cells keep the layout's
// recompute; a micro-batch that fits with full recompute is an answer that fits.
bool any_fits(const fit_table& f) {
    const bool cell = std::any_of(f.largest.begin(), f.largest.end(), [](const std::vector<int>& row) {
        return std::any_of(row.begin(), row.end(), [](int b) { return b > 0; });
    });
    return cell || (f.with_full_recompute && *f.with_full_recompute > 0);
}

// "Largest micro-batch that fits: MODEL, seq S, on GPU[ (N GiB usable)], FRAMEWORK, LAYOUT",
// the adapters line with fine-tuning, and what 0 means.
void print_heading(const training_setup& base, const std::string& framework, bool with_usable, std::ostream& out) {
    const gpu_spec& gpu = base.cluster.gpu;
    out << "Largest micro-batch that fits: " << base.model.name << ", seq " << sequence_length(base) << ", on "
        << gpu.name;
    if (with_usable) out << " (" << fixed(to_gib(usable_memory(gpu, base.framework)).value(), 1) << " GiB usable)";
    out << ", " << framework << ", " << describe(base.layout) << " (micro-batch varied)\n";
    if (base.finetune.freezes_base())
        out << to_string(base.finetune.mode) << ": rank " << base.finetune.rank << " adapters on "
            << lora_targets_text(base.finetune.targets) << ", "
            << fixed(adapter_parameters(base.model, base.finetune) / 1e6, 3)
            << " M trainable parameters (fp32, with their gradients and optimizer state); the base frozen in "
            << (base.finetune.quantized() ? "4-bit NF4 (projections; the rest in 16 bits)" : "16 bits") << "\n";
    out << "0 = not even a micro-batch of 1 fits.\n";
}

// The table, then why fp8 fits less than bf16 and what full recompute fits, where they apply.
void print_table(const fit_table& f, std::ostream& out) {
    std::vector<std::string> header{"optimizer"};
    for (precision_kind p : f.precisions) header.emplace_back(column_name(f.base, p));
    table t(header);
    for (std::size_t i = 0; i < f.optimizers.size(); ++i) {
        std::vector<std::string> row{std::string(to_string(f.optimizers[i]))};
        for (int b : f.largest[i]) row.push_back(std::to_string(b));
        t.add_row(row);
    }
    t.print(out);
    if (f.fp8_fits_less_than_bf16)
        out << "\nfp8 fits less than bf16 here: Transformer Engine keeps an FP8 copy of every Linear weight beside the\n"
               "bf16 one, which outweighs what saving the Linear inputs in FP8 (one 1-byte copy each) frees at these\n"
               "micro-batches (docs/memory.md, \"Under fp8\").\n";
    // Fine-tuning recipes checkpoint activations (PEFT's gradient checkpointing): say
    // what the given recipe fits with it when the layout does not recompute.
    if (f.with_full_recompute)
        out << "\nWith --recompute full (gradient checkpointing): " << *f.with_full_recompute << " for "
            << f.base.precision.name << " and " << to_string(f.base.optimizer) << ".\n";
}

void print_one(const fit_table& f, std::ostream& out) {
    print_heading(f.base, std::string(f.base.framework.name), true, out);
    out << "\n";
    print_table(f, out);
}

// --framework any: the common heading, each framework's table under its name, software
// and usable memory, then the frameworks left out and why.
void print_across(const fit_across_result& r, std::ostream& out) {
    print_heading(r.tables.front().base, "any framework", false, out);
    for (const fit_table& f : r.tables) {
        const framework_profile& fw = f.base.framework;
        const gpu_spec& gpu = f.base.cluster.gpu;
        out << "\n"
            << wrap_words(std::string(fw.name) + ": " + std::string(fw.software) + "; " +
                              fixed(to_gib(usable_memory(gpu, fw)).value(), 1) + " GiB usable",
                          2)
            << "\n";
        print_table(f, out);
    }
    if (!r.skipped.empty()) out << "\n";
    for (const skipped_framework& s : r.skipped)
        out << wrap_words("Left out, " + s.framework + ": " + s.reason, 2) << "\n";
}

fit_table_request request_of(const fit_options& opt, training_setup base) {
    return {.base = std::move(base),
            .only_base_precision = opt.precision_given,
            .only_base_optimizer = opt.optimizer_given};
}

void run(const fit_options& opt, std::ostream& out) {
    if (!opt.flags.across_frameworks()) {
        const fit_table f = fit_table_of(request_of(opt, opt.flags.build().get()));
        if (!any_fits(f)) answer_does_not_fit();
        if (opt.json) return print_json(out, to_json(f));
        return print_one(f, out);
    }
    const setup_across_frameworks across = opt.flags.build_across();
    const fit_across_result r = fit_tables_across(request_of(opt, across.base), across.frameworks);
    if (std::none_of(r.tables.begin(), r.tables.end(), any_fits)) answer_does_not_fit();
    if (opt.json) return print_json(out, to_json(r));
    print_across(r, out);
}

const command_registration fit_registration{31, [](CLI::App& app, std::ostream& out) {
    auto opt = std::make_shared<fit_options>();
    auto* sub = app.add_subcommand("fit", "Largest micro-batch that fits, per precision and optimizer");
    opt->flags.add_to(sub, true, flag_set::all_but_batch);
    sub->get_option("--framework")
        ->description(catalog_names(framework_profiles) +
                      "|any: the framework whose software runs the setup; any: a table for every framework that "
                      "runs it (default pytorch-eager)");
    sub->add_flag("--json", opt->json, "Print one JSON object");
    sub->callback([opt, sub, &out] {
        opt->precision_given = sub->get_option("--precision")->count() > 0;
        opt->optimizer_given = sub->get_option("--optimizer")->count() > 0;
        run(*opt, out);
    });
}};

}  // namespace
}  // namespace trainperf::cli
