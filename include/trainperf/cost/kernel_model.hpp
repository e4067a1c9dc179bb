// Time of one operation on one GPU: a roofline whose compute efficiency depends on
// the GEMM's shape (wave quantization of output tiles over the SMs, a small-k
// penalty), plus a fixed launch overhead. Memory-bound ops move bytes at an
// effective bandwidth. Parameters have documented defaults per architecture and
// can be replaced by ones calibrated from cuBLASLt measurements (calibrate/calibration.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <string_view>

#include "../core/attributes.hpp"
#include "../core/dtype.hpp"
#include "../core/enum_names.hpp"
#include "../core/error.hpp"
#include "../core/units.hpp"
#include "../spec/attention_kernels.hpp"
#include "../spec/hardware.hpp"
#include "../spec/kernel_params.hpp"
#include "../workload/ops.hpp"

namespace trainperf {

// Output tiles and how evenly they fill the SMs: the fraction of the launched tile
// work that is useful (edge padding and a partial last wave both waste it).
struct wave_quantization {
    double tiles = 0;
    double waves = 0;
    double utilization = 1;   // useful work / launched
    double launched = 0;      // output elements launched: waves · SMs · tile_m · tile_n
};

namespace kernel_detail {
// ceil for the non-negative tile and wave counts: an integer conversion instead of a
// libm call (this runs a few dozen times per prediction).
constexpr double ceil_count(double x) {
    if (!(x < 9.0e15)) return std::ceil(x);  // beyond exact integers (and NaN): the library's
    const double t = double(static_cast<long long>(x));
    return t < x ? t + 1.0 : t;
}

// Seconds per byte of memory-bound work: the datasheet bandwidth at memory_efficiency.
constexpr double seconds_per_byte(const gpu_spec& gpu, const kernel_params& p) {
    return 1.0 / (gpu.memory_bandwidth.value() * p.memory_efficiency);
}

// Memory-bound work: `moved` bytes over `launches` kernel launches.
constexpr seconds memory_time(bytes moved, double launches, seconds launch_overhead, double seconds_per_byte) {
    require(moved.value() >= 0, "bytes", moved.value(), "must not be negative");
    return launches * launch_overhead + seconds_of(moved.value() * seconds_per_byte);
}

// ASSUMPTION: the split-K the search tries, after cuBLAS's heuristics in kind (not
// fitted): s a power of two up to 16, each slice of k at least 64 deep, and the split
// launching at most two waves of CTAs.
inline constexpr double split_k_max = 16;
inline constexpr double split_k_min_slice = 64;
inline constexpr double split_k_max_waves = 2;

// 1/t when it is exact (t a whole power of two), else 0: m·(1/t) then equals m/t
// exactly. (A tile that is not a whole number takes the division.)
constexpr double exact_inverse(double t) {
    if (!(t >= 1 && t <= 9.0e15)) return 0.0;
    const auto whole = static_cast<long long>(t);
    return double(whole) == t && (whole & (whole - 1)) == 0 ? 1.0 / t : 0.0;
}

struct tile {
    double size = 1;
    double inverse = 0;   // exact 1/size, or 0 when size is not a power of two
};

// One tiling of the small-tile search: the output tile along m and n, and the
// inverse of its rate small_tile_efficiency^level (level: how many times a side
// was halved).
struct tiling {
    tile m, n;
    double inverse_rate = 1;
    int level = 0;
};

// The tilings of the small-tile search, in order of level, and where levels 1 and 2
// begin (count: none).
struct tiling_set {
    std::array<tiling, 18> items{};
    int count = 0;
    int first_smaller = 0;
    int first_deeper = 0;
};

// Each side of the configured tile halved 0–2 times down to 32, in both orientations;
// a tile pair that arises twice keeps its better rate (the same tiles at a lower rate
// are never faster). None where small_tile_efficiency is 0.
constexpr tiling_set small_tile_search(double tile_m, double tile_n, double small_tile_efficiency) {
    tiling_set r;
    const double eff = small_tile_efficiency;
    if (eff <= 0) return r;
    // The distinct sides, and which one each halving of tile_m and tile_n is (halving
    // and doubling the reciprocal are exact: no division here).
    std::array<tile, 6> sides{};
    std::array<int, 3> m_side{}, n_side{};
    int distinct = 0;
    const auto side_of = [&](const tile& t) {
        for (int i = 0; i < distinct; ++i)
            if (sides[std::size_t(i)].size == t.size) return i;
        sides[std::size_t(distinct)] = t;
        return distinct++;
    };
    tile m{tile_m, exact_inverse(tile_m)}, n{tile_n, exact_inverse(tile_n)};
    for (int h = 0; h <= 2; ++h, m = {m.size * 0.5, m.inverse * 2}, n = {n.size * 0.5, n.inverse * 2}) {
        m_side[std::size_t(h)] = side_of(m);
        n_side[std::size_t(h)] = side_of(n);
    }
    unsigned long long seen = 0;  // bit 6·a + b: the tile pair (sides a, b) is listed
    const double inverse_eff = 1.0 / eff;
    double inverse_rate = 1;
    for (int level = 0; level <= 4; ++level, inverse_rate *= inverse_eff) {
        for (int hm = std::max(0, level - 2); hm <= std::min(2, level); ++hm) {
            const int hn = level - hm;
            const int sm = m_side[std::size_t(hm)], sn = n_side[std::size_t(hn)];
            if (sides[std::size_t(sm)].size < 32 || sides[std::size_t(sn)].size < 32) continue;
            for (int orientation = 0; orientation < 2; ++orientation) {
                const int a = orientation ? sn : sm, b = orientation ? sm : sn;
                const unsigned long long bit = 1ULL << (6 * a + b);
                if (seen & bit) continue;  // at this level or a faster one
                seen |= bit;
                r.items[std::size_t(r.count++)] = {sides[std::size_t(a)], sides[std::size_t(b)], inverse_rate, level};
            }
        }
    }
    while (r.first_smaller < r.count && r.items[std::size_t(r.first_smaller)].level < 1) ++r.first_smaller;
    r.first_deeper = r.first_smaller;
    while (r.first_deeper < r.count && r.items[std::size_t(r.first_deeper)].level < 2) ++r.first_deeper;
    return r;
}

// The tilings of each architecture's default parameters (spec/kernel_params.hpp), derived at
// compile time: a model built with an architecture's defaults (or any parameters with
// the same tile and small-tile efficiency) refers to them; other parameters derive
// their own when the model is built.
struct default_tilings {
    double tile_m = 0, tile_n = 0, small_tile_efficiency = 0;
    tiling_set set;
};
inline constexpr auto default_tiling_table = [] {
    constexpr auto archs = enum_values<gpu_architecture>();
    std::array<default_tilings, archs.size()> t{};
    for (std::size_t i = 0; i < archs.size(); ++i) {
        const kernel_params p = default_kernel_params(archs[i]);
        t[i] = {p.tile_m, p.tile_n, default_small_tile_efficiency,
                small_tile_search(p.tile_m, p.tile_n, default_small_tile_efficiency)};
    }
    return t;
}();

// The table's tilings for the parameters' tile and efficiency, or none.
constexpr const tiling_set* default_tilings_of(const kernel_params& p) {
    for (const auto& d : default_tiling_table)
        if (d.tile_m == p.tile_m && d.tile_n == p.tile_n && d.small_tile_efficiency == p.small_tile_efficiency)
            return &d.set;
    return nullptr;
}

}  // namespace kernel_detail

// The kernel model bound to one GPU and one parameter set. What does not depend on
// the op — the seconds per FLOP of each math type, the seconds per byte, the small-tile
// search's tilings — is computed once: a step prices a few dozen GEMMs, the planner
// millions.
class kernel_cost_model {
public:
    // The model keeps a reference to the GPU: it must outlive the model.
    kernel_cost_model(gpu_spec&&, const kernel_params&) = delete;
    kernel_cost_model(const gpu_spec& gpu, const kernel_params& p)
        : gpu_(gpu), p_((validate(p), p)), sms_(std::max(1, gpu.sm_count)), inverse_sms_(1.0 / sms_),
          seconds_per_byte_(kernel_detail::seconds_per_byte(gpu, p)),
          table_(kernel_detail::default_tilings_of(p)) {
        if (table_ == nullptr) own_ = kernel_detail::small_tile_search(p.tile_m, p.tile_n, p.small_tile_efficiency);
        for (std::size_t i = 0; i < seconds_per_flop_.size(); ++i) {
            const auto peak = gpu.peak.of(dtype(i));
            const double fraction = dtype(i) == dtype::fp32  ? p.cuda_core_fraction
                                    : dtype(i) == dtype::fp8 ? p.fraction_for_fp8()
                                    : dtype(i) == dtype::fp4 ? p.fraction_for_fp4()
                                                             : p.peak_fraction;
            seconds_per_flop_[i] = peak ? 1.0 / (peak->value() * gpu.clock_ratio() * fraction) : 0.0;
        }
    }

