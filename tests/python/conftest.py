# Shared by the Python module's tests (ctest's python_module runs them with pytest): the
# built CLI, run as a program, to compare the module's answers with.
import json
import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
# ctest sets TRAINPERF_CLI; by hand, the default build's CLI.
CLI = os.environ.get("TRAINPERF_CLI", str(REPO / "build" / "bin" / "trainperf"))


class Run:
    def __init__(self, completed):
        self.status = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr

    def answer(self):
        assert self.status in (0, 3), self.stderr
        return json.loads(self.stdout)

    def error(self):
        """The one error line, as the module raises it (without the "trainperf: " prefix)."""
        assert self.status == 2, (self.status, self.stdout)
        lines = self.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("trainperf: "), self.stderr
        return lines[0][len("trainperf: "):]


def run_cli(*args):
    """`trainperf ARGS...` as a program."""
    return Run(subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=60))


@pytest.fixture
def cli():
    return run_cli
