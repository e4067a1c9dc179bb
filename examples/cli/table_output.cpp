#include "table_output.hpp"

#include "cli.hpp"

#include <trainperf/io/csv.hpp>
#include <trainperf/spec/layout_text.hpp>

#include <algorithm>
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

// `words` joined by spaces into lines of at most `width` columns (a word wider than
// that on a line of its own), every line but the first after `indent` spaces and
// every line but the last ending in `end`.
std::string fill(const std::vector<std::string>& words, std::size_t indent, std::size_t width,
                 const std::string& end) {
    std::string text, line;
    bool started = false;  // the line holds a word
    for (const std::string& word : words) {
        if (started && line.size() + 1 + word.size() + end.size() > width) {
            text += line + end + "\n";
            line = std::string(indent, ' ');
            started = false;
        }
        line += (started ? " " : "") + word;
        started = true;
    }
    return text + line;
}

// The words of a shell command: split at spaces outside quotes, quoted text kept whole.
std::vector<std::string> shell_words(const std::string& command) {
    std::vector<std::string> words{""};
    char quote = 0;
    for (std::size_t i = 0; i < command.size(); ++i) {
        const char c = command[i];
        if (quote == 0 && c == ' ') {
            if (!words.back().empty()) words.emplace_back();
            continue;
        }
        words.back() += c;
        if (quote == 0 && c == '\\' && i + 1 < command.size()) words.back() += command[++i];
        else if (c == '\'' || c == '"') quote = quote == 0 ? c : quote == c ? 0 : quote;
    }
    if (words.back().empty()) words.pop_back();
    return words;
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

std::string wrap_words(const std::string& text, std::size_t indent, std::size_t width) {
    std::vector<std::string> words;
    for (std::size_t at = 0; at < text.size();) {
        const std::size_t end = std::min(text.find(' ', at), text.size());
        if (end > at) words.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    return fill(words, indent, width, "");
}

std::string wrap_command(const std::string& command, std::size_t width) {
    // A flag and its values make one unit of the lines.
    std::vector<std::string> units;
    for (const std::string& word : shell_words(command)) {
        if (units.empty() || word.rfind("--", 0) == 0) units.push_back(word);
        else units.back() += " " + word;
    }
    return fill(units, 4, width, " \\");
}

std::size_t table_width(const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width;
    for (const auto& row : rows)
        for (std::size_t c = 0; c < row.size(); ++c) {
            if (width.size() <= c) width.push_back(0);
            width[c] = std::max(width[c], row[c].size());
        }
    std::size_t total = 0;
    for (std::size_t w : width) total += w + 2;
    return total < 2 ? 0 : total - 2;
}

std::vector<std::string> layout_headers(bool with_cp, bool with_experts) {
    std::vector<std::string> h{"dp", "tp", "cp", "pp", "v", "sp", "ZeRO", "recompute", "mb", "ga"};
    if (with_experts) h.insert(h.begin() + 5, {"ep", "etp"});
    if (!with_cp) h.erase(h.begin() + 2);
    return h;
}

std::vector<std::string> layout_cells(const parallel_layout& l, bool with_cp, bool with_experts) {
    std::vector<std::string> c{std::to_string(l.dp),         std::to_string(l.tp),
                               std::to_string(l.cp),         std::to_string(l.pp),
                               std::to_string(l.interleave), l.sp ? "on" : "off",
                               std::to_string(l.zero),       std::string(to_string(l.recompute)),
                               std::to_string(l.micro_batch), std::to_string(l.grad_accum)};
    if (with_experts) c.insert(c.begin() + 5, {std::to_string(l.ep), std::to_string(l.expert_tp())});
    if (!with_cp) c.erase(c.begin() + 2);
    return c;
}

std::string layout_legend(bool with_experts) {
    return "v: interleave (virtual stages per rank), mb: micro-batch (samples), ga: grad-accum (micro-batches), "
           "mem: per GPU" +
           std::string(with_experts ? ", ep: expert-parallel, etp: expert-tensor-parallel size" : "");
}

std::string layout_rest(const parallel_layout& l, const std::string& changes, bool framework_overlaps) {
    std::string t;
    const auto add = [&t](const std::string& part) { t += (t.empty() ? "" : ", ") + part; };
    if (l.offload != offload_mode::none) add(std::string(to_string(l.offload)) + " offload");
    if (l.schedule != pipeline_schedule::one_f_one_b) add(std::string(to_string(l.schedule)) + " schedule");
    const auto layers = [](int n) { return n > 0 ? std::to_string(n) : std::string("even"); };
    if (l.first_stage_layers > 0 || l.last_stage_layers > 0)
        add("first/last stage " + layers(l.first_stage_layers) + "/" + layers(l.last_stage_layers) + " layers");
    if (!l.pipeline_layout.empty()) add("pipeline layout " + std::string(l.pipeline_layout));
    if (l.shard_group > 0) add("shard group " + std::to_string(l.shard_group));
    if (l.dp_overlap != dp_overlap_mode::framework && (l.dp_overlap == dp_overlap_mode::on) != framework_overlaps)
        add("dp-overlap " + std::string(to_string(l.dp_overlap)));
    if (changes.size() > 2) add(changes.substr(2));
    return t;
}

void print_with_rest(std::ostream& out, std::vector<std::vector<std::string>> rows,
                     const std::vector<std::string>& rest, const std::string& rest_header, std::size_t width) {
    // What the last column has room for; a longer rest is a note.
    const std::size_t before = table_width(rows) + 2;
    const std::size_t room = before < width ? width - before : 0;
    std::vector<std::string> notes;
    if (room < std::max<std::size_t>(rest_header.size(), 4)) {  // no room for the column ("[10]"): notes only
        table t(rows[0]);
        for (std::size_t i = 1; i < rows.size(); ++i) t.add_row(rows[i]);
        t.print(out);
        for (std::size_t i = 1; i < rows.size(); ++i)
            if (!rest[i - 1].empty()) out << wrap_words(rows[i][0] + ": " + rest[i - 1], 4, width) << "\n";
        return;
    }
    rows[0].push_back(rest_header);
    for (std::size_t i = 1; i < rows.size(); ++i) {
        const std::string& r = rest[i - 1];
        if (r.size() <= room) {
            rows[i].push_back(r.empty() ? "-" : r);
            continue;
        }
        notes.push_back(wrap_words("[" + std::to_string(notes.size() + 1) + "] " + r, 4, width));
        rows[i].push_back("[" + std::to_string(notes.size()) + "]");
    }
    table t(rows[0]);
    for (std::size_t i = 1; i < rows.size(); ++i) t.add_row(rows[i]);
    t.print(out);
    for (const std::string& note : notes) out << note << "\n";
}

}  // namespace trainperf::cli
