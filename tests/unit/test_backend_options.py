"""Each backend's own options type: its CLI options set its fields, the configuration fills
the defaults, and only that backend reads them (docs/design.md, "Backends")."""

import dataclasses
import json
from pathlib import Path

import pytest

from odfweb3.api.publishing import PublishOptions
from odfweb3.backends import TargetOptions, backend_options, declarations
from odfweb3.config import load_config
from odfweb3.errors import UsageError
from odfweb3_arweave.declaration import ArweaveOptions
from odfweb3_ipfs.declaration import IpfsOptions


def test_every_cli_option_sets_a_field_of_its_backends_options_and_of_the_library() -> None:
    library = {f.name for f in dataclasses.fields(PublishOptions)}
    for declared in declarations():
        assert declared.options_type is not None, declared.name
        own = {f.name for f in dataclasses.fields(declared.options_type)}
        dests = {o.dest for o in declared.publish_options}
        assert dests == own, declared.name  # no option without a field, no field without one
        assert own <= library, declared.name
        declared.options_type()  # every field has a default


def test_the_configuration_fills_what_no_flag_gave(tmp_path: Path) -> None:
    cfg = tmp_path / "odfweb3.yaml"
    cfg.write_text(json.dumps({"ipfs": {"cid_profile": "unixfs-v0-2015"}}))
    config = load_config(cfg, env={"ODFWEB3_ARWEAVE_WALLET": str(tmp_path / "w.json")})
    values = {f.name: getattr(PublishOptions(), f.name) for f in dataclasses.fields(PublishOptions)}
    ipfs, arweave = backend_options(values, config)
    assert ipfs == IpfsOptions(cid_version=0, cid_profile="unixfs-v0-2015")
    assert arweave == ArweaveOptions(wallet=tmp_path / "w.json")
    # A flag wins over the configuration.
    given = {**values, "wallet": tmp_path / "mine.json", "max_cost": 7}
    assert backend_options(given, config)[1] == ArweaveOptions(tmp_path / "mine.json", 7)


def test_a_contradictory_profile_is_refused_whatever_the_target() -> None:
    with pytest.raises(UsageError, match="unixfs-v1-2025"):
        backend_options(
            {"cid_profile": "unixfs-v1-2025", "cid_version": 0}, load_config(None, env={})
        )


def test_a_target_reads_only_its_own_options_and_the_defaults_when_none_is_given() -> None:
    options = TargetOptions(backends=(IpfsOptions(cid_version=0), ArweaveOptions(max_cost=3)))
    assert options.own(IpfsOptions) == IpfsOptions(cid_version=0)
    assert options.own(ArweaveOptions) == ArweaveOptions(max_cost=3)
    assert TargetOptions().own(ArweaveOptions) == ArweaveOptions()