    // One tile shape: ceil(m/tile_m)·ceil(n/tile_n)·batch tiles in waves over the SMs.
    wave_quantization quantize_with_tile(const gemm_shape& g, double tile_m, double tile_n) const {
        return with_utilization(launch_with(tile_m, tile_n, g), g);
    }

    // cuBLAS heuristics choose among tile shapes: a rectangular tile is modelled in both
    // orientations (e.g. 128×256 and 256×128), and a dimension smaller than the tile gets
    // the smallest covering power-of-two tile (at least 16, the MMA granularity), as
    // cuBLAS has narrower kernels for skinny problems. The best fit is taken.
    wave_quantization quantize(const gemm_shape& g) const {
        wave_quantization q = launch_with(covering(g.m, p_.tile_m), covering(g.n, p_.tile_n), g);
        if (p_.tile_m != p_.tile_n) {
            const wave_quantization b = launch_with(covering(g.m, p_.tile_n), covering(g.n, p_.tile_m), g);
            if (b.launched < q.launched) q = b;
        }
        return with_utilization(q, g);
    }

    // Compute-side time before the launch overhead:
    //   flops / (peak · peak_fraction · k/(k + k_half) · utilization)
    // with utilization = m·n·batch / launched tile elements, which simplifies to
    //   2 · (k + k_half) · launched / (peak · peak_fraction).
    //
    // With small_tile_efficiency set, cuBLAS's other choices are tried too and the
    // fastest taken: each tile side halved down to 32 (both orientations; a tile of
    // half the area at small_tile_efficiency of the rate), and split-K, which cuts k
    // into s slices so that tiles·s CTAs fill idle SMs, at the cost of writing and
    // reducing s fp32 partial results.
    //
    // The search is exact but skips what cannot win: a configured tile that already
    // fills the SMs at a utilization above small_tile_efficiency cannot be beaten (the
    // common large-GEMM case), nor one that no tiling can split whose smaller tiles'
    // bounds cannot beat it (the common case with a partly idle last wave); the
    // tilings are tried from the fastest rate down, stopping where a lower bound on
    // every remaining one (all launched work useful; a split launches every slice's
    // work) is no better than the best found, and skipping a level whose tilings
    // cannot fill their waves well enough to win.
    // `exhaustive` tries every tiling: the reference the tests hold the pruned search to.
    seconds gemm_compute_time(const gemm_shape& g, bool exhaustive = false) const {
        const wave_quantization base = quantize(g);
        const double spf = seconds_per_flop(g.math);
        const kernel_detail::tiling_set& tilings = search();
        double best = 2.0 * (g.k + p_.k_half) * base.launched * spf;
        if (tilings.count == 0 || (!exhaustive && base.utilization >= p_.small_tile_efficiency && base.tiles >= sms_))
            return seconds_of(best);
        return seconds_of(searched(g, tilings, best, spf, exhaustive));
    }

