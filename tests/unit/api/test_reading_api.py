"""The library's read and status calls carry the decisions the CLI used to make: a remote's
name read as its directory, who signed a record checked, a key envelope refused where the
record names its own, the first replica as the reference, and status's odd entries as
warnings with typed rows. Offline targets (car:DIR, bundle:DIR): no node needed."""

from pathlib import Path

import pytest

from odfweb3 import api
from odfweb3.errors import ReplicaMismatch, UsageError
from odfweb3.odf.builder import create_root_dataset
from odfweb3.publish.remotes import Remotes
from odfweb3.publish.state import StateStore


@pytest.fixture
def published(tmp_path: Path) -> tuple[api.Config, Path, str]:
    config = api.Config(home=tmp_path / "home")
    create_root_dataset(tmp_path / "ds", blocks=2, seed=7)
    out = f"car:{tmp_path}/out"
    api.publish(tmp_path / "ds", out, config=config)
    return config, tmp_path / "ds", out


def test_pull_reads_a_remote_as_its_directory_and_says_who_signed(
    published: tuple[api.Config, Path, str], tmp_path: Path
) -> None:
    config, _, out = published
    Remotes(config.state_dir).add("origin", out)
    said: list[str] = []
    report = api.pull(
        "origin", tmp_path / "copy", config=config, hooks=api.Hooks(debug=said.append)
    )
    assert report.ref == out
    # An example dataset's ID is not a key: the record is signed by this keystore's key.
    signer = report.signer
    assert signer is not None and not signer.dataset_key and signer.local_key is not None
    assert report.result.new_blocks == 6 and not report.up_to_date
    assert report.to_json()["signedBy"]["name"] == signer.name
    assert said == [
        f"{out}: record signed by {signer.name}, this machine's key {signer.local_key} "
        "(not the dataset's own key)"
    ]
    again = api.pull("origin", tmp_path / "copy", config=config)
    assert again.up_to_date and again.to_json()["upToDate"] is True


def test_pull_refuses_another_signer_than_expected_and_writes_nothing(
    published: tuple[api.Config, Path, str], tmp_path: Path
) -> None:
    config, _, out = published
    with pytest.raises(ReplicaMismatch, match="not --expect-name k51other"):
        api.pull(out, tmp_path / "copy", config=config, expect_name="k51other")
    assert not (tmp_path / "copy").exists()


def test_a_key_envelope_is_refused_for_a_reference_naming_its_own(
    published: tuple[api.Config, Path, str], tmp_path: Path
) -> None:
    config, _, out = published
    options = api.ReadOptions(key_envelope_from=str(tmp_path / "no-such-envelope"))
    with pytest.raises(UsageError, match=f"{out} names its own key envelope: drop the option"):
        api.pull(out, tmp_path / "copy", config=config, options=options)
    # An ipfs:// reference takes one: the envelope is then read (here: not there).
    from odfweb3.errors import NotFound
    from odfweb3.read.resolve import key_envelope_for

    with pytest.raises(NotFound, match="cannot read it"):
        key_envelope_for(str(tmp_path / "no-such-envelope"), ["ipfs://bafy"], config)


def test_verify_without_a_dataset_compares_with_the_first_replica(
    published: tuple[api.Config, Path, str], tmp_path: Path
) -> None:
    config, ds, out = published
    api.pull(out, tmp_path / "copy", config=config)
    report = api.verify(None, [out, str(tmp_path / "copy")], config=config, deep=True)
    assert report.ok and report.exit_code == 0
    assert report.refs == (str(tmp_path / "copy"),) and len(report.seconds) == 1
    assert [r.status for r in report.replicas] == ["identical"]
    with pytest.raises(UsageError, match="at least two --against"):
        api.verify(None, [out], config=config)
    with pytest.raises(UsageError, match="give --against REF"):
        api.verify(ds, [], config=config)


def test_verify_reads_a_node_remote_through_this_machines_record_only(
    published: tuple[api.Config, Path, str],
) -> None:
    config, ds, _ = published
    Remotes(config.state_dir).add("live", "ipfs")
    with pytest.raises(UsageError, match="was never published to ipfs from here"):
        api.verify(ds, ["live"], config=config)
    with pytest.raises(UsageError, match="give the local DATASET"):
        api.verify(None, ["live", "live"], config=config)


def test_status_report_rows_are_typed_and_odd_entries_are_warnings(
    published: tuple[api.Config, Path, str], tmp_path: Path
) -> None:
    config, ds, out = published
    # A damaged node state beside the good offline one: one warning, the other still shown.
    bad = StateStore(config.state_dir).path_for("did:odf:fed01cccc", "ipfs:http://node")
    bad.parent.mkdir(parents=True)
    bad.write_text('{"version": 99}')
    said: list[str] = []
    report = api.status_report(config=config, online=False, hooks=api.Hooks(warn=said.append))
    assert [r.target for r in report.targets] == [out]
    row = report.targets[0]
    assert row.up_to_date and row.local_path == str(ds.absolute()) and row.name
    assert row.objects is not None
    assert len(report.damaged) == 1 and report.exit_code == report.damaged[0][1].exit_code
    assert len(said) == 1 and said[0].endswith("(skipped)")
    data = report.to_json()
    assert data["warnings"] == 1 and data["targets"][0]["expiresSoon"] is False
    assert list(data["targets"][0])[:3] == ["datasetId", "target", "remotes"]
    # The saved states alone, the damaged one raised.
    from odfweb3.api.states import saved_states
    from odfweb3.errors import FormatError

    with pytest.raises(FormatError):
        saved_states(config)
