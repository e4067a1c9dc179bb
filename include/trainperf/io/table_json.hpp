// A report table (io/report_table.hpp) as JSON: an array with one object per row, keyed
// by the column names (which carry their units, as in the CSV: step_time_ms,
// memory_GiB); an empty cell is null.
#pragma once

#include <string>
#include <type_traits>
#include <vector>
#include <variant>

#include <nlohmann/json.hpp>

#include "report_table.hpp"

namespace trainperf {

inline nlohmann::json to_json(const table_cell& cell) {
    return std::visit(
        [](const auto& v) -> nlohmann::json {
            if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::monostate>) return nullptr;
            else return v;
        },
        cell);
}

inline nlohmann::json to_json(const report_table& t) {
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& row : t.rows()) {
        nlohmann::json j = nlohmann::json::object();
        for (std::size_t c = 0; c < row.size(); ++c) j[t.columns()[c]] = to_json(row[c]);
        rows.push_back(std::move(j));
    }
    return rows;
}

// A sweep (`trainperf sweep --json`): what was varied, as given (e.g. "batch=1,2,4"),
// and one flat object per point.
inline nlohmann::json sweep_to_json(const std::vector<std::string>& vary, const report_table& points) {
    return {{"vary", vary}, {"points", to_json(points)}};
}

}  // namespace trainperf
