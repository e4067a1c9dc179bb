// The trainperf CLI as a user runs it: JSON keys, exit codes, one-line errors.
#include "cli_runner.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <trainperf/spec/gpu_catalog.hpp>
#include <trainperf/spec/model_catalog.hpp>
#include <trainperf/cost/step.hpp>
#include <trainperf/spec/system.hpp>

#include "csv_reader.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <cstdlib>
#include <sstream>
#include <set>
#include <string>
#include <vector>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using trainperf_test::run_cli;

// Each command line is bad input: exit code 2, one line on stderr, nothing on stdout.
template <class Lines>
void check_refused(const Lines& cases) {
    for (const auto& args : cases) {
        const auto r = run_cli(args);
        INFO(args << " -> exit " << r.exit_code << ", stderr: " << r.err);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
        CHECK(r.err.rfind("trainperf: ", 0) == 0);
    }
}

// A command's JSON. Exit status 3 is the answer "does not fit" (docs/cli.md): where the
// document says whether it fits, the status says the same.
nlohmann::json run_json(const std::string& args) {
    const auto r = run_cli(args);
    INFO(args << "\n" << r.err);
    REQUIRE((r.exit_code == 0 || r.exit_code == 3));
    nlohmann::json j = nlohmann::json::parse(r.out);
    if (j.is_object() && j.contains("fits") && j["fits"].is_boolean())
        CHECK((r.exit_code == 3) == !j["fits"].get<bool>());
    return j;
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
    const auto j = run_json(
        "predict --gpu h100-sxm --model gpt2 --framework megatron --batch 4 --gpus 8 --tp 2 --grad-accum 3 --json");
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
    CHECK(derived["above_linear"] == false);
    // ZeRO-3 shards the optimizer step: above 8 on 8 replicas, and the text says why.
    const std::string sharded = "scale --gpu h100-sxm --model llama2-7b --gpus 8 --zero 3";
    const auto above = run_json(sharded + " --json");
    CHECK(above["above_linear"] == true);
    CHECK(above["one_replica_fits"] == false);
    CHECK(above["speedup"].get<double>() > 8.0);
    CHECK(run_cli(sharded).out.find("(ZeRO 3 shards the optimizer step over them)") != std::string::npos);
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
        "predict --gpu h100-sxm --model gpt2 --framework megatron --tp 5",
        "predict --gpu h100-sxm --model gpt2 --framework megatron --tp 2 --pp 2 --gpus 6",
        "predict --gpu h100-sxm --model gpt2 --framework megatron --pp 13",
        // What the framework's software does not run.
        "predict --gpu h100-sxm --model gpt2 --gpus 2 --tp 2",
        "predict --gpu h100-sxm --model gpt2 --gpus 2 --pp 2 --framework deepspeed",
        "predict --gpu h100-sxm --model llama3-8b --gpus 2 --cp 2 --framework megatron",
        "memory --gpu h100-sxm --model gpt2 --gpus 8 --zero 3 --framework megatron",
        "fit --gpu h100-sxm --model gpt2 --gpus 8 --zero 1 --offload optimizer --framework megatron",
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
        "predict --gpu h100-sxm --model gpt2 --dp-overlap maybe",
        "predict --gpu h100-sxm --model gpt2 --gpus 2 --link ethernet",
        "predict --gpu jetson-orin-nx-16gb --model gpt2 --gpus 2",
        "predict --gpu h100-sxm --model gpt2 --recompute most",
        "comm --bytes 1GB --gpus 8 --link ethernet",
        "comm --bytes 1GB --gpus 8 --link nvlink --collective broadcast",
        "comm --bytes 1GB --gpus 8",
        "plan --gpu h100-sxm --model gpt2 --gpus 8 --global-batch 64 --precision fp64",
    };
    check_refused(cases);
}

TEST_CASE("the program and every subcommand take --version", "[cli]") {
    for (const char* sub : {"", "gpus", "models", "frameworks", "flops", "memory", "predict", "sweep", "fit", "plan",
                            "scale", "comm", "pipeline", "calibrate"}) {
        const auto r = run_cli(std::string(sub) + " --version");
        INFO(sub << ": exit " << r.exit_code << ", stderr: " << r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.out.rfind("trainperf ", 0) == 0);
    }
}

TEST_CASE("every line plan prints as a predict command is accepted by predict, with the same step", "[cli]") {
    // --wide prints every layout's command on one line. The second request's best
    // layouts turn a switch of the megatron-core profile off (tensor-parallel overlap):
    // their lines carry the flag. The third is an MoE model's, with its expert layout
    // and the dispatcher asked for.
    for (const std::string request :
         {"--gpu a100-sxm-80gb --model gpt2-medium --gpus 16 --global-batch 64 --framework megatron --link pcie --top 3",
          "--gpu a100-sxm-80gb --model llama2-70b --gpus 32 --global-batch 64 --framework megatron-core --top 3",
          "--gpu h100-sxm --model qwen3-30b-a3b --gpus 16 --global-batch 64 --framework megatron-core "
          "--moe-dispatcher deepep --top 3"}) {
    INFO(request);
    const auto planned = run_json("plan " + request + " --json");
    REQUIRE(planned["best"].size() == 3);
    const auto text = run_cli("plan " + request + " --wide");
    REQUIRE(text.exit_code == 0);
    std::istringstream lines(text.out);
    std::string line;
    std::size_t i = 0;
    while (std::getline(lines, line)) {
        const auto at = line.find("trainperf predict ");
        if (at == std::string::npos) continue;
        REQUIRE(i < planned["best"].size());
        CHECK(line.substr(at) == planned["best"][i]["predict_command"].get<std::string>());
        const auto predicted = run_json(line.substr(at + std::string("trainperf ").size()) + " --json");
        CHECK(predicted["step_time_seconds"].get<double>() ==
              Approx(planned["best"][i]["step_time_seconds"].get<double>()).epsilon(1e-12));
        CHECK(predicted["layout"]["dp"] == planned["best"][i]["dp"]);
        CHECK(predicted["fits"] == true);
        if (request.find("llama2-70b") != std::string::npos)
            CHECK(line.find("--tp-comm-overlap off") != std::string::npos);
        if (request.find("qwen3") != std::string::npos) {
            CHECK(line.find("--moe-dispatcher deepep") != std::string::npos);
            CHECK(line.find("--ep ") != std::string::npos);
            CHECK(predicted["layout"]["ep"] == planned["best"][i]["ep"]);
            CHECK(predicted["layout"]["etp"] == 1);  // DeepEP: each expert whole on its rank
        }
        ++i;
    }
    CHECK(i == 3);
    }
}

namespace {
// The lines of a text.
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::size_t widest_line(const std::string& text) {
    std::size_t widest = 0;
    for (const std::string& line : lines_of(text)) widest = std::max(widest, line.size());
    return widest;
}

// The command that starts with "trainperf predict " in `text`, its continuation lines
// (a backslash at a line's end) joined: the command as a shell reads it.
std::string joined_predict_command(const std::string& text) {
    const std::vector<std::string> lines = lines_of(text);
    auto at = std::find_if(lines.begin(), lines.end(),
                           [](const std::string& l) { return l.rfind("trainperf predict ", 0) == 0; });
    if (at == lines.end()) return {};
    std::string command;
    for (;; ++at) {
        std::string line = *at;
        line.erase(0, line.find_first_not_of(' '));
        const bool goes_on = line.ends_with(" \\");
        if (goes_on) line.resize(line.size() - 2);
        if (!command.empty()) command += ' ';
        command += line;
        if (!goes_on || at + 1 == lines.end()) return command;
    }
}

// The fields that define a layout's family (search/layout_search.hpp same_family) in a
// plan's JSON.
std::string family_of(const nlohmann::json& layout) {
    std::string key;
    for (const char* field : {"dp", "tp", "cp", "pp", "ep", "etp", "sp", "zero", "offload", "micro_batch",
                              "grad_accum", "recompute", "flash_attention"})
        key += layout[field].dump() + " ";
    return key;
}
}  // namespace

TEST_CASE("plan's text fits 120 columns, and --wide keeps every layout in full", "[cli][plan]") {
    // GPT-3 on 512 A100; Llama 3 70B on 64 H100 with megatron-core (uneven splits,
    // switches turned off); a long sequence (cp > 1); optimizer offload; FlashAttention
    // off in some rows; an end-to-end plan.
    struct request {
        std::string args, shows;  // the command, and what its text must show
    };
    const std::vector<request> requests{
        {"--gpu a100-sxm-80gb --model gpt3-175b --gpus 512 --global-batch 1536 --framework megatron", "  v  "},
        {"--gpu h100-sxm --model llama3-70b --gpus 64 --global-batch 512 --framework megatron-core",
         "tp-comm-overlap off"},
        {"--gpu h100-sxm --model llama3-8b --seq 32768 --gpus 32 --global-batch 64 --framework megatron-core",
         "  cp  "},
        {"--gpu a100-sxm-80gb --model llama2-70b --gpus 8 --global-batch 32 --framework deepspeed --offload",
         "optimizer offload"},
        {"--gpu h100-sxm --model llama2-7b --seq 512 --gpus 8 --global-batch 64 --framework megatron-core --top 30",
         "FlashAttention off"},
        {"--gpu a100-sxm-80gb --model gpt3-175b --global-batch 1536 --framework megatron --train-tokens 1T "
         "--max-gpus 256",
         "The fastest layout of each GPU count"},
        {"--gpu h100-sxm --model mixtral-8x7b --seq 4096 --gpus 16 --global-batch 32 --max-micro-batch 1 "
         "--framework megatron-core",
         " etp "},
    };
    for (const request& r : requests) {
        INFO(r.args);
        const auto text = run_cli("plan " + r.args);
        REQUIRE(text.exit_code == 0);
        for (const std::string& line : lines_of(text.out)) {
            INFO(line);
            CHECK(line.size() <= 120);
        }
        CHECK(text.out.find(r.shows) != std::string::npos);
    }
    // --wide: the layouts described in full on one line each, as before (one request: the
    // same search again per request adds minutes under the sanitizers and tests nothing more).
    const auto wide = run_cli("plan " + requests[0].args + " --wide");
    REQUIRE(wide.exit_code == 0);
    CHECK(wide.out.find(", micro-batch ") != std::string::npos);
    CHECK(wide.out.find("--wide") == std::string::npos);
    CHECK(widest_line(wide.out) > 120);
    CHECK(wide.out.find("The same layouts as predict commands") != std::string::npos);
}

TEST_CASE("plan takes the MoE run flags that only layouts of more than one GPU meet", "[cli][plan][moe]") {
    // The EP overlap needs ep > 1, DeepEP one of its group sizes: the search's starting
    // setup is not refused for its one-GPU layout, and what it finds runs with predict.
    for (const std::string flags : {" --moe-a2a-overlap", " --moe-dispatcher deepep"}) {
        const std::string request = "--gpu h100-sxm --model qwen3-30b-a3b --gpus 16 --global-batch 64 "
                                    "--framework megatron-core --max-micro-batch 1 --top 1" + flags;
        INFO(request);
        const auto planned = run_json("plan " + request + " --json");
        REQUIRE(planned["best"].size() == 1);
        const auto& best = planned["best"][0];
        CHECK(best["ep"].get<int>() > 1);
        const std::string command = best["predict_command"].get<std::string>();
        CHECK(command.find(flags) != std::string::npos);
        const auto predicted = run_json(command.substr(std::string("trainperf ").size()) + " --json");
        CHECK(predicted["step_time_seconds"].get<double>() ==
              Approx(best["step_time_seconds"].get<double>()).epsilon(1e-12));
    }
    // A bad value of such a flag is still refused, naming it.
    const auto bad = run_cli("plan --gpu h100-sxm --model llama2-7b --gpus 16 --global-batch 64 --framework "
                             "megatron-core --moe-a2a-overlap");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("moe_a2a_overlap = on: needs a mixture-of-experts model") != std::string::npos);
}

TEST_CASE("plan's wrapped predict command runs as printed, with the plan's step", "[cli][plan]") {
    for (const std::string request :
         {"--gpu a100-sxm-80gb --model llama2-70b --gpus 32 --global-batch 64 --framework megatron-core --top 3",
          "--gpu h100-sxm --model llama3-8b --seq 32768 --gpus 32 --global-batch 64 --framework megatron-core"}) {
        INFO(request);
        const auto planned = run_json("plan " + request + " --json");
        const auto text = run_cli("plan " + request);
        REQUIRE(text.exit_code == 0);
        const std::string command = joined_predict_command(text.out);
        CHECK(command == planned["best"][0]["predict_command"].get<std::string>());
        CHECK(text.out.find(" \\\n    --") != std::string::npos);  // wrapped, with continuations
        const auto predicted = run_json(command.substr(std::string("trainperf ").size()) + " --json");
        CHECK(predicted["step_time_seconds"].get<double>() ==
              Approx(planned["best"][0]["step_time_seconds"].get<double>()).epsilon(1e-12));
        CHECK(predicted["fits"] == true);
    }
}

