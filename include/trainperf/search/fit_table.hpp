// The largest micro-batch that fits for every precision recipe the GPU and the framework
// can run and every optimizer the framework runs (on the host, with optimizer offload),
// the rest of the setup as given (`trainperf fit`): a grid of
// cost/memory.hpp's max_micro_batch.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "../cost/memory.hpp"
#include "../spec/optimizer.hpp"
#include "../spec/precision.hpp"
#include "../spec/setup.hpp"

namespace trainperf {

struct fit_table_request {
    training_setup base{};               // checked as given; its micro-batch is then varied
    bool only_base_precision = false;    // one column: base.precision's recipe
    bool only_base_optimizer = false;    // one row: base.optimizer
};

struct fit_table {
    training_setup base{};
    // Columns: the recipes the framework runs whose GEMM dtype the GPU has units for.
    std::vector<precision_kind> precisions;
    std::vector<optimizer_kind> optimizers;  // rows: the optimizers the framework runs (where it runs them)
    std::vector<std::vector<int>> largest;   // largest[row][column]; 0: not even a micro-batch of 1 fits
    // Adapters (LoRA, QLoRA) without full recompute: the largest micro-batch of the base
    // recipe and optimizer with full recompute, as fine-tuning recipes checkpoint
    // activations (PEFT's gradient checkpointing).
    std::optional<int> with_full_recompute;
    // Whether some optimizer fits a smaller micro-batch in fp8 than in bf16: Transformer
    // Engine keeps an FP8 copy of every Linear weight beside the bf16 one, and before
    // Blackwell the Linear inputs it saves in FP8 keep a transposed FP8 copy beside them,
    // as many bytes as bf16 (cost/memory.hpp; docs/memory.md, "Under fp8").
    bool fp8_fits_less_than_bf16 = false;
};

namespace fit_table_detail {
// Whether the setup's GPU and framework run the recipe (check_supported and the
// framework's scalings of quantized Linears).
inline bool runs(const training_setup& base, const precision_recipe& r) {
    if (!base.framework.precisions.contains(r.kind)) return false;
    if (quantized_linears(r) && !base.framework.fp8_scalings.contains(r.scaling)) return false;
    try {
        check_supported(base.cluster.gpu, r);
    } catch (const invalid_argument&) {
        return false;
    }
    return true;
}
}  // namespace fit_table_detail

// A column's recipe: the base's own where it is of that kind (its scaling: MXFP8, NVFP4
// kept), else the standard one; under fp8, scaled the first way (delayed, current, mxfp8,
// blockwise) the framework and the GPU run (torchtitan: current).
inline precision_recipe column_recipe(const training_setup& base, precision_kind p) {
    if (p == base.precision.kind) return base.precision;
    precision_recipe r = recipe(p);
    if (!quantized_linears(r)) return r;
    for (fp8_scaling k : {fp8_scaling::delayed, fp8_scaling::current, fp8_scaling::mxfp8, fp8_scaling::blockwise}) {
        r.scaling = k;
        if (fit_table_detail::runs(base, r)) break;
    }
    return r;
}

// A column's name: the recipe's, with its scaling where the recipe's name does not say it
// ("fp8 current", "mxfp8", "nvfp4", "bf16").
inline std::string column_name(const training_setup& base, precision_kind p) {
    const precision_recipe r = column_recipe(base, p);
    std::string name(r.name);
    if (scaling_beyond_name(r)) name += " " + std::string(to_string(r.scaling));
    return name;
}

inline fit_table fit_table_of(const fit_table_request& r) {
    validate(r.base);  // also where no recipe is left to try (one the GPU cannot run)
    fit_table t{.base = r.base};
    const framework_profile& fw = r.base.framework;
    for (precision_kind p : all_precisions)
        if (fit_table_detail::runs(r.base, column_recipe(r.base, p)) &&
            (!r.only_base_precision || p == r.base.precision.kind))
            t.precisions.push_back(p);
    const bool on_host = r.base.layout.offload == offload_mode::optimizer;
    for (optimizer_kind k : all_optimizers)
        if (fw.optimizers.contains(k) && (!on_host || fw.host_optimizers.contains(k)) &&
            (!r.only_base_optimizer || k == r.base.optimizer))
            t.optimizers.push_back(k);
    for (optimizer_kind k : t.optimizers) {
        auto& row = t.largest.emplace_back();
        for (precision_kind p : t.precisions) {
            training_setup s = r.base;
            s.precision = column_recipe(r.base, p);
            s.optimizer = k;
            row.push_back(max_micro_batch(s));
        }
    }
    const auto column = [&](precision_kind p) { return std::find(t.precisions.begin(), t.precisions.end(), p); };
    const auto fp8 = column(precision_kind::fp8), bf16 = column(precision_kind::bf16);
    if (fp8 != t.precisions.end() && bf16 != t.precisions.end())
        for (const std::vector<int>& row : t.largest)
            t.fp8_fits_less_than_bf16 |= row[std::size_t(fp8 - t.precisions.begin())] <
                                         row[std::size_t(bf16 - t.precisions.begin())];
    if (r.base.finetune.freezes_base() && r.base.layout.recompute != recompute_mode::full &&
        r.base.framework.recompute_modes.contains(recompute_mode::full)) {
        training_setup s = r.base;
        s.layout.recompute = recompute_mode::full;
        s.layout.recompute_modules = {};
        t.with_full_recompute = max_micro_batch(s);
    }
    return t;
}

}  // namespace trainperf
