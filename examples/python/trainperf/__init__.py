"""trainperf in Python: the trainperf CLI's commands as functions (docs/python.md).

Each function runs the CLI's subcommand of the same name in process, with --json, and
returns its answer as plain dicts and lists, exactly the CLI's JSON:

    >>> import trainperf
    >>> r = trainperf.predict(gpu="h100-sxm", model="llama2-7b", batch=1, gpus=8, zero=1)
    >>> r["fits"], r["step_time_seconds"]

Keyword arguments are the subcommand's flags with '-' written '_' (gpu_file= for
--gpu-file); help(trainperf.predict) lists them. A value is a string, a number, a path,
a bool or a list of these:

- a number is written so that nothing is lost (str of an int, repr of a float);
- a list is the CLI's comma-separated list (lora_targets=["q", "v"] is --lora-targets q,v),
  except for an option given once per value, such as sweep's --vary;
- a dict gives NAME=VALUE per item (vary={"batch": [1, 2, 4]} is --vary batch=1,2,4;
  '_' in NAME is written '-', as in keywords);
- True gives a flag that takes no value (sp=True is --sp), False or None leaves it out;
  for an option that takes a value, True and False are on and off
  (flash_attention=False is --flash-attention off); None leaves any option out.

Bad input raises ValueError with the CLI's one-line message, which names the flag or
field and the value; a defect raises RuntimeError. An answer of "does not fit" is an
answer: it is returned (its JSON says so), not raised. The CLI's notices (a default the
user may not expect) become warnings (UserWarning). The GIL is released while a command
runs; commands run one at a time; plan takes threads= for its search.
"""

import json as _json
import numbers as _numbers
import os as _os
import warnings as _warnings

from . import _trainperf

__version__ = _trainperf.version

# How many values an option takes each time it is given (_trainperf.options).
_FLAG, _ONE, _SEVERAL = 0, 1, 2

# What a call cannot ask for: every answer is JSON, and these print text instead.
_RESERVED = {
    "json": "every call returns the --json answer",
    "help": "help(trainperf.COMMAND) shows the command's flags",
    "version": "trainperf.__version__ is the version",
}

_options_of = {}


def _options(command):
    if command not in _options_of:
        _options_of[command] = _trainperf.options(command)
    return _options_of[command]


def _scalar(keyword, value):
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, _os.PathLike)):
        return _os.fsdecode(value)
    if isinstance(value, _numbers.Integral):
        return str(int(value))
    if isinstance(value, _numbers.Real):
        return float.__repr__(float(value))
    raise TypeError(
        f"{keyword}=: a string, a number, a bool, a path or a list of them, not {type(value).__name__} {value!r}"
    )


def _value(keyword, value):
    """One value on the command line: a scalar, or a list as the CLI's comma-separated list."""
    if isinstance(value, (str, bytes, _os.PathLike)) or not hasattr(value, "__iter__"):
        return _scalar(keyword, value)
    if isinstance(value, dict):
        raise TypeError(f"{keyword}=: a dict inside a list or a dict is not a value")
    return ",".join(_scalar(keyword, v) for v in value)


def _values(keyword, value, takes):
    """The values an option is given, one per occurrence of the flag."""
    if isinstance(value, dict):
        return [f"{str(name).replace('_', '-')}={_value(keyword, v)}" for name, v in value.items()]
    if takes == _SEVERAL and not isinstance(value, (str, bytes, _os.PathLike)) and hasattr(value, "__iter__"):
        return [_value(keyword, v) for v in value]
    return [_value(keyword, value)]


