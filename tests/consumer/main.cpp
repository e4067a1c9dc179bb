#include <trainperf/trainperf.hpp>

#include <iostream>

int main() {
    const auto& gpu = trainperf::lookup_gpu("h100-sxm");
    const auto& model = trainperf::lookup_model("gpt2-medium");
    std::cout << model.name << " has " << trainperf::parameter_count(model) << " parameters; "
              << gpu.name << " holds " << trainperf::to_gb(gpu.memory_capacity).value() << " GB\n";
    return trainperf::parameter_count(model) > 3e8 ? 0 : 1;
}
