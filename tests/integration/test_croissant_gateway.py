"""mlcroissant reads a published dataset's records through its Kubo gateway ``contentUrl``s.

The dataset is published to the suite's Kubo node; ``odfweb3 describe --format croissant``
names each data file by its gateway URL under the published root; mlcroissant (MLCommons'
loader: ``requests`` for http URLs, then the SHA-256 each FileObject states) downloads and
reads every record set.
"""

import hashlib
import json

import httpx
import mlcroissant as mlc
import pytest

from odfweb3.cli.main import main
from odfweb3.odf.builder import create_root_dataset
from tests.support.croissant import sandbox_croissant

pytestmark = pytest.mark.integration


def test_records_are_read_through_the_gateway(tmp_path, ipfs_node, capsys, monkeypatch):
    downloads = sandbox_croissant(monkeypatch, tmp_path / "cr")
    built = create_root_dataset(tmp_path / "ds", blocks=2, data_bytes=5000, seed=3131, fsync=False)
    environ = {
        "ODFWEB3_STATE_DIR": str(tmp_path / "state"),
        "ODFWEB3_KEYSTORE": str(tmp_path / "keys"),
        "ODFWEB3_IPFS_API": ipfs_node.api_url,
        "ODFWEB3_IPFS_GATEWAY": ipfs_node.gateway_url,
        "HOME": str(tmp_path),
    }
    assert main(["publish", str(built.path), "--to", "ipfs", "--json"], env=environ) == 0
    root = json.loads(capsys.readouterr().out)["locator"].removeprefix("ipfs://")
    args = ["describe", str(built.path), "--format", "croissant", "--json"]
    args += ["--ipfs", root, "--gateway", ipfs_node.gateway_url]
    assert main(args, env=environ) == 0
    doc = json.loads(capsys.readouterr().out)["croissant"]
    urls = [fo["contentUrl"] for fo in doc["distribution"]]
    assert urls and all(u.startswith(f"{ipfs_node.gateway_url}/ipfs/{root}/data/") for u in urls)
    for fo in doc["distribution"]:
        # the gateway serves the very bytes the document's SHA-256 names
        body = httpx.get(fo["contentUrl"], timeout=60).content
        assert hashlib.sha256(body).hexdigest() == fo["sha256"]
    f = tmp_path / "croissant.json"
    f.write_text(json.dumps(doc))
    ds = mlc.Dataset(jsonld=str(f))
    assert not ds.metadata.ctx.issues.errors
    offsets = [
        int(rec[f"{rs.uuid}/offset"])
        for rs in ds.metadata.record_sets
        for rec in ds.records(rs.uuid)
    ]
    assert offsets == list(range(len(offsets))) and offsets
    # mlcroissant downloaded each file over http (its cache holds one per contentUrl)
    assert len(list(downloads.iterdir())) == len(urls)
