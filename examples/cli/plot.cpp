#include "plot.hpp"

#include "cli.hpp"
#include "table_output.hpp"

#include <trainperf/io/csv.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <type_traits>
#include <variant>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace trainperf::cli {

namespace {

// ---- Running gnuplot ---------------------------------------------------------------

// A temporary file removed when it goes out of scope.
struct temp_file {
    std::string path;
    int fd = -1;
    temp_file() {
        std::string pattern = (std::filesystem::temp_directory_path() / "trainperf-plot-XXXXXX").string();
        fd = mkstemp(pattern.data());
        if (fd < 0) throw std::runtime_error("cannot create a temporary file for gnuplot: " + std::string(std::strerror(errno)));
        path = pattern;
    }
    ~temp_file() {
        if (fd >= 0) close(fd);
        std::remove(path.c_str());
    }
    temp_file(const temp_file&) = delete;
    temp_file& operator=(const temp_file&) = delete;
    std::string read_all() const {
        std::ifstream in(path, std::ios::binary);
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    }
};

// Runs `gnuplot SCRIPT` (no shell; the script is our own temporary file) and returns
// what it wrote on its standard output: the image.
std::string run_gnuplot(const std::string& script) {
    temp_file script_file, image, errors;
    {
        std::ofstream s(script_file.path, std::ios::binary);
        s << script;
        if (!s) throw std::runtime_error("cannot write the gnuplot script");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, image.fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, errors.fd, STDERR_FILENO);
    std::string program = "gnuplot";
    std::vector<char*> argv{program.data(), script_file.path.data(), nullptr};
    pid_t pid = 0;
    const int spawned = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned == ENOENT)
        throw usage_error("--plot: gnuplot is not installed (Debian: apt-get install gnuplot-nox); "
                          "run without --plot, or with --csv for the data");
    if (spawned != 0) throw usage_error("--plot: cannot run gnuplot: " + std::string(std::strerror(spawned)));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) throw std::runtime_error("waiting for gnuplot failed");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::string message = errors.read_all();
        std::replace(message.begin(), message.end(), '\n', ' ');
        throw std::runtime_error("gnuplot failed: " + message.substr(0, 300));
    }
    return image.read_all();
}

std::string extension_of(const std::string& path) {
    std::string ext = std::filesystem::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return ext;
}

// Runs the script with the terminal the file's extension asks for, then writes the
// image and the data behind it.
void render(const std::string& path, const std::string& body, const report_table& data) {
    check_plot_path(path);
    const std::string terminal = extension_of(path) == ".svg"
                                     ? "set terminal svg size 800,600 dynamic noenhanced background rgb 'white' font 'sans,11'\n"
                                     : "set terminal pngcairo size 1000,750 noenhanced font 'sans,10'\n";
    const std::string image = run_gnuplot(terminal + "set output\n" + body);
    if (image.empty()) throw std::runtime_error("gnuplot wrote no image");
    std::ofstream out(path, std::ios::binary);
    if (!out) throw usage_error("--plot = " + path + ": cannot be written");
    out << image;
    out.close();
    if (!out) throw usage_error("--plot = " + path + ": writing failed");
    write_csv_file("--plot", plot_data_path(path), data);
}

// ---- The script --------------------------------------------------------------------

// A gnuplot string: single-quoted (no backquote substitution), quotes doubled,
// control characters dropped.
std::string gp_string(std::string_view s) {
    std::string q = "'";
    for (char c : s) {
        if (static_cast<unsigned char>(c) < 0x20) continue;
        q += c == '\'' ? std::string("''") : std::string(1, c);
    }
    return q + "'";
}

std::optional<double> number_of(const table_cell& cell) {
    if (const auto* d = std::get_if<double>(&cell)) return *d;
    if (const auto* i = std::get_if<long long>(&cell)) return double(*i);
    return std::nullopt;
}

std::string label_of(const table_cell& cell) {
    return std::visit(
        [](const auto& v) -> std::string {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) return "";
            else if constexpr (std::is_same_v<T, std::string>) return v;
            else if constexpr (std::is_same_v<T, bool>) return v ? "on" : "off";
            else if constexpr (std::is_same_v<T, long long>) return std::to_string(v);
            else return plain_decimal(v);
        },
        cell);
}

