// Reading a description a user wrote (a GPU, a system, a model, a framework profile, a
// Hugging Face config.json): bounded in size and nesting, duplicate keys refused, and
// typed, ranged field readers whose errors name the field, the value and what is
// expected. The loaders (gpu_json.hpp, system_json.hpp, model_json.hpp,
// framework_json.hpp, hf_config.hpp) prefix every error with the file's path.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../core/enum_names.hpp"
#include "../core/enum_set.hpp"
#include "../core/error.hpp"
#include "json_file.hpp"

namespace trainperf::io {

// A description is a few kB; anything above 1 MiB (2^20 bytes) is refused before it is
// read, so a wrong path (a log, a checkpoint) fails at once instead of being parsed.
inline constexpr std::uintmax_t max_description_bytes = std::uintmax_t{1} << 20;
// Objects and arrays nested deeper than this are refused while parsing; the deepest
// description format nests 3 levels (a GPU inside a system, its peaks, one peak).
inline constexpr int max_description_depth = 16;

namespace description_detail {

using json = nlohmann::json;
using json_file_detail::field;
using json_file_detail::only_keys;
using json_file_detail::path_of;
using json_file_detail::require_object;
using json_file_detail::shown;

}  // namespace description_detail

// Reads and parses a description file: a regular file of at most
// max_description_bytes, one JSON document. Throws trainperf::invalid_argument naming
// the file otherwise.
inline nlohmann::json read_description_file(const std::filesystem::path& path) {
    return read_json_file(path, max_description_bytes, max_description_depth);
}

// Writes `j` as the description files are written (two-space indent, newline at the
// end); a failed write is an error.
inline void write_description_file(const std::filesystem::path& path, const nlohmann::json& j) {
    write_json_file(path, j);
}

// Runs `read` on a parsed file and prefixes any error with the file's path:
// "path: field = value: why".
template <class Read>
auto with_file_context(const std::filesystem::path& path, Read&& read) {
    try {
        return read();
    } catch (const trainperf::invalid_argument& e) {
        throw trainperf::invalid_argument(path.string() + ": " + e.what());
    }
}

// Names read from a file must outlive the JSON they came from: the specs hold
// std::string_view. Each distinct text is kept once for the rest of the program (a few
// bytes per description read), so specs read from files copy like catalog ones.
inline std::string_view keep_text(const std::string& s) {
    static std::mutex mutex;
    static std::set<std::string, std::less<>> texts;
    const std::lock_guard lock(mutex);
    return *texts.insert(s).first;
}

// A set of an enum's values (framework_profile::optimizers, a layout's recompute
// modules, ...) as a list of names.
template <class E>
nlohmann::json name_list(const enum_set<E>& set) {
    nlohmann::json list = nlohmann::json::array();
    for (E v : enum_values<E>())
        if (set.contains(v)) list.push_back(std::string(to_string(v)));
    return list;
}

// ---- Typed readers: `context` is the path of the object `j` ("" at the top) -------------

namespace description_detail {

// A number in [lo, hi] (finite).
inline double number_in(const json& v, const std::string& name, double lo, double hi, std::string_view unit) {
    require(v.is_number(), name, shown(v), "must be a number (" + std::string(unit) + ")");
    const double d = v.get<double>();
    std::ostringstream range;
    range << "must be in [" << lo << ", " << hi << "] " << unit;
    require(std::isfinite(d) && d >= lo && d <= hi, name, shown(v), range.str());
    return d;
}

inline double number(const json& j, std::string_view context, std::string_view key, double lo, double hi,
                     std::string_view unit) {
    return number_in(field(j, context, key), path_of(context, key), lo, hi, unit);
}

// An integer in [lo, hi]: a JSON integer (12, not 12.0 or "12").
inline int integer_in(const json& v, const std::string& name, long long lo, long long hi) {
    const std::string range = "must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    require(v.is_number_integer(), name, shown(v), range);
    if (v.is_number_unsigned()) {
        const auto u = v.get<std::uint64_t>();  // nlohmann reads every integer >= 0 as unsigned
        require(u <= std::uint64_t(hi) && (lo <= 0 || u >= std::uint64_t(lo)), name, shown(v), range);
        return static_cast<int>(u);
    }
    const auto i = v.get<std::int64_t>();
    require(i >= lo && i <= hi, name, shown(v), range);
    return static_cast<int>(i);
}

inline int integer(const json& j, std::string_view context, std::string_view key, long long lo, long long hi) {
    return integer_in(field(j, context, key), path_of(context, key), lo, hi);
}

inline bool boolean(const json& j, std::string_view context, std::string_view key) {
    const auto& v = field(j, context, key);
    require(v.is_boolean(), path_of(context, key), shown(v), "must be true or false");
    return v.get<bool>();
}

inline std::string text_in(const json& v, const std::string& name, std::size_t max_size) {
    require(v.is_string(), name, shown(v), "must be a string");
    std::string s = v.get<std::string>();
    require(!s.empty() && s.size() <= max_size, name, shown(v),
            "must have 1 to " + std::to_string(max_size) + " characters");
    for (char c : s)
        require(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f, name, shown(v), "must not hold control characters");
    return s;
}

inline std::string text(const json& j, std::string_view context, std::string_view key, std::size_t max_size) {
    return text_in(field(j, context, key), path_of(context, key), max_size);
}

// A name used on command lines: letters, digits and . _ - + only.
inline std::string name_text(const json& j, std::string_view context, std::string_view key) {
    std::string s = text(j, context, key, 64);
    for (char c : s) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        std::string_view("._-+").find(c) != std::string_view::npos;
        require(ok, path_of(context, key), shown(json(s)), "may hold only letters, digits and . _ - +");
    }
    return s;
}

// One of an enum's names (core/enum_names.hpp).
template <class E>
E enum_value(const json& j, std::string_view context, std::string_view key) {
    const auto& v = field(j, context, key);
    const std::string name = path_of(context, key);
    require(v.is_string(), name, shown(v), "must be one of " + enum_name_list<E>(", "));
    return parse_enum<E>(name, v.get<std::string>());
}

// A list of an enum's names (core/enum_set.hpp), each at most once; empty when `allow_empty`.
template <class E>
enum_set<E> enum_list(const json& j, std::string_view context, std::string_view key, bool allow_empty) {
    const auto& v = field(j, context, key);
    const std::string name = path_of(context, key);
    require(v.is_array() && v.size() <= 32 && (allow_empty || !v.empty()), name, shown(v),
            std::string(allow_empty ? "must be a list" : "must be a non-empty list") + " of names from " +
                enum_name_list<E>(", "));
    enum_set<E> set;
    for (const auto& item : v) {
        require(item.is_string(), name, shown(item), "must be one of " + enum_name_list<E>(", "));
        const E e = parse_enum<E>(name, item.get<std::string>());
        require(!set.contains(e), name, shown(item), "is listed twice");
        set.insert(e);
    }
    return set;
}

// Whether two derived figures agree: numbers within a relative 1e-9, objects key by key,
// anything else exactly.
inline bool same_figure(const json& want, const json& given) {
    if (want.is_number() && given.is_number()) {
        const double a = want.get<double>(), b = given.get<double>();
        return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
    }
    if (want.is_object() && given.is_object()) {
        if (want.size() != given.size()) return false;
        for (auto it = want.begin(); it != want.end(); ++it)
            if (!given.contains(it.key()) || !same_figure(it.value(), given[it.key()])) return false;
        return true;
    }
    return want == given;
}

// A description's "derived" object: figures computed from its other fields (parameters,
// GiB, ...), written for people and programs that read the file. Optional when read;
// where given, each must be one of `computed`'s and equal to it (numbers within a relative
// 1e-9), so that an edited field with a stale figure beside it is an error, not a
// silent mismatch.
inline void check_derived(const json& j, const json& computed) {
    if (!j.contains("derived")) return;
    const auto& d = field(j, "", "derived");
    require(d.is_object(), "derived", shown(d), "must be an object of figures computed from the other fields");
    for (auto it = d.begin(); it != d.end(); ++it) {
        const std::string name = "derived." + it.key();
        require(computed.contains(it.key()), name, shown(it.value()), "is not a derived figure of this description");
        const json& want = computed[it.key()];
        require(same_figure(want, it.value()), name, shown(it.value()),
                "does not match the description (" + want.dump() +
                    "): derived figures are computed from the other fields; delete them or correct those");
    }
}

inline void schema(const json& j, std::string_view expected) {
    const auto& v = field(j, "", "schema");
    require(v.is_string() && v.get<std::string>() == expected, "schema", shown(v),
            "must be \"" + std::string(expected) + "\"");
}

}  // namespace description_detail
}  // namespace trainperf::io