TEST_CASE("plan folds layouts of one family by default; --no-fold lists each", "[cli][plan]") {
    const std::string request = "plan --gpu a100-sxm-80gb --model gpt3-175b --gpus 512 --global-batch 1536 "
                                "--framework megatron";
    const auto folded = run_json(request + " --json");
    const auto every = run_json(request + " --json --no-fold --top 1000");
    CHECK(folded["folded"] == true);
    CHECK(every["folded"] == false);
    // The folded list is the first layout of each family of the whole ranked list.
    std::vector<nlohmann::json> expected;
    std::vector<std::string> families;
    for (const auto& c : every["best"]) {
        const std::string family = family_of(c);
        if (std::find(families.begin(), families.end(), family) != families.end()) continue;
        families.push_back(family);
        if (expected.size() < 10) expected.push_back(c);
    }
    REQUIRE(folded["best"].size() == 10);
    REQUIRE(expected.size() == 10);
    for (std::size_t i = 0; i < expected.size(); ++i) {
        INFO("rank " << i + 1);
        CHECK(folded["best"][i]["predict_command"] == expected[i]["predict_command"]);
        CHECK(folded["best"][i]["step_time_seconds"] == expected[i]["step_time_seconds"]);
    }
    // Unfolded, the first ten repeat families (variants in interleave or dp-overlap), as
    // plan listed before folding.
    const auto ten = run_json(request + " --json --no-fold");
    std::vector<std::string> seen;
    for (std::size_t i = 0; i < ten["best"].size(); ++i) {
        CHECK(ten["best"][i]["predict_command"] == every["best"][i]["predict_command"]);
        seen.push_back(family_of(ten["best"][i]));
    }
    std::sort(seen.begin(), seen.end());
    CHECK(std::unique(seen.begin(), seen.end()) != seen.end());
    // The CSV folds as the JSON does.
    const auto csv = trainperf::testing::csv_rows(run_cli(request + " --csv").out);
    REQUIRE(csv.size() == 10);
    for (std::size_t i = 0; i < csv.size(); ++i)
        CHECK(std::stod(csv[i].at("step_time_ms")) ==
              Approx(folded["best"][i]["step_time_seconds"].get<double>() * 1e3).epsilon(1e-12));
    // The text says what it folded, and how to list each.
    const auto text = run_cli(request);
    CHECK(text.out.find("(--no-fold: each)") != std::string::npos);
    CHECK(run_cli(request + " --no-fold").out.find("Every layout is listed") != std::string::npos);
}

TEST_CASE("comm names NCCL's algorithm, protocol, latency and bandwidth terms", "[cli][comm]") {
    // 8 A100, 32 KiB: ring / LL, 12 channels, 6.6 + 14 × 0.6 = 15.0 µs and 87.7 × 8/14 =
    // 50.11 GB/s (docs/communication.md, "NCCL's model").
    const auto j = run_json("comm --gpu a100-sxm-80gb --gpus 8 --bytes 32KiB --json");
    CHECK(j["model"] == "nccl");
    CHECK(j["algorithm"] == "ring");
    CHECK(j["nccl"]["algorithm"] == "ring");
    CHECK(j["nccl"]["protocol"] == "LL");
    CHECK(j["nccl"]["channels"] == 12);
    CHECK(j["nccl"]["latency_seconds"].get<double>() == Approx(15e-6));
    CHECK(j["nccl"]["bandwidth_bytes_per_second"].get<double>() == Approx(87.7e9 * 8 / 14));
    CHECK(j["time_seconds"].get<double>() == Approx(15e-6 + 32768 / (87.7e9 * 8 / 14)));
    const auto text = run_cli("comm --gpu a100-sxm-80gb --gpus 8 --bytes 32KiB");
    CHECK(text.out.find("picked:              ring / LL, 12 channels") != std::string::npos);
    CHECK(text.out.find("latency term:        15.0 us") != std::string::npos);
    // --algorithm tree forces the tree; its protocol is still NCCL's choice.
    CHECK(run_json("comm --gpu a100-sxm-80gb --gpus 8 --bytes 256MiB --algorithm tree --json")["nccl"]["protocol"] ==
          "Simple");
    // Without a GPU the link alone is priced with the α–β model, no NCCL pick.
    const auto ab = run_json("comm --link nvlink --gpus 8 --bytes 32KiB --json");
    CHECK(ab["model"] == "alpha-beta");
    CHECK_FALSE(ab.contains("nccl"));
}

TEST_CASE("comm and predict resolve --link pcie to the same link for the same GPU", "[cli]") {
    for (const char* gpu : {"h100-sxm", "a100-sxm-80gb", "v100-sxm2-32gb"}) {
        INFO(gpu);
        const auto comm = run_json(std::string("comm --bytes 1GB --gpus 8 --link pcie --json --gpu ") + gpu);
        const auto predict =
            run_json(std::string("predict --model gpt2 --gpus 8 --link pcie --precision fp16 --json --gpu ") + gpu);
        for (const char* key : {"kind", "per_direction_bytes_per_second", "latency_seconds", "efficiency"})
            CHECK(comm["link"][key] == predict["intra_node_link"][key]);
    }
    // The H100's own PCIe is Gen5: 63 GB/s per direction, not a generic Gen4 figure.
    const auto h100 = run_json("predict --gpu h100-sxm --model gpt2 --gpus 8 --link pcie --json");
    CHECK(h100["intra_node_link"]["per_direction_bytes_per_second"].get<double>() == Approx(63e9));
    // An inter-node line rate keeps InfiniBand's efficiency, in both commands.
    const auto ib = run_json("predict --gpu h100-sxm --model gpt2 --gpus 16 --inter-node-bandwidth 50GB/s --json");
    const auto ib_comm = run_json("comm --gpu h100-sxm --bytes 1GB --gpus 16 --gpus-per-node 8 "
                                  "--inter-node-bandwidth 50GB/s --json");
    for (const char* key : {"kind", "per_direction_bytes_per_second", "latency_seconds", "efficiency"})
        CHECK(ib["inter_node_link"][key] == ib_comm["inter_node_link"][key]);
    CHECK(ib["inter_node_link"]["efficiency"].get<double>() == Approx(0.9));
    CHECK(ib["inter_node_link"]["per_direction_bytes_per_second"].get<double>() == Approx(50e9));
}

TEST_CASE("a layout that does not fit shows no step, says by how much, and what would make it fit", "[cli]") {
    const std::string args = "predict --gpu h100-sxm --model llama2-7b --batch 1";
    const auto text = run_cli(args);
    REQUIRE(text.exit_code == 3);  // the answer "does not fit" (docs/cli.md)
    CHECK(text.out.find("Does NOT fit") != std::string::npos);
    CHECK(text.out.find("too much") != std::string::npos);
    // None of the step table's rows (its step time, throughput, MFU) nor its breakdown.
    for (const char* hidden : {"step time ", "samples/s", "MFU / HFU", "time breakdown", "bottleneck"})
        CHECK(text.out.find(hidden) == std::string::npos);
    const auto j = run_json(args + " --json");
    CHECK(j["fits"] == false);
    CHECK(j["memory_excess_bytes"].get<double>() > 0);
    REQUIRE(j["ways_to_fit"].size() >= 1);
    // Each suggestion is a predict command that fits.
    for (const auto& way : j["ways_to_fit"]) {
        const std::string command = way["predict_command"];
        const auto fixed = run_json(command.substr(std::string("trainperf ").size()) + " --json");
        CHECK(fixed["fits"] == true);
        CHECK(fixed["step_time_seconds"].get<double>() == Approx(way["step_time_seconds"].get<double>()));
    }
    // The default scenario does the same for its layouts that do not fit.
    const auto scenario = run_cli("");
    CHECK(scenario.out.find("Does NOT fit") != std::string::npos);
}

TEST_CASE("memory, fit and predict give the same bytes for the same flags", "[cli][memory]") {
    // A grid of setups: one GPU that does not fit, ZeRO-3 over a node, tensor/pipeline
    // parallel with interleaving, optimizer offload.
    const std::array<std::pair<std::string, std::string>, 4> setups{{
        {"--gpu rtx-3090 --model gpt2-medium --precision fp32 --batch 3", "fp32"},
        {"--gpu h100-sxm --model llama2-7b --gpus 8 --zero 3 --framework deepspeed --recompute full", "bf16"},
        {"--gpu a100-sxm-80gb --model llama2-13b --gpus 16 --tp 4 --pp 2 --interleave 2 --sp --zero 1 "
         "--framework megatron --batch 2 --grad-accum 4 --recompute selective",
         "bf16"},
        {"--gpu h100-sxm --model llama2-70b --gpus 16 --tp 8 --zero 1 --offload optimizer --recompute full "
         "--framework megatron-core --precision fp16",
         "fp16"},
    }};
    for (const auto& [flags, precision] : setups) {
        INFO(flags);
        const auto memory = run_json("memory " + flags + " --json");
        const auto predict = run_json("predict " + flags + " --json");
        CHECK(memory["total_bytes"].get<double>() == predict["memory_per_gpu_bytes"].get<double>());
        CHECK(memory["fits"] == predict["fits"]);
        // fit searches the micro-batch of the same setup: the same largest batch.
        std::string without_batch = flags;
        const auto at = without_batch.find(" --batch ");
        if (at != std::string::npos) without_batch.erase(at, std::string(" --batch 2").size());
        const auto fit = run_json("fit " + without_batch + " --json");
        bool found = false;
        for (const auto& row : fit["fits"])
            if (row["precision"] == precision && row["optimizer"] == "adamw") {
                CHECK(row["max_micro_batch"] == memory["max_micro_batch"]);
                found = true;
            }
        CHECK(found);
    }
}

TEST_CASE("the layouts plan reports have the bytes memory and predict give them", "[cli][memory]") {
    const auto plan = run_json("plan --gpu a100-sxm-80gb --model llama2-13b --gpus 16 --global-batch 32 "
                               "--framework megatron --offload --top 6 --json");
    REQUIRE(plan["best"].size() == 6);
    for (const auto& row : plan["best"]) {
        std::string command = row["predict_command"].get<std::string>();
        const std::string prefix = "trainperf predict ";
        REQUIRE(command.rfind(prefix, 0) == 0);
        const std::string flags = command.substr(prefix.size());
        INFO(flags);
        const auto memory = run_json("memory " + flags + " --json");
        const auto predict = run_json("predict " + flags + " --json");
        CHECK(memory["total_bytes"].get<double>() == row["memory_per_gpu_bytes"].get<double>());
        CHECK(predict["memory_per_gpu_bytes"].get<double>() == row["memory_per_gpu_bytes"].get<double>());
        CHECK(memory["fits"] == true);
        CHECK(memory["max_micro_batch"].get<int>() >= row["micro_batch"].get<int>());
    }
}

TEST_CASE("counts take suffixes; a run that does not fit gets no days or cost", "[cli]") {
    const auto a = run_json("memory --gpu h100-sxm --params 7B --json");
    const auto b = run_json("memory --gpu h100-sxm --params 7e9 --json");
    CHECK(a["total_bytes"] == b["total_bytes"]);
    const auto bad = run_cli("memory --gpu h100-sxm --params 7X");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("--params") != std::string::npos);
    const auto empty = run_cli("predict --gpu h100-sxm --model gpt2 --train-tokens ''");
    CHECK(empty.exit_code == 2);
    // llama3-8b at seq 8192 without recompute does not fit an H100: no training-run keys.
    const auto no_fit = run_json("predict --gpu h100-sxm --model llama3-8b --gpus 8 --train-tokens 2T --json");
    CHECK(no_fit["fits"] == false);
    CHECK_FALSE(no_fit.contains("train_tokens"));
    const auto fits = run_json("predict --gpu h100-sxm --model gpt2 --gpus 8 --train-tokens 2T --json");
    CHECK(fits["fits"] == true);
    CHECK(fits.contains("train_tokens"));
}

TEST_CASE("fit honours --precision and --optimizer when given", "[cli]") {
    const auto all = run_json("fit --gpu rtx-3090 --model gpt2-medium --json");
    CHECK(all["fits"].size() > 4);
    const auto one = run_json("fit --gpu rtx-3090 --model gpt2-medium --precision fp32 --optimizer adamw --json");
    REQUIRE(one["fits"].size() == 1);
    CHECK(one["fits"][0]["precision"] == "fp32");
    CHECK(one["fits"][0]["optimizer"] == "adamw");
    const auto accum = run_json("fit --gpu rtx-3090 --model gpt2-medium --precision fp32 --optimizer adamw "
                                "--gpus 2 --zero 2 --grad-accum 8 --json");
    CHECK(accum["fits"][0]["max_micro_batch"].get<int>() >= one["fits"][0]["max_micro_batch"].get<int>());
}

