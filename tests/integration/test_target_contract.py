"""One contract, every publish target: the same sequences run against each target class.

The targets (``odfweb3.publish.execute.PublishTarget``): ``car:DIR`` (``CarTarget``),
``bundle:DIR`` (``BundleTarget``), the Kubo node (``IpfsNodeTarget``, the session's Kubo),
the Arweave gateway (``GatewayTarget``, the session's arlocal) and the Turbo bundler
(``TurboTarget``: the real turbo-upload-service of ``tests/support/turbo.py``, bundling into
its own arlocal, which the target reads as its gateway); ``pinning:NAME`` (``PinningTarget``
over the suite's IPFS Cluster) runs these same functions from
``tests/integration/cluster/test_target_contract_pinning.py``, beside the cluster's fixtures.
All are driven through the library's
``publish_dataset`` with a fresh dataset, keys and wallet per test. What each target names
is read back through a fresh instance's ``inspect`` (what the next publish trusts).

The contract:
- nothing new sends nothing: a second publish of the same head plans nothing, keeps the
  record every target reports (``RemoteView.record``: the plan decides, ``keep_record``)
  and writes nothing (OUT_DIR byte for byte; no write request to the node or gateway,
  counted by a loopback proxy in front of the real one);
- a publish interrupted after its upload (Ctrl-C before ``commit``) never names a head
  whose content is not all there: the previous head stays named (Arweave: the bundle holds
  the record, so the new head may be named, whole); the rerun publishes the new head and
  sends none of the old head's objects;
- compare-and-set: a rival that publishes after we planned and before we upload wins, and
  our publish is a ``ConflictError`` (exit 75); the target then names the rival's head. A
  rival on this machine (the same state, through its state home: ``OUT_DIR/publish.json``,
  or the network targets' private state, :mod:`odfweb3.publish.state_home`) is refused
  before anything of ours is sent (no write request reaches the node, gateway or bundler);
- one publisher at a time: a live process holding the target's lock (``OUT_DIR/.publish.lock``,
  ``<state>.lock``) makes our publish a ``ConflictError`` with nothing sent.

Where a target does not meet the contract yet, the table below says exactly how
(``COMPARE_AND_SET``). The crash and the rival are the one seam
the suite steps into, a method of our target instance (a process killed or outrun at that
point; the nodes are real).
"""

from __future__ import annotations

import os
import shutil
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from odfweb3.crypto.keystore import Keystore
from odfweb3.errors import ConflictError
from odfweb3.odf.builder import append_blocks, create_root_dataset
from odfweb3.odf.chain import iter_objects, walk_chain
from odfweb3.odf.layout import DatasetReader
from odfweb3.publish.execute import PublishTarget, publish_dataset
from odfweb3.publish.out_dir import OutDirHome
from odfweb3.publish.state import StateStore, load_summary_file
from odfweb3.publish.state_home import StateHome
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.client.turbo import TurboClient
from odfweb3_arweave.publish.bundle_target import BundleTarget
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.publish.turbo_target import TurboTarget
from odfweb3_arweave.wallet import generate_wallet
from odfweb3_ipfs.client.kubo import KuboClient
from odfweb3_ipfs.publish.car_target import CarTarget
from odfweb3_ipfs.publish.node_target import IpfsNodeTarget
from odfweb3_ipfs.publish.pinning_target import PinningTarget
from tests.support.lying_proxy import LyingProxy, lying_proxy

RICH = 10**15
KINDS = ["car", "bundle", "ipfs", "arweave", "turbo"]
# Targets whose name moves only in commit (the upload stores objects the name does not
# reach yet); Arweave's upload posts one bundle that holds the record too, and Turbo's
# items the record last.
COMMIT_MAKES_VISIBLE = {"car", "bundle", "ipfs"}

# Which targets refuse a publish planned on a view a rival then moved (compare-and-set).
# Turbo does once the rival's upload is on the gateway it reads (the bundler seeded and its
# arlocal mined it; before that nobody but the bundler knows of the rival).
# car:DIR and bundle:DIR through their one state home (odfweb3.publish.out_dir): the
# publish.json inspect read must still be there at upload and at commit.
COMPARE_AND_SET = {"car", "bundle", "ipfs", "arweave", "turbo"}
# Which targets keep their state in this machine's state directory (a StateHome) rather than
# in the directory they write (OutDirHome).
PRIVATE_STATE = {"ipfs", "arweave", "turbo"}
# Requests that write: Kubo RPC commands that store, pin or name; Arweave transaction posts.
_KUBO_WRITES = ("block/put", "dag/import", "name/put", "routing/put", "pin/add", "/api/v0/add")


