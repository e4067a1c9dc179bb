// The flags that name a model: a catalog name, a description file (or a Hugging Face
// config.json), or `custom` with its sizes and the architecture options (SwiGLU, GQA,
// untied head, rotary positions, RMSNorm, no biases, no dropout). Shared by every
// command that takes a model.
#pragma once

#include "cli.hpp"

#include <trainperf/spec/model.hpp>

#include <string>
#include <vector>

namespace trainperf::cli {

struct model_flags {
    std::string name, file;  // --model NAME, or --model-file PATH (a description or a HF config.json)
    int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn_hidden = 0, vocab = 0;
    std::string ffn = "gelu", positions = "learned", norm = "layernorm";
    std::string activation = "gelu", code = "generic";
    bool untied = false, no_biases = false, no_dropout = false;
    std::vector<CLI::Option*> custom_options;  // only with --model custom

    // Adds --model, --model-file and the custom-model flags; `required` says one of
    // --model and --model-file is required (build checks it). Returns --model.
    CLI::Option* add_to(CLI::App* sub, bool required);
    // Whether --model or --model-file was given.
    bool given() const { return !name.empty() || !file.empty(); }
    // The model: from the catalog, from a file, or custom (then `seq`, required, is its
    // max_seq).
    transformer_config build(int seq) const;
    // With no --seq: `m`'s training length, noticed where it comes from a file and is
    // shorter than the positions the model takes (for a Hugging Face config a documented
    // assumption, io/hf_config.hpp).
    int default_seq(const transformer_config& m) const;
};

// The flags that give `m` back: its catalog name, or custom with every size and option.
std::string model_text(const transformer_config& m);

}  // namespace trainperf::cli
