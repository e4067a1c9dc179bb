// What a stage pricer remembers of the prices it has asked for: a layer repeats GEMM
// shapes, and the collectives of a stage repeat sizes (the head's gather and scatter are
// the layers' own). Each memo prices a key once and hands the price back after.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#include "../core/dtype.hpp"
#include "../core/units.hpp"
#include "../workload/ops.hpp"

namespace trainperf {

// A layer's GEMMs repeat shapes (FFN up's dgrad is FFN down's forward; the attention
// core's batched GEMMs share theirs) and transposes (the kernel model prices m × n
// and n × m alike: it tries every tile in both orientations, and the bytes are
// symmetric; tests/test_kernel_model.cpp holds it to that): each distinct shape, m
// and n in either order, is priced once, remembered in a small open-addressed table
// (a slot holds a shape once its bit in `filled_` is set; a shape looks from its hash
// slot on; a full table prices anew). The slots are written before they are read, so
// the table needs no initialisation beyond its mask; a copy starts with an empty table
// (a stage pricer's priced parts are what a copy of it is for).
class gemm_price_memo {
public:
    gemm_price_memo() = default;
    gemm_price_memo(const gemm_price_memo&) {}
    gemm_price_memo& operator=(const gemm_price_memo&) {
        filled_ = 0;
        return *this;
    }

    template <class Price>
    seconds time(const gemm_shape& g, Price&& price) {
        constexpr std::size_t slots = std::size_t(1) << slot_bits;
        const double lo = std::min(g.m, g.n), hi = std::max(g.m, g.n);
        std::size_t slot = slot_of(lo, hi, g);
        for (std::size_t probe = 0; probe < slots; ++probe, slot = (slot + 1) & (slots - 1)) {
            priced& p = slots_[slot];
            const std::uint32_t bit = std::uint32_t(1) << slot;
            if (!(filled_ & bit)) {
                const seconds t = price(g);
                p = {lo, hi, g.k, g.batch, g.math, t.value()};
                filled_ |= bit;
                return t;
            }
            if (p.lo == lo && p.hi == hi && p.k == g.k && p.batch == g.batch && p.math == g.math)
                return seconds_of(p.time);
        }
        return price(g);
    }

private:
    // The slot: the sides' bits mixed (the odd multipliers keep a shape apart from
    // one with k and a side swapped; shapes that differ only in batch or math share
    // a first slot and probe on), then Fibonacci hashing, the top bits of the
    // product with 2^64/φ (Knuth, The Art of Computer Programming, Vol. 3, §6.4,
    // multiplicative hashing).
    static std::size_t slot_of(double lo, double hi, const gemm_shape& g) {
        const auto bits = [](double v) { return std::bit_cast<std::uint64_t>(v); };
        const std::uint64_t h = (bits(lo) ^ (bits(hi) * 3) ^ (bits(g.k) * 5)) * 0x9E3779B97F4A7C15ULL;
        return std::size_t(h >> (64 - slot_bits));
    }
    static constexpr int slot_bits = 5;
    static_assert(slot_bits <= 5, "filled_ holds one bit per slot in 32 bits");
    // A priced shape: lo ≤ hi are its m and n in order.
    struct priced {
        double lo, hi, k, batch;
        dtype math;
        double time;
    };
    std::array<priced, std::size_t(1) << slot_bits> slots_;  // read only where filled_ has the bit
    std::uint32_t filled_ = 0;
};

// A stage's collectives by what their price depends on (collective_time reads the
// kind, the buffer, the group's size and spread over nodes, and an all-to-all's network
// share; not the name or the pass), in a table of 16 slots as the GEMMs' (a key looks
// from its hash slot on; a full table prices anew). A copy starts empty, as the GEMMs'.
class collective_price_memo {
public:
    collective_price_memo() = default;
    collective_price_memo(const collective_price_memo&) {}
    collective_price_memo& operator=(const collective_price_memo&) {
        filled_ = 0;
        return *this;
    }

    template <class Price>
    seconds time(const collective_op& op, Price&& price) {
        const key k{op.size.value(), op.network_share, op.group.size, op.group.per_node, op.kind};
        const std::uint64_t h =
            (std::bit_cast<std::uint64_t>(k.size) ^ (std::uint64_t(k.group_size) << 7) ^ std::uint64_t(k.kind)) *
            0x9E3779B97F4A7C15ULL;  // Fibonacci hashing, as the GEMMs'
        std::size_t slot = std::size_t(h >> (64 - slot_bits));
        for (std::size_t probe = 0; probe < slots; ++probe, slot = (slot + 1) & (slots - 1)) {
            const std::uint32_t bit = std::uint32_t(1) << slot;
            if (!(filled_ & bit)) {
                const seconds t = price(op);
                keys_[slot] = k;
                times_[slot] = t.value();
                filled_ |= bit;
                return t;
            }
            if (keys_[slot] == k) return seconds_of(times_[slot]);
        }
        return price(op);
    }

private:
    struct key {
        double size, network_share;
        int group_size, per_node;
        collective kind;
        constexpr bool operator==(const key&) const = default;
    };
    static constexpr int slot_bits = 4;
    static constexpr std::size_t slots = std::size_t(1) << slot_bits;
    std::array<key, slots> keys_;  // read only where filled_ has the bit
    std::array<double, slots> times_;
    std::uint32_t filled_ = 0;
};

}  // namespace trainperf
