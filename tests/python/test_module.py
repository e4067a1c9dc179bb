# The module as a whole: its version, the CLI's notices as warnings, help texts, and
# calls from several Python threads (the GIL released while a command runs).
import concurrent.futures
import threading
import time
import warnings

import pytest

import trainperf


def test_version_is_the_clis(cli):
    run = cli("--version")
    assert run.status == 0
    assert run.stdout == f"trainperf {trainperf.__version__}\n"


def test_a_notice_is_a_warning(cli):
    command = ["predict", "--gpu", "h100-sxm", "--model", "gpt2", "--optimizer", "adam", "--json"]
    notice = cli(*command).stderr
    assert notice.startswith("trainperf: notice: ")
    with pytest.warns(UserWarning) as caught:
        answer = trainperf.predict(gpu="h100-sxm", model="gpt2", optimizer="adam")
    assert [str(w.message) for w in caught] == [notice.strip()[len("trainperf: notice: "):]]
    assert caught[0].filename == __file__  # attributed to the caller's line
    assert answer == cli(*command).answer()


def test_no_notice_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trainperf.predict(gpu="h100-sxm", model="gpt2")
        trainperf.sweep(gpu="h100-sxm", model="gpt2", vary={"batch": [1, 2]})


def test_help_lists_the_commands_flags():
    assert "--global-batch" in trainperf.plan.__doc__ and "--threads" in trainperf.plan.__doc__
    assert "--vary" in trainperf.sweep.__doc__
    assert "--collective" in trainperf.comm.__doc__


def test_threads_change_the_counts_not_the_layouts(cli):
    args = dict(gpu="h100-sxm", model="llama2-13b", gpus=32, global_batch=256, framework="megatron-core")
    one, two = (trainperf.plan(**args, threads=n) for n in (1, 2))
    # Each thread prunes with the bound it has reached: how many layouts are evaluated
    # and pruned depends on the split (one thread: always the same), what is found does not.
    counts = ("evaluated", "pruned", "fitting", "borderline", "wall_seconds")
    assert {k: v for k, v in one.items() if k not in counts} == {k: v for k, v in two.items() if k not in counts}
    assert one["best"] and one["evaluated"] + one["pruned"] == two["evaluated"] + two["pruned"] == one["candidates"]
    expected = cli("plan", *(f"--{k.replace('_', '-')}={v}" for k, v in args.items()), "--threads=1",
                   "--json").answer()
    del one["wall_seconds"], expected["wall_seconds"]
    assert one == expected


# About 0.4 s of search on one thread (1.7 million layouts).
LONG_PLAN = dict(gpu="h100-sxm", model="llama2-70b", gpus=512, global_batch=1024, framework="any", threads=1)


def test_the_gil_is_released_while_a_command_runs():
    span = {}

    def search():
        span["start"] = time.perf_counter()
        trainperf.plan(**LONG_PLAN)
        span["end"] = time.perf_counter()

    worker = threading.Thread(target=search)
    ticks = []
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
    worker.join()
    # Python in this thread kept running during the search (with the GIL held there
    # would be no tick between its start and its end).
    assert span["end"] - span["start"] > 0.05
    inside = [t for t in ticks if span["start"] + 0.02 < t < span["end"] - 0.02]
    assert len(inside) > 100


def test_calls_from_several_threads_get_their_own_answers():
    cases = [dict(gpu="h100-sxm", model=m, batch=b, gpus=8, framework="megatron", zero=1)
             for m in ("gpt2", "gpt2-medium", "llama2-7b") for b in (1, 2, 4)]
    one_by_one = [trainperf.predict(**c) for c in cases]
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        together = list(pool.map(lambda c: trainperf.predict(**c), cases * 3))
    assert together == one_by_one * 3
