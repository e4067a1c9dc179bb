// A global batch to suggest when none is given (`trainperf plan` without
// --global-batch): about suggested_tokens_per_step tokens per optimizer step at the
// run's sequence length, rounded to a multiple of the GPUs so that every data-parallel
// size of them divides it. A starting point for a pre-training run, not a
// recommendation: the right batch depends on the model and its optimizer.
#pragma once

#include <cmath>

#include "../core/error.hpp"
#include "../core/limits.hpp"

namespace trainperf {

// ASSUMPTION: 2^22 tokens (about 4 million) per step, the order of the batches large
// decoder models are pre-trained with: 4M tokens for Llama 2 (Touvron et al. 2023,
// "Llama 2: Open Foundation and Fine-Tuned Chat Models", §2.2) and 3.2M for GPT-3 175B
// (Brown et al. 2020, "Language Models are Few-Shot Learners", Table 2.1).
inline constexpr double suggested_tokens_per_step = 4194304;

// Samples per step: suggested_tokens_per_step / seq, rounded to the nearest multiple of
// `gpus` (at least `gpus`).
inline long long suggested_global_batch(int seq, int gpus) {
    require(seq >= 1 && seq <= (1 << 24), "seq", seq, "must be between 1 and 2^24");
    require(gpus >= 1 && gpus <= max_gpus, "gpus", gpus, "must be between 1 and 2^22");
    const double samples = suggested_tokens_per_step / seq;
    const long long multiples = std::llround(samples / gpus);
    return (multiples < 1 ? 1 : multiples) * static_cast<long long>(gpus);
}

}  // namespace trainperf
