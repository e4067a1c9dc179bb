// The largest micro-batch per recipe and optimizer as JSON (`trainperf fit --json`,
// docs/cli.md): one row per (optimizer, precision) cell; across frameworks (--framework
// any), each framework's table so and the frameworks left out with the reason.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../search/fit_across.hpp"
#include "../search/fit_table.hpp"
#include "../spec/finetune.hpp"

namespace trainperf {

inline nlohmann::json to_json(const fit_table& t) {
    require(t.largest.size() == t.optimizers.size(), "fit_table.largest", t.largest.size(),
            "must hold one row per optimizer");
    for (const auto& row : t.largest)
        require(row.size() == t.precisions.size(), "fit_table.largest", row.size(),
                "must hold one entry per precision in every row");
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < t.optimizers.size(); ++i)
        for (std::size_t j = 0; j < t.precisions.size(); ++j)
            rows.push_back({{"optimizer", std::string(to_string(t.optimizers[i]))},
                            {"precision", column_name(t.base, t.precisions[j])},
                            {"max_micro_batch", t.largest[i][j]}});
    const training_setup& s = t.base;
    nlohmann::json j{{"gpu", std::string(s.cluster.gpu.name)},
                     {"model", std::string(s.model.name)},
                     {"seq", sequence_length(s)},
                     {"framework", std::string(s.framework.name)},
                     {"finetune", std::string(to_string(s.finetune.mode))},
                     {"fp8_fits_less_than_bf16", t.fp8_fits_less_than_bf16},
                     {"fits", rows}};
    if (s.finetune.freezes_base()) {
        j["lora_rank"] = s.finetune.rank;
        j["lora_targets"] = lora_targets_text(s.finetune.targets);
    }
    if (t.with_full_recompute) j["max_micro_batch_with_full_recompute"] = *t.with_full_recompute;
    return j;
}

inline nlohmann::json to_json(const fit_across_result& r) {
    nlohmann::json tables = nlohmann::json::array(), skipped = nlohmann::json::array();
    for (const fit_table& t : r.tables) tables.push_back(to_json(t));
    for (const skipped_framework& s : r.skipped) skipped.push_back({{"framework", s.framework}, {"reason", s.reason}});
    return {{"frameworks", tables}, {"frameworks_skipped", skipped}};
}

}  // namespace trainperf