def _arweave_write(path: str) -> bool:
    return path == "/tx" or path.startswith(("/tx?", "/chunk"))


def _turbo_write(path: str) -> bool:
    # POST /v1/tx posts an item; every /v1/chunks request belongs to a chunked upload.
    return path.partition("?")[0] == "/v1/tx" or path.startswith("/v1/chunks")


@dataclass
class Env:
    kind: str
    tmp: Path
    ipfs_node: Any  # tests/support/nodes.py IpfsNode
    arlocal: Any  # ArlocalNode
    seed: int
    turbo: Any = None  # tests/support/turbo.py TurboNode, for the turbo kind
    # Turbo: a counting proxy in front of the gateway it reads, while watched.
    read_proxy: LyingProxy | None = None

    def __post_init__(self) -> None:
        self.keystore = Keystore(self.tmp / "keys")
        self.states = StateStore(self.tmp / "state")
        self.wallet = generate_wallet()
        if self.kind in ("bundle", "arweave"):
            self.arlocal.mint(self.wallet.address, RICH)
        built = create_root_dataset(self.tmp / "ds", blocks=3, data_bytes=20_000, seed=self.seed)
        assert built.keypair is not None
        self.dataset_id = str(built.keypair.dataset_id)
        self.keystore.store(self.dataset_id, built.keypair.signing_key())
        self.ds = built.path

    def target(self, via: str | None = None) -> PublishTarget:
        """A fresh instance of this kind's target (``via``: a proxy URL in front of the node
        or gateway)."""
        if self.kind == "car":
            return CarTarget(self.tmp / "out", self.keystore)
        if self.kind == "bundle":
            return BundleTarget(self.tmp / "out", self.wallet)
        if self.kind == "ipfs":
            api = via or self.ipfs_node.api_url
            return IpfsNodeTarget(
                KuboClient(api),
                self.keystore,
                self.states,
                gateway_url=self.ipfs_node.gateway_url,
                tmp_dir=self.tmp,
            )
        if self.kind == "turbo":
            reads = self.read_proxy.url if self.read_proxy is not None else None
            gateway = ArweaveGateway(reads or self.turbo.arlocal.url)
            return TurboTarget(
                gateway, TurboClient(via or self.turbo.url), self.wallet, self.states
            )
        url = via or self.arlocal.url
        return GatewayTarget(ArweaveGateway(url), self.wallet, self.states)

    def publish(self, ds: Path | None = None, target: PublishTarget | None = None):
        done = publish_dataset(ds or self.ds, target or self.target())
        self.settle(done.state.record.get("recordId") if done.state is not None else None)
        return done

    def settle(self, record_id: str | None = None) -> None:
        if self.kind == "arweave":
            self.arlocal.mine()
        elif self.kind == "turbo":
            # The bundler posts its bundle and seeds it to its arlocal, which then mines it:
            # the gateway the target reads shows the upload.
            if record_id is not None:
                self.turbo.wait_seeded(record_id)
            self.turbo.arlocal.mine(20)

    def named_head(self) -> bytes | None:
        """The head the target names now, as the next publish sees it."""
        local = DatasetReader.open(self.ds).head()
        return self.target().inspect(self.dataset_id, local).head

    @contextmanager
    def watched(self) -> Iterator[LyingProxy | None]:
        """A counting proxy in front of the node or gateway (None for a directory)."""
        if self.kind in ("car", "bundle"):
            yield None
            return
        if self.kind == "turbo":
            # Writes go to the bundler, reads (inspect's) to the gateway: both watched.
            with lying_proxy(self.turbo.url) as proxy, lying_proxy(self.turbo.arlocal.url) as g:
                self.read_proxy = g
                try:
                    yield proxy
                finally:
                    self.read_proxy = None
            return
        upstream = self.ipfs_node.api_url if self.kind == "ipfs" else self.arlocal.url
        with lying_proxy(upstream) as proxy:
            yield proxy

    def asked(self, proxy: LyingProxy) -> list[str]:
        """Every request the watched publish made (the bundler's and the gateway's)."""
        return proxy.requests + (self.read_proxy.requests if self.read_proxy else [])

    def writes(self, proxy: LyingProxy) -> list[str]:
        if self.kind == "ipfs":
            paths = [r.partition("?")[0] for r in proxy.requests]
            return [p for p in paths if any(w in p for w in _KUBO_WRITES)]
        if self.kind == "turbo":
            return [r for r in proxy.requests if _turbo_write(r)]
        return [r for r in proxy.requests if _arweave_write(r)]

    def out_dir(self) -> dict[str, bytes]:
        out = self.tmp / "out"
        return {
            str(p.relative_to(out)): p.read_bytes()
            for p in out.rglob("*")
            if p.is_file() and p.name != ".publish.lock"
        }


