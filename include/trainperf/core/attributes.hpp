// Code-layout attributes the library's hot paths use, spelled per compiler (GCC and
// Clang take the gnu:: attributes; MSVC has __declspec(noinline) and no cold).
//
// TRAINPERF_NOINLINE: a function kept out of line, so that its caller's common path
// runs without its registers and code.
// TRAINPERF_COLD: a function only a failed check reaches: never inlined and, where the
// compiler can, laid out apart from the code that checks, so the checks' common path
// stays dense (docs/engine.md, Speed).
// TRAINPERF_ALWAYS_INLINE: a small function a prediction calls in its loops (once per
// op), inlined wherever it is called, whatever the compiler's inlining budget has left.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define TRAINPERF_NOINLINE [[gnu::noinline]]
#define TRAINPERF_COLD [[gnu::cold, gnu::noinline]]
#define TRAINPERF_ALWAYS_INLINE [[gnu::always_inline]] inline
#elif defined(_MSC_VER)
#define TRAINPERF_NOINLINE __declspec(noinline)
#define TRAINPERF_COLD __declspec(noinline)
#define TRAINPERF_ALWAYS_INLINE __forceinline
#else
#define TRAINPERF_NOINLINE
#define TRAINPERF_COLD
#define TRAINPERF_ALWAYS_INLINE inline
#endif
