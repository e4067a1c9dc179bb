// Control for bytes_plus_seconds.cpp: the same expression with matching units compiles.
#include <trainperf/core/units.hpp>

int main() {
    auto sum = trainperf::bytes_of(1.0) + trainperf::bytes_of(2.0);
    return sum.value() == 3.0 ? 0 : 1;
}
