// Must NOT compile: bytes and seconds are different dimensions (ctest WILL_FAIL).
#include <trainperf/core/units.hpp>

int main() {
    auto sum = trainperf::bytes_of(1.0) + trainperf::seconds_of(2.0);
    return sum.value() == 3.0 ? 0 : 1;
}
