#include "model_flags.hpp"

#include <trainperf/core/enum_names.hpp>
#include <trainperf/io/model_file.hpp>
#include <trainperf/spec/model_catalog.hpp>

#include <algorithm>

namespace trainperf::cli {

CLI::Option* model_flags::add_to(CLI::App* sub, bool required) {
    auto* m = sub->add_option("--model", name,
                              std::string(required ? "Required unless --model-file: m" : "M") +
                                  "odel name (trainperf models), or 'custom' with the sizes below");
    auto* f = sub->add_option("--model-file", file,
                              "Model description file (trainperf models --json NAME prints one) or a Hugging Face "
                              "config.json (docs/extending.md)");
    m->excludes(f);
    custom_options = {
        sub->add_option("--layers", layers, "custom model: transformer layers"),
        sub->add_option("--hidden", hidden, "custom model: hidden size"),
        sub->add_option("--heads", heads, "custom model: attention heads"),
        sub->add_option("--kv-heads", kv_heads, "custom model: key/value heads (GQA; default = heads)"),
        sub->add_option("--ffn-hidden", ffn_hidden, "custom model: FFN inner size (per matrix for swiglu)"),
        sub->add_option("--vocab", vocab, "custom model: vocabulary size"),
        sub->add_option("--ffn", ffn, "custom model: " + enum_name_list<ffn_kind>() + " (default gelu)"),
        sub->add_option("--positions", positions,
                        "custom model: " + enum_name_list<position_kind>() + " (default learned)"),
        sub->add_option("--norm", norm, "custom model: " + enum_name_list<norm_kind>() + " (default layernorm)"),
        sub->add_flag("--untied", untied, "custom model: output projection not tied to the input embedding"),
        sub->add_flag("--no-biases", no_biases, "custom model: no biases on the linear layers"),
        sub->add_flag("--no-dropout", no_dropout, "custom model: trained without dropout"),
        sub->add_option("--activation", activation,
                        "custom model: FFN activation as its code computes it, " + enum_name_list<activation_kind>() +
                            " (default gelu)"),
        sub->add_option("--code", code,
                        "custom model: the implementation an eager framework runs, " + enum_name_list<model_code>() +
                            " (default generic)"),
    };
    return m;
}

transformer_config model_flags::build(int seq) const {
    const bool custom_given = std::any_of(custom_options.begin(), custom_options.end(),
                                          [](const CLI::Option* o) { return o->count() > 0; });
    if (name != "custom") {
        if (custom_given) throw usage_error("--layers/--hidden/--ffn/...: only with --model custom");
        if (!file.empty()) return io::load_model_file(file);
        if (name.empty()) throw usage_error("--model or --model-file: required");
        return lookup_model(name);
    }
    for (const char* needed : {"--layers", "--hidden", "--heads", "--ffn-hidden", "--vocab"})
        for (auto* o : custom_options)
            if (o->get_name() == needed && o->count() == 0)
                throw usage_error(std::string(needed) + ": required with --model custom");
    require(seq > 0, "seq", seq, "is required with --model custom");
    transformer_config m{.name = "custom", .layers = layers, .hidden = hidden, .heads = heads,
                         .kv_heads = kv_heads, .ffn_hidden = ffn_hidden, .vocab = vocab, .max_seq = seq};
    m.ffn = parse_enum<ffn_kind>("ffn", ffn);
    m.positions = parse_enum<position_kind>("positions", positions);
    m.norm = parse_enum<norm_kind>("norm", norm);
    m.tied_embeddings = !untied;
    m.linear_biases = !no_biases;
    m.dropout = !no_dropout;
    m.activation = parse_enum<activation_kind>("activation", activation);
    m.code = parse_enum<model_code>("code", code);
    validate(m);
    return m;
}

std::string model_text(const transformer_config& m) {
    std::string t = "--model " + std::string(m.name);
    if (m.name != "custom") return t;
    t += " --layers " + std::to_string(m.layers) + " --hidden " + std::to_string(m.hidden) + " --heads " +
         std::to_string(m.heads) + " --kv-heads " + std::to_string(m.effective_kv_heads()) + " --ffn-hidden " +
         std::to_string(m.ffn_hidden) + " --vocab " + std::to_string(m.vocab) + " --ffn " +
         std::string(to_string(m.ffn)) + " --positions " + std::string(to_string(m.positions)) + " --norm " +
         std::string(to_string(m.norm));
    if (!m.tied_embeddings) t += " --untied";
    if (!m.linear_biases) t += " --no-biases";
    if (!m.dropout) t += " --no-dropout";
    if (m.activation != activation_kind::gelu) t += " --activation " + std::string(to_string(m.activation));
    if (m.code != model_code::generic) t += " --code " + std::string(to_string(m.code));
    return t;
}

int model_flags::default_seq(const transformer_config& m) const {
    const int seq = training_length(m);
    if (!file.empty() && seq < m.max_seq)
        notice("--seq not given: " + std::to_string(seq) + " tokens, the training length of " + file +
               " (its positions allow " + std::to_string(m.max_seq) + "; docs/cli.md, --seq)");
    return seq;
}

}  // namespace trainperf::cli