std::size_t column_index(const report_table& t, const std::string& name) {
    const std::size_t c = t.column(name);
    if (c == t.columns().size()) throw std::runtime_error("plot: no column " + name);
    return c;
}

// A data block: one line per point, x then the columns given; an empty cell as NaN
// (gnuplot leaves the point out).
struct block {
    std::string name;
    std::ostringstream text;
    explicit block(std::string n) : name(std::move(n)) { text << name << " << EOD\n"; }
    void add(double x, const std::vector<std::optional<double>>& ys) {
        text << plain_decimal(x);
        for (const auto& y : ys) text << ' ' << (y ? plain_decimal(*y) : std::string("NaN"));
        text << '\n';
    }
    std::string str() const { return text.str() + "EOD\n"; }
};

}  // namespace

void check_plot_path(const std::string& path) {
    const std::string ext = extension_of(path);
    if (ext != ".svg" && ext != ".png") throw usage_error("--plot = " + path + ": expected a FILE.svg or FILE.png");
    if (std::filesystem::is_directory(path)) throw usage_error("--plot = " + path + ": is a directory");
}

std::string plot_data_path(const std::string& plot_path) {
    return std::filesystem::path(plot_path).replace_extension(".csv").string();
}

void plot_sweep(const std::string& path, const report_table& t, const std::vector<std::string>& varied) {
    check_plot_path(path);
    const std::size_t xc = column_index(t, varied.at(0));
    const bool by_series = varied.size() > 1;
    const std::size_t series_column = by_series ? column_index(t, varied[1]) : xc;
    const auto series_of = [&](const std::vector<table_cell>& row) {
        return by_series ? label_of(row[series_column]) : std::string("all");
    };
    const std::size_t tokens = column_index(t, "tokens_per_s"), memory = column_index(t, "memory_GiB"),
                      capacity = column_index(t, "memory_capacity_GiB");
    // x: the value when numeric, else the position of its label (shown as the tic).
    const bool numeric_x = std::all_of(t.rows().begin(), t.rows().end(),
                                       [&](const auto& row) { return number_of(row[xc]).has_value(); });
    std::vector<std::string> x_labels, series;
    for (const auto& row : t.rows()) {
        const std::string x = label_of(row[xc]);
        if (std::find(x_labels.begin(), x_labels.end(), x) == x_labels.end()) x_labels.push_back(x);
        const std::string s = series_of(row);
        if (std::find(series.begin(), series.end(), s) == series.end()) series.push_back(s);
    }
    std::string script;
    std::vector<std::string> names;
    for (std::size_t i = 0; i < series.size(); ++i) {
        block b("$s" + std::to_string(i));
        for (const auto& row : t.rows()) {
            if (series_of(row) != series[i]) continue;
            const double x = numeric_x ? *number_of(row[xc])
                                       : double(std::find(x_labels.begin(), x_labels.end(), label_of(row[xc])) -
                                                x_labels.begin());
            b.add(x, {number_of(row[tokens]), number_of(row[memory]), number_of(row[capacity])});
        }
        script += b.str();
        names.push_back(b.name);
    }
    script += "set datafile missing NaN\nset key outside right top\nset grid\nset multiplot layout 2,1\n";
    if (numeric_x) {
        double lo = 1e300, hi = 0;
        for (const auto& row : t.rows()) {
            lo = std::min(lo, *number_of(row[xc]));
            hi = std::max(hi, *number_of(row[xc]));
        }
        if (lo > 0 && hi / lo >= 16) script += "set logscale x 2\n";
        if (hi > lo) script += "set xrange [" + plain_decimal(lo) + ":" + plain_decimal(hi) + "]\n";
        else script += "set xrange [" + plain_decimal(lo - 1) + ":" + plain_decimal(lo + 1) + "]\n";
        script += "set offsets graph 0.02, graph 0.02, 0, 0\n";
    } else {
        script += "set xrange [-0.5:" + std::to_string(x_labels.size()) + "-0.5]\nset xtics (";
        for (std::size_t i = 0; i < x_labels.size(); ++i)
            script += (i ? ", " : "") + gp_string(x_labels[i]) + " " + std::to_string(i);
        script += ")\n";
    }
    const std::string x_title = gp_string(varied[0]);
    const auto title = [&](std::size_t i) {
        return by_series ? gp_string(varied[1] + " " + series[i]) : std::string("'tokens/s'");
    };
    script += "set title 'Throughput (points that do not fit have none)'\nset ylabel 'tokens/s (all GPUs)'\n"
              "set xlabel " + x_title + "\n";
    const bool any_fits = std::any_of(t.rows().begin(), t.rows().end(),
                                      [&](const auto& row) { return number_of(row[tokens]).has_value(); });
    if (any_fits) {
        script += "set yrange [0:*]\nplot ";
        for (std::size_t i = 0; i < names.size(); ++i)
            script += (i ? ", " : "") + names[i] + " using 1:2 with linespoints title " + title(i);
    } else {  // an empty panel that says why (gnuplot refuses a plot without a point)
        script += "set yrange [0:1]\nset label 1 'no point fits in memory: no throughput' at graph 0.5,0.5 center\n"
                  "plot -1 notitle\nunset label 1\nset yrange [0:*]";
    }
    script += "\nset title 'Memory per GPU'\nset ylabel 'GiB (2^30 B)'\nplot ";
    for (std::size_t i = 0; i < names.size(); ++i)
        script += (i ? ", " : "") + names[i] + " using 1:3 with linespoints title " +
                  (by_series ? gp_string(varied[1] + " " + series[i]) : std::string("'memory per GPU'"));
    // The device's usable memory: one line, or one per series where the series differ
    // in it (e.g. one GPU per series).
    const bool one_capacity = std::all_of(t.rows().begin(), t.rows().end(), [&](const auto& row) {
        return number_of(row[capacity]) == number_of(t.rows().front()[capacity]);
    });
    if (one_capacity || !by_series)  // one series: its line follows each point's device
        script += ", " + names[0] + " using 1:4 with lines dashtype 2 lc rgb 'black' title 'usable on the device'";
    else
        for (std::size_t i = 0; i < names.size(); ++i)
            script += ", " + names[i] + " using 1:4 with lines dashtype 2 title " +
                      gp_string("usable on the device, " + varied[1] + " " + series[i]);
    script += "\n";
    script += "unset multiplot\n";
    render(path, script, t);
}

