// The flags that describe one training run (GPU, model, recipe, layout, framework,
// links) shared by `predict`, `scale` and `plan`, and the training_setup they build.
#pragma once

#include "cli.hpp"
#include "model_flags.hpp"

#include <trainperf/cost/memory.hpp>
#include <trainperf/cost/step.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainperf::cli {

// Which flags a subcommand takes: `plan` searches the layout itself, `fit` searches
// the micro-batch.
enum class flag_set { all, all_but_batch, system_only };

// `--framework any`: every catalog framework (`plan` and `fit` only;
// search/framework_search.hpp, search/fit_across.hpp).
inline constexpr std::string_view any_framework = "any";

// The setup the flags describe with --framework any: the first catalog framework in its
// place, and every catalog framework with the framework flags applied to each.
struct setup_across_frameworks {
    training_setup base;
    std::vector<framework_profile> frameworks;
};

struct training_flags {
    std::string gpu, gpu_file, system_file, framework_file;  // a catalog name or a description file
    model_flags model;
    int batch = 1, seq = 0, gpus = 0, gpus_per_node = 0, tp = 1, cp = 1, pp = 1, interleave = 1, zero = 0;
    int grad_accum = 1, adapters_per_node = 0, sockets_per_node = 1;
    int nvlink_domain = -1;  // -1: the GPU's standard system's
    bool sp = false;
    std::string precision = "bf16", optimizer = "adamw", recompute = "none", offload = "none";
    std::string dp_overlap = "framework", rank_order = "tp-dp-pp";
    std::string framework = "pytorch-eager", link, link_bandwidth, inter_node_bandwidth;
    std::string calibration;
    std::string flash_attention;  // on | off; empty: as the framework profile has it
    // The other on/off switches, the same way.
    std::string tp_comm_overlap, overlap_param_gather, reshard_after_forward, cuda_graphs, compile, fp8_params,
        expandable_segments;
    // --grad-reduce-dtype: fp32, or the recipe's own 16-bit gradient format; empty: as the
    // framework profile has it (--fp32-grads is the older spelling of fp32).
    std::string grad_reduce_dtype;
    std::string schedule = "1f1b";
    int first_stage_layers = 0, last_stage_layers = 0, shard_group = 0;
    std::string pipeline_layout;  // Megatron-Core's --pipeline-model-parallel-layout text (empty: none)
    std::string recompute_modules;  // with --recompute selective, the submodules (empty: Megatron-Core's default)
    int ep = 1, etp = 0;  // expert parallelism (MoE models)
    std::string moe_dispatcher = "alltoall";
    double moe_imbalance = default_moe_imbalance, moe_capacity_factor = 0;
    bool moe_a2a_overlap = false, moe_shared_expert_overlap = false;
    std::string scaling;  // --fp8-scaling: how fp8 picks its scales (spec/precision.hpp); empty: the recipe's
    std::string finetune = "full", lora_targets = "q,v";  // which parameters train (spec/finetune.hpp)
    int lora_rank = 16;
    double data_ms = 0, pcie_ms = 0;
    bool no_prefetch = false, fp32_grads = false;

    // Adds the flags to a subcommand; `require_model` makes a GPU (--gpu or --gpu-file)
    // and a model (--model or --model-file) required.
    void add_to(CLI::App* sub, bool require_model = true, flag_set set = flag_set::all);
    // Builds the setup and checks it once; throws usage_error / trainperf::invalid_argument
    // on bad input.
    checked_setup build() const;
    // The setup a layout search starts from, checked as the search checks its request
    // (validate(plan_request): the flags apart from the layout, which the search sets;
    // an MoE run's EP overlap or DeepEP need layouts one GPU does not have), not as one layout.
    training_setup build_for_search() const;
    // Everything but the model (for a bare parameter count): system, recipe,
    // framework and layout, validated without the model's shape.
    training_setup build_without_model() const;
    // Whether --framework any was given.
    bool across_frameworks() const { return framework == any_framework; }
    // With --framework any: the setup, not checked (the search across frameworks checks
    // it with each framework), and every catalog framework with the flags that set a
    // framework switch (--flash-attention, --grad-reduce-dtype, ...) applied to each as
    // --framework NAME would apply them to one. The default sequence is said as build says it.
    setup_across_frameworks build_across() const;
    // The flags that describe `s` (built from these flags, its layout and node size
    // possibly changed since) apart from its layout: setup_flags(s) (with the
    // description files in place of the names they replaced) and the link,
    // bandwidth, calibration and input-pipeline flags that were given. With
    // to_string(s.layout) after it, `trainperf predict` rebuilds s.
    std::string run_text(const training_setup& s) const;

private:
    training_setup assemble() const;
    // assemble() with the model and the sequence (the model's flags read first).
    training_setup assemble_with_model() const;
    // The setup with `fw` in place of --framework / --framework-file.
    training_setup assemble_with(const framework_profile& fw) const;
    // --fp32-grads, --grad-reduce-dtype and the on/off switches applied to s.framework.
    void apply_framework_flags(training_setup& s) const;
};

// The flags of a setup's GPU, model (a catalog name, or custom with its sizes),
// sequence length, recipe, optimizer, framework and GPUs per node.
std::string setup_flags(const training_setup& s);

// `trainperf predict` with the flags that rebuild a setup: `run` (setup_flags or
// run_text) and the layout's text.
std::string predict_command(const std::string& run, const parallel_layout& layout);

// The `trainperf predict` line of a setup built from `flags` (a JSON writer's
// command_of, io/report_json.hpp): `flags` must outlive it.
std::function<std::string(const training_setup&)> predict_command_of(const training_flags& flags);

}  // namespace trainperf::cli
