// Reading and writing one JSON file, for every reader in io/ (descriptions, measurement
// and calibration files): the text parser with a nesting limit that refuses a key given
// twice in one object, the file reader with a size limit that names the file in every
// error, the writer that reports a failed write, and the field helpers whose errors name
// the field and its value. The limits are the caller's (json.hpp, description_file.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../core/error.hpp"

namespace trainperf::io {

namespace json_file_detail {

using json = nlohmann::json;

// "context.key", or "key" at the top of a document.
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

inline void require_object(const json& j, std::string_view context) {
    require(j.is_object(), context.empty() ? "document" : context, shown(j), "must be a JSON object");
}

// The value of `key` in the object `j`, which must be there.
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

// Thrown from the parser callback; turned into the one error message by parse_json_text.
struct structure_error {
    std::string what;
};

// " (N MiB)" where `bytes` is a whole number of MiB, else "".
inline std::string in_mib(std::uintmax_t bytes) {
    constexpr std::uintmax_t mib = std::uintmax_t{1} << 20;
    return bytes % mib == 0 ? " (" + std::to_string(bytes / mib) + " MiB)" : std::string{};
}

}  // namespace json_file_detail

// How deeply `j` nests, counted without recursion: 0 for a scalar, 1 for a flat array or
// object. Counting stops past `limit` (the result is then limit + 1).
inline int nesting_depth(const nlohmann::json& j, int limit) {
    std::vector<std::pair<const nlohmann::json*, int>> open;
    if (j.is_structured()) open.emplace_back(&j, 1);
    int deepest = 0;
    while (!open.empty()) {
        const auto [value, depth] = open.back();
        open.pop_back();
        deepest = std::max(deepest, depth);
        if (deepest > limit) return deepest;
        for (const auto& child : *value)
            if (child.is_structured()) open.emplace_back(&child, depth + 1);
    }
    return deepest;
}

// Every reader of a document the caller parsed checks this first: a document built or
// parsed elsewhere has no parser's limit, and the readers and their error messages
// (which print the values they refuse) recurse into what they are given.
inline void require_nesting(const nlohmann::json& j, std::string_view what, int max_depth) {
    require(nesting_depth(j, max_depth) <= max_depth, what.empty() ? "document" : what,
            j.is_object() ? "{...}" : "[...]", "nests deeper than " + std::to_string(max_depth) + " levels");
}

// Parses `text` as one JSON document, refusing objects and arrays nested deeper than
// `max_depth` levels and a key repeated in one object (the second would silently win).
// `source` names the text in errors (a file path). Never recursive: nlohmann's parser
// keeps its own stack, and the callback stops it before the tree gets deep.
inline nlohmann::json parse_json_text(std::string_view text, std::string_view source, int max_depth) {
    namespace jf = json_file_detail;
    using json = nlohmann::json;
    std::vector<std::set<std::string>> keys;  // one set per open object
    std::vector<bool> is_object;               // the open containers
    auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) -> bool {
        switch (event) {
            case json::parse_event_t::object_start:
            case json::parse_event_t::array_start:
                if (is_object.size() >= std::size_t(max_depth))
                    throw jf::structure_error{"nests deeper than " + std::to_string(max_depth) + " levels"};
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
                    throw jf::structure_error{"is refused: key \"" + parsed.get<std::string>() +
                                              "\" appears twice in one object"};
                break;
            case json::parse_event_t::value: break;
        }
        return true;
    };
    try {
        return json::parse(text.begin(), text.end(), callback);
    } catch (const jf::structure_error& e) {
        detail::fail("file", std::string(source), e.what);
    } catch (const json::exception& e) {
        // "[json.exception.parse_error.101] parse error at line 1, column 1: ..." without the tag.
        std::string why = e.what();
        if (const auto p = why.find("] "); p != std::string::npos) why = why.substr(p + 2);
        detail::fail("file", std::string(source), "is not valid JSON: " + why);
    }
}

// Reads and parses a JSON file: a regular file of at most `max_bytes`, one document
// nested at most `max_depth` levels. Throws trainperf::invalid_argument naming the file
// otherwise (missing, a directory or device, too large, unreadable, not JSON).
inline nlohmann::json read_json_file(const std::filesystem::path& path, std::uintmax_t max_bytes, int max_depth) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    require(!ec && std::filesystem::exists(status), "file", path.string(), "does not exist");
    require(std::filesystem::is_regular_file(status), "file", path.string(), "is not a regular file");
    const std::uintmax_t size = std::filesystem::file_size(path, ec);
    require(!ec, "file", path.string(), "cannot be read (its size is unknown)");
    require(size <= max_bytes, "file", path.string(),
            "is " + std::to_string(size) + " bytes; it may have at most " + std::to_string(max_bytes) + " bytes" +
                json_file_detail::in_mib(max_bytes));
    std::ifstream in(path, std::ios::binary);
    require(in.good(), "file", path.string(), "cannot be opened for reading");
    std::string text(static_cast<std::size_t>(size), '\0');
    in.read(text.data(), static_cast<std::streamsize>(size));
    require(static_cast<std::uintmax_t>(in.gcount()) == size, "file", path.string(), "could not be read whole");
    return parse_json_text(text, path.string(), max_depth);
}

// Writes `j` with a two-space indent and a newline at the end, creating the file's
// directory if need be. A write that fails (a full disk, /dev/full) is an error: the
// stream is checked after it is flushed and closed, not only after the buffered write.
inline void write_json_file(const std::filesystem::path& path, const nlohmann::json& j) {
    std::error_code ec;
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
    require(!ec, "file", path.string(), "its directory cannot be created: " + ec.message());
    require(!std::filesystem::is_directory(path, ec), "file", path.string(), "is a directory");
    std::ofstream out(path);
    require(out.good(), "file", path.string(), "cannot be opened for writing");
    out << j.dump(2) << '\n' << std::flush;
    out.close();
    require(!out.fail(), "file", path.string(), "write failed (disk full?)");
}

}  // namespace trainperf::io