namespace {
std::string scaling_script(const report_table& t, const char* x, const std::vector<std::string>& ys,
                           const std::vector<std::string>& styles, const std::vector<std::string>& titles,
                           const std::string& heading) {
    const std::size_t xc = column_index(t, x);
    block b("$d");
    for (const auto& row : t.rows()) {
        std::vector<std::optional<double>> values;
        for (const auto& y : ys) values.push_back(y == "ideal" ? number_of(row[xc]) : number_of(row[column_index(t, y)]));
        b.add(*number_of(row[xc]), values);
    }
    std::string script = b.str() + "set key left top\nset grid\nset title " + gp_string(heading) +
                         "\nset xlabel " + gp_string(x) + "\nset ylabel 'speedup (x one replica)'\nset xrange [1:*]\n"
                         "set yrange [0:*]\nplot ";
    for (std::size_t i = 0; i < ys.size(); ++i)
        script += (i ? ", " : "") + std::string("$d using 1:") + std::to_string(i + 2) + " with " + styles[i] +
                  " title " + gp_string(titles[i]);
    return script + "\n";
}
}  // namespace

void plot_engine_scaling(const std::string& path, const report_table& t) {
    check_plot_path(path);
    const double r = *number_of(t.at(0, "r"));
    render(path,
           scaling_script(t, "replicas", {"engine_speedup_x", "formula_speedup_x", "ideal"},
                          {"points pt 7", "lines lw 2", "lines dashtype 2 lc rgb 'gray'"},
                          {"engine", "N/(1+(N-1)r), r = " + plain_decimal(std::round(r * 1e4) / 1e4), "perfect scaling"},
                          "Data-parallel speedup: engine vs formula"),
           t);
}

void plot_formula_scaling(const std::string& path, const report_table& t) {
    check_plot_path(path);
    const double r = *number_of(t.at(0, "r"));
    render(path,
           scaling_script(t, "gpus", {"speedup_x", "ideal"}, {"linespoints pt 7", "lines dashtype 2 lc rgb 'gray'"},
                          {"N/(1+(N-1)r), r = " + plain_decimal(r), "perfect scaling"}, "Speedup N/(1+(N-1)r)"),
           t);
}

