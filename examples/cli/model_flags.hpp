// The flags that name a model: a catalog name, or `custom` with its sizes and every
// architecture option the library has (SwiGLU, GQA, untied head, rotary positions,
// RMSNorm, no biases, no dropout). Shared by every command that takes a model.
#pragma once

#include "cli.hpp"

#include <trainperf/model.hpp>

#include <string>
#include <vector>

namespace trainperf::cli {

struct model_flags {
    std::string name;
    int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn_hidden = 0, vocab = 0;
    std::string ffn = "gelu", positions = "learned", norm = "layernorm";
    bool untied = false, no_biases = false, no_dropout = false;
    std::vector<CLI::Option*> custom_options;  // only with --model custom

    // Adds --model and the custom-model flags; `required` makes --model required.
    CLI::Option* add_to(CLI::App* sub, bool required);
    // The model: from the catalog, or custom (then `seq`, required, is its max_seq).
    transformer_config build(int seq) const;
};

// The flags that give `m` back: its catalog name, or custom with every size and option.
std::string model_text(const transformer_config& m);

}  // namespace trainperf::cli