@pytest.fixture(params=KINDS)
def env(request, tmp_path: Path, ipfs_node, arlocal) -> Env:
    # A seed of its own per test (the seed chooses the dataset's key, so its IPNS name on
    # the session's shared Kubo node), the same on every run.
    seed = 10**6 + zlib.crc32(request.node.nodeid.encode()) % 10**6
    # The bundler (postgres, redis, moto, its own arlocal) is started only for its kind.
    turbo = request.getfixturevalue("turbo") if request.param == "turbo" else None
    return Env(request.param, tmp_path, ipfs_node, arlocal, seed, turbo)


def stepped_in(target: PublishTarget, method: str, before: Callable[[], None]) -> PublishTarget:
    """``target`` whose ``method`` (``upload``, ``commit``) first runs ``before``."""
    real = getattr(target, method)

    def wrapped(*args, **kwargs):
        before()
        return real(*args, **kwargs)

    setattr(target, method, wrapped)
    return target


def ctrl_c() -> None:
    raise KeyboardInterrupt


def test_nothing_new_sends_nothing(env: Env) -> None:
    # Both publishes through the proxy: a network target is saved under its URL.
    with env.watched() as proxy:
        via = proxy.url if proxy is not None else None
        first = env.publish(target=env.target(via))
        assert not first.plan.is_noop
        before = env.out_dir() if proxy is None else {}
        if proxy is not None:
            proxy.requests.clear()
            if env.read_proxy is not None:
                env.read_proxy.requests.clear()
        again = publish_dataset(env.ds, env.target(via))
        assert again.plan.is_noop and again.plan.send == ()
        if proxy is not None:
            assert env.asked(proxy), "the re-publish asked the node nothing: not watched"
            writes = env.writes(proxy)
        else:
            after = env.out_dir()
            writes = sorted(
                k for k in before.keys() | after.keys() if before.get(k) != after.get(k)
            )
    assert writes == []
    # Every target reports the record it serves (IPNS: no new sequence; Arweave: the last
    # upload's record, which never expires), and the plan, not the target, keeps it.
    assert again.view.record is not None and again.plan.keep_record
    assert env.named_head() == DatasetReader.open(env.ds).head()
    # The state as written is what the target's typed reading gives back: parsed where its
    # state home reads the file, serialized where it writes it, the same JSON.
    _reads_back_as_written(env, env.target(via))


def _reads_back_as_written(env: Env, target: PublishTarget) -> None:
    if isinstance(target, PinningTarget):
        for pins in target._homes.values():  # each service's pin state, then the node's
            saved = env.states.load(env.dataset_id, pins.target)
            assert saved is not None
            typed = pins.codec.serialize(pins.codec.parse(saved, "pin state"))
            assert typed.to_json() == saved.to_json()
        target = target.node
    if isinstance(target, (CarTarget, BundleTarget)):
        home: OutDirHome[Any, Any] | StateHome[Any, Any] = target.home
        raw, doc = load_summary_file(target.home.summary_path)
        assert raw is not None and {"record", "extra"} <= doc.keys()
    else:
        assert isinstance(target, (IpfsNodeTarget, GatewayTarget))
        home = target.home
        raw = env.states.load(env.dataset_id, target.name)
        assert raw is not None
    codec = home.codec
    again = codec.serialize(codec.parse(raw, "state"))
    assert (again.record, again.extra) == (raw.record, raw.extra)
    assert again.to_json() == raw.to_json()