    seconds gemm_memory_time(const gemm_shape& g) const {
        return seconds_of(gemm_bytes(g).value() * seconds_per_byte_);
    }

    seconds gemm_time(const gemm_shape& g) const {
        validate(g);
        return gemm_time(g, checked_shape);
    }
    // A shape that passes validate already (workload/ops.hpp checked_shape).
    seconds gemm_time(const gemm_shape& g, checked_shape_t) const {
        return p_.launch_overhead + std::max(gemm_compute_time(g), gemm_memory_time(g));
    }

    // A fused attention kernel (spec/attention_kernels.hpp): launch + max(FLOPs at the
    // kernel's efficiency of the 16-bit peak, its HBM traffic). fp32/tf32 math has no
    // FlashAttention kernel: the memory-efficient one at that math's peak.
    seconds attention_time(const attention_op& a) const {
        validate(a);
        const bool sixteen_bit = a.math == dtype::fp16 || a.math == dtype::bf16;
        const attention_kernel_params k = attention_kernel_defaults(
            sixteen_bit ? a.kernel : attention_kernel::memory_efficient, gpu_.compute_capability);
        const double blocks = a.batch * kernel_detail::ceil_count(a.seq_q / k.block);
        const double occupancy = blocks / (kernel_detail::ceil_count(blocks / sms_) * sms_);
        const double efficiency = (a.phase == op_phase::forward ? k.forward_efficiency : k.backward_efficiency) *
                                  a.head_dim / (a.head_dim + k.head_dim_half) *
                                  attention_sequence_factor(k, a.seq_kv, a.causal) * occupancy;
        const double peak = gpu_.peak_for(a.math).value() * gpu_.clock_ratio();
        const seconds compute = seconds_of(attention_flops(a).value() / (peak * efficiency));
        const seconds memory = seconds_of(attention_bytes(a).value() * seconds_per_byte_);
        return p_.launch_overhead + std::max(compute, memory);
    }

