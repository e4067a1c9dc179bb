// JSON for trainperf (nlohmann-json): kernel parameters, calibration files and the
// cuBLASLt harness's measurement files (schema in benchmarks/data/README.md).
// Readers validate and name the offending field; they never return NaN.
#pragma once

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "../calibrate/measurement.hpp"
#include "../core/dtype.hpp"
#include "../core/error.hpp"
#include "../core/limits.hpp"
#include "../core/units.hpp"
#include "../cost/kernel_model.hpp"
#include "json_file.hpp"

namespace trainperf {

inline constexpr std::string_view measurement_schema = "trainperf.cublaslt.v1";
inline constexpr std::string_view calibration_schema = "trainperf.calibration.v1";

// What a file read by trainperf may be (docs/reliability.md): larger files and deeper
// nesting are refused before they cost time or stack. ASSUMPTION: 16 MiB holds ~10^5
// measured GEMMs, ten times the largest sweep the harness writes; 64 levels is four
// times the deepest format trainperf reads.
inline constexpr std::uintmax_t max_json_file_bytes = std::uintmax_t{16} << 20;
inline constexpr int max_json_depth = 64;

namespace json_detail {

using io::json_file_detail::field;
using io::json_file_detail::only_keys;
using io::json_file_detail::path_of;
using io::json_file_detail::shown;

inline double number(const nlohmann::json& j, std::string_view context, std::string_view key) {
    const auto& v = field(j, context, key);
    require(v.is_number(), path_of(context, key), shown(v), "must be a number");
    const double d = v.get<double>();
    require(std::isfinite(d), path_of(context, key), d, "must be finite");
    return d;
}

inline std::optional<double> optional_number(const nlohmann::json& j, std::string_view context,
                                             std::string_view key) {
    if (!j.contains(std::string(key)) || j.at(std::string(key)).is_null()) return std::nullopt;
    return number(j, context, key);
}

inline std::string text(const nlohmann::json& j, std::string_view context, std::string_view key) {
    const auto& v = field(j, context, key);
    require(v.is_string(), path_of(context, key), shown(v), "must be a string");
    return v.get<std::string>();
}

inline std::string optional_text(const nlohmann::json& j, std::string_view context, std::string_view key) {
    if (!j.contains(std::string(key)) || j.at(std::string(key)).is_null()) return {};
    return text(j, context, key);
}

// A whole number in [lo, hi], converted without undefined behaviour.
inline long long integer(const nlohmann::json& j, std::string_view context, std::string_view key, long long lo,
                         long long hi) {
    const double d = number(j, context, key);
    if (!(d >= double(lo) && d <= double(hi) && d == std::floor(d)))
        detail::fail(path_of(context, key), d,
                     "must be a whole number between " + std::to_string(lo) + " and " + std::to_string(hi));
    return static_cast<long long>(d);
}

// Parses JSON text with the depth limit, refusing a key given twice in one object;
// `name` says where it came from in messages.
inline nlohmann::json parse_text(std::string_view text, std::string_view name) {
    return io::parse_json_text(text, name, max_json_depth);
}

inline nlohmann::json read_file(const std::filesystem::path& path) {
    return io::read_json_file(path, max_json_file_bytes, max_json_depth);
}

inline void write_file(const std::filesystem::path& path, const nlohmann::json& j) {
    io::write_json_file(path, j);
}

}  // namespace json_detail

// ---------------------------------------------------------------------------------
// Kernel parameters. Times carry their unit in the key.

inline nlohmann::json to_json(const kernel_params& p) {
    return {{"peak_fraction", p.peak_fraction},
            {"tile_m", p.tile_m},
            {"tile_n", p.tile_n},
            {"k_half", p.k_half},
            {"memory_efficiency", p.memory_efficiency},
            {"launch_overhead_us", p.launch_overhead.value() * 1e6},
            {"cuda_core_fraction", p.cuda_core_fraction},
            {"small_tile_efficiency", p.small_tile_efficiency},
            {"fp8_peak_fraction", p.fp8_peak_fraction},
            {"fp4_peak_fraction", p.fp4_peak_fraction}};
}

// Every field is required (cuda_core_fraction, small_tile_efficiency, fp8_peak_fraction
// and fp4_peak_fraction, added later, default to kernel_params's 0.9, 0: the configured
// tile only, the model files written before them were fitted with, 0: peak_fraction and
// 0: fp8's) and unknown fields are rejected, so a typo cannot silently fall back to a
// default.
inline kernel_params kernel_params_from_json(const nlohmann::json& j,
                                             std::string_view context = "kernel_params") {
    io::require_nesting(j, context, max_json_depth);
    namespace jd = json_detail;
    jd::field(j, context, "peak_fraction");  // also checks j is an object
    jd::only_keys(j, context, {"peak_fraction", "tile_m", "tile_n", "k_half", "memory_efficiency",
                               "launch_overhead_us", "cuda_core_fraction", "small_tile_efficiency",
                               "fp8_peak_fraction", "fp4_peak_fraction"});
    kernel_params p{.peak_fraction = jd::number(j, context, "peak_fraction"),
                    .tile_m = jd::number(j, context, "tile_m"),
                    .tile_n = jd::number(j, context, "tile_n"),
                    .k_half = jd::number(j, context, "k_half"),
                    .memory_efficiency = jd::number(j, context, "memory_efficiency"),
                    .launch_overhead = microseconds_of(jd::number(j, context, "launch_overhead_us"))};
    p.cuda_core_fraction = jd::optional_number(j, context, "cuda_core_fraction").value_or(p.cuda_core_fraction);
    p.small_tile_efficiency =
        jd::optional_number(j, context, "small_tile_efficiency").value_or(p.small_tile_efficiency);
    p.fp8_peak_fraction = jd::optional_number(j, context, "fp8_peak_fraction").value_or(p.fp8_peak_fraction);
    p.fp4_peak_fraction = jd::optional_number(j, context, "fp4_peak_fraction").value_or(p.fp4_peak_fraction);
    validate(p);
    return p;
}

inline nlohmann::json to_json(const error_summary& e) {
    return {{"points", e.points},
            {"mean_abs_rel_error", e.mean_abs_rel_error},
            {"max_abs_rel_error", e.max_abs_rel_error},
            {"rms_rel_error", e.rms_rel_error},
            {"mean_rel_error", e.mean_rel_error}};
}

inline error_summary error_summary_from_json(const nlohmann::json& j, std::string_view context) {
    io::require_nesting(j, context, max_json_depth);
    namespace jd = json_detail;
    error_summary e{.points = static_cast<int>(jd::integer(j, context, "points", 0, 1 << 30)),
                    .mean_abs_rel_error = jd::number(j, context, "mean_abs_rel_error"),
                    .max_abs_rel_error = jd::number(j, context, "max_abs_rel_error"),
                    .rms_rel_error = jd::number(j, context, "rms_rel_error"),
                    .mean_rel_error = jd::number(j, context, "mean_rel_error")};
    require(e.points >= 0, jd::path_of(context, "points"), e.points, "must not be negative");
    return e;
}

// ---------------------------------------------------------------------------------
// Calibration file: fitted parameters for one GPU (catalog name) and how well they
// fit. `trainperf predict --calibration FILE` loads it.

struct calibration_file {
    std::string gpu;                  // catalog name, e.g. "h200-sxm"
    kernel_params params{};
    std::string dataset;              // the measurement file it was fitted to
    std::string created;              // ISO-8601 date
    error_summary fit{};              // on the fitted sweep points
    error_summary held_out{};         // on sweep points left out of the fit
    error_summary layer_totals{};     // whole layers (never in the fit)
};

inline nlohmann::json to_json(const calibration_file& c) {
    return {{"schema", calibration_schema},
            {"gpu", c.gpu},
            {"kernel_params", to_json(c.params)},
            {"dataset", c.dataset},
            {"created", c.created},
            {"fit", to_json(c.fit)},
            {"held_out", to_json(c.held_out)},
            {"layer_totals", to_json(c.layer_totals)}};
}

inline calibration_file calibration_file_from_json(const nlohmann::json& j) {
    io::require_nesting(j, "", max_json_depth);
    namespace jd = json_detail;
    const auto schema = jd::text(j, "", "schema");
    require(schema == calibration_schema, "schema", schema,
            "not a trainperf calibration file (expected trainperf.calibration.v1)");
    calibration_file c;
    c.gpu = jd::text(j, "", "gpu");
    require(!c.gpu.empty(), "gpu", "\"\"", "must name the GPU");
    c.params = kernel_params_from_json(jd::field(j, "", "kernel_params"));
    c.dataset = jd::optional_text(j, "", "dataset");
    c.created = jd::optional_text(j, "", "created");
    if (j.contains("fit")) c.fit = error_summary_from_json(j.at("fit"), "fit");
    if (j.contains("held_out")) c.held_out = error_summary_from_json(j.at("held_out"), "held_out");
    if (j.contains("layer_totals"))
        c.layer_totals = error_summary_from_json(j.at("layer_totals"), "layer_totals");
    return c;
}

inline void save_calibration(const std::filesystem::path& path, const calibration_file& c) {
    json_detail::write_file(path, to_json(c));
}

inline calibration_file load_calibration(const std::filesystem::path& path) {
    return calibration_file_from_json(json_detail::read_file(path));
}

// ---------------------------------------------------------------------------------
// Measurement files written by build/bin/trainperf-cublaslt.

struct measurement_provenance {
    std::string gpu_name;           // as the driver reports it, e.g. "NVIDIA H200"
    std::string gpu;                // catalog name used for predictions, e.g. "h200-sxm"
    int sm_count = 0;
    std::string compute_capability; // e.g. "9.0"
    double sm_clock_max_mhz = 0;    // reported peak SM clock
    std::optional<double> sm_clock_min_seen_mhz, sm_clock_max_seen_mhz;  // sampled while timing
    std::string driver;             // CUDA driver API version, e.g. "13.0"
    std::string cuda_runtime;
    std::string cublaslt;
    std::string date;               // ISO-8601, UTC
    std::string command;
};

// One timed GEMM. Layer GEMMs carry the layer's name as group; the sweep's are "sweep".
struct gemm_record {
    std::string group = "sweep";
    std::string name;               // e.g. "qkv" (layers) or "sweep"
    std::string phase;              // forward, dgrad, wgrad ("" for the sweep)
    gemm_shape shape{};
    std::string epilogue = "none";  // none, gelu
    seconds measured = seconds::from_value(0.0);   // median
    std::optional<seconds> p10, p90;
    int repetitions = 0;
    std::optional<seconds> predicted;
};

struct layer_record {
    std::string name;               // the group of its GEMMs, e.g. "gpt2-medium b8 s1024 tp1"
    std::string model;
    int micro_batch = 1, seq = 1, tp = 1;
    dtype math = dtype::bf16;
};

struct measurement_file {
    measurement_provenance provenance;
    std::optional<kernel_params> prediction_params;  // what "predicted_s" used
    std::vector<gemm_record> gemms;
    std::vector<layer_record> layers;
};

inline nlohmann::json to_json(const measurement_provenance& p) {
    nlohmann::json j{{"gpu_name", p.gpu_name},
                     {"gpu", p.gpu},
                     {"sm_count", p.sm_count},
                     {"compute_capability", p.compute_capability},
                     {"sm_clock_max_mhz", p.sm_clock_max_mhz},
                     {"driver", p.driver},
                     {"cuda_runtime", p.cuda_runtime},
                     {"cublaslt", p.cublaslt},
                     {"date", p.date},
                     {"command", p.command}};
    j["sm_clock_min_seen_mhz"] = p.sm_clock_min_seen_mhz ? nlohmann::json(*p.sm_clock_min_seen_mhz) : nullptr;
    j["sm_clock_max_seen_mhz"] = p.sm_clock_max_seen_mhz ? nlohmann::json(*p.sm_clock_max_seen_mhz) : nullptr;
    return j;
}

inline nlohmann::json to_json(const gemm_record& g) {
    nlohmann::json j{{"group", g.group},       {"name", g.name},
                     {"phase", g.phase},       {"m", g.shape.m},
                     {"n", g.shape.n},         {"k", g.shape.k},
                     {"batch", g.shape.batch}, {"dtype", to_string(g.shape.math)},
                     {"epilogue", g.epilogue}, {"measured_s", g.measured.value()},
                     {"repetitions", g.repetitions}};
    if (g.p10) j["p10_s"] = g.p10->value();
    if (g.p90) j["p90_s"] = g.p90->value();
    if (g.predicted) {
        j["predicted_s"] = g.predicted->value();
        j["rel_error"] = *g.predicted / g.measured - 1.0;
    }
    return j;
}

inline nlohmann::json to_json(const layer_record& l) {
    return {{"name", l.name}, {"model", l.model}, {"micro_batch", l.micro_batch},
            {"seq", l.seq},   {"tp", l.tp},       {"dtype", to_string(l.math)}};
}

inline nlohmann::json to_json(const measurement_file& f) {
    nlohmann::json gemms = nlohmann::json::array(), layers = nlohmann::json::array();
    for (const auto& g : f.gemms) gemms.push_back(to_json(g));
    for (const auto& l : f.layers) layers.push_back(to_json(l));
    nlohmann::json j{{"schema", measurement_schema},
                     {"provenance", to_json(f.provenance)},
                     {"gemms", gemms},
                     {"layers", layers}};
    if (f.prediction_params) j["kernel_params"] = to_json(*f.prediction_params);
    return j;
}

inline dtype dtype_from_json(const nlohmann::json& j, std::string_view context, std::string_view key) {
    io::require_nesting(j, context, max_json_depth);
    const auto s = json_detail::text(j, context, key);
    const auto t = parse_dtype(s);
    require(t.has_value(), json_detail::path_of(context, key), s, "unknown dtype");
    return *t;
}

inline int positive_int(const nlohmann::json& j, std::string_view context, std::string_view key) {
    return static_cast<int>(json_detail::integer(j, context, key, 1, std::numeric_limits<int>::max()));
}

// Reads the fields trainperf needs; the harness's extra per-GEMM fields (algo id,
// waves, reference check, TFLOP/s) are ignored.
inline measurement_file measurement_file_from_json(const nlohmann::json& j) {
    io::require_nesting(j, "", max_json_depth);
    namespace jd = json_detail;
    const auto schema = jd::text(j, "", "schema");
    require(schema == measurement_schema, "schema", schema,
            "not a trainperf cuBLASLt measurement file (expected trainperf.cublaslt.v1)");
    measurement_file f;
    const auto& p = jd::field(j, "", "provenance");
    f.provenance = {.gpu_name = jd::text(p, "provenance", "gpu_name"),
                    .gpu = jd::text(p, "provenance", "gpu"),
                    .sm_count = positive_int(p, "provenance", "sm_count"),
                    .compute_capability = jd::optional_text(p, "provenance", "compute_capability"),
                    .sm_clock_max_mhz = jd::optional_number(p, "provenance", "sm_clock_max_mhz").value_or(0),
                    .sm_clock_min_seen_mhz = jd::optional_number(p, "provenance", "sm_clock_min_seen_mhz"),
                    .sm_clock_max_seen_mhz = jd::optional_number(p, "provenance", "sm_clock_max_seen_mhz"),
                    .driver = jd::text(p, "provenance", "driver"),
                    .cuda_runtime = jd::text(p, "provenance", "cuda_runtime"),
                    .cublaslt = jd::text(p, "provenance", "cublaslt"),
                    .date = jd::text(p, "provenance", "date"),
                    .command = jd::text(p, "provenance", "command")};
    if (j.contains("kernel_params")) f.prediction_params = kernel_params_from_json(j.at("kernel_params"));

    const auto& gemms = jd::field(j, "", "gemms");
    require(gemms.is_array(), "gemms", gemms.type_name(), "must be an array");
    for (std::size_t i = 0; i < gemms.size(); ++i) {
        const auto& g = gemms[i];
        const std::string ctx = "gemms[" + std::to_string(i) + "]";
        gemm_record r;
        r.group = jd::text(g, ctx, "group");
        r.name = jd::text(g, ctx, "name");
        r.phase = jd::optional_text(g, ctx, "phase");
        r.shape = {.m = jd::number(g, ctx, "m"),
                   .n = jd::number(g, ctx, "n"),
                   .k = jd::number(g, ctx, "k"),
                   .batch = jd::number(g, ctx, "batch"),
                   .math = dtype_from_json(g, ctx, "dtype")};
        validate(r.shape);
        r.epilogue = jd::optional_text(g, ctx, "epilogue");
        if (r.epilogue.empty()) r.epilogue = "none";
        const auto kernel_time = [&](std::string_view key) -> std::optional<seconds> {
            const auto v = jd::optional_number(g, ctx, key);
            if (v) require_in(*v, limits::kernel_time, jd::path_of(ctx, key));
            return v ? std::optional(seconds_of(*v)) : std::nullopt;
        };
        require(g.contains("measured_s"), jd::path_of(ctx, "measured_s"), "(missing)", "required");
        r.measured = *kernel_time("measured_s");
        r.p10 = kernel_time("p10_s");
        r.p90 = kernel_time("p90_s");
        r.predicted = kernel_time("predicted_s");
        r.repetitions = g.contains("repetitions") && !g.at("repetitions").is_null()
                            ? static_cast<int>(jd::integer(g, ctx, "repetitions", 0, 1 << 30))
                            : 0;
        f.gemms.push_back(std::move(r));
    }

    std::set<std::string> layer_names;
    if (j.contains("layers")) {
        const auto& layers = j.at("layers");
        require(layers.is_array(), "layers", layers.type_name(), "must be an array");
        for (std::size_t i = 0; i < layers.size(); ++i) {
            const auto& l = layers[i];
            const std::string ctx = "layers[" + std::to_string(i) + "]";
            layer_record r{.name = jd::text(l, ctx, "name"),
                           .model = jd::optional_text(l, ctx, "model"),
                           .micro_batch = positive_int(l, ctx, "micro_batch"),
                           .seq = positive_int(l, ctx, "seq"),
                           .tp = positive_int(l, ctx, "tp"),
                           .math = dtype_from_json(l, ctx, "dtype")};
            require(r.name != "sweep", ctx + ".name", r.name, "\"sweep\" is reserved for the sweep");
            require(layer_names.insert(r.name).second, ctx + ".name", r.name, "appears twice");
            f.layers.push_back(std::move(r));
        }
    }
    for (std::size_t i = 0; i < f.gemms.size(); ++i)
        require(f.gemms[i].group == "sweep" || layer_names.contains(f.gemms[i].group),
                "gemms[" + std::to_string(i) + "].group", f.gemms[i].group,
                "is neither \"sweep\" nor the name of an entry in layers");
    return f;
}

inline measurement_file load_measurements(const std::filesystem::path& path) {
    const auto j = json_detail::read_file(path);
    try {
        return measurement_file_from_json(j);
    } catch (const trainperf::invalid_argument& e) {
        throw trainperf::invalid_argument(path.string() + ": " + e.what());
    }
}

inline void save_measurements(const std::filesystem::path& path, const measurement_file& f) {
    json_detail::write_file(path, to_json(f));
}

// The sweep's GEMMs, ready for calibrate().
inline std::vector<gemm_measurement> sweep_measurements(const measurement_file& f) {
    std::vector<gemm_measurement> out;
    for (const auto& g : f.gemms)
        if (g.group == "sweep") out.push_back({g.shape, g.measured});
    return out;
}

// Each layer with its GEMMs, in the order of the file's "layers".
inline std::vector<layer_measurement> layer_measurements(const measurement_file& f) {
    std::vector<layer_measurement> out;
    for (const auto& l : f.layers) {
        layer_measurement m{.name = l.name};
        for (const auto& g : f.gemms)
            if (g.group == l.name) m.gemms.push_back({g.shape, g.measured});
        out.push_back(std::move(m));
    }
    return out;
}

// What kind of trainperf file `path` holds, from its "schema" (empty if none).
inline std::string schema_of(const std::filesystem::path& path) {
    const auto j = json_detail::read_file(path);
    return j.is_object() && j.contains("schema") && j.at("schema").is_string()
               ? j.at("schema").get<std::string>()
               : std::string{};
}

// Every <dir>/<gpu>/*.json, sorted (benchmarks/data layout); empty if dir is absent.
inline std::vector<std::filesystem::path> dataset_files(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> out;
    if (!std::filesystem::is_directory(dir)) return out;
    for (const auto& gpu_dir : std::filesystem::directory_iterator(dir)) {
        if (!gpu_dir.is_directory()) continue;
        for (const auto& file : std::filesystem::directory_iterator(gpu_dir.path()))
            if (file.is_regular_file() && file.path().extension() == ".json") out.push_back(file.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace trainperf
