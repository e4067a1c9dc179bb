# The module's answers are the CLI's JSON: each case is a Python call and the command
# line written out by hand, and the two answers must be equal (==, not approximately:
# one serializer, the same doubles). plan's wall_seconds, the search's own run time, is
# the one figure that differs from run to run; plans search on one thread here, since
# the counts of layouts evaluated and pruned depend on how the search is split
# (test_module.py checks that the layouts found do not).
import pathlib

import pytest

import trainperf
from conftest import REPO

DESCRIPTIONS = REPO / "examples" / "descriptions"
HF_CONFIGS = REPO / "tests" / "data" / "hf_configs"

# (function, positional entries, keyword arguments, the same command line for the CLI)
CASES = [
    ("predict", (), dict(gpu="h100-sxm", model="llama2-7b", batch=1, gpus=8, framework="megatron-core", tp=2,
                         sp=True, zero=1, recompute="selective"),
     ["predict", "--gpu", "h100-sxm", "--model", "llama2-7b", "--batch", "1", "--gpus", "8", "--framework",
      "megatron-core", "--tp", "2", "--sp", "--zero", "1", "--recompute", "selective"]),
    ("predict", (), dict(gpu="a100-sxm-80gb", model="gpt2-medium", batch=8, seq=1024, grad_accum=4, gpus=4,
                         link="pcie", precision="fp16", flash_attention=False),
     ["predict", "--gpu", "a100-sxm-80gb", "--model", "gpt2-medium", "--batch", "8", "--seq", "1024",
      "--grad-accum", "4", "--gpus", "4", "--link", "pcie", "--precision", "fp16", "--flash-attention", "off"]),
    ("predict", (), dict(gpu="h100-sxm", model="llama2-13b", batch=1, gpus=64, framework="megatron", tp=4, pp=2,
                         interleave=2, grad_accum=2, sp=True, train_tokens="1T", price_per_gpu_hour=2.5, currency="EUR"),
     ["predict", "--gpu", "h100-sxm", "--model", "llama2-13b", "--batch", "1", "--gpus", "64", "--framework",
      "megatron", "--tp", "4", "--pp", "2", "--interleave", "2", "--grad-accum", "2", "--sp", "--train-tokens", "1T",
      "--price-per-gpu-hour", "2.5", "--currency", "EUR"]),
    # an MoE model on Megatron-Core's own layout, fine-grained recompute, HybridEP and the EP overlap
    ("predict", (), dict(gpu="h100-sxm", model="deepseek-v3", gpus=1024, framework="megatron-core", tp=2, sp=True,
                         pp=8, interleave=4, ep=64, etp=1, precision="fp8", fp8_scaling="current", grad_accum=128,
                         zero=1, recompute="selective", recompute_modules=["mla_up_proj", "mlp"],
                         moe_dispatcher="hybridep", moe_a2a_overlap=True, pipeline_layout="Et|(tt|)*30mL"),
     ["predict", "--gpu", "h100-sxm", "--model", "deepseek-v3", "--gpus", "1024", "--framework", "megatron-core",
      "--tp", "2", "--sp", "--pp", "8", "--interleave", "4", "--ep", "64", "--etp", "1", "--precision", "fp8",
      "--fp8-scaling", "current", "--grad-accum", "128", "--zero", "1", "--recompute", "selective",
      "--recompute-modules", "mla_up_proj,mlp", "--moe-dispatcher", "hybridep", "--moe-a2a-overlap",
      "--pipeline-layout", "Et|(tt|)*30mL"]),
    # does not fit: exit status 3 from the CLI, an answer from the module
    ("predict", (), dict(gpu="h100-sxm", model="llama2-70b", batch=1),
     ["predict", "--gpu", "h100-sxm", "--model", "llama2-70b", "--batch", "1"]),
    ("memory", (), dict(gpu="h100-sxm", model="llama2-7b", batch=2, gpus=8, framework="deepspeed", zero=3),
     ["memory", "--gpu", "h100-sxm", "--model", "llama2-7b", "--batch", "2", "--gpus", "8", "--framework",
      "deepspeed", "--zero", "3"]),
    ("memory", (), dict(gpu="a100-sxm-40gb", params="7B", optimizer="sgd"),
     ["memory", "--gpu", "a100-sxm-40gb", "--params", "7B", "--optimizer", "sgd"]),
    ("memory", (), dict(gpu="l4", model="llama2-7b", batch=4, recompute="full"),
     ["memory", "--gpu", "l4", "--model", "llama2-7b", "--batch", "4", "--recompute", "full"]),
    ("flops", (), dict(model="llama2-7b"), ["flops", "--model", "llama2-7b"]),
    ("flops", (), dict(model="gpt2", seq=512, recompute="full", causal_savings=True),
     ["flops", "--model", "gpt2", "--seq", "512", "--recompute", "full", "--causal-savings"]),
    ("flops", (), dict(model="mixtral-8x7b", seq=4096), ["flops", "--model", "mixtral-8x7b", "--seq", "4096"]),
    ("fit", (), dict(gpu="h100-sxm", model="llama2-7b"), ["fit", "--gpu", "h100-sxm", "--model", "llama2-7b"]),
    ("fit", (), dict(gpu="rtx-4090", model="gpt2-large", seq=1024, framework="deepspeed"),
     ["fit", "--gpu", "rtx-4090", "--model", "gpt2-large", "--seq", "1024", "--framework", "deepspeed"]),
    ("scale", (), dict(gpus=8, r=0.05), ["scale", "--gpus", "8", "--r", "0.05"]),
    ("scale", (), dict(gpus=64, gpu="h100-sxm", model="gpt2-xl", batch=4),
     ["scale", "--gpus", "64", "--gpu", "h100-sxm", "--model", "gpt2-xl", "--batch", "4"]),
    ("comm", (), dict(collective="all-reduce", bytes="1.4GB", gpus=8, link="nvlink"),
     ["comm", "--collective", "all-reduce", "--bytes", "1.4GB", "--gpus", "8", "--link", "nvlink"]),
    ("comm", (), dict(collective="all-gather", bytes="512MiB", gpus=16, gpu="h100-sxm"),
     ["comm", "--collective", "all-gather", "--bytes", "512MiB", "--gpus", "16", "--gpu", "h100-sxm"]),
    ("pipeline", (), dict(data_ms=50, pcie_ms=2, compute_ms=30.5, sync_ms=0),
     ["pipeline", "--data-ms", "50", "--pcie-ms", "2", "--compute-ms", "30.5", "--sync-ms", "0"]),
    ("plan", (), dict(gpu="h100-sxm", model="gpt2", gpus=8, global_batch=64, threads=1),
     ["plan", "--gpu", "h100-sxm", "--model", "gpt2", "--gpus", "8", "--global-batch", "64", "--threads", "1"]),
    ("plan", (), dict(gpu="h100-sxm", model="llama2-7b", gpus=16, global_batch=128, framework="megatron", top=3,
                      no_fold=True, threads=1),
     ["plan", "--gpu", "h100-sxm", "--model", "llama2-7b", "--gpus", "16", "--global-batch", "128", "--framework",
      "megatron", "--top", "3", "--no-fold", "--threads", "1"]),
    ("plan", (), dict(gpu="h100-sxm", model="llama2-7b", seq=4096, framework="megatron", global_batch=256,
                      max_micro_batch=2, train_tokens="100B", deadline_days=30, max_gpus=64, threads=1),
     ["plan", "--gpu", "h100-sxm", "--model", "llama2-7b", "--seq", "4096", "--framework", "megatron",
      "--global-batch", "256", "--max-micro-batch", "2", "--train-tokens", "100B", "--deadline-days", "30",
      "--max-gpus", "64", "--threads", "1"]),
    # no layout fits: exit status 3, an empty list of layouts
    ("plan", (), dict(gpu="a100-sxm-40gb", model="llama2-70b", gpus=8, global_batch=8, threads=1),
     ["plan", "--gpu", "a100-sxm-40gb", "--model", "llama2-70b", "--gpus", "8", "--global-batch", "8",
      "--threads", "1"]),
    ("gpus", (), {}, ["gpus"]),
    ("gpus", ("h100-sxm",), {}, ["gpus", "h100-sxm"]),
    ("models", (), {}, ["models"]),
    ("models", ("llama3-8b",), {}, ["models", "llama3-8b"]),
    ("frameworks", (), {}, ["frameworks"]),
    ("frameworks", ("megatron-core",), {}, ["frameworks", "megatron-core"]),
    # description files: a GPU, a system, a framework, a model file and Hugging Face configs
    ("predict", (), dict(gpu_file=DESCRIPTIONS / "rtx-4090.json", model_file=DESCRIPTIONS / "TinyLlama-1.1B" /
                         "config.json", system_file=str(DESCRIPTIONS / "workstation-2x4090.json"),
                         framework_file=DESCRIPTIONS / "pytorch-sdpa-fused-adamw.json", batch=2, seq=2048),
     ["predict", "--gpu-file", DESCRIPTIONS / "rtx-4090.json", "--model-file",
      DESCRIPTIONS / "TinyLlama-1.1B" / "config.json", "--system-file", DESCRIPTIONS / "workstation-2x4090.json",
      "--framework-file", DESCRIPTIONS / "pytorch-sdpa-fused-adamw.json", "--batch", "2", "--seq", "2048"]),
    ("memory", (), dict(gpu="h100-sxm", model_file=HF_CONFIGS / "Mistral-7B-v0.1.json", batch=1, seq=4096),
     ["memory", "--gpu", "h100-sxm", "--model-file", HF_CONFIGS / "Mistral-7B-v0.1.json", "--batch", "1",
      "--seq", "4096"]),
    ("flops", (), dict(model_file=str(HF_CONFIGS / "gpt2.json"), seq=1024),
     ["flops", "--model-file", HF_CONFIGS / "gpt2.json", "--seq", "1024"]),
    ("plan", (), dict(gpu_file=DESCRIPTIONS / "rtx-4090.json", model_file=HF_CONFIGS / "TinyLlama-1.1B.json",
                      gpus=2, global_batch=16, seq=1024, threads=1),
     ["plan", "--gpu-file", DESCRIPTIONS / "rtx-4090.json", "--model-file", HF_CONFIGS / "TinyLlama-1.1B.json",
      "--gpus", "2", "--global-batch", "16", "--seq", "1024", "--threads", "1"]),
]


