#include "table_output.hpp"

#include "cli.hpp"

#include <trainperf/io/csv.hpp>

#include <cmath>
#include <fstream>
#include <ostream>
#include <type_traits>
#include <variant>

namespace trainperf::cli {

namespace {
std::string text_of(const table_cell& cell) {
    return std::visit(
        [](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) return "-";
            else if constexpr (std::is_same_v<T, std::string>) return v;
            else if constexpr (std::is_same_v<T, bool>) return v ? "yes" : "NO";
            else if constexpr (std::is_same_v<T, long long>) return std::to_string(v);
            else {
                const double a = std::abs(v);
                return fixed(v, a >= 1000 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3);
            }
        },
        cell);
}
}  // namespace

void print_columns(std::ostream& out, const report_table& t, const std::vector<std::string>& columns) {
    std::vector<std::size_t> index;
    for (const auto& name : columns) {
        index.push_back(t.column(name));
        if (index.back() == t.columns().size()) throw usage_error("column " + name + ": not in the table");
    }
    table text(columns);
    for (const auto& row : t.rows()) {
        std::vector<std::string> cells;
        for (std::size_t i : index) cells.push_back(text_of(row[i]));
        text.add_row(std::move(cells));
    }
    text.print(out);
}

void print_csv(std::ostream& out, const report_table& t) { write_csv(out, t); }

void write_csv_file(const std::string& flag, const std::string& path, const report_table& t) {
    std::ofstream file(path, std::ios::binary);
    if (!file) throw usage_error(flag + " = " + path + ": cannot be written");
    write_csv(file, t);
    file.close();
    if (!file) throw usage_error(flag + " = " + path + ": writing failed");
}

}  // namespace trainperf::cli