def _command_line(command, entries, flags):
    """trainperf COMMAND --flag=value ... --json [-- ENTRY ...], without the program name."""
    options = _options(command)
    args = [command]
    for keyword, value in flags.items():
        if keyword in _RESERVED:
            raise TypeError(f"{keyword}=: not an argument of trainperf.{command} ({_RESERVED[keyword]})")
        if value is None:
            continue
        name = keyword.replace("_", "-")
        takes = options.get(name, _ONE)  # an unknown flag is left for the CLI to name
        if takes == _FLAG:
            if not isinstance(value, bool):
                raise TypeError(f"{keyword}=: --{name} is a flag: True or False, not {value!r}")
            if value:
                args.append("--" + name)
            continue
        # --name=value: a value that starts with '-' stays a value
        args += [f"--{name}={v}" for v in _values(keyword, value, takes)]
    args.append("--json")
    if entries:
        args += ["--"] + [_value("entry", e) for e in entries]
    return args


_PREFIX = "trainperf: "
_NOTICE = "trainperf: notice: "


def _without_prefix(line):
    return line[len(_PREFIX):] if line.startswith(_PREFIX) else line


def _run(command, entries, flags):
    status, out, err = _trainperf.run(_command_line(command, entries, flags))
    err = err.decode("utf-8", "replace")
    if status in (0, _trainperf.exit_does_not_fit):
        answer = _json.loads(out)
        for line in err.splitlines():
            _warnings.warn(line[len(_NOTICE):] if line.startswith(_NOTICE) else _without_prefix(line),
                           UserWarning, stacklevel=3)
        return answer
    message = _without_prefix(err.strip().splitlines()[0]) if err.strip() else f"exit status {status}"
    if status == 2:
        raise ValueError(message)
    raise RuntimeError(f"trainperf {command}: {message}")


def _help(command):
    status, out, _ = _trainperf.run([command, "--help"])
    return out.decode("utf-8", "replace") if status == 0 else ""


def _command(command, returns, positional=""):
    def call(*entries, **flags):
        return _run(command, entries, flags)

    call.__name__ = call.__qualname__ = command
    call.__module__ = __name__
    call.__doc__ = (
        f"trainperf {command}{positional} --json: {returns}\n\n"
        "Keyword arguments: the flags below, '-' written '_' (module help: help(trainperf)).\n\n"
        + _help(command)
    )
    return call


predict = _command("predict", "one training step (the CLI's JSON object).")
memory = _command("memory", "memory per GPU and whether it fits (the CLI's JSON object).")
flops = _command("flops", "training FLOPs per sample and parameters (the CLI's JSON object).")
fit = _command("fit", "the largest micro-batch that fits per precision and optimizer (the CLI's JSON object).")
plan = _command("plan", "the fastest layouts that fit, or with train_tokens= a plan by a deadline "
                "(the CLI's JSON object; wall_seconds is the search's own time).")
scale = _command("scale", "speedup, efficiency and wasted GPUs (the CLI's JSON object).")
comm = _command("comm", "one collective's time and bandwidth (the CLI's JSON object).")
pipeline = _command("pipeline", "the four-stage training step (the CLI's JSON object).")
gpus = _command("gpus", "the GPU catalog as {'gpus': [...]}, or one GPU's description file.", " [NAME]")
models = _command("models", "the model catalog as {'models': [...]}, or one model's description file.", " [NAME]")
frameworks = _command("frameworks", "the framework profiles as {'frameworks': [...]}, or one profile's "
                      "description file.", " [NAME]")


def sweep(**flags):
    return _run("sweep", (), flags)["points"]


sweep.__doc__ = (
    "trainperf sweep --json: one prediction per point, as a list with one dict per point: the CLI's\n"
    "points, each already one flat object keyed by the column names (units in the names, as in its\n"
    "CSV), so pandas.DataFrame(result) is a table. vary={'batch': [1, 2, 4]} varies a flag; two keys\n"
    "vary two (a grid).\n\n"
    "Keyword arguments: the flags below, '-' written '_' (module help: help(trainperf)).\n\n"
    + _help("sweep")
)

__all__ = ["predict", "memory", "flops", "fit", "plan", "sweep", "scale", "comm", "pipeline", "gpus", "models",
           "frameworks", "__version__"]
