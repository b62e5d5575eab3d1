"""Session fixtures for the real test nodes, usable by tests anywhere under tests/.

`ipfs_node`: Kubo v0.43.1 (built by `make gonodes`) started by the session with `--offline` (or
the external node named by ODFWEB3_IPFS_API / ODFWEB3_IPFS_GATEWAY, e.g. kubo-docker). `arlocal`:
a fresh arlocal gateway (`make nodes`). `turbo`: the real Turbo bundler with its own arlocal
(`make turbonode`). A missing install fails the tests that use them (never a
skip). Tests that need two connected Kubo nodes start their own (tests/support/kubo.py).

Every test runs with its own HOME (`_own_home`): nothing a test publishes, remembers or hints
at, and no key it generates, lands in the user's ``~/.local/share/odfweb3`` (commands called with
``env={}`` read their defaults from the process's HOME). Session nodes are started before it
and keep the real HOME.
"""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from tests.support.kubo import start_kubo
from tests.support.nodes import ArlocalNode, IpfsNode, external_ipfs, start_arlocal
from tests.support.turbo import TurboNode, start_turbo

# No timing assertions in tests: Hypothesis's default 200 ms deadline per example (and its
# too-slow health check) failed property tests on a loaded 2-core CI machine, not on a bug.
settings.register_profile("odfweb3", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("odfweb3")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # A suite started in the background (`make test &`, nohup, a script's `cmd &`) inherits
    # SIGINT ignored, and Python installs its KeyboardInterrupt handler only when SIGINT is not
    # ignored: every odfweb3 the tests start would then ignore Ctrl-C as it should (a
    # background job is not meant to die of the terminal's Ctrl-C), and the Ctrl-C tests
    # (a publish and a pull sent SIGINT) saw exit 0 and a hang. A handler, unlike SIG_IGN, is
    # reset to the default at exec: the children get the SIGINT a terminal's user gives them.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # pytest keeps only a user's three newest base temp directories (/tmp/pytest-of-USER/),
    # so a second run on the same machine (another checkout, a benchmark) deleted the first
    # run's node repositories and datasets under it while they were in use. Each run gets a
    # base directory of its own (before the tmp_path plugin reads the option), removed when
    # the run passes and kept, for a look, when it fails.
    if config.option.basetemp is None:
        config.option.basetemp = tempfile.mkdtemp(prefix="odfweb3-pytest-")
        config.stash[_OWN_BASETEMP] = config.option.basetemp


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    session.config.stash[_PASSED] = exitstatus in (0, 5)  # 5: no test ran


def pytest_unconfigure(config: pytest.Config) -> None:
    own = config.stash.get(_OWN_BASETEMP, None)
    if own is not None and config.stash.get(_PASSED, False):
        shutil.rmtree(own, ignore_errors=True)


# The fixtures that start real nodes (here and in tests/integration/cluster/conftest.py).
NODE_FIXTURES = frozenset({"ipfs_node", "arlocal", "turbo", "ipfs_cluster", "publisher"})
_INTEGRATION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "integration") + os.sep


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # `-m "not integration"` (make unit) must leave exactly the tests that need Python alone:
    # everything under tests/integration carries the marker, and a test elsewhere that uses a
    # node fixture without it is a collection error naming it (it belongs in tests/integration).
    misplaced = []
    for item in items:
        if str(item.path).startswith(_INTEGRATION):
            item.add_marker(pytest.mark.integration)
        elif NODE_FIXTURES & set(getattr(item, "fixturenames", ())) and not any(
            item.iter_markers("integration")
        ):
            misplaced.append(item.nodeid)
    if misplaced:
        raise pytest.UsageError(
            "tests using a node fixture outside tests/integration without "
            f"@pytest.mark.integration: {', '.join(misplaced)}"
        )


_CLUSTER = "tests/integration/cluster/"


def worker_group(nodeid: str) -> str:
    """The group a test runs in under `make test WORKERS=2` (`-n 2 --dist loadgroup`): the
    tests of one group run one after the other on one worker, and every worker starts the
    session nodes its own tests use. All IPFS Cluster tests (3 Kubo daemons + 3 cluster
    peers) are one group, so one worker starts the cluster; any other test goes with its
    module (its module fixtures are made once), as `--dist loadfile` would."""
    if "@" in nodeid:  # an xdist_group mark, should xdist's suffix ever reach the nodeid
        return nodeid.rsplit("@", 1)[1]
    if nodeid.startswith(_CLUSTER):
        return "cluster"
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    # xdist 3.8's loadgroup names a test's group by rewriting `item._nodeid`, which pytest 9
    # no longer reads (Node.nodeid is `str(self._id)`): the groups were lost and loadgroup
    # spread every test one by one. The same scheduling with our groups (`_split_scope` is
    # LoadScopeScheduling's documented extension point).
    if config.getoption("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class _Groups(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    return _Groups(config, log)


_OWN_BASETEMP = pytest.StashKey[str]()
_PASSED = pytest.StashKey[bool]()


@pytest.fixture(autouse=True)
def _own_home(tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", os.path.join(tmp_path, "home"))
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "ODFWEB3_STATE_DIR", "ODFWEB3_KEYSTORE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def ipfs_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IpfsNode]:
    """A running IPFS node: `api_url`, `gateway_url`, `kind` ("js-ipfs" / "kubo"), `repo_path`."""
    api = os.environ.get("ODFWEB3_IPFS_API")
    if api:
        gateway = os.environ.get("ODFWEB3_IPFS_GATEWAY")
        if not gateway:
            raise pytest.UsageError("ODFWEB3_IPFS_API is set: set ODFWEB3_IPFS_GATEWAY too")
        yield external_ipfs(api, gateway)
        return
    with start_kubo(tmp_path_factory.mktemp("kubo")) as node:
        yield node


@pytest.fixture(scope="session")
def arlocal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ArlocalNode]:
    """A fresh arlocal gateway: `url`, `mint(address, winston)`, `mine(blocks=1)`, ..."""
    with start_arlocal(tmp_path_factory.mktemp("arlocal")) as node:
        yield node


@pytest.fixture(scope="session")
def turbo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TurboNode]:
    """The real Turbo bundler (`make turbonode`) bundling into its own arlocal: `url`,
    `arlocal`, `address` (its receipt key), `wait_seeded(id)`, `wait_status(id, state)`."""
    with start_turbo(tmp_path_factory.mktemp("turbo")) as node:
        yield node