def test_an_interrupted_publish_leaves_a_whole_head_named_and_the_rerun_publishes(
    env: Env,
) -> None:
    env.publish()
    old = DatasetReader.open(env.ds).head()
    append_blocks(env.ds, 2, data_bytes=3_000, seed=env.seed + 1)
    new = DatasetReader.open(env.ds).head()
    with pytest.raises(KeyboardInterrupt):
        publish_dataset(env.ds, stepped_in(env.target(), "commit", ctrl_c))
    env.settle()
    named = env.named_head()
    # IPFS and the directories: nothing visible before the commit. Arweave: the upload is
    # one bundle holding the record, visible whole or not at all (docs/design.md,
    # "Commit order"), so the new head may already be named, never a part of it.
    assert named == old if env.kind in COMMIT_MAKES_VISIBLE else named in (old, new)
    rerun = env.publish()
    assert rerun.plan.head == new and env.named_head() == new
    # The rerun plans from what the target holds: the old head's objects are not sent again.
    assert not ({o.path for o in rerun.plan.send} & _objects_at(env, old))
    assert env.publish().plan.is_noop


def _objects_at(env: Env, head: bytes) -> set[str]:
    reader = DatasetReader.open(env.ds)
    chain = list(walk_chain(reader))
    older = chain[[e.hash for e in chain].index(head) :]
    return {o.path for o in iter_objects(older)}


def _published_then_diverged(env: Env, seed: int) -> tuple[Path, Path, bytes]:
    """Publish the dataset, then two copies of it each one block further, diverged:
    ours and a rival's (seeds ``seed`` and ``seed + 1`` past the env's); the rival's head."""
    env.publish()
    ours, theirs = env.tmp / "ours", env.tmp / "theirs"
    shutil.copytree(env.ds, ours)
    shutil.copytree(env.ds, theirs)
    append_blocks(ours, 1, data_bytes=2_000, seed=env.seed + seed)
    append_blocks(theirs, 1, data_bytes=2_000, seed=env.seed + seed + 1)
    rival_head = DatasetReader.open(theirs).head()
    assert rival_head is not None
    return ours, theirs, rival_head


@pytest.mark.parametrize("env", sorted(COMPARE_AND_SET), indirect=True)
def test_a_rival_publish_after_our_plan_is_a_conflict(env: Env) -> None:
    ours, theirs, rival_head = _published_then_diverged(env, 2)

    def rival() -> None:
        # Another machine publishes a diverged head after we planned, before we upload.
        done = publish_dataset(theirs, env.target())
        env.settle(done.state.record.get("recordId") if done.state is not None else None)

    with pytest.raises(ConflictError):
        publish_dataset(ours, stepped_in(env.target(), "upload", rival))
    env.settle()
    assert env.named_head() == rival_head


@pytest.mark.parametrize("env", sorted(PRIVATE_STATE), indirect=True)
def test_a_rival_on_this_machine_is_refused_before_anything_is_sent(env: Env) -> None:
    ours, theirs, rival_head = _published_then_diverged(env, 4)
    with env.watched() as proxy:
        assert proxy is not None
        via = proxy.url

        def rival() -> None:
            # Another process of this machine, the same state directory and the same
            # target (its name is the URL), publishes after we planned.
            done = publish_dataset(theirs, env.target(via))
            env.settle(done.state.record.get("recordId") if done.state is not None else None)
            proxy.requests.clear()

        with pytest.raises(ConflictError, match=r"another publish of .* saved .* meanwhile"):
            publish_dataset(ours, stepped_in(env.target(via), "upload", rival))
        assert env.writes(proxy) == []  # refused by the state home: nothing of ours sent
    env.settle()
    assert env.named_head() == rival_head


def test_a_live_publisher_holds_the_target(env: Env) -> None:
    env.publish()
    append_blocks(env.ds, 1, data_bytes=2_000, seed=env.seed + 6)
    with env.watched() as proxy:
        via = proxy.url if proxy is not None else None
        target = env.target(via)
        lock = _lock_of(env, target)
        lock.write_text(str(os.getppid()))  # a live process, not us: publishing now
        if proxy is not None:
            proxy.requests.clear()
        with pytest.raises(ConflictError, match=r"another publisher \(pid"):
            publish_dataset(env.ds, target)
        if proxy is not None:
            assert env.writes(proxy) == []
        lock.unlink()  # it finished: our publish goes through
        env.publish(target=env.target(via))
    assert env.named_head() == DatasetReader.open(env.ds).head()


def _lock_of(env: Env, target: PublishTarget) -> Path:
    """The lock file of ``target``'s state home for the dataset."""
    if isinstance(target, (CarTarget, BundleTarget)):
        return env.tmp / "out" / ".publish.lock"
    node = target.node if isinstance(target, PinningTarget) else target
    assert isinstance(node, (IpfsNodeTarget, GatewayTarget))
    return node.home.path(env.dataset_id).with_suffix(".lock")