TEST_CASE("a custom model takes every architecture option, in every command that takes a model", "[cli]") {
    // LLaMA-3 8B written out: GQA, SwiGLU, rotary, RMSNorm, untied, no biases, no dropout.
    const std::string custom = "--model custom --layers 32 --hidden 4096 --heads 32 --kv-heads 8 --ffn-hidden 14336 "
                               "--vocab 128256 --ffn swiglu --positions rotary --norm rmsnorm --untied --no-biases "
                               "--no-dropout --activation silu --code llama --seq 8192";
    const std::string named = "--model llama3-8b --seq 8192";
    const std::string layout = " --gpu h100-sxm --gpus 8 --zero 3 --recompute full --json";
    CHECK(run_json("memory " + custom + layout)["total_bytes"] == run_json("memory " + named + layout)["total_bytes"]);
    CHECK(run_json("predict " + custom + layout)["step_time_seconds"] ==
          run_json("predict " + named + layout)["step_time_seconds"]);
    CHECK(run_json("flops " + custom + " --json")["parameters"] == run_json("flops " + named + " --json")["parameters"]);
    CHECK(run_json("fit " + custom + layout)["fits"] == run_json("fit " + named + layout)["fits"]);
    // plan's predict command for a custom model carries every option and runs as printed.
    const auto plan = run_json("plan " + custom + " --gpu h100-sxm --gpus 8 --global-batch 8 --top 1 --json");
    REQUIRE(plan["best"].size() == 1);
    const std::string command = plan["best"][0]["predict_command"];
    CHECK(command.find("--ffn swiglu") != std::string::npos);
    CHECK(command.find("--untied") != std::string::npos);
    const auto again = run_json(command.substr(std::string("trainperf ").size()) + " --json");
    CHECK(again["step_time_seconds"].get<double>() ==
          Approx(plan["best"][0]["step_time_seconds"].get<double>()).epsilon(1e-12));
    // Options of a custom model are refused with a catalog model.
    const auto refused = run_cli("memory --gpu h100-sxm --model gpt2 --ffn swiglu");
    CHECK(refused.exit_code == 2);
}

namespace {
double decimal_field(const std::map<std::string, std::string>& row, const std::string& column) {
    const auto v = trainperf::testing::decimal(row.at(column));
    REQUIRE(v.has_value());
    return *v;
}
}  // namespace

TEST_CASE("sweep --csv: one row per point that reads back as predict() gives it", "[cli][sweep]") {
    using namespace trainperf;
    const auto r = run_cli("sweep --gpu h100-sxm --model gpt2-medium --gpus 8 --zero 2 --vary batch=1..8*2 "
                           "--vary link=nvlink,pcie --csv");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto rows = trainperf::testing::csv_rows(r.out);
    REQUIRE(rows.size() == 8);
    for (const auto& row : rows) {
        const int batch = int(decimal_field(row, "micro_batch"));
        const std::string link = row.at("intra_node_link");
        INFO("batch " << batch << ", link " << link);
        training_setup s;
        s.cluster = build_cluster({.gpu = lookup_gpu("h100-sxm"), .gpus = 8, .link = link});
        s.model = lookup_model("gpt2-medium");
        s.precision = recipe(precision_kind::bf16);
        s.optimizer = optimizer_kind::adamw;
        s.framework = pytorch_eager_profile;
        s.layout = {.dp = 8, .zero = 2, .micro_batch = batch};
        const step_report p = predict(s);
        REQUIRE(p.fits);
        CHECK(row.at("fits") == "true");
        CHECK(decimal_field(row, "step_time_ms") == Approx(p.step_time.value() * 1e3).epsilon(1e-12));
        CHECK(decimal_field(row, "data_parallel_sync_ms") == Approx(p.data_parallel_sync.value() * 1e3).epsilon(1e-12));
        CHECK(decimal_field(row, "tokens_per_s") == Approx(p.tokens_per_second).epsilon(1e-12));
        CHECK(decimal_field(row, "mfu_percent") == Approx(100 * p.mfu).epsilon(1e-12));
        CHECK(decimal_field(row, "memory_GiB") == Approx(to_gib(p.memory.total()).value()).epsilon(1e-12));
        CHECK(decimal_field(row, "global_batch") == 8 * batch);
        CHECK(decimal_field(row, "intra_node_link_GBps") ==
              Approx(s.cluster.intra_node.per_direction.value() / 1e9).epsilon(1e-12));
    }
    // Over PCIe the gradient sync takes longer than over NVLink, point by point.
    for (std::size_t i = 0; i < rows.size(); i += 2)
        CHECK(decimal_field(rows[i + 1], "data_parallel_sync_ms") > decimal_field(rows[i], "data_parallel_sync_ms"));
}

TEST_CASE("sweep: points that do not fit keep their memory but have no step figures", "[cli][sweep]") {
    const std::string flags = "sweep --gpu h100-sxm --model llama2-7b --gpus 8 --zero 3 --framework deepspeed "
                              "--vary batch=1,4 --vary recompute=none,full";
    const auto j = run_json(flags + " --json");
    REQUIRE(j["points"].size() == 4);
    int not_fitting = 0;
    for (const auto& p : j["points"]) {
        CHECK(p["memory_GiB"].get<double>() > 0);
        if (p["fits"] == false) {
            ++not_fitting;
            CHECK(p["step_time_ms"].is_null());
            CHECK(p["tokens_per_s"].is_null());
            CHECK(p["bottleneck"] == "memory");
        } else {
            CHECK(p["tokens_per_s"].get<double>() > 0);
        }
    }
    CHECK(not_fitting >= 1);
    const auto text = run_cli(flags);
    REQUIRE(text.exit_code == 0);
    CHECK(text.out.find("NO") != std::string::npos);
    // Every figure of the CSV is a plain decimal: no exponent anywhere.
    const auto csv = run_cli(flags + " --csv");
    REQUIRE(csv.exit_code == 0);
    CHECK(csv.out.find("e+") == std::string::npos);
    CHECK(csv.out.find("e-") == std::string::npos);
    // dp sets gpus = dp x tp x pp; ranges step by + or *.
    const auto dp = run_json("sweep --gpu h100-sxm --model gpt2 --framework megatron --tp 2 --vary dp=1..4 --json");
    REQUIRE(dp["points"].size() == 4);
    CHECK(dp["points"][3]["gpus"] == 8);
    const auto seq = run_json("sweep --gpu h100-sxm --model gpt2 --vary seq=256..1024+256 --json");
    REQUIRE(seq["points"].size() == 4);
    CHECK(seq["points"][1]["seq"] == 512);
}

TEST_CASE("sweep: bad --vary is one line on stderr and exit code 2", "[cli][sweep]") {
    const char* cases[] = {
        "sweep --gpu h100-sxm --model gpt2",
        "sweep --gpu h100-sxm --model gpt2 --vary colour=1,2",
        "sweep --gpu h100-sxm --model gpt2 --vary batch",
        "sweep --gpu h100-sxm --model gpt2 --vary batch=1..100000",
        "sweep --gpu h100-sxm --model gpt2 --vary batch=1..64 --vary seq=128..1024+128",
        "sweep --gpu h100-sxm --model gpt2 --vary batch=8..1",
        "sweep --gpu h100-sxm --model gpt2 --vary batch=1..8*1",
        "sweep --gpu h100-sxm --model gpt2 --vary batch=1,,2",
        "sweep --gpu h100-sxm --model gpt2 --vary batch=x",
        "sweep --gpu h100-sxm --model gpt2 --vary link=nvlink..pcie",
        "sweep --gpu h100-sxm --model gpt2 --batch 2 --vary batch=1,2",
        "sweep --gpu h100-sxm --model gpt2 --vary batch=1,2 --vary batch=3",
        "sweep --gpu h100-sxm --model gpt2 --vary tp=1,5",
        "sweep --gpu h100-sxm --model gpt2 --vary sp=maybe",
        "sweep --gpu h100-sxm --model gpt2 --vary dp=0,1",
        "sweep --gpu h100-sxm --model gpt2 --gpus 8 --vary dp=1,2",
        "sweep --gpu h100-sxm --model gpt2 --vary gpu=h100-sxm,nope",
        "sweep --gpu h100-sxm --model gpt2 --vary a=1 --vary b=2 --vary c=3",
        "sweep --gpu h100-sxm --model gpt2 --vary batch=1,2 --plot out.pdf",
        "predict --gpu h100-sxm --model llama2-7b --plot out.svg",
        "memory --gpu h100-sxm --model gpt2 --plot out.svg",
        "memory --gpu h100-sxm --model gpt2 --plot out.svg --plot-over heads=1,2",
        "memory --gpu h100-sxm --model gpt2 --batch 2 --plot out.svg --plot-over batch=1,2",
        "memory --gpu h100-sxm --params 7B --plot out.svg --plot-over batch=1,2",
    };
    check_refused(cases);
}

TEST_CASE("plan --csv and scale --csv give the rows of their JSON", "[cli][sweep]") {
    const std::string request = "--gpu a100-sxm-80gb --model gpt2-medium --gpus 16 --global-batch 64 --top 4";
    const auto j = run_json("plan " + request + " --json");
    const auto csv = run_cli("plan " + request + " --csv");
    REQUIRE(csv.exit_code == 0);
    const auto rows = trainperf::testing::csv_rows(csv.out);
    REQUIRE(rows.size() == j["best"].size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        CHECK(decimal_field(rows[i], "rank") == double(i + 1));
        CHECK(decimal_field(rows[i], "step_time_ms") ==
              Approx(j["best"][i]["step_time_seconds"].get<double>() * 1e3).epsilon(1e-12));
        CHECK(decimal_field(rows[i], "dp") == j["best"][i]["dp"].get<double>());
        CHECK(rows[i].at("fits") == "true");
    }
    const std::string scale = "scale --gpu a100-sxm-80gb --model gpt2-medium --batch 8 --gpus 8 --framework megatron";
    const auto sj = run_json(scale + " --json");
    const auto sc = run_cli(scale + " --csv");
    REQUIRE(sc.exit_code == 0);
    const auto srows = trainperf::testing::csv_rows(sc.out);
    REQUIRE(srows.size() == sj["curve"].size());
    for (std::size_t i = 0; i < srows.size(); ++i) {
        CHECK(decimal_field(srows[i], "engine_speedup_x") ==
              Approx(sj["curve"][i]["engine_speedup"].get<double>()).epsilon(1e-12));
        CHECK(decimal_field(srows[i], "r") == Approx(sj["r"].get<double>()).epsilon(1e-12));
    }
    const auto formula = trainperf::testing::csv_rows(run_cli("scale --gpus 8 --r 0.15 --csv").out);
    REQUIRE(formula.size() == 8);
    CHECK(decimal_field(formula[7], "speedup_x") == Approx(3.902).epsilon(1e-3));
}

namespace {
bool gnuplot_installed() { return std::system("gnuplot --version >/dev/null 2>&1") == 0; }

std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// The plotted series of a gnuplot SVG: each `gnuplot_plot_*` group's legend text,
// with how many point symbols and filled boxes it draws (the legend's own included).
struct svg_series {
    std::string title;
    std::size_t points = 0, boxes = 0;
};

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
}

std::vector<svg_series> series_of(const std::string& svg) {
    std::vector<svg_series> out;
    const std::string group = "<g id=\"gnuplot_plot_";
    for (auto at = svg.find(group); at != std::string::npos;) {
        const auto next = svg.find(group, at + group.size());
        const std::string body = svg.substr(at, next == std::string::npos ? std::string::npos : next - at);
        svg_series s;
        const auto text = body.find("<text>");
        if (text != std::string::npos) s.title = body.substr(text + 6, body.find("</text>", text) - text - 6);
        s.points = count(body, "xlink:href='#gpPt");
        s.boxes = count(body, "<polygon");
        out.push_back(s);
        at = next;
    }
    return out;
}
}  // namespace

