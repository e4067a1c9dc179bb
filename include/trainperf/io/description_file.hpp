// Reading a description a user wrote (a GPU, a system, a model, a framework profile, a
// Hugging Face config.json): bounded in size and nesting, duplicate keys refused, and
// typed, ranged field readers whose errors name the field, the value and what is
// expected. The loaders (gpu_json.hpp, system_json.hpp, model_json.hpp,
// framework_json.hpp, hf_config.hpp) prefix every error with the file's path.
#pragma once

#include <cmath>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <nlohmann/json.hpp>

#include "../enum_names.hpp"
#include "../error.hpp"

namespace trainperf::io {

// A description is a few kB; anything above 1 MiB (2^20 bytes) is refused before it is
// read, so a wrong path (a log, a checkpoint) fails at once instead of being parsed.
inline constexpr std::uintmax_t max_description_bytes = std::uintmax_t{1} << 20;
// Objects and arrays nested deeper than this are refused while parsing; the deepest
// description format nests 3 levels (a GPU inside a system, its peaks, one peak).
inline constexpr int max_description_depth = 16;

namespace description_detail {

using json = nlohmann::json;

inline std::string path_of(std::string_view context, std::string_view key) {
    return context.empty() ? std::string(key) : std::string(context) + "." + std::string(key);
}

// A JSON value as it appears in an error message, cut short if long.
inline std::string shown(const json& v) {
    std::string s = v.dump(-1, ' ', true, json::error_handler_t::replace);
    if (s.size() > 60) {
        s.resize(57);
        s.append("...");
    }
    return s;
}

// Thrown from the parser callback; turned into the one error message by parse_text.
struct structure_error {
    std::string what;
};

}  // namespace description_detail

// Parses `text` as one JSON document, refusing nesting deeper than
// max_description_depth and a key repeated in one object (the second would silently
// win). `source` names the text in errors (a file path). Never recursive: nlohmann's
// parser keeps its own stack, and the callback stops it before the tree gets deep.
inline nlohmann::json parse_description_text(std::string_view text, std::string_view source) {
    namespace dd = description_detail;
    using json = nlohmann::json;
    std::vector<std::set<std::string>> keys;  // one set per open object
    std::vector<bool> is_object;               // the open containers
    auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) -> bool {
        switch (event) {
            case json::parse_event_t::object_start:
            case json::parse_event_t::array_start:
                if (is_object.size() >= std::size_t(max_description_depth))
                    throw dd::structure_error{"objects and arrays nested deeper than " +
                                              std::to_string(max_description_depth) + " levels"};
                is_object.push_back(event == json::parse_event_t::object_start);
                if (is_object.back()) keys.emplace_back();
                break;
            case json::parse_event_t::object_end:
            case json::parse_event_t::array_end:
                if (!is_object.empty()) {
                    if (is_object.back()) keys.pop_back();
                    is_object.pop_back();
                }
                break;
            case json::parse_event_t::key:
                if (!keys.empty() && parsed.is_string() && !keys.back().insert(parsed.get<std::string>()).second)
                    throw dd::structure_error{"key \"" + parsed.get<std::string>() +
                                              "\" appears twice in one object"};
                break;
            case json::parse_event_t::value: break;
        }
        return true;
    };
    try {
        return json::parse(text.begin(), text.end(), callback);
    } catch (const dd::structure_error& e) {
        detail::fail("file", std::string(source), "refused: " + e.what);
    } catch (const json::parse_error& e) {
        // "[json.exception.parse_error.101] parse error at line 1, column 1: ..." without the tag.
        std::string why = e.what();
        if (const auto p = why.find("] "); p != std::string::npos) why = why.substr(p + 2);
        detail::fail("file", std::string(source), "is not valid JSON: " + why);
    }
}

// Reads and parses a description file: a regular file of at most
// max_description_bytes, one JSON document. Throws trainperf::invalid_argument naming
// the file otherwise.
inline nlohmann::json read_description_file(const std::filesystem::path& path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    require(!ec && std::filesystem::exists(status), "file", path.string(), "does not exist");
    require(std::filesystem::is_regular_file(status), "file", path.string(), "is not a regular file");
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    require(!ec, "file", path.string(), "cannot be read (its size is unknown)");
    require(size <= max_description_bytes, "file", path.string(),
            "is " + std::to_string(size) + " bytes; a description may have at most " +
                std::to_string(max_description_bytes) + " bytes (1 MiB)");
    std::ifstream in(path, std::ios::binary);
    require(in.good(), "file", path.string(), "cannot be opened for reading");
    std::string text(static_cast<std::size_t>(size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(size));
    require(static_cast<std::uintmax_t>(in.gcount()) == size, "file", path.string(), "could not be read whole");
    return parse_description_text(text, path.string());
}

// Writes `j` as the description files are written (two-space indent, newline at the end).
inline void write_description_file(const std::filesystem::path& path, const nlohmann::json& j) {
    std::ofstream out(path);
    require(out.good(), "file", path.string(), "cannot be opened for writing");
    out << j.dump(2) << '\n';
    require(out.good(), "file", path.string(), "write failed");
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

// ---- Typed readers: `context` is the path of the object `j` ("" at the top) -------------

namespace description_detail {

inline void require_object(const json& j, std::string_view context) {
    require(j.is_object(), context.empty() ? "document" : context, shown(j), "must be a JSON object");
}

inline const json& field(const json& j, std::string_view context, std::string_view key) {
    require_object(j, context);
    const auto it = j.find(std::string(key));
    require(it != j.end(), path_of(context, key), "(missing)", "required");
    return *it;
}

// Every key of `j` is one of `known`: a misspelt field is an error, not a default.
inline void only_keys(const json& j, std::string_view context, std::initializer_list<std::string_view> known) {
    require_object(j, context);
    for (const auto& [key, value] : j.items()) {
        bool ok = false;
        for (std::string_view k : known) ok = ok || k == key;
        if (!ok) {
            std::string list;
            for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
            detail::fail(path_of(context, key), shown(value), "unknown field (misspelt?); known: " + list);
        }
    }
}

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
        const auto u = v.get<std::uint64_t>();
        require(u <= std::uint64_t(hi), name, shown(v), range);
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

// One of an enum's names (enum_names.hpp).
template <class E>
E enum_value(const json& j, std::string_view context, std::string_view key) {
    const auto& v = field(j, context, key);
    const std::string name = path_of(context, key);
    require(v.is_string(), name, shown(v), "must be one of " + enum_name_list<E>(", "));
    return parse_enum<E>(name, v.get<std::string>());
}

inline void schema(const json& j, std::string_view expected) {
    const auto& v = field(j, "", "schema");
    require(v.is_string() && v.get<std::string>() == expected, "schema", shown(v),
            "must be \"" + std::string(expected) + "\"");
}

}  // namespace description_detail
}  // namespace trainperf::io
