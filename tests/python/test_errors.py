# Bad input raises ValueError with the CLI's own one-line message (naming the flag or
# field and the value); what cannot become a command line raises TypeError before the
# CLI runs.
import math

import pytest

import trainperf
from conftest import REPO

# (function, keyword arguments, the same command line, words the message must hold)
BAD = [
    ("predict", dict(gpu="h100-sxm", model="llama2-7b", batch=0),
     ["predict", "--gpu", "h100-sxm", "--model", "llama2-7b", "--batch", "0"], ["batch", "0"]),
    ("predict", dict(gpu="nope", model="llama2-7b"),
     ["predict", "--gpu", "nope", "--model", "llama2-7b"], ["gpu", "nope"]),
    ("memory", dict(gpu="h100-sxm", model="llama2-7b", zero=7),
     ["memory", "--gpu", "h100-sxm", "--model", "llama2-7b", "--zero", "7"], ["zero", "7"]),
    ("predict", dict(gpu="h100-sxm", model="llama2-7b", bogus_flag=1),
     ["predict", "--gpu", "h100-sxm", "--model", "llama2-7b", "--bogus-flag", "1"], ["--bogus-flag"]),
    ("predict", dict(gpu="h100-sxm", model="llama2-7b", global_batch=64),
     ["predict", "--gpu", "h100-sxm", "--model", "llama2-7b", "--global-batch", "64"], ["--global-batch"]),
    ("predict", dict(gpu="h100-sxm", model="llama2-7b", batch=1.5),
     ["predict", "--gpu", "h100-sxm", "--model", "llama2-7b", "--batch", "1.5"], ["--batch", "1.5"]),
    ("predict", dict(gpu="h100-sxm", model="llama2-7b", train_tokens="1T", price_per_gpu_hour=math.inf),
     ["predict", "--gpu", "h100-sxm", "--model", "llama2-7b", "--train-tokens", "1T", "--price-per-gpu-hour",
      "inf"], ["--price-per-gpu-hour", "inf"]),
    ("plan", dict(gpu="h100-sxm", model="gpt2", gpus=8, global_batch=64, threads=5000),
     ["plan", "--gpu", "h100-sxm", "--model", "gpt2", "--gpus", "8", "--global-batch", "64", "--threads", "5000"],
     ["threads", "5000"]),
    ("sweep", dict(gpu="h100-sxm", model="gpt2", vary={"nonsense": [1, 2]}),
     ["sweep", "--gpu", "h100-sxm", "--model", "gpt2", "--vary", "nonsense=1,2"], ["vary", "nonsense"]),
    ("predict", dict(gpu_file=REPO / "no-such-gpu.json", model="gpt2"),
     ["predict", "--gpu-file", REPO / "no-such-gpu.json", "--model", "gpt2"], ["no-such-gpu.json"]),
    ("flops", dict(model="gpt2", csv=True), ["flops", "--model", "gpt2", "--csv"], ["--csv"]),
    ("gpus", dict(), ["gpus", "no-such-gpu"], ["no-such-gpu"]),
    ("comm", dict(collective="all-reduce", bytes="lots", gpus=8),
     ["comm", "--collective", "all-reduce", "--bytes", "lots", "--gpus", "8"], ["bytes", "lots"]),
]


@pytest.mark.parametrize("function, kwargs, command, named", BAD, ids=[f"{b[0]}-{i}" for i, b in enumerate(BAD)])
def test_bad_value_raises_the_clis_message(cli, function, kwargs, command, named):
    expected = cli(*command, "--json").error()
    entries = command[1:] if function == "gpus" else ()
    with pytest.raises(ValueError) as raised:
        getattr(trainperf, function)(*entries, **kwargs)
    message = str(raised.value)
    assert message == expected
    for word in named:
        assert word in message


@pytest.mark.parametrize("kwargs", [dict(json=True), dict(help=True), dict(version=True), dict(sp=2),
                                    dict(seq=object()), dict(vary={"batch": [{"a": 1}]})])
def test_what_is_no_command_line_raises_type_error(kwargs):
    base = dict(gpu="h100-sxm", model="gpt2")
    with pytest.raises(TypeError) as raised:
        (trainperf.sweep if "vary" in kwargs else trainperf.predict)(**base, **kwargs)
    assert next(iter(kwargs)) in str(raised.value)


def test_a_value_that_looks_like_a_flag_stays_a_value():
    with pytest.raises(ValueError) as raised:
        trainperf.predict(gpu="--json", model="gpt2")
    assert "--json" in str(raised.value) and "gpu" in str(raised.value)
    with pytest.raises(ValueError) as raised:
        trainperf.models("--help")
    assert "--help" in str(raised.value)