TEST_CASE("plots: an SVG with the expected series, and the data beside it", "[cli][plot]") {
    if (!gnuplot_installed()) {
        WARN("gnuplot is not installed (Debian: gnuplot-nox): plots not checked");
        return;
    }
    const auto dir = std::filesystem::temp_directory_path() / ("trainperf_test_plot_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const auto svg = [&](const char* name) { return (dir / name).string(); };

    // sweep: tokens/s (top) and memory (bottom) per recompute mode, capacity line.
    const auto sweep = run_cli("sweep --gpu h100-sxm --model llama2-7b --gpus 8 --zero 3 --framework deepspeed "
                               "--vary batch=1..8*2 --vary recompute=none,full --plot '" + svg("sweep.svg") + "'");
    INFO(sweep.err);
    REQUIRE(sweep.exit_code == 0);
    const auto data = trainperf::testing::csv_rows(read_file(dir / "sweep.csv"));
    REQUIRE(data.size() == 8);
    std::size_t fitting_none = 0, fitting_full = 0;
    for (const auto& row : data)
        if (row.at("fits") == "true") ++(row.at("recompute") == "none" ? fitting_none : fitting_full);
    const auto series = series_of(read_file(dir / "sweep.svg"));
    REQUIRE(series.size() == 5);
    CHECK(series[0].title == "recompute none");
    CHECK(series[0].points == fitting_none + 1);   // only points that fit have tokens/s; +1 the legend's
    CHECK(series[1].title == "recompute full");
    CHECK(series[1].points == fitting_full + 1);
    CHECK(series[2].points == 4 + 1);              // memory: every point
    CHECK(series[3].points == 4 + 1);
    CHECK(series[4].title == "usable on the device");

    // No point fits: an empty throughput panel that says so, memory still drawn. Two
    // GPUs as series: a capacity line for each.
    REQUIRE(run_cli("sweep --gpu h100-sxm --model llama2-70b --vary batch=1,2 --plot '" + svg("none.svg") + "'")
                .exit_code == 0);
    CHECK(read_file(dir / "none.svg").find("no point fits in memory") != std::string::npos);
    REQUIRE(run_cli("sweep --model gpt2 --vary batch=1,8 --vary gpu=h100-sxm,rtx-3090 --plot '" + svg("gpus.svg") +
                    "'").exit_code == 0);
    const auto gpus = series_of(read_file(dir / "gpus.svg"));
    REQUIRE(gpus.size() == 6);
    CHECK(gpus[4].title == "usable on the device, gpu h100-sxm");
    CHECK(gpus[5].title == "usable on the device, gpu rtx-3090");

    // A file name is only ever a file name: gnuplot never sees it (a leading | would
    // make gnuplot's own `set output` start a command).
    const std::string odd = "|touch x \"$y\".svg";
    REQUIRE(run_cli("predict --gpu h100-sxm --model gpt2 --plot '" + svg(odd.c_str()) + "'").exit_code == 0);
    CHECK(std::filesystem::exists(dir / odd));
    CHECK(std::filesystem::exists(dir / "|touch x \"$y\".csv"));
    CHECK_FALSE(std::filesystem::exists(dir / "x"));

    // scale: the engine's points, the formula's curve with its r, perfect scaling.
    REQUIRE(run_cli("scale --gpu a100-sxm-80gb --model gpt2-medium --batch 8 --gpus 8 --framework megatron --plot '" +
                    svg("scale.svg") + "'").exit_code == 0);
    const auto scale = series_of(read_file(dir / "scale.svg"));
    REQUIRE(scale.size() == 3);
    CHECK(scale[0].title == "engine");
    CHECK(scale[0].points == 8 + 1);
    CHECK(scale[1].title.rfind("N/(1+(N-1)r), r = ", 0) == 0);
    CHECK(trainperf::testing::csv_rows(read_file(dir / "scale.csv")).size() == 8);

    // memory: one stacked box per batch for each component present, and the capacity.
    REQUIRE(run_cli("memory --gpu h100-sxm --model llama2-7b --gpus 8 --zero 3 --plot '" + svg("memory.svg") +
                    "' --plot-over batch=1,2,4").exit_code == 0);
    const auto memory = series_of(read_file(dir / "memory.svg"));
    REQUIRE(memory.size() >= 5);
    for (std::size_t i = 0; i + 1 < memory.size(); ++i) CHECK(memory[i].boxes == 3 + 1);
    CHECK(memory.back().title == "usable on the device");
    CHECK(std::any_of(memory.begin(), memory.end(), [](const auto& s) { return s.title == "activations"; }));

    // predict: the step's five parts in one bar.
    REQUIRE(run_cli("predict --gpu h100-sxm --model gpt2 --gpus 8 --plot '" + svg("step.svg") + "'").exit_code == 0);
    const auto step = series_of(read_file(dir / "step.svg"));
    REQUIRE(step.size() == 5);
    CHECK(step[0].title == "forward + backward");
    CHECK(step[0].boxes == 1 + 1);
    std::filesystem::remove_all(dir);
}

TEST_CASE("plots without gnuplot: one line that says so, exit code 2", "[cli][plot]") {
    const auto dir = std::filesystem::temp_directory_path() / ("trainperf_test_noplot_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    const auto r = run_cli("sweep --gpu h100-sxm --model gpt2 --vary batch=1,2 --plot '" + (dir / "x.svg").string() + "'",
                           "env PATH=" + (dir / "empty").string());
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find("gnuplot") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(dir / "x.svg"));
    std::filesystem::remove_all(dir);
}

TEST_CASE("plan --train-tokens: the cheapest and the fastest plans that meet the deadline", "[cli][plan]") {
    const std::string request = "plan --gpu h100-sxm --model llama2-70b --seq 4096 --framework megatron "
                                "--global-batch 1024 --max-micro-batch 4 --train-tokens 2T --deadline-days 60 "
                                "--price-per-gpu-hour 2.5 --max-gpus 2048";
    const auto j = run_json(request + " --json");
    REQUIRE(j["cheapest_gpus"].is_number());
    REQUIRE(j["fastest_gpus"].is_number());
    double cheapest_hours = 0, fastest_days = 0;
    for (const auto& c : j["counts"]) {
        if (!c["fits"].get<bool>()) continue;
        INFO(c["gpus"]);
        CHECK(c["meets_deadline"] == (c["train_days"].get<double>() <= 60));
        CHECK(c["train_cost"].get<double>() == Approx(2.5 * c["train_gpu_hours"].get<double>()));
        if (c["gpus"] == j["cheapest_gpus"]) cheapest_hours = c["train_gpu_hours"];
        if (c["gpus"] == j["fastest_gpus"]) {
            fastest_days = c["train_days"];
            // The printed predict command reproduces the step, and its run meets the deadline.
            const std::string command = c["predict_command"];
            const auto again = run_json(command.substr(std::string("trainperf ").size()) +
                                        " --train-tokens 2T --json");
            CHECK(again["step_time_seconds"].get<double>() ==
                  Approx(c["best"]["step_time_seconds"].get<double>()).epsilon(1e-12));
            CHECK(again["train_time_seconds"].get<double>() / 86400 <= 60);
        }
    }
    CHECK(fastest_days > 0);
    CHECK(fastest_days <= 60);
    for (const auto& c : j["counts"])
        if (c["fits"].get<bool>() && c["meets_deadline"].get<bool>()) {
            CHECK(c["train_gpu_hours"].get<double>() >= cheapest_hours);
            CHECK(c["train_days"].get<double>() >= fastest_days);
        }
    // The CSV: one row per count, the same cheapest and fastest, the same days.
    const auto csv = run_cli(request + " --csv");
    REQUIRE(csv.exit_code == 0);
    const auto rows = trainperf::testing::csv_rows(csv.out);
    REQUIRE(rows.size() == j["counts"].size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        CHECK(decimal_field(rows[i], "gpus") == j["counts"][i]["gpus"].get<double>());
        CHECK(rows[i].at("fits") == (j["counts"][i]["fits"].get<bool>() ? "true" : "false"));
        CHECK(rows[i].at("cheapest") == (j["counts"][i]["gpus"] == j["cheapest_gpus"] ? "true" : "false"));
        CHECK(rows[i].at("fastest") == (j["counts"][i]["gpus"] == j["fastest_gpus"] ? "true" : "false"));
        if (j["counts"][i]["fits"].get<bool>()) {
            CHECK(decimal_field(rows[i], "train_days") == Approx(j["counts"][i]["train_days"].get<double>()));
            CHECK(decimal_field(rows[i], "step_time_ms") ==
                  Approx(j["counts"][i]["best"]["step_time_seconds"].get<double>() * 1e3));
        } else {
            CHECK(rows[i].at("train_days").empty());
            CHECK(rows[i].at("step_time_ms").empty());
        }
    }
    const auto text = run_cli(request);
    REQUIRE(text.exit_code == 0);
    CHECK(text.out.find("Cheapest that meets the deadline: " + std::to_string(j["cheapest_gpus"].get<int>()) +
                        " GPUs") != std::string::npos);
    CHECK(text.out.find("ASSUMPTION") != std::string::npos);
    for (const char* bad : {"plan --gpu h100-sxm --model gpt2 --global-batch 8 --train-tokens 1B --max-gpus 0",
                            "plan --gpu h100-sxm --model gpt2 --global-batch 8 --train-tokens 1B --max-gpus 8 --gpus 8",
                            "plan --gpu h100-sxm --model gpt2 --global-batch 8 --gpus 8 --deadline-days 3",
                            "plan --gpu h100-sxm --model gpt2 --global-batch 8 --train-tokens 1B --max-gpus 1000000",
                            "plan --gpu h100-sxm --model gpt2 --global-batch 8 --train-tokens 1B --max-gpus 8 "
                            "--deadline-days -1"}) {
        const auto r = run_cli(bad);
        INFO(bad << " -> " << r.err);
        CHECK(r.exit_code == 2);
        CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    }
}

TEST_CASE("predict: a step dominated by one cost says what would make it faster, and by how much", "[cli][advice]") {
    const std::string args = "predict --gpu h100-sxm --model llama2-7b --seq 4096 --gpus 8 --link pcie --zero 2 "
                             "--batch 1 --grad-accum 1 --recompute full --dp-overlap off";
    const auto j = run_json(args + " --json");
    REQUIRE(j["fits"] == true);
    CHECK(j["largest_cost"] == "communication");
    CHECK(j["dominated"] == true);
    REQUIRE(j["ways_to_speed_up"].size() >= 1);
    const double base = j["tokens_per_second"].get<double>();
    for (const auto& way : j["ways_to_speed_up"]) {
        const std::string command = way["predict_command"];
        INFO(command);
        const auto faster = run_json(command.substr(std::string("trainperf ").size()) + " --json");
        CHECK(faster["fits"] == true);
        CHECK(faster["layout"]["gpus"] == 8);
        CHECK(faster["global_batch"] == j["global_batch"]);
        CHECK(faster["tokens_per_second"].get<double>() > base);
        CHECK(faster["tokens_per_second"].get<double>() / base - 1 ==
              Approx(way["tokens_per_second_per_gpu_gain"].get<double>()));
    }
    const auto text = run_cli(args);
    REQUIRE(text.exit_code == 0);
    CHECK(text.out.find("dominated by communication") != std::string::npos);
    CHECK(text.out.find("% tokens/s per GPU") != std::string::npos);
}


// ---------------------------------------------------------------------------------
// Description files: --gpu-file, --model-file, --framework-file, --system-file.

