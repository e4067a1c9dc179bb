// `--model-file PATH`: a model description (trainperf.model.v1, model_json.hpp) or a
// Hugging Face config.json (hf_config.hpp), told apart by their keys: "schema" or
// "model_type".
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "../spec/model.hpp"
#include "description_file.hpp"
#include "hf_config.hpp"
#include "model_json.hpp"

namespace trainperf::io {

// The name a Hugging Face config gets: its file name without .json, or, for a file
// called config.json, the folder holding it (a model's download folder); characters
// other than letters, digits and . _ - + become '-'.
inline std::string hf_model_name(const std::filesystem::path& path) {
    std::string stem = path.stem().string();
    if (stem == "config" && path.has_parent_path()) {
        const auto parent = std::filesystem::absolute(path).parent_path().filename().string();
        if (!parent.empty()) stem = parent;
    }
    if (stem.size() > 64) stem.resize(64);
    for (char& c : stem) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        std::string_view("._-+").find(c) != std::string_view::npos;
        if (!ok) c = '-';
    }
    return stem.empty() ? std::string("hf-model") : stem;
}

inline transformer_config model_from_file_json(const nlohmann::json& j, const std::filesystem::path& path) {
    require_nesting(j, "", max_description_depth);
    description_detail::require_object(j, "");
    if (j.contains("schema")) return model_from_json(j);
    require(j.contains("model_type"), "document", "(no \"schema\", no \"model_type\")",
            "neither a trainperf.model.v1 description nor a Hugging Face config.json");
    return model_from_hf_config(j, hf_model_name(path));
}

// The model the file describes; errors name the file and the field.
inline transformer_config load_model_file(const std::filesystem::path& path) {
    const auto j = read_description_file(path);
    return with_file_context(path, [&] { return model_from_file_json(j, path); });
}

inline void save_model_file(const std::filesystem::path& path, const transformer_config& m) {
    write_description_file(path, model_to_json(m));
}

}  // namespace trainperf::io
