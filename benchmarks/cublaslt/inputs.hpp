// Random GEMM inputs that the host can recompute: element i of the device pool is
// input_value(i) rounded to the storage type, so the reference check needs no copy
// of the inputs. Magnitudes in [0.5, 1) with random signs and full random mantissas:
// never zero, no subnormals, and bit patterns that toggle like real activations.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include <trainperf/core/dtype.hpp>

namespace cublaslt_harness {

inline std::uint64_t splitmix64(std::uint64_t i) {
    std::uint64_t z = (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

inline float input_value(std::uint64_t i) {
    const std::uint64_t z = splitmix64(i);
    const float magnitude = 0.5f + static_cast<float>(z >> 41) * 0x1p-24f;  // 23 random bits
    return (z & 1u) ? -magnitude : magnitude;
}

// Round-to-nearest-even to a float with `keep` mantissa bits (what __float2bfloat16
// and __float2half_rn do for normal values).
inline float round_mantissa(float v, int keep) {
    const int drop = 23 - keep;
    std::uint32_t bits = std::bit_cast<std::uint32_t>(v);
    const std::uint32_t half = (1u << (drop - 1)) - 1u + ((bits >> drop) & 1u);
    bits = (bits + half) & ~((1u << drop) - 1u);
    return std::bit_cast<float>(bits);
}

// The value the GPU sees for element i in storage type t.
inline float stored_value(trainperf::dtype t, std::uint64_t i) {
    const float v = input_value(i);
    switch (t) {
        case trainperf::dtype::bf16: return round_mantissa(v, 7);
        case trainperf::dtype::fp16: return round_mantissa(v, 10);
        default: return v;  // fp32 storage (tf32 math rounds inside the tensor core)
    }
}

inline std::uint16_t bf16_bits(float exact) { return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(exact) >> 16); }

// Only for normal values exactly representable in fp16 (all that stored_value makes).
inline std::uint16_t fp16_bits(float exact) {
    const std::uint32_t b = std::bit_cast<std::uint32_t>(exact);
    const std::uint32_t sign = (b >> 16) & 0x8000u;
    const int exponent = static_cast<int>((b >> 23) & 0xffu) - 127 + 15;
    return static_cast<std::uint16_t>(sign | (static_cast<std::uint32_t>(exponent) << 10) | ((b >> 13) & 0x3ffu));
}

inline float from_bf16(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

inline float from_fp16(std::uint16_t h) {
    const float sign = (h & 0x8000u) ? -1.0f : 1.0f;
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -24);
    if (exponent == 31) return mantissa ? NAN : sign * INFINITY;
    return sign * std::ldexp(1.0f + static_cast<float>(mantissa) / 1024.0f, exponent - 15);
}

inline std::size_t storage_bytes(trainperf::dtype t) {
    switch (t) {
        case trainperf::dtype::bf16:
        case trainperf::dtype::fp16: return 2;
        case trainperf::dtype::tf32:
        case trainperf::dtype::fp32: return 4;
        default: throw std::invalid_argument("dtype: the harness supports bf16, fp16, tf32 and fp32");
    }
}

// Host image of pool elements [first, first + count), generated on all cores.
inline void generate(trainperf::dtype t, std::uint64_t first, std::size_t count, unsigned char* out) {
    const std::size_t size = storage_bytes(t);
    const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
    const std::size_t per = (count + workers - 1) / workers;
    std::vector<std::thread> threads;
    for (unsigned w = 0; w < workers; ++w) {
        const std::size_t lo = w * per, hi = std::min(count, lo + per);
        if (lo >= hi) break;
        threads.emplace_back([=] {
            for (std::size_t i = lo; i < hi; ++i) {
                const float v = stored_value(t, first + i);
                unsigned char* dst = out + i * size;
                if (size == 2) {
                    const std::uint16_t h = t == trainperf::dtype::bf16 ? bf16_bits(v) : fp16_bits(v);
                    std::memcpy(dst, &h, 2);
                } else {
                    std::memcpy(dst, &v, 4);
                }
            }
        });
    }
    for (auto& th : threads) th.join();
}

// Reads back one output element of type t as float.
inline float output_as_float(trainperf::dtype t, const unsigned char* p) {
    if (storage_bytes(t) == 4) {
        float v;
        std::memcpy(&v, p, 4);
        return v;
    }
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    return t == trainperf::dtype::bf16 ? from_bf16(h) : from_fp16(h);
}

}  // namespace cublaslt_harness