namespace {

// A scratch folder of this process (ctest runs test cases in parallel).
std::filesystem::path scratch(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / ("trainperf_test_cli_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    return dir / name;
}

std::string write_file(const std::string& name, const std::string& text) {
    const auto path = scratch(name);
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

std::string cli_output(const std::string& args) {
    const auto r = run_cli(args);
    INFO(args << "\n" << r.err);
    REQUIRE(r.exit_code == 0);
    return r.out;
}

}  // namespace

TEST_CASE("gpus/models/frameworks --json NAME print the file format: read back, identical predictions", "[cli]") {
    const auto gpus = run_json("gpus --json")["gpus"];
    REQUIRE(gpus.size() >= 10);
    for (const auto& g : gpus) {
        const std::string name = g["name"];
        INFO(name);
        const std::string printed = cli_output("gpus --json " + name);
        CHECK(nlohmann::json::parse(printed) == g);
        const std::string file = write_file(name + ".json", printed);
        const std::string run = " --model gpt2-medium --batch 2 --zero 2 --recompute full --precision fp16 --json";
        CHECK(run_json("memory --gpu-file " + file + run) == run_json("memory --gpu " + name + run));
    }
    for (const char* gpu : {"a100-sxm-80gb", "rtx-3090"}) {
        const std::string file = write_file(std::string(gpu) + ".json", cli_output(std::string("gpus --json ") + gpu));
        const std::string run = " --model llama2-7b --gpus 4 --zero 3 --recompute full --seq 2048 --json";
        CHECK(run_json("predict --gpu-file " + file + run)["step_time_seconds"] ==
              run_json(std::string("predict --gpu ") + gpu + run)["step_time_seconds"]);
    }
    const nlohmann::json models = run_json("models --json");  // the loop below reads into it
    for (const auto& m : models["models"]) {
        const std::string name = m["name"];
        INFO(name);
        const std::string file = write_file(name + ".model.json", cli_output("models --json " + name));
        CHECK(run_json("flops --model-file " + file + " --seq 512 --json") ==
              run_json("flops --model " + name + " --seq 512 --json"));
    }
    const std::string model = write_file("llama3-8b.model.json", cli_output("models --json llama3-8b"));
    const std::string run = " --gpu h100-sxm --gpus 8 --zero 3 --recompute full --seq 4096 --json";
    CHECK(run_json("predict --model-file " + model + run)["step_time_seconds"] ==
          run_json("predict --model llama3-8b" + run)["step_time_seconds"]);
    for (const char* fw : {"pytorch-eager", "megatron", "deepspeed"}) {
        const std::string file =
            write_file(std::string(fw) + ".fw.json", cli_output(std::string("frameworks --json ") + fw));
        const std::string args = " --gpu a100-sxm-80gb --model gpt2-medium --gpus 8 --batch 4 --json";
        // The same report; the printed commands name the file instead of the profile.
        const auto without_commands = [](nlohmann::json j) {
            for (const char* list : {"ways_to_speed_up", "ways_to_fit"})
                if (j.contains(list))
                    for (auto& option : j[list]) option.erase("predict_command");
            return j;
        };
        CHECK(without_commands(run_json("predict --framework-file " + file + args)) ==
              without_commands(run_json(std::string("predict --framework ") + fw + args)));
    }
    std::filesystem::remove_all(scratch("").parent_path());
}

TEST_CASE("every command that takes a GPU, model, framework or system takes its file", "[cli]") {
    const std::string gpu = write_file("h100.json", cli_output("gpus --json h100-sxm"));
    const std::string model = write_file("gpt2m.json", cli_output("models --json gpt2-medium"));
    const std::string fw = write_file("meg.json", cli_output("frameworks --json megatron"));
    const std::string system =
        write_file("sys.json", R"({"schema": "trainperf.system.v1", "name": "two-dgx", "gpus_per_node": 8,
        "intra_node_link": "nvlink", "inter_node_link": {"kind": "infiniband",
        "per_direction_bytes_per_second": 50e9, "latency_seconds": 1e-5, "efficiency": 0.9},
        "adapters_per_node": 0, "sockets_per_node": 1})");
    const std::string by_file = "--gpu-file " + gpu + " --model-file " + model + " --framework-file " + fw +
                                " --system-file " + system + " --gpus 16";
    const std::string by_name = "--gpu h100-sxm --model gpt2-medium --framework megatron --gpus-per-node 8 "
                                "--inter-node-bandwidth 50GB/s --gpus 16";
    // The file's latency is 1e-5 s; the flags' default is 10 x 1e-6 s, one bit apart.
    const auto a = run_json("predict " + by_file + " --json");
    const auto b = run_json("predict " + by_name + " --json");
    CHECK(a["step_time_seconds"].get<double>() == Approx(b["step_time_seconds"].get<double>()).epsilon(1e-12));
    CHECK(a["memory_breakdown"] == b["memory_breakdown"]);
    CHECK(a["intra_node_link"] == b["intra_node_link"]);
    CHECK(run_json("memory " + by_file + " --json") == run_json("memory " + by_name + " --json"));
    CHECK(run_json("fit " + by_file + " --json") == run_json("fit " + by_name + " --json"));
    CHECK(run_json("plan " + by_file + " --global-batch 64 --top 3 --json")["best"].size() ==
          run_json("plan " + by_name + " --global-batch 64 --top 3 --json")["best"].size());
    CHECK(run_json("scale " + by_file + " --json")["r"].get<double>() ==
          Approx(run_json("scale " + by_name + " --json")["r"].get<double>()).epsilon(1e-9));
    CHECK(run_json("flops --model-file " + model + " --json") == run_json("flops --model gpt2-medium --json"));
    CHECK(run_json("comm --gpu-file " + gpu + " --system-file " + system + " --bytes 1GB --gpus 16 --json")
              ["time_seconds"].get<double>() ==
          Approx(run_json("comm --gpu h100-sxm --gpus-per-node 8 --inter-node-bandwidth 50GB/s --bytes 1GB "
                          "--gpus 16 --json")["time_seconds"].get<double>())
              .epsilon(1e-9));
    CHECK(run_json("pipeline --gpu-file " + gpu + " --batch-bytes 1GB --compute-ms 100 --json") ==
          run_json("pipeline --gpu h100-sxm --batch-bytes 1GB --compute-ms 100 --json"));
    // plan's predict commands carry the files and run as printed.
    const auto plan = run_json("plan " + by_file + " --global-batch 64 --top 1 --json");
    const std::string command = plan["best"][0]["predict_command"];
    CHECK(command.find("--gpu-file") != std::string::npos);
    CHECK(command.find("--system-file") != std::string::npos);
    CHECK(run_json(command.substr(std::string("trainperf ").size()) + " --json")["step_time_seconds"] ==
          plan["best"][0]["step_time_seconds"]);
    std::filesystem::remove_all(scratch("").parent_path());
}

TEST_CASE("bad description files and conflicting flags: one line on stderr, exit code 2", "[cli]") {
    const nlohmann::json gpu = nlohmann::json::parse(cli_output("gpus --json rtx-3090"));
    const auto variant = [&](const std::string& name, auto change) {
        nlohmann::json j = gpu;
        change(j);
        return write_file(name, j.dump());
    };
    const std::string missing = variant("missing.json", [](auto& j) { j.erase("memory_bytes"); });
    const std::string wrong_type = variant("type.json", [](auto& j) { j["sm_count"] = "82"; });
    const std::string negative = variant("neg.json", [](auto& j) { j["memory_bandwidth_bytes_per_second"] = -936e9; });
    const std::string absurd = variant("absurd.json", [](auto& j) { j["boost_clock_hertz"] = 1.695e15; });
    const std::string unknown = variant("unknown.json", [](auto& j) { j["memory_gb"] = 24; });
    const std::string not_json = write_file("not.json", "rtx-3090: 24 GB\n");
    const std::string deep = write_file("deep.json", std::string(100000, '{'));
    const std::string big = scratch("big.json").string();
    {
        std::ofstream out(big, std::ios::binary);
        out << "{\"name\": \"";
        const std::string chunk(1 << 20, 'x');
        for (int i = 0; i < 50; ++i) out << chunk;
        out << "\"}";
    }
    const std::string model = write_file("m.json", cli_output("models --json gpt2"));
    const std::string fw = write_file("f.json", cli_output("frameworks --json megatron"));
    const std::vector<std::string> cases = {
        "predict --model gpt2 --gpu-file " + missing,
        "predict --model gpt2 --gpu-file " + wrong_type,
        "memory --params 1B --gpu-file " + negative,
        "fit --model gpt2 --gpu-file " + absurd,
        "plan --model gpt2 --global-batch 8 --gpus 2 --gpu-file " + unknown,
        "predict --model gpt2 --gpu-file " + not_json,
        "predict --model gpt2 --gpu-file " + deep,
        "predict --model gpt2 --gpu-file " + big,
        "predict --gpu h100-sxm --model-file " + big,
        "predict --gpu h100-sxm --model gpt2 --framework-file " + deep,
        "predict --gpu h100-sxm --model gpt2 --system-file " + not_json,
        "comm --bytes 1GB --gpus 8 --system-file " + missing,
        "pipeline --batch-bytes 1GB --compute-ms 10 --gpu-file " + missing,
        "flops --model-file " + fw,
        "predict --gpu h100-sxm --model-file /no/such/file.json",
        "predict --gpu h100-sxm --gpu-file " + missing + " --model gpt2",
        "predict --gpu h100-sxm --model gpt2 --model-file " + model,
        "predict --gpu h100-sxm --model-file " + model + " --layers 4",
        "predict --gpu h100-sxm --model gpt2 --framework megatron --framework-file " + fw,
        "predict --gpu h100-sxm --model gpt2 --system-file " + missing + " --link pcie",
        "predict --model gpt2",
        "predict --gpu h100-sxm",
        "gpus --json nope",
        "frameworks --json tensorflow",
        "predict --gpu t4 --model gpt2",  // T4 has no bf16 (the default precision)
    };
    check_refused(cases);
    // The message names the file and the field.
    CHECK(run_cli("predict --model gpt2 --gpu-file " + missing).err ==
          "trainperf: " + missing + ": memory_bytes = (missing): required\n");
    std::filesystem::remove_all(scratch("").parent_path());
}

TEST_CASE("docs/extending.md's worked example runs as written: an RTX 4090 and TinyLlama without C++", "[cli]") {
    // The repository root, from tests/data.
    const auto root = std::filesystem::path(TRAINPERF_TEST_DATA_DIR).parent_path().parent_path();
    std::ifstream doc(root / "docs" / "extending.md");
    REQUIRE(doc.good());
    std::vector<std::string> commands;
    for (std::string line; std::getline(doc, line);)
        if (line.rfind("trainperf ", 0) == 0 && line.find("examples/descriptions/") != std::string::npos)
            commands.push_back(line.substr(std::string("trainperf ").size()));
    REQUIRE(commands.size() >= 2);
    for (std::string args : commands) {
        // The doc's paths are relative to the repository root.
        for (std::size_t p = 0; (p = args.find("examples/descriptions/", p)) != std::string::npos;) {
            args.insert(p, root.string() + "/");
            p += root.string().size() + 1 + std::string("examples/descriptions/").size();
        }
        const auto r = run_cli(args);
        INFO(args << "\n" << r.err);
        CHECK(r.exit_code == 0);
        CHECK(r.out.find("TinyLlama-1.1B") != std::string::npos);
        CHECK(r.out.find("rtx-4090") != std::string::npos);
    }
}

TEST_CASE("the example description files are what the catalog prints: the same answers as the names", "[cli]") {
    const auto root = std::filesystem::path(TRAINPERF_TEST_DATA_DIR).parent_path().parent_path();
    const std::string dir = (root / "examples" / "descriptions").string() + "/";
    // The GPU file is `gpus --json rtx-4090`, field for field.
    std::ifstream gpu_file(dir + "rtx-4090.json");
    REQUIRE(gpu_file.good());
    CHECK(nlohmann::json::parse(gpu_file) == run_json("gpus --json rtx-4090"));
    const std::string args = " --system-file " + dir + "workstation-2x4090.json --model llama3-8b --gpus 2 --seq 2048 "
                             "--batch 1 --zero 2 --recompute full --json";
    const auto by_file = run_json("predict --gpu-file " + dir + "rtx-4090.json" + args);
    const auto by_name = run_json("predict --gpu rtx-4090" + args);
    CHECK(by_file["step_time_seconds"] == by_name["step_time_seconds"]);
    CHECK(by_file["memory_per_gpu_bytes"] == by_name["memory_per_gpu_bytes"]);
    // The framework file is pytorch-eager with fused attention and a fused optimizer, and
    // nothing else changed: what the software runs included.
    std::ifstream fw_file(dir + "pytorch-sdpa-fused-adamw.json");
    REQUIRE(fw_file.good());
    nlohmann::json fw = nlohmann::json::parse(fw_file);
    nlohmann::json eager = run_json("frameworks --json pytorch-eager");
    CHECK(fw["flash_attention"] == true);
    CHECK(fw["fused_optimizer"] == true);
    for (auto* j : {&fw, &eager})
        for (const char* key : {"name", "software", "flash_attention", "fused_optimizer"}) j->erase(key);
    CHECK(fw == eager);
    const auto tp = run_cli("predict --gpu rtx-4090 --model gpt2 --gpus 2 --tp 2 --framework-file " + dir +
                            "pytorch-sdpa-fused-adamw.json");
    CHECK(tp.exit_code == 2);
    CHECK(tp.err.find("tp = 2: framework pytorch-sdpa-fused-adamw") != std::string::npos);
}

TEST_CASE("the flash-attention flag overrides the profile, and advice turns it on where it helps", "[cli]") {
    // gpt2-medium at seq 1024, batch 8 on one RTX 3090 Ti in pytorch-eager: the s x s
    // attention probabilities (16 heads · 1024² · batch per layer) do not fit.
    const std::string base = "--gpu rtx-3090-ti --model gpt2-medium --seq 1024 --batch 8 --precision fp16 --json";
    const auto unfused = run_json("memory " + base);
    const auto fused = run_json("memory " + base + " --flash-attention on");
    CHECK(fused["total_bytes"].get<double>() < unfused["total_bytes"].get<double>());
    const auto off = run_json("memory " + base + " --flash-attention off");
    CHECK(off["total_bytes"] == unfused["total_bytes"]);
    // Advice for the layout that does not fit names the change and prints the flag.
    const auto r = run_cli("predict --gpu rtx-3090-ti --model gpt2-medium --seq 1024 --batch 8 --precision fp16");
    CHECK(r.exit_code == 3);  // does not fit
    CHECK(r.out.find("flash-attention:") != std::string::npos);
    CHECK(r.out.find("--flash-attention on") != std::string::npos);
    // A Volta GPU has no FlashAttention-2: no such advice.
    const auto v = run_cli("predict --gpu v100-sxm2-32gb --model gpt2-medium --seq 1024 --batch 8 --precision fp16");
    CHECK(v.out.find("flash-attention:") == std::string::npos);
    const auto bad = run_cli("memory " + base + " --flash-attention maybe");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("flash-attention = maybe") != std::string::npos);
}

