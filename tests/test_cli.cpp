// The trainperf CLI as a user runs it: JSON keys, exit codes, one-line errors.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>

namespace {

struct run_result {
    int exit_code = -1;
    std::string out, err;
};

// Runs the CLI with `args` (a shell-quoted string), capturing stdout and stderr.
run_result run_cli(const std::string& args) {
    // One file per process: ctest runs the test cases in parallel.
    const std::string err_path = "test_cli_stderr_" + std::to_string(getpid()) + ".txt";
    const std::string command = std::string("'") + TRAINPERF_CLI + "' " + args + " 2>" + err_path;
    run_result r;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::array<char, 4096> buffer{};
    std::size_t n = 0;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.out.append(buffer.data(), n);
    const int status = pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream err(err_path);
    std::stringstream text;
    text << err.rdbuf();
    r.err = text.str();
    std::remove(err_path.c_str());
    return r;
}

nlohmann::json run_json(const std::string& args) {
    const auto r = run_cli(args);
    INFO(args << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    return nlohmann::json::parse(r.out);
}

}  // namespace

TEST_CASE("predict --json has the documented keys", "[cli]") {
    const auto j = run_json("predict --gpu rtx-3090-ti --model gpt2-medium --batch 5 --json");
    for (const char* key : {"samples_per_second", "tokens_per_second", "step_time_seconds", "tflops_per_gpu", "mfu",
                            "memory_per_gpu_bytes", "memory_breakdown", "fits", "time_breakdown", "bottleneck"})
        CHECK(j.contains(key));
    double sum = 0;
    for (const char* key : {"forward_backward", "communication", "optimizer", "bubble", "data"}) {
        REQUIRE(j["time_breakdown"].contains(key));
        sum += j["time_breakdown"][key].get<double>();
    }
    CHECK(sum == Approx(1.0));
    CHECK(j["global_batch"] == 5);
    CHECK(j["tokens_per_second"].get<double>() == Approx(j["samples_per_second"].get<double>() * 1024));
}

TEST_CASE("the global batch is batch x dp x grad-accum", "[cli]") {
    const auto j = run_json("predict --gpu h100-sxm --model gpt2 --batch 4 --gpus 8 --tp 2 --grad-accum 3 --json");
    CHECK(j["global_batch"] == 4 * 4 * 3);
    CHECK(j["layout"]["dp"] == 4);
}

TEST_CASE("memory, flops, scale and pipeline print their JSON keys", "[cli]") {
    const auto memory = run_json("memory --gpu h100-sxm --params 7e9 --precision fp32 --json");
    CHECK(memory["static_bytes"].get<double>() == Approx(1.12e11));
    CHECK(memory["fits"] == false);
    for (const char* key : {"activation_bytes", "total_bytes", "capacity_bytes", "breakdown"}) CHECK(memory.contains(key));
    const auto flops = run_json("flops --model bert-large --seq 512 --json");
    CHECK(flops["training_flops_per_sample"].get<double>() == Approx(1.10103625728e12));
    CHECK(flops.contains("exact_training_flops_per_sample"));
    const auto scale = run_json("scale --gpus 8 --r 0.15 --json");
    CHECK(scale["speedup"].get<double>() == Approx(3.902).epsilon(1e-3));
    const auto derived = run_json("scale --gpu a100-sxm-80gb --model gpt2-medium --batch 8 --gpus 8 --framework megatron --json");
    CHECK(derived["r"].get<double>() > 0.0);
    CHECK(derived["speedup"].get<double>() <= 8.0);
    const auto pipeline = run_json("pipeline --data-ms 10 --pcie-ms 2 --compute-ms 30 --sync-ms 25 --json");
    CHECK(pipeline["bottleneck"] == "compute");
    CHECK(pipeline["sequential_ms"].get<double>() == Approx(67.0));
}

TEST_CASE("the default scenario prints every part", "[cli]") {
    const auto r = run_cli("");
    REQUIRE(r.exit_code == 0);
    for (const char* part : {"Part A", "Part B", "Part C", "Part D", "Part E"}) CHECK(r.out.find(part) != std::string::npos);
    CHECK(r.err.empty());
}

TEST_CASE("bad input: one line on stderr, nothing on stdout, exit code 2", "[cli]") {
    const char* cases[] = {
        "predict --gpu nope --model gpt2",
        "predict --gpu h100-sxm --model nope",
        "predict --gpu v100-sxm2-32gb --model gpt2 --precision bf16",
        "predict --gpu h100-sxm --model gpt2 --batch 0",
        "predict --gpu h100-sxm --model gpt2 --tp 5",
        "predict --gpu h100-sxm --model gpt2 --tp 2 --pp 2 --gpus 6",
        "predict --gpu h100-sxm --model gpt2 --pp 13",
        "predict --gpu h100-sxm --model gpt2 --link-bandwidth -3GB/s --gpus 2",
        "predict --gpu h100-sxm --model gpt2 --seq nan",
        "predict --gpu h100-sxm --model custom --layers 2 --hidden 64",
        "predict --gpu h100-sxm --model gpt2 --framework tensorflow",
        "memory --gpu h100-sxm --params -7e9",
        "memory --gpu h100-sxm --params nan",
        "scale --gpus 8 --r 1.5",
        "scale --gpus 0 --r 0.1",
        "comm --collective all-reduce --bytes 1.4XB --gpus 8 --link nvlink",
        "pipeline --data-ms -1 --compute-ms 30",
        "no-such-command",
    };
    for (const char* args : cases) {
        const auto r = run_cli(args);
        INFO(args << " -> exit " << r.exit_code << ", stderr: " << r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.err.rfind("trainperf: ", 0) == 0);
    }
}
