// A custom pipeline layout: which layers each virtual pipeline stage holds, written as
// Megatron-Core's --pipeline-model-parallel-layout (NVIDIA/Megatron-LM@d98e8a64
// megatron/core/transformer/pipeline_parallel_layer_layout.py;
// docs/user-guide/features/pipeline_parallel_layout.md). The text lists the virtual
// stages separated by `|`, each a run of
//   E  the embedding,  t  a transformer (decoder) layer,
//   m  a multi-token prediction module,  L  the output layer and the loss;
// `x*n` repeats a symbol n times, `(…)*n` a group (which may hold `|`), commas between
// symbols are cosmetic (Megatron-Core strips every comma first, so it also reads a
// comma inside a repetition such as `t,*3`, which is refused here). DeepSeek-V3's 61 layers and one MTP module on 16 stages × 2 virtual stages:
//   "Et*3|(tt|)*29,m|L"
// Virtual stage k runs on pipeline rank k mod pp as its virtual stage k div pp, and the
// layers are numbered in the order of the text (Megatron-Core's flatten_layout). The
// checks are Megatron-Core's validate_layer_layout: the embedding first and once, the
// loss last and once, every layer and every MTP module exactly once, no layer after an
// MTP module, all MTP modules in one virtual stage, the last virtual stage of its rank.
//
// The text is read where it is needed, never copied: a parallel_layout holds a view of
// it (spec/parallel.hpp), which must outlive the layout (a string literal, or text the
// caller keeps; the CLI interns what it reads).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "../core/error.hpp"
#include "model.hpp"