TEST_CASE("the expandable-segments flag sets the allocator's slack to its partly used pages", "[cli][memory]") {
    // gpt2 on one H100 in pytorch-eager (plain segments, 5 % of the peak): with expandable
    // segments the slack is one 20 MiB and one 2 MiB page, whatever the peak.
    const std::string base = "memory --gpu h100-sxm --model gpt2 --batch 8 --json";
    const auto plain = run_json(base);
    const auto expandable = run_json(base + " --expandable-segments on");
    CHECK(expandable["peak_allocated_bytes"] == plain["peak_allocated_bytes"]);
    const double peak = plain["peak_allocated_bytes"].get<double>();
    CHECK(plain["total_bytes"].get<double>() == Approx(1.05 * peak).epsilon(1e-12));
    CHECK(expandable["total_bytes"].get<double>() == Approx(peak + 22.0 * 1048576).epsilon(1e-12));
    CHECK(run_json(base + " --expandable-segments off")["total_bytes"] == plain["total_bytes"]);
    const auto bad = run_cli(base + " --expandable-segments maybe");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("expandable-segments = maybe") != std::string::npos);
}

TEST_CASE("predict --precision fp8 reports MFU against the FP8 and the BF16 peak", "[cli][fp8]") {
    const std::string base = "predict --gpu h100-sxm --model gpt2-medium --batch 8 --framework megatron-core";
    const auto j = run_json(base + " --precision fp8 --json");
    REQUIRE(j.contains("mfu_bf16_peak"));
    // Same FLOP rate over the dense FP8 (1979) and BF16 (989.4) TFLOP/s peaks.
    CHECK(j["mfu_bf16_peak"].get<double>() == Approx(j["mfu"].get<double>() * 1979 / 989.4));
    CHECK(j["fp8_scaling"] == "delayed");
    const auto current = run_json(base + " --precision fp8 --fp8-scaling current --json");
    CHECK(current["fp8_scaling"] == "current");
    CHECK(current["step_time_seconds"].get<double>() > j["step_time_seconds"].get<double>());
    CHECK_FALSE(run_json(base + " --json").contains("mfu_bf16_peak"));
    const auto text = run_cli(base + " --precision fp8");
    REQUIRE(text.exit_code == 0);
    CHECK(text.out.find("MFU / HFU against the dense BF16 peak") != std::string::npos);
    check_refused(std::array{"predict --gpu h100-sxm --model gpt2-medium --fp8-scaling current",
                             "predict --gpu h100-sxm --model gpt2-medium --precision fp8 --fp8-scaling sometimes",
                             // The Hugging Face model code has no FP8 Linears.
                             "predict --gpu h100-sxm --model gpt2-medium --precision fp8"});
}

TEST_CASE("predict --fp8-params: Megatron-Core's FP8 primary weights, on by default with the distributed optimizer",
          "[cli][fp8]") {
    const std::string base = "predict --gpu h100-sxm --model llama3-8b --seq 8192 --precision fp8 --framework "
                             "megatron-core --gpus 8 --tp 1 --cp 2 --batch 1 --grad-accum 32";
    const auto on = run_json(base + " --zero 1 --json");
    const auto off = run_json(base + " --zero 1 --fp8-params off --json");
    CHECK(on["fp8_primary_weights"] == true);
    CHECK(off["fp8_primary_weights"] == false);
    // The FP8 data and its transpose (2 B) instead of a 16-bit weight (2 B) and its FP8
    // copies (2 B) per Linear weight: the 32 layers' 4096·6144 + 4096·4096 + 3·4096·14336
    // = 218,103,808 each, 6,979,321,856 in all, 2 B less each.
    const double linear = 32.0 * 218103808;
    CHECK(off["memory_breakdown"]["weights"] == on["memory_breakdown"]["weights"]);
    CHECK(off["memory_breakdown"]["weight_copies"].get<double>() == Approx(2 * linear));
    CHECK(on["memory_breakdown"]["weight_copies"].get<double>() == 0);
    CHECK(on["fits"] == true);
    CHECK(off["fits"] == false);
    // ZeRO 0 has no distributed optimizer: 16-bit weights whatever the flag says.
    CHECK(run_json(base + " --zero 0 --fp8-params on --json")["fp8_primary_weights"] == false);
    // The advice's predict lines name it where it differs from the profile (exit code 3:
    // the layout does not fit).
    const auto text = run_cli(base + " --zero 1 --fp8-params off");
    REQUIRE(text.exit_code == 3);
    CHECK(text.out.find("--fp8-params off") != std::string::npos);
    const auto bad = run_cli(base + " --fp8-params maybe");
    CHECK(bad.exit_code == 2);
    CHECK(bad.err.find("fp8-params = maybe") != std::string::npos);
    // A framework that casts its FP8 weights in every forward has none to keep.
    const auto titan = run_cli("predict --gpu h100-sxm --model llama3-8b --precision fp8 --fp8-scaling current "
                               "--framework torchtitan --gpus 8 --zero 3 --fp8-params on");
    CHECK(titan.exit_code == 2);
    CHECK(titan.err.find("fp8_primary_weights") != std::string::npos);
}

TEST_CASE("predict --precision nvfp4 runs the Linears in FP4 on Blackwell", "[cli][fp8][nvfp4]") {
    const std::string base = "predict --gpu b200 --model llama3-8b --batch 1 --gpus 8 --tp 2 --sp --framework megatron-core";
    const auto fp4 = run_json(base + " --precision nvfp4 --json");
    const auto fp8 = run_json(base + " --precision mxfp8 --json");
    CHECK(fp4["precision"] == "nvfp4");
    CHECK(fp4["fp8_scaling"] == "nvfp4");
    // Against the dense FP4 peak (9000 TFLOP/s) and the BF16 one (2250).
    CHECK(fp4["mfu_bf16_peak"].get<double>() == Approx(fp4["mfu"].get<double>() * 9000 / 2250));
    // Half-byte Linears: faster and smaller than MXFP8.
    CHECK(fp4["step_time_seconds"].get<double>() < fp8["step_time_seconds"].get<double>());
    CHECK(fp4["memory_per_gpu_bytes"].get<double>() < fp8["memory_per_gpu_bytes"].get<double>());
    const auto text = run_cli(base + " --precision nvfp4");
    REQUIRE(text.exit_code == 0);
    CHECK(text.out.find("MFU / HFU (against the dense FP4 peak)") != std::string::npos);
    const auto gpus = run_cli("gpus");
    CHECK(gpus.out.find("FP4 TFLOP/s") != std::string::npos);
    check_refused(std::array{"predict --gpu h100-sxm --model llama3-8b --framework megatron-core --precision nvfp4",
                             "predict --gpu b200 --model llama3-8b --framework megatron-core --precision nvfp4 "
                             "--fp8-scaling mxfp8",
                             "predict --gpu b200 --model llama3-8b --framework megatron-core --precision fp8 "
                             "--fp8-scaling nvfp4",
                             // torchtitan's torchao: no delayed scaling, no NVFP4.
                             "predict --gpu b200 --model llama3-8b --framework torchtitan --precision fp8",
                             "predict --gpu b200 --model llama3-8b --framework torchtitan --precision nvfp4"});
    const auto r = run_cli("predict --gpu h100-sxm --model llama3-8b --framework megatron-core --precision nvfp4");
    CHECK(r.err.find("precision = nvfp4: not supported by h100-sxm (no fp4 tensor cores)") != std::string::npos);
}

TEST_CASE("a framework trains only with the optimizers, recipes and adapters its software runs", "[cli]") {
    const auto refused = [](const std::string& args, const std::string& message) {
        const auto r = run_cli("predict --gpu h100-sxm --model llama2-7b --gpus 8 " + args);
        CHECK(r.exit_code == 2);
        CHECK(r.out.empty());
        CHECK(r.err.find(message) != std::string::npos);
    };
    refused("--framework megatron --optimizer adam8bit",
            "trainperf: optimizer = adam8bit: framework megatron (Megatron-LM (2022; NVIDIA/Megatron-LM@28ba253f)) "
            "has no such optimizer (it runs sgd, sgd-momentum, adamw, adamw-fused); pytorch-eager, deepspeed offer it\n");
    refused("--framework megatron-core --precision bf16-amp",
            "precision = bf16-amp: framework megatron-core (Megatron-Core with Transformer Engine "
            "(NVIDIA/Megatron-LM@d98e8a64)) does not run this recipe (it runs fp32, bf16, fp16, fp8); pytorch-eager, "
            "torchtitan offer it");
    refused("--framework megatron-core --finetune lora", "finetune = lora: framework megatron-core");
    refused("--framework deepspeed --zero 2 --offload optimizer --optimizer adafactor",
            "offload = optimizer: framework deepspeed (the Hugging Face Trainer with DeepSpeed ZeRO (DeepSpeed "
            "v0.12.6)) does not run adafactor on the host (it runs adamw, adamw-fused, lion there)");
    // What each runs, in the frameworks table and in its description file.
    const auto table = run_cli("frameworks");
    CHECK(table.out.find("What each trains with") != std::string::npos);
    const auto core = run_json("frameworks --json megatron-core");
    CHECK(core["precisions"] == nlohmann::json({"fp32", "bf16", "fp16", "fp8"}));
    CHECK(core["finetune_modes"] == nlohmann::json({"full"}));
    // Where fp8 fits fewer micro-batches than bf16 (a 7B model at a short sequence on H100:
    // the FP8 weight copies, 2 B per parameter with Hopper's transposes, outweigh the 1-byte
    // saved Linear inputs), fit says why; with a small model on B200 it fits more and says
    // nothing.
    const auto fp8_fit =
        run_cli("fit --gpu h100-sxm --model llama2-7b --seq 256 --framework megatron-core --optimizer sgd");
    CHECK(fp8_fit.out.find("fp8 fits less than bf16 here") != std::string::npos);
    CHECK(run_cli("fit --gpu b200 --model gpt2-xl --framework megatron-core --optimizer sgd").out.find("fp8 fits less") ==
          std::string::npos);
    // fit lists only the recipes and optimizers the framework runs.
    const auto fit = run_json("fit --gpu h100-sxm --model gpt2 --framework megatron --json");
    for (const auto& row : fit["fits"]) {
        CHECK(row["precision"] != "fp8");
        CHECK(row["precision"] != "bf16-amp");
        CHECK(row["optimizer"] != "adafactor");
    }
}

TEST_CASE("an unknown flag is named first, with the flag it probably meant", "[cli]") {
    // A misspelt required flag is unknown, not missing.
    const auto typo = run_cli("plan --gpu h100-sxm --model gpt2 --gpus 8 --global_batch 64");
    CHECK(typo.exit_code == 2);
    CHECK(typo.out.empty());
    CHECK(typo.err == "trainperf: --global_batch: not a flag of trainperf plan; did you mean --global-batch?\n");
    CHECK(run_cli("predict --gpu h100-sxm --model gpt2 --Seq=512").err ==
          "trainperf: --Seq: not a flag of trainperf predict; did you mean --seq?\n");
    CHECK(run_cli("predict --gpu h100-sxm --model gpt2 --sequence 512").err.find("did you mean --seq?") !=
          std::string::npos);
    CHECK(run_cli("predict --gpu h100-sxm --model gpt2 --global-batch 8").err ==
          "trainperf: --global-batch: not a flag of trainperf predict; the global batch is --batch x dp x "
          "--grad-accum\n");
    const auto none = run_cli("memory --gpu h100-sxm --model gpt2 --colour 5");
    CHECK(none.exit_code == 2);
    CHECK(none.err.find("--colour: not a flag of trainperf memory (trainperf memory --help lists them)") !=
          std::string::npos);
    // --micro-batch is --batch, in every command that takes a micro-batch.
    CHECK(run_json("predict --gpu h100-sxm --model gpt2 --micro-batch 2 --json") ==
          run_json("predict --gpu h100-sxm --model gpt2 --batch 2 --json"));
    CHECK(run_json("memory --gpu h100-sxm --model gpt2 --micro-batch 3 --json")["batch"] == 3);
}

