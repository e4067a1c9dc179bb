// Code-layout attributes the library's hot paths use, spelled per compiler (GCC and
// Clang take the gnu:: attributes; MSVC has __declspec(noinline) and no cold).
#pragma once

// A function only a failed check reaches: never inlined and laid out apart from the
// code that checks (GCC, Clang: cold), so the checks' common path stays dense. The
// checks of one prediction run through a few hundred fields; with their failure paths
// out of the way they take fewer instructions and less instruction cache.
#if defined(__GNUC__) || defined(__clang__)
#define TRAINPERF_COLD [[gnu::cold, gnu::noinline]]
#elif defined(_MSC_VER)
#define TRAINPERF_COLD __declspec(noinline)
#else
#define TRAINPERF_COLD
#endif

// A function kept out of line, so that its caller's common path runs without its
// registers and code.
#if defined(__GNUC__) || defined(__clang__)
#define TRAINPERF_NOINLINE [[gnu::noinline]]
#elif defined(_MSC_VER)
#define TRAINPERF_NOINLINE __declspec(noinline)
#else
#define TRAINPERF_NOINLINE
#endif