namespace trainperf {

// The unrolled text stays below this many symbols (a real layout has a few hundred), and
// unrolling it reads at most max_pipeline_layout_reads characters (a group repeated many
// times over commas or zero repetitions emits nothing but is read all the same): what
// bounds the work of reading it. Limits of this library, not Megatron-Core's.
inline constexpr int max_pipeline_layout_symbols = 1 << 16;
inline constexpr long long max_pipeline_layout_reads = 1LL << 22;

namespace pipeline_layout_detail {

constexpr bool is_symbol(char c) { return c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|'; }

[[noreturn]] TRAINPERF_COLD inline void fail_syntax(std::string_view text, std::size_t at, std::string_view why) {
    detail::fail("pipeline_layout", '"' + std::string(text) + '"',
                 std::string(why) + " (at character " + std::to_string(at + 1) +
                     "; symbols E t m L |, x*n and (...)*n repeat, commas are ignored)");
}

// The count after a `*` at text[at]: digits, at most the symbol bound; `at` moves past it.
constexpr int repeat_count(std::string_view text, std::size_t& at) {
    if (at >= text.size() || text[at] != '*') return 1;
    const std::size_t star = at++;
    long long n = 0;
    const std::size_t digits = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9') {
        n = n * 10 + (text[at] - '0');
        if (n > max_pipeline_layout_symbols) fail_syntax(text, star, "repeats more than 2^16 times");
        ++at;
    }
    if (at == digits) fail_syntax(text, star, "'*' needs a whole number after it");
    if (at < text.size() && text[at] == '*') fail_syntax(text, at, "a repetition cannot be repeated again");
    return int(n);
}

// The symbols of a run without parentheses, each `x*n` unrolled: emit(c) per symbol.
template <class Emit>
constexpr void unroll_flat(std::string_view text, std::size_t begin, std::size_t end, Emit& emit) {
    for (std::size_t i = begin; i < end;) {
        const char c = text[i];
        if (c == ',') {
            ++i;
            continue;
        }
        if (!is_symbol(c)) fail_syntax(text, i, "unknown symbol '" + std::string(1, c) + "'");
        ++i;
        const int n = repeat_count(text, i);
        for (int k = 0; k < n; ++k) emit(c);
    }
}

}  // namespace pipeline_layout_detail

// Calls emit(c) for each symbol of the layout with its repetitions unrolled: 'E', 't',
// 'm', 'L', and '|' between virtual stages. A syntax error, or more than
// max_pipeline_layout_symbols symbols, throws trainperf::invalid_argument naming
// pipeline_layout.
template <class Emit>
constexpr void unroll_pipeline_layout(std::string_view text, Emit&& emit) {
    namespace pd = pipeline_layout_detail;
    long long emitted = 0, reads = 0;
    std::size_t at = 0;  // where the run being unrolled begins (for the message)
    auto counted = [&](char c) {
        if (++emitted > max_pipeline_layout_symbols) pd::fail_syntax(text, at, "unrolls to more than 2^16 symbols");
        emit(c);
    };
    for (std::size_t i = 0; i < text.size();) {
        at = i;
        if (text[i] == ')') pd::fail_syntax(text, i, "')' without '('");
        if (text[i] != '(') {
            std::size_t end = i;
            while (end < text.size() && text[end] != '(' && text[end] != ')') ++end;
            // A repetition right before a group ends the run there: "t*2(…)*3".
            pd::unroll_flat(text, i, end, counted);
            i = end;
            continue;
        }
        std::size_t close = i + 1;
        while (close < text.size() && text[close] != ')') {
            if (text[close] == '(') pd::fail_syntax(text, close, "groups cannot be nested");
            ++close;
        }
        if (close == text.size()) pd::fail_syntax(text, i, "'(' without ')'");
        bool any = false;
        for (std::size_t k = i + 1; k < close; ++k) any = any || text[k] != ',';
        if (!any) pd::fail_syntax(text, i, "an empty group");
        std::size_t after = close + 1;
        if (after >= text.size() || text[after] != '*') pd::fail_syntax(text, close, "a group needs '*n' after it");
        const int n = pd::repeat_count(text, after);
        reads += 1LL * n * (close - i);
        if (reads > max_pipeline_layout_reads) pd::fail_syntax(text, i, "takes more than 2^22 reads to unroll");
        for (int k = 0; k < n; ++k) pd::unroll_flat(text, i + 1, close, counted);
        i = after;
    }
}

// What one virtual stage holds.
struct virtual_stage_contents {
    int layers = 0;      // transformer layers
    int moe_layers = 0;  // of them, an MoE model's MoE layers
    int first_layer = 0; // the index of its first layer in the model
    int mtp = 0;         // multi-token prediction modules
    bool embedding = false;
    bool loss = false;
};

// Calls stage(k, contents) for each virtual stage k of the layout, in the order of the
// text, for model `m` (its MoE layers counted by their index). Syntax is checked, not
// the layout against the model (validate_pipeline_layout).
template <class Stage>
constexpr void for_each_virtual_stage(std::string_view text, const transformer_config& m, Stage&& stage) {
    int index = 0, next_layer = 0;
    virtual_stage_contents at{};
    const auto close = [&] {
        at.moe_layers = moe_layers_in(m.moe, at.first_layer, at.layers);
        stage(index, at);
        ++index;
        at = virtual_stage_contents{.first_layer = next_layer};
    };
    unroll_pipeline_layout(text, [&](char c) {
        switch (c) {
            case 'E': at.embedding = true; break;
            case 'L': at.loss = true; break;
            case 'm': ++at.mtp; break;
            case 't': ++at.layers; ++next_layer; break;
            default: close(); break;  // '|'
        }
    });
    close();
}

// The virtual stages of a layout (its `|` + 1).
constexpr int pipeline_layout_stages(std::string_view text) {
    int stages = 1;
    unroll_pipeline_layout(text, [&](char c) { stages += c == '|'; });
    return stages;
}

// What a pipeline rank holds over its virtual stages.
struct pipeline_rank_load {
    int layers = 0;
    int moe_layers = 0;
    int mtp = 0;
    bool embedding = false;
    bool loss = false;

