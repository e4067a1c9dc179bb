// The ranges every input is checked against, in one place (docs/reliability.md).
// "Positive and finite" is not enough: a denormal bandwidth or a 10^300 FLOP/s peak is
// finite and positive and still gives `inf ms` or a zero-second step. Each range below
// is wide enough for any real device or run and narrow enough that every derived
// figure stays finite. Helpers for overflow-safe products of user-given integers too.
#pragma once

#include <cmath>
#include <limits>
#include <sstream>
#include <string_view>

#include "attributes.hpp"
#include "error.hpp"

namespace trainperf {

// A closed range [lo, hi] of a physical quantity in SI base units (bytes, seconds,
// FLOP/s, B/s, Hz, W), with the unit named in messages.
struct value_range {
    double lo;
    double hi;
    std::string_view unit;
};

namespace limits {
// ASSUMPTION (all ranges): bounds chosen a few orders of magnitude outside any real
// hardware or run in 2026, so that no legitimate description is refused while every
// derived figure stays finite and representable. The largest real figures for
// comparison: NVLink 5 moves 900 GB/s per direction (NVIDIA GB200 NVL72 datasheet);
// B200's dense fp8 peak is 4.5 PFLOP/s and its HBM3e 8 TB/s (NVIDIA Blackwell
// datasheet); a GPU has at most a few hundred SMs (GB202: 192) and ~2 GHz clocks.
inline constexpr value_range link_bandwidth{1e6, 1e14, "B/s"};        // 1 MB/s … 100 TB/s per direction
inline constexpr value_range link_latency{0.0, 1.0, "s"};             // 0 … 1 s per step
inline constexpr value_range link_efficiency{0.01, 1.0, ""};          // share of the line rate reached
inline constexpr value_range memory_bandwidth{1e9, 1e15, "B/s"};      // 1 GB/s … 1 PB/s
inline constexpr value_range memory_capacity{1 << 20, 1e15, "B"};     // 1 MiB … 1 PB
inline constexpr value_range cache_size{0.0, 1e10, "B"};              // L2: 0 … 10 GB
inline constexpr value_range peak_rate{1e9, 1e18, "FLOP/s"};          // 1 GFLOP/s … 1 EFLOP/s
inline constexpr value_range clock{1e7, 1e11, "Hz"};                  // 10 MHz … 100 GHz
inline constexpr value_range board_power{0.0, 1e5, "W"};              // 0 (unknown) … 100 kW
inline constexpr value_range step_time{0.0, 1e7, "s"};                // per-step extra times: 0 … ~4 months
inline constexpr value_range kernel_launch{0.0, 1e-1, "s"};           // 0 … 100 ms per launch
inline constexpr value_range kernel_time{1e-9, 1e4, "s"};             // a measured kernel: 1 ns … ~3 h
inline constexpr value_range message_size{0.0, 1e18, "B"};            // one collective's buffer: ≤ 1 EB
inline constexpr int max_sm_count = 1 << 14;
inline constexpr int max_gpus_per_node = 1 << 12;
inline constexpr int max_host_cores = 1 << 16;      // cores of one node's host (real: ≤ a few hundred)
inline constexpr int max_simd_lanes = 64;           // fp32 lanes of one SIMD register (2048-bit SVE: 64)
inline constexpr int max_layers = 1 << 16;          // 65,536 layers (the deepest real models: ~10^2)
inline constexpr int max_width = 1 << 22;           // hidden, ffn_hidden: 4 M (real: ≤ ~10^5)
inline constexpr int max_heads = 1 << 16;
inline constexpr int max_vocab = 1 << 24;           // 16.7 M tokens (real: ≤ ~0.3 M)
inline constexpr int max_sequence = 1 << 24;        // 16.7 M tokens of context
inline constexpr int max_token_types = 1 << 10;
// The largest size (m, n, k, batch; attention's batch and lengths) of one op workload/ops.hpp
// accepts: cuBLASLt's int64 sizes go further, no training GEMM comes near, and the bound
// keeps every product and hash of sizes finite and exact.
inline constexpr double max_op_size = 2147483648.0;  // 2^31
// The largest head size of a fused attention kernel (workload/ops.hpp validate(attention_op)).
inline constexpr int max_attention_head_dim = 4096;
// Tokens in one micro-batch (micro-batch × sequence): 2^31, the largest GEMM dimension
// workload/ops.hpp accepts. At 2^31 tokens a layer's activations alone need terabytes.
inline constexpr long long max_micro_batch_tokens = 1LL << 31;
// The largest micro-batch of sequences of `seq` tokens, for searches over it: at most
// 2^24 and within max_micro_batch_tokens.
constexpr int max_micro_batch_for(int seq) {
    const long long by_tokens = seq > 0 ? max_micro_batch_tokens / seq : max_micro_batch_tokens;
    return static_cast<int>(by_tokens < (1 << 24) ? by_tokens : (1 << 24));
}
}  // namespace limits

// ASSUMPTION: bounds that keep every count and product in range; no real run comes
// near them (the largest published runs use ~10^5 GPUs).
inline constexpr int max_gpus = 1 << 22;
inline constexpr long long max_global_batch = 1LL << 40;

// Throws "field = value: must be in [lo, hi] unit" unless lo <= value <= hi (false
// for NaN).
namespace detail {
[[noreturn]] TRAINPERF_COLD inline void fail_range(double value, const value_range& r, std::string_view field) {
    std::ostringstream why;
    why << "must be in [" << r.lo << ", " << r.hi << "]" << (r.unit.empty() ? "" : " ") << r.unit;
    fail(field, value, why.str());
}
}  // namespace detail

constexpr void require_in(double value, const value_range& r, std::string_view field) {
    if (!(value >= r.lo && value <= r.hi)) detail::fail_range(value, r, field);
}

// a × b for non-negative counts, or `cap` + 1 when the product exceeds `cap` (never
// overflows; callers compare the result against the cap they enforce).
constexpr long long product_capped(long long a, long long b, long long cap) {
    if (a < 0 || b < 0) return -1;
    if (a == 0 || b == 0) return 0;
    return a > cap / b ? cap + 1 : a * b;
}

}  // namespace trainperf