    // Memory-bound work: `moved` bytes over `launches` kernel launches.
    seconds memory_time(bytes moved, double launches = 1) const {
        return kernel_detail::memory_time(moved, launches, p_.launch_overhead, seconds_per_byte_);
    }

private:
    using tile = kernel_detail::tile;
    using tiling = kernel_detail::tiling;

    // The search beyond the configured tile (gemm_compute_time): the smaller tilings and
    // split-K, from `best`, the configured tile's time. Out of line, so that the common
    // case (the configured tile accepted at once) runs without this one's registers.
    TRAINPERF_NOINLINE double searched(const gemm_shape& g, const kernel_detail::tiling_set& tilings, double best,
                                       double spf, bool exhaustive) const {
        const double useful = g.m * g.n * g.batch;
        // Whether any tiling can split at all: no tile side exceeds the configured tile's
        // longer one, so every tiling launches at least as many CTAs as longest × longest
        // tiles would, and a split of 2 needs twice those within the waves allowed and k/2
        // no shallower than a slice may be. Those CTAs cover at most longest² outputs each,
        // so they are at least useful/longest²: where that alone (with a margin for
        // rounding) is too many, the tiles are not counted.
        const double longest = std::max(p_.tile_m, p_.tile_n);
        const double max_ctas = kernel_detail::split_k_max_waves * sms_;
        const bool splittable = g.k * 0.5 >= kernel_detail::split_k_min_slice &&
                                useful * 2 <= max_ctas * (longest * longest) * (1 + 1e-9) &&
                                count(g.m, longest) * count(g.n, longest) * g.batch * 2 <= max_ctas;
        // Lower bound at rate 1, unsplit: all launched work useful.
        const double unsplit_bound = 2.0 * (g.k + p_.k_half) * useful * spf;
        // Where m and n are at least the longest side, no tile is narrowed to cover them,
        // so every tiling of a level has that level's area and launches whole waves of at
        // least useful/area CTAs.
        const bool unnarrowed = g.m >= longest && g.n >= longest;
        // The common case at once: where no tiling can split, only the smaller tiles
        // unsplit remain, and neither level 1 (its bound below) nor any deeper level (a
        // lower rate still, all launched work useful at best) can beat `best`, the
        // configured tile's time.
        if (!exhaustive && !splittable && tilings.first_smaller < tilings.count) {
            const tiling& c = tilings.items[std::size_t(tilings.first_smaller)];
            double bound = unnarrowed ? whole_waves_bound(g, c, fewest_ctas(c, useful), spf) : unsplit_bound;
            if (tilings.first_deeper < tilings.count)
                bound = std::min(bound * c.inverse_rate,
                                 unsplit_bound * tilings.items[std::size_t(tilings.first_deeper)].inverse_rate);
            else
                bound *= c.inverse_rate;
            if (bound * (1 - 1e-12) >= best) return best;
        }
        // A split s launches every slice's CTAs: at least s·useful output elements, each
        // over k/s + k_half, i.e. 2·(k + s·k_half)·useful FLOPs at the tiling's rate, plus
        // s fp32 partial outputs written and read back by the reduction. So a split never
        // costs less than the unsplit useful work, and s = 2 bounds every split from below.
        const auto partials = [&](double split) {
            return 2.0 * split * useful * size_of(dtype::fp32) * seconds_per_byte_;
        };
        const double split_cost = partials(2);
        const double split_bound = 2.0 * (g.k + 2.0 * p_.k_half) * useful * spf;
        int level = -1;
        bool skip_level = false;
        for (int i = 0; i < tilings.count; ++i) {
            const tiling& c = tilings.items[std::size_t(i)];
            if (!exhaustive && c.level != level) {
                level = c.level;
                // Splits cost at least the unsplit useful work (above): every later level
                // is slower still once the useful work at this rate cannot win.
                if (unsplit_bound * c.inverse_rate * (1 - 1e-12) >= best) break;
                // The configured tile unsplit, in either orientation, is `base` already:
                // level 0 has only its splits to try.
                double unsplit = c.level == 0 ? std::numeric_limits<double>::infinity() : unsplit_bound;
                bool level_splits = splittable;
                if (unnarrowed) {
                    // At least useful/area CTAs: whole waves of them, and a split only
                    // where twice those CTAs fit in the waves allowed.
                    const double ctas = fewest_ctas(c, useful);
                    if (c.level > 0) unsplit = whole_waves_bound(g, c, ctas, spf);
                    level_splits = level_splits && ctas * 2 <= kernel_detail::split_k_max_waves * sms_;
                }
                const double split = level_splits ? split_bound * c.inverse_rate + split_cost
                                                  : std::numeric_limits<double>::infinity();
                skip_level = std::min(unsplit * c.inverse_rate, split) * (1 - 1e-12) >= best;
            }
            if (skip_level) continue;
            const double ta = covering(g.m, c.m.size), tb = covering(g.n, c.n.size);
            const double tiles = count(g.m, ta) * count(g.n, tb) * g.batch;
            // The configured tile unsplit, in either orientation, is `base` already.
            for (double split = !exhaustive && c.level == 0 ? 2 : 1; split <= kernel_detail::split_k_max;
                 split *= 2) {
                const double slice = g.k * (1.0 / split);  // exact: split is a power of two
                if (split > 1 && (tiles * split > kernel_detail::split_k_max_waves * sms_ ||
                                  slice < kernel_detail::split_k_min_slice))
                    break;
                // The tile area first: the same product whichever side is m (a transpose's
                // time equals its twin's, which the stage pricer's memo relies on).
                const double launched = waves_of(tiles * split) * sms_ * (ta * tb);
                double t = 2.0 * (slice + p_.k_half) * launched * spf * c.inverse_rate;
                if (split > 1) t += partials(split);
                if (t < best) best = t;
            }
        }
        return best;
    }