    constexpr void add(const virtual_stage_contents& v) {
        layers += v.layers;
        moe_layers += v.moe_layers;
        mtp += v.mtp;
        embedding = embedding || v.embedding;
        loss = loss || v.loss;
    }
};

// Each pipeline rank's load under a layout of `pp` ranks (validated: see below), in rank
// order: one pass over the text.
inline std::vector<pipeline_rank_load> pipeline_rank_loads(std::string_view text, const transformer_config& m,
                                                           int pp) {
    std::vector<pipeline_rank_load> ranks(std::size_t(pp > 0 ? pp : 1));
    for_each_virtual_stage(text, m, [&](int k, const virtual_stage_contents& v) {
        ranks[std::size_t(k % int(ranks.size()))].add(v);
    });
    return ranks;
}

// One rank's load (a pass over the text; pipeline_rank_loads gives every rank's in one).
constexpr pipeline_rank_load pipeline_rank_load_of(std::string_view text, const transformer_config& m, int pp,
                                                   int rank) {
    pipeline_rank_load r;
    if (pp < 1) return r;
    for_each_virtual_stage(text, m, [&](int k, const virtual_stage_contents& v) {
        if (k % pp == rank) r.add(v);
    });
    return r;
}

// Megatron-Core's checks of a layout for a model of m.layers layers and m.mtp_layers MTP
// modules on pp ranks × interleave virtual stages (validate_layer_layout and the
// layout's own constructor), each naming pipeline_layout (or interleave) and the value.
constexpr void validate_pipeline_layout(std::string_view text, const transformer_config& m, int pp,
                                        int interleave) {
    const auto fail = [&](const std::string& why) { detail::fail("pipeline_layout", '"' + std::string(text) + '"', why); };
    if (text.empty()) fail("is empty: give the virtual stages, e.g. \"Et|tt|tL\"");
    require(pp >= 1, "pp", pp, "must be at least 1");
    const int stages = pipeline_layout_stages(text);
    if (stages % pp != 0)
        fail("has " + std::to_string(stages) + " virtual stages, not a multiple of pp = " + std::to_string(pp));
    if (stages / pp != interleave)
        detail::fail("interleave", interleave,
                     "must be the layout's virtual stages per rank: " + std::to_string(stages) + " stages over pp " +
                         std::to_string(pp) + " give interleave " + std::to_string(stages / pp));
    int embeddings = 0, losses = 0, layers = 0, mtp = 0, mtp_stages = 0;
    bool embedding_first = false, loss_last = false, layer_after_mtp = false, mtp_not_last_of_rank = false;
    bool symbol_seen = false;
    char last_symbol = 0;
    unroll_pipeline_layout(text, [&](char c) {
        if (c == '|') return;
        if (!symbol_seen) embedding_first = c == 'E';
        symbol_seen = true;
        last_symbol = c;
        if (c == 'E') ++embeddings;
        if (c == 'L') ++losses;
        if (c == 't') {
            ++layers;
            layer_after_mtp = layer_after_mtp || mtp > 0;
        }
        if (c == 'm') ++mtp;
    });
    loss_last = last_symbol == 'L';
    bool embedding_elsewhere = false, loss_elsewhere = false;
    for_each_virtual_stage(text, m, [&](int k, const virtual_stage_contents& v) {
        embedding_elsewhere = embedding_elsewhere || (v.embedding && k != 0);
        loss_elsewhere = loss_elsewhere || (v.loss && k != stages - 1);
        if (v.mtp == 0) return;
        ++mtp_stages;
        if (k < (interleave - 1) * pp) mtp_not_last_of_rank = true;
    });
    if (embeddings != 1) fail("must hold the embedding (E) exactly once, holds it " + std::to_string(embeddings) + " times");
    if (!embedding_first) fail("must begin with the embedding (E)");
    if (losses != 1) fail("must hold the loss (L) exactly once, holds it " + std::to_string(losses) + " times");
    if (!loss_last) fail("must end with the loss (L)");
    // Megatron-Core builds the embedding on the first virtual stage and the loss on the
    // last whatever empty stages the text puts around them; a text that places them
    // elsewhere is refused rather than read two ways.
    if (embedding_elsewhere) fail("must hold the embedding (E) in its first virtual stage, not after an empty one");
    if (loss_elsewhere) fail("must hold the loss (L) in its last virtual stage, not before an empty one");
    if (layers != m.layers)
        fail("holds " + std::to_string(layers) + " transformer layers (t), the model has " + std::to_string(m.layers));
    if (mtp != m.mtp_layers)
        fail("holds " + std::to_string(mtp) + " multi-token prediction modules (m), the model has " +
             std::to_string(m.mtp_layers));
    if (layer_after_mtp) fail("places a transformer layer after a multi-token prediction module");
    if (mtp_stages > 1) fail("must hold all multi-token prediction modules in one virtual stage");
    if (mtp_not_last_of_rank)
        fail("must hold the multi-token prediction modules in the last virtual stage of a rank (Megatron-Core's "
             "restriction)");
}

}  // namespace trainperf
