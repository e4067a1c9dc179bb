# sweep returns the CLI's points: one flat dict per point (a scalar per column, the
# same columns in every point), in the CLI's order, equal to `sweep --json`'s points.
import itertools

import pytest

import trainperf

SCALAR = (str, int, float, bool, type(None))


def check_table(points):
    assert points, "no points"
    columns = list(points[0])
    for p in points:
        assert list(p) == columns
        for column, value in p.items():
            assert isinstance(value, SCALAR), (column, value)


def test_one_axis_is_the_clis_points(cli):
    expected = cli("sweep", "--gpu", "h100-sxm", "--model", "llama2-7b", "--gpus", "8", "--framework", "megatron",
                   "--zero", "1", "--vary", "batch=1,2,4", "--json").answer()
    assert expected["vary"] == ["batch=1,2,4"]
    points = trainperf.sweep(gpu="h100-sxm", model="llama2-7b", gpus=8, framework="megatron", zero=1,
                             vary={"batch": [1, 2, 4]})
    assert points == expected["points"]
    check_table(points)
    assert [p["micro_batch"] for p in points] == [1, 2, 4]


def test_two_axes_are_a_grid_in_the_clis_order(cli):
    expected = cli("sweep", "--gpu", "h100-sxm", "--model", "gpt2-xl", "--gpus", "8", "--vary", "grad-accum=1,2",
                   "--vary", "link=nvlink,pcie", "--json").answer()
    points = trainperf.sweep(gpu="h100-sxm", model="gpt2-xl", gpus=8, vary={"grad_accum": [1, 2],
                                                                           "link": ["nvlink", "pcie"]})
    assert points == expected["points"]
    check_table(points)
    assert [(p["grad_accum"], p["intra_node_link"]) for p in points] == \
        list(itertools.product([1, 2], ["nvlink", "pcie"]))


def test_vary_as_the_clis_own_text(cli):
    expected = cli("sweep", "--gpu", "a100-sxm-80gb", "--model", "gpt2", "--vary", "seq=256..1024*2",
                   "--vary", "batch=1,8", "--json").answer()["points"]
    assert trainperf.sweep(gpu="a100-sxm-80gb", model="gpt2", vary=["seq=256..1024*2", "batch=1,8"]) == expected
    assert trainperf.sweep(gpu="a100-sxm-80gb", model="gpt2", vary={"seq": "256..1024*2", "batch": "1,8"}) == \
        expected
    assert [p["seq"] for p in expected] == [256, 256, 512, 512, 1024, 1024]


def test_a_point_that_does_not_fit_has_no_step_figures():
    points = trainperf.sweep(gpu="h100-sxm", model="gpt2", vary={"batch": [1, 512]})
    assert [p["fits"] for p in points] == [True, False]
    assert points[0]["step_time_ms"] > 0 and points[1]["step_time_ms"] is None
    assert points[1]["memory_GiB"] > points[0]["memory_GiB"]


def test_pandas_reads_it_as_a_table():
    pandas = pytest.importorskip("pandas")
    points = trainperf.sweep(gpu="h100-sxm", model="gpt2", vary={"batch": [1, 2, 4, 8]})
    frame = pandas.DataFrame(points)
    assert list(frame["micro_batch"]) == [1, 2, 4, 8]
    assert list(frame.columns) == list(points[0])