    // Where m and n are at least the longest tile side, every tiling of c's level has
    // c's area and launches at least useful/area CTAs (just under, so rounding cannot
    // raise the bound) ...
    static double fewest_ctas(const tiling& c, double useful) {
        const double inverse_area = c.m.inverse * c.n.inverse;  // exact, or 0
        return (inverse_area > 0 ? useful * inverse_area : useful / (c.m.size * c.n.size)) * (1 - 1e-12);
    }
    // ... so the level's unsplit time is at least those CTAs' useful work in whole waves.
    double whole_waves_bound(const gemm_shape& g, const tiling& c, double ctas, double spf) const {
        return 2.0 * (g.k + p_.k_half) * kernel_detail::ceil_count(ctas * inverse_sms_ * (1 - 1e-12)) * sms_ *
               (c.m.size * c.n.size) * spf;
    }

    // The tile side that covers dim: the full side, or the smallest power of two from
    // 16 up that covers it (quantize).
    static double covering(double dim, double full) {
        if (dim >= full) return full;
        double t = 16;
        while (t < dim && t < full) t *= 2;
        return std::min(t, full);
    }

    // ⌈ctas / SMs⌉, the least w with w·SMs ≥ ctas: exact from the rounded quotient
    // while ctas is a whole number below 2⁵³ (it is a product of tile counts). Where
    // ctas is not a multiple of the SMs, the exact quotient exceeds an integer by at
    // least 1/SMs, far more than the quotient's rounding error, so the rounded one does
    // too; where it is a multiple, the quotient is exact.
    double waves_of(double ctas) const { return kernel_detail::ceil_count(ctas / sms_); }

