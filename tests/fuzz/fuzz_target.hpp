// What every fuzz target shares: the libFuzzer entry point's declaration and the
// contract checks. A broken contract aborts, which libFuzzer (and the corpus replay
// that ctest runs) reports as a finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

inline void fuzz_require(bool ok, const char* what) {
    if (ok) return;
    std::fprintf(stderr, "fuzz contract broken: %s\n", what);
    std::abort();
}

// Runs `f`: finishing or throwing std::invalid_argument (bad input, refused with a
// message) is fine; any other exception is a defect.
template <class F>
void refused_or_fine(F&& f) {
    try {
        f();
    } catch (const std::invalid_argument&) {
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz contract broken: unexpected exception: %s\n", e.what());
        std::abort();
    }
}