TEST_CASE("the default sequence is the model's training length, and a config file's is announced", "[cli]") {
    // Llama 3.1 405B: pre-trained on 8192 tokens, 131072 positions.
    CHECK(run_json("predict --gpu h100-sxm --model llama3.1-405b --gpus 64 --framework megatron-core --tp 8 "
                   "--pp 8 --json")["seq"] == 8192);
    CHECK(run_json("flops --model llama3.1-405b --json")["seq"] == 8192);
    // A Hugging Face config allowing 32768 positions: 4096, said once on stderr.
    const std::string mistral = trainperf_test::quoted(std::string(TRAINPERF_TEST_DATA_DIR) + "/hf_configs/Mistral-7B-v0.1.json");
    const trainperf_test::run_result r = run_cli("predict --gpu h100-sxm --model-file " + mistral + " --gpus 8 --json");
    REQUIRE((r.exit_code == 0 || r.exit_code == 3));  // fitting or not, the answer
    CHECK(nlohmann::json::parse(r.out)["seq"] == 4096);
    CHECK(r.err.find("notice: --seq not given: 4096 tokens") != std::string::npos);
    CHECK(r.err.find("positions allow 32768") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // once
    const trainperf_test::run_result flops = run_cli("flops --model-file " + mistral + " --json");
    REQUIRE(flops.exit_code == 0);
    CHECK(nlohmann::json::parse(flops.out)["seq"] == 4096);
    CHECK(flops.err.find("notice: --seq not given: 4096 tokens") != std::string::npos);
    // A notice never stands beside an error: bad input is still one line.
    check_refused(std::vector<std::string>{"predict --gpu h100-sxm --model-file " + mistral + " --gpus 8 --tp 5",
                                           "predict --gpu h100-sxm --model llama2-7b --optimizer adam --tp 5"});
    const trainperf_test::run_result adam = run_cli("memory --gpu h100-sxm --model gpt2 --optimizer Adam");
    CHECK(adam.exit_code == 0);
    CHECK(adam.err == "trainperf: notice: --optimizer Adam is priced as adamw (the same two fp32 moments and passes "
                      "per step)\n");
    // Given, nothing is announced.
    const trainperf_test::run_result given = run_cli("predict --gpu h100-sxm --model-file " + mistral + " --gpus 8 --seq 8192 --json");
    REQUIRE((given.exit_code == 0 || given.exit_code == 3));
    CHECK(given.err.empty());
    CHECK(nlohmann::json::parse(given.out)["seq"] == 8192);
}

TEST_CASE("exit status 3 is the answer \"does not fit\", for scripts", "[cli]") {
    const auto status = [](const std::string& args) { return run_cli(args).exit_code; };
    CHECK(status("predict --gpu h100-sxm --model gpt2 --batch 4") == 0);
    CHECK(status("predict --gpu h100-sxm --model llama2-70b") == 3);
    CHECK(status("predict --gpu h100-sxm --model llama2-70b --json") == 3);
    CHECK(status("memory --gpu h100-sxm --model gpt2") == 0);
    CHECK(status("memory --gpu rtx-4090 --model llama2-70b --json") == 3);
    CHECK(status("fit --gpu rtx-4090 --model llama2-70b") == 3);  // not even a micro-batch of 1 anywhere
    CHECK(status("fit --gpu h100-sxm --model gpt2") == 0);
    CHECK(status("plan --gpu rtx-4090 --model llama2-70b --gpus 2 --global-batch 8") == 3);  // no layout fits
    CHECK(status("plan --gpu rtx-4090 --model llama2-70b --gpus 2 --global-batch 8 --json") == 3);
    CHECK(status("plan --gpu h100-sxm --model gpt2 --gpus 8 --global-batch 64 --top 1") == 0);
    CHECK(status("plan --gpu rtx-4090 --model llama2-70b --global-batch 8 --train-tokens 1e9 --max-gpus 2") == 3);
    // A sweep's points may or may not fit: it answers all of them.
    CHECK(status("sweep --gpu h100-sxm --model gpt2 --vary batch=1,1048576") == 0);
    // Bad input stays 2.
    CHECK(status("predict --gpu h100-sxm --model llama2-70b --batch 0") == 2);
}

TEST_CASE("counts, GPUs and costs read as people write them", "[cli]") {
    const auto predict = run_cli("predict --gpu h100-sxm --model gpt2 --batch 4 --train-tokens 2T --price-per-gpu-hour 2");
    REQUIRE(predict.exit_code == 0);
    CHECK(predict.out.find("Training on 2.00e12 tokens") != std::string::npos);
    CHECK(predict.out.find(" USD (price per GPU-hour x GPU-hours)") != std::string::npos);
    const auto plan = run_cli("plan --gpu h100-sxm --model gpt2 --global-batch 64 --train-tokens 2e12 --max-gpus 2 "
                              "--price-per-gpu-hour 2.5 --currency EUR");
    REQUIRE(plan.exit_code == 0);
    CHECK(plan.out.find("2.00e12 tokens") != std::string::npos);
    CHECK(plan.out.find("cost (EUR)") != std::string::npos);
    CHECK(plan.out.find(": 1 GPU, ") != std::string::npos);
    CHECK(plan.out.find("1 GPUs") == std::string::npos);
    CHECK(run_cli("comm --bytes 1MB --gpus 1 --gpu h100-sxm").out.find("on 1 GPU\n") != std::string::npos);
    // The currency goes with the cost into JSON and CSV too (null or empty without a price).
    const std::string priced = "plan --gpu h100-sxm --model gpt2 --global-batch 64 --train-tokens 2e12 --max-gpus 2 "
                               "--price-per-gpu-hour 2.5 --currency EUR";
    const auto j = run_json(priced + " --json");
    CHECK(j["currency"] == "EUR");
    CHECK(j["counts"][0]["train_cost_currency"] == "EUR");
    CHECK(run_cli(priced + " --csv").out.find(",EUR,") != std::string::npos);
    CHECK(run_json("predict --gpu h100-sxm --model gpt2 --train-tokens 2T --json")["train_cost_currency"].is_null());
    CHECK(run_json("predict --gpu h100-sxm --model gpt2 --train-tokens 2T --price-per-gpu-hour 2 --json")
              ["train_cost_currency"] == "USD");
    check_refused(std::vector<std::string>{"predict --gpu h100-sxm --model gpt2 --train-tokens 1e9 "
                                           "--price-per-gpu-hour 2 --currency usd",
                                           "predict --gpu h100-sxm --model gpt2 --currency EUR",
                                           "plan --gpu h100-sxm --model gpt2 --gpus 8 --global-batch 64 --currency EUR"});
}

TEST_CASE("plan without --global-batch suggests one; --train-tokens has a default GPU range", "[cli]") {
    // 2^22 tokens at seq 8192 is 512 samples, a multiple of the 64 GPUs.
    const auto r = run_cli("plan --gpu h100-sxm --model llama3-8b --gpus 64");
    CHECK(r.exit_code == 2);
    CHECK(r.out.empty());
    CHECK(r.err == "trainperf: --global-batch: required (samples per optimizer step); e.g. --global-batch 512: "
                   "4.19e6 tokens per step at seq 8192 (about 4.19e6 is usual in pre-training), a multiple of the 64 "
                   "GPUs\n");
    // gpt2 at 1024 tokens: 4096 samples, on 3 GPUs the nearest multiple of 3.
    CHECK(run_cli("plan --gpu h100-sxm --model gpt2 --gpus 3").err.find("e.g. --global-batch 4095: 4.19e6 tokens") !=
          std::string::npos);
    // More GPUs than 2^22 tokens fill: one sample each, and the message says what that is.
    CHECK(run_cli("plan --gpu h100-sxm --model gpt2 --gpus 8192").err.find("e.g. --global-batch 8192: 8.39e6 tokens") !=
          std::string::npos);
    const auto suggested = run_cli("plan --gpu h100-sxm --model llama3-8b --gpus 64 --global-batch 512 --top 1");
    CHECK(suggested.exit_code == 0);  // the suggestion is a batch the planner takes
    // --train-tokens without --max-gpus: up to 4096.
    const auto run = run_json("plan --gpu h100-sxm --model gpt2 --global-batch 512 --train-tokens 1e9 --json");
    REQUIRE(run["counts"].is_array());
    CHECK(run["counts"].back()["gpus"] == 4096);
}

TEST_CASE("sweep varies every flag of predict that describes the run", "[cli][sweep]") {
    // Every flag in predict's help is a sweep parameter, but the description files, the
    // calibration, a custom model's sizes, the output and the --train-tokens run flags.
    const std::set<std::string> not_varied{
        "gpu-file", "model-file", "framework-file", "system-file", "calibration", "layers", "hidden", "heads",
        "kv-heads", "ffn-hidden", "vocab", "ffn", "positions", "norm", "untied", "no-biases", "no-dropout",
        "activation", "code", "fp32-grads", "json", "csv", "plot", "train-tokens", "price-per-gpu-hour",
        "currency", "version", "help"};
    const std::string help = run_cli("predict --help").out;
    const std::string sweep_help = run_cli("sweep --help").out;
    const auto names_at = sweep_help.find("NAME one of ");
    REQUIRE(names_at != std::string::npos);
    const std::string names = "|" + sweep_help.substr(names_at + 12, sweep_help.find(';', names_at) - names_at - 12) + "|";
    std::istringstream lines(help);
    int checked = 0;
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("  --", 0) != 0) continue;
        std::string flag = line.substr(4, line.find_first_of(" ,", 4) - 4);
        if (not_varied.count(flag)) continue;
        if (flag == "no-prefetch") flag = "prefetch";
        INFO(flag);
        CHECK(names.find("|" + flag + "|") != std::string::npos);
        ++checked;
    }
    CHECK(checked > 40);
    // Each swept value shows in a column of its own: the allocator's expandable segments.
    const std::string expandable = "sweep --gpu h100-sxm --model gpt2 --batch 8 --vary expandable-segments=on,off";
    const auto swept = run_json(expandable + " --json");
    REQUIRE(swept["points"].size() == 2);
    CHECK(swept["points"][0]["expandable_segments"] == true);
    CHECK(swept["points"][1]["expandable_segments"] == false);
    CHECK(run_cli(expandable).exit_code == 0);
    // Adapters, their rank and targets, and the model, as columns of their own.
    const auto j = run_json("sweep --gpu h100-sxm --model llama2-7b --recompute full --vary finetune=full,lora "
                            "--vary lora-targets=q+v,all-linear --json");
    REQUIRE(j["points"].size() == 4);
    CHECK(j["points"][0]["finetune"] == "full");
    CHECK(j["points"][0]["lora_targets"].is_null());
    CHECK(j["points"][3]["finetune"] == "lora");
    CHECK(j["points"][3]["lora_targets"] == "all-linear");
    CHECK(j["points"][2]["lora_targets"] == "q,v");
    CHECK(j["points"][2]["memory_GiB"].get<double>() < j["points"][3]["memory_GiB"].get<double>());
    const auto models = run_json("sweep --gpu h100-sxm --vary model=gpt2,gpt2-medium --json");
    REQUIRE(models["points"].size() == 2);
    CHECK(models["points"][1]["model"] == "gpt2-medium");
    const auto prefetch = run_json("sweep --gpu h100-sxm --model gpt2 --data-ms 50 --vary prefetch=on,off --json");
    CHECK(prefetch["points"][0]["step_time_ms"].get<double>() < prefetch["points"][1]["step_time_ms"].get<double>());
    CHECK(run_cli("sweep --gpu h100-sxm --model gpt2 --vary prefetch=maybe").exit_code == 2);
    CHECK(run_cli("sweep --gpu h100-sxm --model gpt2 --vary data-ms=abc").exit_code == 2);
    CHECK(run_cli("sweep --gpu h100-sxm --model-file x.json --vary model=gpt2").exit_code == 2);
}

TEST_CASE("sweep varies the framework's switches, the schedule and the shard group", "[cli]") {
    const auto flash = run_json("sweep --gpu h100-sxm --model gpt2-medium --batch 8 --vary flash-attention=off,on --json");
    REQUIRE(flash["points"].size() == 2);
    CHECK(flash["points"][0]["flash_attention"] == false);
    CHECK(flash["points"][1]["flash_attention"] == true);
    CHECK(flash["points"][1]["memory_GiB"].get<double>() < flash["points"][0]["memory_GiB"].get<double>());
    // No catalog framework runs zero-bubble schedules (a framework file may): the point
    // that asks for one is refused by name.
    const auto schedule = run_cli("sweep --gpu h100-sxm --model llama2-7b --framework megatron-core --gpus 8 --pp 4 "
                                  "--grad-accum 8 --vary schedule=1f1b,zb-h1 --json");
    CHECK(schedule.exit_code == 2);
    CHECK(schedule.err.find("sweep at schedule = zb-h1: schedule = zb-h1: framework megatron-core") !=
          std::string::npos);
    const auto shard = run_json("sweep --gpu h100-sxm --model llama2-7b --framework pytorch-eager --gpus 16 --zero 3 "
                                "--vary shard-group=0,8 --json");
    CHECK(shard["points"][1]["shard_group"] == 8);
    check_refused(std::vector<std::string>{"sweep --gpu h100-sxm --model gpt2 --vary flash-attention=maybe"});
}

