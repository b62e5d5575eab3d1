"""``ar://MANIFEST`` opened directly (pull / verify / resolve).

Before: a path manifest id was read through the gateway's path resolution with nothing
signed checked (arlocal serves no manifest bytes: ``GET /{manifest}`` is the resolved index,
``/raw/{id}`` and ``/tx/{id}/data`` are 404), so a hostile gateway could serve any dataset
under it and ``pull`` exited 0, ``verify`` printed ``identical``. Now, on real arlocal and a
loopback proxy in front of it (tests/support/lying_proxy.py):

- a gateway serving the manifest's own bytes (``GET /raw/{id}``, as ar.io gateways do): its
  signature, id and owner are checked, then its ``refs/head`` item's (same owner), and the
  dataset is read as for ``ar://RECORD``; forged raw bytes are exit 65;
- a gateway that does not (arlocal): ``pull`` and ``verify`` refuse, exit 69, one line naming
  ``ar://RECORD_ID``, DEST untouched; with ``arweave.insecure_unverified_manifests: true``
  ``verify`` says ``unverified`` (exit 1, never ``identical``) and ``pull`` proceeds.
"""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.multihash import multihash_to_str
from odfweb3.publish.execute import publish_dataset
from odfweb3.publish.state import StateStore
from odfweb3_arweave.client.gateway import ArweaveGateway
from odfweb3_arweave.formats.ans104 import iter_bundle
from odfweb3_arweave.publish.gateway_target import GatewayTarget
from odfweb3_arweave.wallet import generate_wallet
from tests.support.lying_proxy import lying_proxy
from tests.support.nodes import free_port  # claimed, never listened on: refused

RICH = 10**15


def manifest_bytes(gw: ArweaveGateway, bundle_tx: str, manifest_id: str) -> bytes:
    """The manifest item's own data, taken from its bundle (what ``/raw/{id}`` serves)."""
    bundle = gw.get_data(bundle_tx, limit=64 << 20)
    for item in iter_bundle(io.BytesIO(bundle)):
        if item.id_b64 == manifest_id:
            return item.data
    raise AssertionError("manifest not in its bundle")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, arlocal: Any) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("ar-manifest")
    honest = create_root_dataset(root / "honest", blocks=2, data_bytes=5_000, seed=71)
    other = create_root_dataset(root / "other", blocks=3, data_bytes=5_000, seed=72)
    x, y = generate_wallet(), generate_wallet()
    for w in (x, y):
        arlocal.mint(w.address, RICH)
    gw = ArweaveGateway(arlocal.url)
    h = publish_dataset(honest.path, GatewayTarget(gw, x, StateStore(root / "sx")))
    o = publish_dataset(other.path, GatewayTarget(gw, y, StateStore(root / "sy")))
    arlocal.mine()
    hm, om = h.state.record["manifestId"], o.state.record["manifestId"]
    return {
        "root": root,
        "manifest": hm,
        "other_manifest": om,
        "raw": manifest_bytes(gw, h.state.extra["bundleTxId"], hm),
        "other_raw": manifest_bytes(gw, o.state.extra["bundleTxId"], om),
        "record": h.state.record["recordId"],
        "head": multihash_to_str(DatasetReader.open(honest.path).head()),
        "honest": honest.path,
        "other": other.path,
    }


def run(
    capsys: pytest.CaptureFixture[str], root: Path, gateway: str, *argv: str, insecure: bool = False
) -> tuple[int, str, str]:
    cfg = root / f"odfweb3-{time.monotonic_ns()}.yaml"
    dead = f"http://127.0.0.1:{free_port()}"
    arweave: dict[str, Any] = {"gateway": gateway}
    if insecure:
        arweave["insecure_unverified_manifests"] = True
    cfg.write_text(
        json.dumps(
            {
                "arweave": arweave,
                "ipfs": {"api": dead, "gateway": dead},
                "network": {"retries": 0, "deadline_s": 60},
                "state_dir": str(root / "reader-state"),
                "keystore": str(root / "reader-keys"),
            }
        )
    )
    code = main([*argv, "--config", str(cfg)], env={"HOME": str(root)})
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_without_raw_bytes_pull_and_verify_refuse(capsys, world, arlocal) -> None:  # type: ignore[no-untyped-def]
    w, ref = world, f"ar://{world['manifest']}"
    dest = w["root"] / "dest-refused"
    dest.mkdir()
    code, out, err = run(capsys, w["root"], arlocal.url, "pull", ref, str(dest))
    line = one_line(err)
    assert code == 69, out + err
    assert "path manifest" in line and "ar://RECORD_ID" in line
    assert "arweave.insecure_unverified_manifests" in line
    assert list(dest.iterdir()) == []
    code, out, err = run(
        capsys, w["root"], arlocal.url, "verify", str(w["honest"]), "--against", ref
    )
    assert code != 0 and "identical" not in out, out + err
    code, out, err = run(capsys, w["root"], arlocal.url, "resolve", ref)
    assert code == 69 and "ar://RECORD_ID" in one_line(err), out + err