def call(function, entries, kwargs):
    return getattr(trainperf, function)(*entries, **kwargs)


def without_wall_time(answer):
    answer = dict(answer)
    wall = answer.pop("wall_seconds")
    assert isinstance(wall, float) and wall >= 0
    return answer


@pytest.mark.parametrize("function, entries, kwargs, command", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_answer_is_the_clis_json(cli, function, entries, kwargs, command):
    expected = cli(*command, "--json").answer()
    answer = call(function, entries, kwargs)
    if function == "plan":
        answer, expected = without_wall_time(answer), without_wall_time(expected)
    assert answer == expected


def test_every_case_is_a_command_of_the_module():
    covered = {c[0] for c in CASES} | {"sweep"}
    assert covered == set(trainperf.__all__) - {"__version__"}


def test_does_not_fit_is_returned_with_the_clis_verdict(cli):
    command = ["predict", "--gpu", "h100-sxm", "--model", "llama2-70b", "--batch", "1"]
    assert cli(*command, "--json").status == 3
    answer = trainperf.predict(gpu="h100-sxm", model="llama2-70b", batch=1)
    assert answer["fits"] is False and answer["memory_excess_bytes"] > 0
    assert trainperf.memory(gpu="h100-sxm", model="llama2-70b", batch=1)["fits"] is False
    assert trainperf.plan(gpu="a100-sxm-40gb", model="llama2-70b", gpus=8, global_batch=8)["best"] == []


def test_a_float_keeps_every_digit(cli):
    # 0.1 + 0.2 is 0.30000000000000004: written with repr, the cost is the CLI's for
    # that double, not for 0.3.
    command = ["predict", "--gpu", "h100-sxm", "--model", "llama2-7b", "--batch", "1", "--framework",
               "megatron-core", "--tp", "2", "--sp", "--gpus", "8", "--zero", "1", "--recompute", "selective",
               "--train-tokens", "1T", "--json", "--price-per-gpu-hour"]
    answer = trainperf.predict(gpu="h100-sxm", model="llama2-7b", batch=1, framework="megatron-core", tp=2, sp=True,
                               gpus=8, zero=1, recompute="selective", train_tokens="1T", price_per_gpu_hour=0.1 + 0.2)
    exact = cli(*command, "0.30000000000000004").answer()
    rounded = cli(*command, "0.3").answer()
    assert exact["train_cost"] != rounded["train_cost"]
    assert answer == exact


def test_lists_dicts_and_bools_become_the_clis_values(cli):
    command = ["predict", "--gpu", "h100-sxm", "--model", "llama2-7b", "--finetune", "lora", "--lora-targets",
               "q,k,v", "--lora-rank", "8", "--json"]
    assert trainperf.predict(gpu="h100-sxm", model="llama2-7b", finetune="lora", lora_targets=("q", "k", "v"),
                             lora_rank=8) == cli(*command).answer()
    # True and False are on and off for an option that takes a value
    on = trainperf.predict(gpu="h100-sxm", model="gpt2", flash_attention=True)
    off = trainperf.predict(gpu="h100-sxm", model="gpt2", flash_attention=False)
    assert on != off
    for answer, value in ((on, "on"), (off, "off")):
        assert answer == cli("predict", "--gpu", "h100-sxm", "--model", "gpt2", "--flash-attention", value,
                             "--json").answer()
    # None and False leave a flag out: the defaults
    assert trainperf.predict(gpu="h100-sxm", model="gpt2", sp=False, tp=None, seq=None) == \
        cli("predict", "--gpu", "h100-sxm", "--model", "gpt2", "--json").answer()


def test_path_like_and_numpy_style_numbers(cli):
    class Integer(int):  # an int subclass whose str is not its value (numpy's are repr'd as np.int64(...))
        def __str__(self):
            return "not a number"

    answer = trainperf.flops(model_file=pathlib.PurePosixPath(HF_CONFIGS / "gpt2.json"), seq=Integer(256))
    assert answer == cli("flops", "--model-file", HF_CONFIGS / "gpt2.json", "--seq", "256", "--json").answer()
