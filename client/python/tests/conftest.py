# SPDX-License-Identifier: Apache-2.0
# pytest set-up of the `daqiri` Python module's tests: the `asan` marker
# (the tests make python-asan runs under AddressSanitizer) and fixtures
# for a private daqirid, child processes and their cleanup by PID at
# teardown, even when a test fails. The helpers themselves are in
# dqtest.py.
import pytest

from dqtest import ChildPy, Daemon, Procs


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "asan: also run under AddressSanitizer (make python-asan runs "
        "`pytest -m asan` with the ASan build of the module); no torch")


@pytest.fixture
def procs():
    p = Procs()
    yield p
    p.cleanup()


@pytest.fixture
def make_daemon(tmp_path, procs):
    """A daemon not yet started: call make_config(...) if needed, then
    start(). Killed at teardown."""
    made = []

    def make():
        d = Daemon(tmp_path / f"d{len(made)}", procs)
        d.tmp.mkdir()
        made.append(d)
        return d
    yield make
    procs.cleanup()
    for d in made:
        d.cleanup()


@pytest.fixture
def daemon(make_daemon):
    """A daemon on the default config, started."""
    return make_daemon().start()


@pytest.fixture
def child_py(procs):
    """Start a child Python process: child_py(code, *args)."""
    def start(code, *args, env=None):
        return ChildPy(procs, code, args, env)
    return start