def test_opt_in_reads_unverified_and_never_says_identical(capsys, world, arlocal) -> None:  # type: ignore[no-untyped-def]
    w, ref = world, f"ar://{world['manifest']}"
    code, out, err = run(
        capsys,
        w["root"],
        arlocal.url,
        "verify",
        str(w["honest"]),
        "--against",
        ref,
        "--json",
        insecure=True,
    )
    report = json.loads(out)["replicas"][0]
    assert code == 1 and report["status"] == "unverified", out + err
    dest = w["root"] / "dest-opt-in"
    code, out, err = run(capsys, w["root"], arlocal.url, "pull", ref, str(dest), insecure=True)
    assert code == 0, err
    assert (dest / "refs" / "head").read_text().strip() == w["head"]


def test_raw_manifest_bytes_are_verified_then_trusted(capsys, world, arlocal) -> None:  # type: ignore[no-untyped-def]
    w, ref = world, f"ar://{world['manifest']}"
    with lying_proxy(arlocal.url) as proxy:
        proxy.raw = {w["manifest"]: w["raw"]}
        code, out, err = run(
            capsys, w["root"], proxy.url, "verify", str(w["honest"]), "--against", ref
        )
        assert code == 0 and "identical" in out, out + err
        dest = w["root"] / "dest-raw"
        code, out, err = run(capsys, w["root"], proxy.url, "pull", ref, str(dest))
        assert code == 0, err
        assert (dest / "refs" / "head").read_text().strip() == w["head"]
        assert proxy.count("/raw/") >= 2
        code, out, err = run(capsys, w["root"], proxy.url, "resolve", ref, "--json")
        assert code == 0, err
        (result,) = json.loads(out)["results"]
        assert result["head"] == w["head"]
        assert "path manifest and its refs/head signed by" in str(result), result


def test_forged_raw_manifest_is_refused(capsys, world, arlocal) -> None:  # type: ignore[no-untyped-def]
    w, ref = world, f"ar://{world['manifest']}"
    dest = w["root"] / "dest-forged-raw"
    dest.mkdir()
    with lying_proxy(arlocal.url) as proxy:
        # Another publisher's genuine manifest JSON served as this one's own bytes.
        proxy.raw = {w["manifest"]: w["other_raw"]}
        code, out, err = run(capsys, w["root"], proxy.url, "pull", ref, str(dest))
    line = one_line(err)
    assert code == 65, out + err
    assert "path manifest" in line and "signature" in line
    assert list(dest.iterdir()) == []


def test_another_dataset_served_under_a_verified_manifest_is_refused(
    capsys, world, arlocal
) -> None:  # type: ignore[no-untyped-def]
    # The raw manifest is genuine, but the gateway resolves its paths to another dataset.
    w, ref = world, f"ar://{world['manifest']}"
    dest = w["root"] / "dest-swapped"
    dest.mkdir()
    with lying_proxy(arlocal.url) as proxy:
        proxy.raw = {w["manifest"]: w["raw"]}
        proxy.swaps = [(f"/{w['manifest']}/", f"/{w['other_manifest']}/")]
        code, out, err = run(capsys, w["root"], proxy.url, "pull", ref, str(dest))
    line = one_line(err)
    assert code == 65, out + err
    assert "refs/head" in line
    assert list(dest.iterdir()) == []