TEST_CASE("plan --framework any ranks every framework's layouts together", "[cli][plan][framework]") {
    // llama2-7b on 8 H100, global batch 64: Megatron-Core's layouts are the fastest; with
    // LoRA, DeepSpeed's and the Hugging Face Trainer's alternate (torchtitan and the
    // Megatrons train no adapters).
    struct request {
        std::string args;
        std::vector<std::string> searched;
        std::set<std::string> listed;  // frameworks among the ten fastest
    };
    const std::string base = "plan --gpu h100-sxm --model llama2-7b --gpus 8 --global-batch 64 --framework any";
    for (const request& r : {request{base, {"pytorch-eager", "megatron", "deepspeed", "megatron-core", "torchtitan"},
                                     {"megatron-core"}},
                             request{base + " --finetune lora", {"pytorch-eager", "deepspeed"},
                                     {"pytorch-eager", "deepspeed"}}}) {
        INFO(r.args);
        const auto j = run_json(r.args + " --json");
        CHECK(j["frameworks_searched"] == nlohmann::json(r.searched));
        CHECK(j["frameworks_skipped"].size() == trainperf::framework_profiles.size() - r.searched.size());
        REQUIRE(j["best"].size() == 10);
        std::set<std::string> listed;
        double previous = 0;
        std::size_t rank = 0;
        for (const auto& c : j["best"]) {
            const std::string command = c["predict_command"].get<std::string>();
            ++rank;
            INFO(command);
            listed.insert(c["framework"].get<std::string>());
            CHECK(command.find(" --framework " + c["framework"].get<std::string>() + " ") != std::string::npos);
            CHECK(c["step_time_seconds"].get<double>() >= previous);
            previous = c["step_time_seconds"].get<double>();
            // The first rows' predict commands give the plan's step (test_planner checks every
            // row's setup in the library; a process per row is slow under the sanitizers).
            if (rank > 3) continue;
            const auto predicted = run_json(command.substr(std::string("trainperf ").size()) + " --json");
            CHECK(predicted["step_time_seconds"].get<double>() ==
                  Approx(c["step_time_seconds"].get<double>()).epsilon(1e-12));
        }
        CHECK(listed == r.listed);
        // The text: a framework column, within 120 columns; the fastest as a predict command.
        const auto text = run_cli(r.args);
        REQUIRE(text.exit_code == 0);
        for (const std::string& line : lines_of(text.out)) {
            INFO(line);
            CHECK(line.size() <= 120);
        }
        CHECK(text.out.find("(any framework, bf16, adamw") != std::string::npos);
        CHECK(text.out.find("Frameworks searched: " + r.searched[0] + ", ") != std::string::npos);
        CHECK(text.out.find("#       framework  dp") != std::string::npos);
        CHECK(joined_predict_command(text.out) == j["best"][0]["predict_command"].get<std::string>());
        // --wide names each layout's framework; the CSV has each row's.
        const auto wide = run_cli(r.args + " --wide");
        REQUIRE(wide.exit_code == 0);
        CHECK(wide.out.find("1. " + j["best"][0]["framework"].get<std::string>() + ": ") != std::string::npos);
        const auto csv = trainperf::testing::csv_rows(run_cli(r.args + " --csv").out);
        REQUIRE(csv.size() == j["best"].size());
        for (std::size_t i = 0; i < csv.size(); ++i) {
            CHECK(csv[i].at("framework") == j["best"][i]["framework"].get<std::string>());
            CHECK(std::stod(csv[i].at("step_time_ms")) ==
                  Approx(j["best"][i]["step_time_seconds"].get<double>() * 1e3).epsilon(1e-12));
        }
    }
    // Wider plans stay within 120 columns too (cp and uneven splits, offload).
    for (const std::string args : {"--gpu h100-sxm --model llama3-70b --gpus 32 --global-batch 64 --max-micro-batch 1",
                                   "--gpu a100-sxm-80gb --model llama2-70b --gpus 8 --global-batch 32 --offload"}) {
        INFO(args);
        const auto text = run_cli("plan " + args + " --framework any");
        REQUIRE(text.exit_code == 0);
        CHECK(widest_line(text.out) <= 120);
    }
}

TEST_CASE("plan --framework any leaves out the frameworks that do not train the recipe", "[cli][plan][framework]") {
    const std::string request = "plan --gpu h100-sxm --model llama2-7b --gpus 8 --global-batch 64 --framework any";
    // fp8 with current scaling: Megatron-Core (Transformer Engine) and torchtitan (torchao)
    // only; the others named, with why.
    const auto fp8 = run_json(request + " --precision fp8 --fp8-scaling current --top 3 --json");
    CHECK(fp8["frameworks_searched"] == nlohmann::json::array({"megatron-core", "torchtitan"}));
    REQUIRE(fp8["frameworks_skipped"].size() == 4);
    for (const auto& s : fp8["frameworks_skipped"]) {
        INFO(s.dump());
        CHECK(s["reason"].get<std::string>().find("precision = fp8") != std::string::npos);
        CHECK(s["reason"].get<std::string>().find("framework " + s["framework"].get<std::string>()) !=
              std::string::npos);
    }
    for (const auto& c : fp8["best"]) CHECK((c["framework"] == "megatron-core" || c["framework"] == "torchtitan"));
    const auto text = run_cli(request + " --precision fp8 --fp8-scaling current --top 3");
    REQUIRE(text.exit_code == 0);
    CHECK(widest_line(text.out) <= 120);
    CHECK(text.out.find("Left out, megatron: precision = fp8") != std::string::npos);
    // Delayed scaling (the fp8 recipe's default): torchao has none, torchtitan is left out too.
    const auto delayed = run_json(request + " --precision fp8 --top 3 --json");
    CHECK(delayed["frameworks_searched"] == nlohmann::json::array({"megatron-core"}));
    bool torchtitan_named = false;
    for (const auto& s : delayed["frameworks_skipped"])
        if (s["framework"] == "torchtitan") {
            torchtitan_named = true;
            CHECK(s["reason"].get<std::string>().rfind("fp8_scaling = delayed: framework torchtitan", 0) == 0);
        }
    CHECK(torchtitan_named);
    // 8-bit Adam: the Hugging Face Trainer, with or without DeepSpeed.
    const auto adam8bit = run_json(request + " --optimizer adam8bit --top 3 --json");
    CHECK(adam8bit["frameworks_searched"] == nlohmann::json::array({"pytorch-eager", "deepspeed"}));
    CHECK(adam8bit["frameworks_skipped"].size() == 4);
}

TEST_CASE("only plan and fit take --framework any, and plan not with --train-tokens", "[cli][plan][framework]") {
    const std::string model = " --gpu h100-sxm --model llama2-7b --framework any";
    check_refused(std::vector<std::string>{
        "predict" + model,
        "memory" + model,
        "sweep" + model + " --vary batch=1,2",
        "scale" + model + " --gpus 8",
        "plan" + model + " --global-batch 64 --train-tokens 1T --max-gpus 16",
        // No framework trains fp8 with 8-bit Adam.
        "plan" + model + " --gpus 8 --global-batch 64 --precision fp8 --optimizer adam8bit",
    });
    const auto r = run_cli("predict" + model);
    CHECK(r.err.find("--framework = any") != std::string::npos);
}

TEST_CASE("fit --framework any: a table per framework that runs the setup, the others left out with why",
          "[cli][fit][framework]") {
    const std::string setup = "fit --gpu h100-sxm --model llama2-7b --gpus 8 --zero 1";
    // Each framework's table is the one --framework NAME gives.
    const auto any = run_json(setup + " --framework any --json");
    REQUIRE(any["frameworks"].size() + any["frameworks_skipped"].size() == trainperf::framework_profiles.size());
    REQUIRE(any["frameworks"].size() >= 2);
    for (const auto& t : any["frameworks"]) {
        INFO(t["framework"]);
        CHECK(t == run_json(setup + " --framework " + t["framework"].get<std::string>() + " --json"));
    }
    const auto text = run_cli(setup + " --framework any");
    REQUIRE(text.exit_code == 0);
    // Every line within 120 columns but the heading (as long as with one framework).
    const auto after_heading = [](const std::string& out) { return out.substr(out.find('\n') + 1); };
    CHECK(widest_line(after_heading(text.out)) <= 120);
    CHECK(text.out.find("Largest micro-batch that fits: llama2-7b, seq 4096, on h100-sxm, any framework") !=
          std::string::npos);
    for (const auto& t : any["frameworks"]) {
        const std::string heading = std::string("\n").append(t["framework"].get<std::string>()).append(": ");
        CHECK(text.out.find(heading) != std::string::npos);
    }
    // Tensor parallelism: not under the Hugging Face Trainer, with or without DeepSpeed;
    // torchtitan has no ZeRO-1, and Megatron-DeepSpeed of 2021 no bf16.
    const auto tp2 = run_json(setup + " --tp 2 --framework any --json");
    REQUIRE(tp2["frameworks_skipped"].size() == 4);
    CHECK(tp2["frameworks_skipped"][0]["framework"] == "pytorch-eager");
    CHECK(tp2["frameworks_skipped"][1]["framework"] == "deepspeed");
    CHECK(tp2["frameworks_skipped"][2]["framework"] == "torchtitan");
    CHECK(tp2["frameworks_skipped"][3]["framework"] == "megatron-deepspeed");
    for (const auto& s : tp2["frameworks_skipped"]) {
        const std::string field = s["framework"] == "torchtitan"           ? "zero = 1"
                                  : s["framework"] == "megatron-deepspeed" ? "precision = bf16"
                                                                           : "tp = 2";
        CHECK(s["reason"].get<std::string>().rfind(field + ": framework " + s["framework"].get<std::string>(), 0) == 0);
    }
    const auto tp2_text = run_cli(setup + " --tp 2 --framework any");
    CHECK(widest_line(after_heading(tp2_text.out)) <= 120);
    CHECK(tp2_text.out.find("Left out, pytorch-eager: tp = 2: framework pytorch-eager") != std::string::npos);
    // --precision fp8 with ZeRO 1: Megatron-Core only (torchtitan has no ZeRO-1), one column.
    const auto fp8 = run_json(setup + " --precision fp8 --framework any --json");
    REQUIRE(fp8["frameworks"].size() == 1);
    CHECK(fp8["frameworks"][0]["framework"] == "megatron-core");
    for (const auto& row : fp8["frameworks"][0]["fits"]) CHECK(row["precision"] == "fp8");
    // Adapters: not in Megatron-LM, Megatron-Core, torchtitan or Megatron-DeepSpeed.
    const auto lora =
        run_json("fit --gpu h100-sxm --model llama2-7b --gpus 8 --finetune lora --framework any --json");
    CHECK(lora["frameworks_skipped"].size() == 4);
    for (const auto& t : lora["frameworks"]) CHECK(t.contains("max_micro_batch_with_full_recompute"));
}

TEST_CASE("fit --framework any: exit status 3 only when nothing fits under any framework, 2 for bad input",
          "[cli][fit][framework]") {
    // llama2-70b's weights alone outgrow one H100 under every framework (in fp32, which
    // every one runs).
    const auto big = run_cli("fit --gpu h100-sxm --model llama2-70b --precision fp32 --framework any");
    CHECK(big.exit_code == 3);
    CHECK(big.out.find("Left out") == std::string::npos);
    const auto big_json = run_cli("fit --gpu h100-sxm --model llama2-70b --precision fp32 --framework any --json");
    REQUIRE(big_json.exit_code == 3);
    const nlohmann::json big_document = nlohmann::json::parse(big_json.out);  // outlives the loop
    for (const auto& t : big_document["frameworks"])
        for (const auto& row : t["fits"]) CHECK(row["max_micro_batch"] == 0);
    check_refused(std::vector<std::string>{
        // No framework trains fp8 with 8-bit Adam; 32 heads do not split over 3 ranks.
        "fit --gpu h100-sxm --model llama2-7b --gpus 8 --precision fp8 --optimizer adam8bit --framework any",
        "fit --gpu h100-sxm --model llama2-7b --gpus 6 --tp 3 --framework any",
    });
    CHECK(run_cli("fit --gpu h100-sxm --model llama2-7b --gpus 8 --precision fp8 --optimizer adam8bit "
                  "--framework any")
              .err.find("frameworks = pytorch-eager,megatron,deepspeed,megatron-core,torchtitan,megatron-deepspeed: "
                        "none of them runs this") !=
          std::string::npos);
}