// Twelve colours that stay apart (Paul Tol's "muted" scheme and three greys).
constexpr std::array<const char*, 12> component_colors{"#332288", "#88CCEE", "#44AA99", "#117733", "#999933",
                                                       "#DDCC77", "#CC6677", "#882255", "#AA4499", "#555555",
                                                       "#AAAAAA", "#DDDDDD"};

void plot_memory(const std::string& path, const report_table& t, const std::string& over) {
    check_plot_path(path);
    const std::size_t xc = column_index(t, over);
    // The components at the peak that are not zero everywhere, stacked.
    std::vector<std::size_t> parts;
    std::vector<std::string> names;
    const std::string prefix = "memory_at_peak_", suffix = "_GiB";
    for (std::size_t c = 0; c < t.columns().size(); ++c) {
        const std::string& name = t.columns()[c];
        if (name.rfind(prefix, 0) != 0) continue;
        const bool any = std::any_of(t.rows().begin(), t.rows().end(),
                                     [&](const auto& row) { return number_of(row[c]).value_or(0) > 0; });
        if (!any) continue;
        parts.push_back(c);
        names.push_back(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()));
    }
    const std::size_t capacity = column_index(t, "memory_capacity_GiB");
    block b("$d");
    std::string tics;
    std::size_t i = 0;
    for (const auto& row : t.rows()) {
        std::vector<std::optional<double>> values;
        for (std::size_t c : parts) values.push_back(number_of(row[c]));
        values.push_back(number_of(row[capacity]));
        b.add(double(i), values);
        tics += (i ? ", " : "") + gp_string(label_of(row[xc])) + " " + std::to_string(i);
        ++i;
    }
    std::string script = b.str() +
                         "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.8 border -1\n"
                         "set boxwidth 0.7\nset key outside right top\nset grid y\n"
                         "set title 'Memory per GPU at the peak, by component'\nset ylabel 'GiB (2^30 B)'\nset xlabel " +
                         gp_string(over) + "\nset yrange [0:*]\nset xrange [-0.5:" + std::to_string(i) +
                         "-0.5]\nset xtics (" + tics + ")\nplot ";
    for (std::size_t k = 0; k < parts.size(); ++k)
        script += (k ? ", " : "") + std::string("$d using ") + std::to_string(k + 2) + " lc rgb " +
                  gp_string(component_colors[k % component_colors.size()]) + " title " + gp_string(names[k]);
    script += ", $d using 1:" + std::to_string(parts.size() + 2) +
              " with lines lw 2 dashtype 2 lc rgb 'black' title 'usable on the device'\n";
    render(path, script, t);
}

void plot_step(const std::string& path, const report_table& t) {
    check_plot_path(path);
    if (t.rows().size() != 1) throw std::runtime_error("plot_step: expected one step");
    const std::vector<std::pair<std::string, std::string>> parts{{"forward_backward_ms", "forward + backward"},
                                                                  {"communication_ms", "communication (exposed)"},
                                                                  {"optimizer_ms", "optimizer"},
                                                                  {"bubble_ms", "pipeline bubble"},
                                                                  {"data_ms", "data stall"}};
    block b("$d");
    std::vector<std::optional<double>> values;
    for (const auto& [column, title] : parts) values.push_back(number_of(t.rows()[0][column_index(t, column)]));
    b.add(0, values);
    std::string script = b.str() +
                         "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.8 border -1\n"
                         "set boxwidth 0.5\nset key outside right top\nset grid y\nset title " +
                         gp_string("Step time by part: " + label_of(t.rows()[0][column_index(t, "model")]) + " on " +
                                label_of(t.rows()[0][column_index(t, "gpus")]) + " x " +
                                label_of(t.rows()[0][column_index(t, "gpu")])) +
                         "\nset ylabel 'ms per step'\nset yrange [0:*]\nset xrange [-1:1]\nset xtics ('step' 0)\nplot ";
    for (std::size_t k = 0; k < parts.size(); ++k)
        script += (k ? ", " : "") + std::string("$d using ") + std::to_string(k + 2) + " title " +
                  gp_string(parts[k].second);
    render(path, script + "\n", t);
}

std::string plot_written_note(const std::string& plot) {
    return "Plot written to " + plot + ", its data to " + plot_data_path(plot) + "\n";
}

}  // namespace trainperf::cli