    // ⌈dim / tile⌉, exact from the rounded quotient (as waves_of) where dim and tile
    // are whole numbers below 2⁵³; otherwise correct to the quotient's rounding.
    static double count(double dim, double tile) { return kernel_detail::ceil_count(dim / tile); }

    // The tiles, waves and launched work of one tiling; its utilization apart (a division,
    // taken only for the tiling kept).
    // The tile area first: the same product whichever side is m (a transpose's time
    // equals its twin's, which the stage pricer's memo relies on).
    wave_quantization launch_with(double tm, double tn, const gemm_shape& g) const {
        const double tiles = count(g.m, tm) * count(g.n, tn) * g.batch;
        const double waves = waves_of(tiles);
        return {.tiles = tiles, .waves = waves, .launched = waves * sms_ * (tm * tn)};
    }
    static wave_quantization with_utilization(wave_quantization q, const gemm_shape& g) {
        q.utilization = g.m * g.n * g.batch / q.launched;
        return q;
    }

    double seconds_per_flop(dtype t) const {
        const double v = seconds_per_flop_[std::size_t(t)];
        if (v == 0.0) gpu_.peak_for(t);  // throws, naming the dtype
        return v;
    }

    const gpu_spec& gpu_;
    kernel_params p_;
    double sms_;
    double inverse_sms_;
    double seconds_per_byte_;
    std::array<double, enum_names<dtype>::table.size()> seconds_per_flop_{};
    // The small-tile search's tilings: the compile-time table's entry for the
    // parameters, or the model's own (derived when it is built).
    const kernel_detail::tiling_set* table_;
    std::optional<kernel_detail::tiling_set> own_;
    const kernel_detail::tiling_set& search() const { return table_ ? *table_ : *own_; }
};

// The same model, one call at a time.
inline wave_quantization quantize_with_tile(const gemm_shape& g, int sm_count, double tile_m, double tile_n) {
    gpu_spec gpu;
    gpu.sm_count = sm_count;
    gpu.memory_bandwidth = gb_per_second(1.0);
    return kernel_cost_model(gpu, {}).quantize_with_tile(g, tile_m, tile_n);
}

inline wave_quantization quantize(const gemm_shape& g, int sm_count, const kernel_params& p) {
    gpu_spec gpu;
    gpu.sm_count = sm_count;
    gpu.memory_bandwidth = gb_per_second(1.0);
    return kernel_cost_model(gpu, p).quantize(g);
}

inline seconds gemm_compute_time(const gpu_spec& gpu, const gemm_shape& g, const kernel_params& p) {
    return kernel_cost_model(gpu, p).gemm_compute_time(g);
}

inline seconds gemm_memory_time(const gpu_spec& gpu, const gemm_shape& g, const kernel_params& p) {
    return kernel_cost_model(gpu, p).gemm_memory_time(g);
}

inline seconds gemm_time(const gpu_spec& gpu, const gemm_shape& g, const kernel_params& p) {
    return kernel_cost_model(gpu, p).gemm_time(g);
}

// A memory-bound kernel (elementwise, normalisation, softmax, optimizer update); no
// model is built (its tilings are the GEMMs').
inline seconds memory_op_time(const gpu_spec& gpu, bytes moved, const kernel_params& p) {
    validate(p);
    return kernel_detail::memory_time(moved, 1, p.launch_overhead, kernel_detail::seconds_per_byte(gpu, p));
}

inline seconds attention_time(const gpu_spec& gpu, const attention_op& a, const kernel_params& p) {
    return kernel_cost_model(gpu, p).attention_time(a);
}

namespace kernel_detail {
// memory_op_time below for parameters already checked.
constexpr seconds memory_op_time(const gpu_spec& gpu, const memory_op& op, const kernel_params& p) {
    return memory_time(op.moved, op.launches, p.launch_overhead, seconds_per_byte(gpu, p));
}
}  // namespace kernel_detail

// A memory op of the workload: its bytes over its launches.
inline seconds memory_op_time(const gpu_spec& gpu, const memory_op& op, const kernel_params& p) {
    validate(p);
    return kernel_detail::memory_op_time(gpu, op, p);
}

}  // namespace trainperf
