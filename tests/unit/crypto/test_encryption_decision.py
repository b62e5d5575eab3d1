"""decide_encryption: flags, settings, this machine's record and the target's facts -> one
decision (pure), and the local settings file that records the first encrypted publish."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from odfweb3.crypto.policy import (
    EncryptionDecision,
    EncryptionFacts,
    decide_encryption,
    settle_encryption,
)
from odfweb3.errors import FormatError, UsageError
from odfweb3.publish.dataset_settings import (
    DatasetSettings,
    DatasetSettingsStore,
    decode_dataset_settings,
    encode_dataset_settings,
)
from odfweb3.publish.state import PublishState, StateStore

DID = "did:odf:fed01" + "ab" * 34
BASE = EncryptionFacts(dataset="./sec", dataset_id=DID)
ON_TARGET = replace(BASE, target="car:/o", target_encrypted=True)


def test_plain_dataset_plain_target_is_plain():
    assert decide_encryption(BASE) == decide_encryption(replace(BASE, target="ipfs:x"))
    assert decide_encryption(BASE).encrypt is False
    assert decide_encryption(BASE).refusal is None


def test_first_encrypt_is_remembered_later_ones_not():
    d = decide_encryption(replace(BASE, encrypt=True))
    assert d.encrypt and d.remember == "encrypted" and d.refusal is None
    assert decide_encryption(replace(BASE, encrypt=True, recorded=True)).remember is None


def test_recorded_without_flag_encrypts():
    d = decide_encryption(replace(BASE, recorded=True))
    assert d.encrypt and d.refusal is None and d.note and "--no-encrypt" in d.note
    # and so it stays once the target said it holds ciphertext (the second call)
    assert decide_encryption(replace(ON_TARGET, recorded=True)).encrypt


def test_target_holding_ciphertext_refuses_plain():
    d = decide_encryption(ON_TARGET)
    assert d.encrypt is False and d.refusal is not None and d.question is None
    assert f"car:/o holds ciphertext of {DID}" in d.refusal
    assert "--encrypt" in d.refusal and "--no-encrypt --yes" in d.refusal


@pytest.mark.parametrize("facts", [replace(BASE, recorded=True), ON_TARGET])
def test_no_encrypt_needs_a_confirmation(facts):
    d = decide_encryption(replace(facts, no_encrypt=True))
    assert d.refusal is not None and "--yes" in d.refusal
    assert d.question is not None and d.question.endswith("[y/N] ")
    confirmed = decide_encryption(replace(facts, no_encrypt=True, confirmed=True))
    assert confirmed == decide_encryption(BASE)  # plain, nothing to say


def test_no_encrypt_of_a_plain_dataset_asks_nothing():
    assert decide_encryption(replace(BASE, no_encrypt=True)).question is None


def test_sensitive():
    sensitive = replace(BASE, sensitive=True)
    assert "sensitive: true" in str(decide_encryption(sensitive).refusal)
    no = decide_encryption(replace(sensitive, no_encrypt=True, confirmed=True, recorded=True))
    assert no.refusal is not None and no.question is None
    assert decide_encryption(replace(sensitive, encrypt=True)).encrypt
    assert decide_encryption(replace(sensitive, recorded=True)).encrypt


def test_contradictions_and_the_arfs_scheme():
    assert "not both" in str(
        decide_encryption(replace(BASE, encrypt=True, no_encrypt=True)).refusal
    )
    arfs = replace(ON_TARGET, other_scheme=True, recorded=True, sensitive=True)
    assert decide_encryption(arfs) == EncryptionDecision(False, remember="arfs-private")
    assert decide_encryption(replace(arfs, recorded_private=True)) == EncryptionDecision(False)
    assert decide_encryption(replace(arfs, no_encrypt=True)).refusal is not None


def test_a_private_drive_dataset_needs_its_flag():
    """odfweb3 never stores the drive password: a publish without --arfs-private cannot
    follow the scheme, so it is refused (not published plain); --encrypt is fine."""
    private = replace(BASE, recorded_private=True)
    d = decide_encryption(private)
    assert d.refusal is not None and "--arfs-private" in d.refusal and d.question is None
    assert "was published as an ArFS private drive from here" in d.refusal
    assert decide_encryption(replace(private, encrypt=True)).encrypt
    no = decide_encryption(replace(private, no_encrypt=True))
    assert no.question is not None and no.refusal is not None
    assert decide_encryption(replace(private, no_encrypt=True, confirmed=True)).refusal is None


def test_the_second_call_never_turns_a_plain_decision_into_encryption():
    """The target was opened with or without a sealer: the target's facts may only add a
    refusal or a question, never switch encryption on."""
    for recorded in (False, True):
        for flags in (
            {},
            {"encrypt": True},
            {"no_encrypt": True},
            {"no_encrypt": True, "confirmed": True},
        ):
            for sensitive in (False, True):
                before = decide_encryption(
                    replace(BASE, recorded=recorded, sensitive=sensitive, **flags)
                )
                after = decide_encryption(
                    replace(ON_TARGET, recorded=recorded, sensitive=sensitive, **flags)
                )
                if before.refusal is None and after.refusal is None:
                    assert after.encrypt == before.encrypt


def test_settle_asks_once_and_carries_the_answer():
    asked: list[str] = []
    facts, d = settle_encryption(
        replace(ON_TARGET, no_encrypt=True), lambda q: asked.append(q) or True
    )
    assert len(asked) == 1 and facts.confirmed and d.encrypt is False
    with pytest.raises(UsageError, match="--yes"):
        settle_encryption(replace(ON_TARGET, no_encrypt=True), lambda q: False)
    with pytest.raises(UsageError, match="holds ciphertext"):
        settle_encryption(ON_TARGET, lambda q: pytest.fail("nothing to ask"))


# --- the local settings file ---------------------------------------------------------------

GOLDEN = (
    '{\n "datasetId": "' + DID + '",\n "encrypted": {\n  "firstTarget": "ipfs:http://n:5001",\n'
    '  "since": "2026-12-01T20:00:00+00:00"\n },\n "version": 1\n}\n'
)


def test_settings_golden_round_trip():
    s = DatasetSettings(DID, "2026-12-01T20:00:00+00:00", "ipfs:http://n:5001")
    assert encode_dataset_settings(s).decode() == GOLDEN
    assert decode_dataset_settings(json.loads(GOLDEN), "f") == s
    plain = DatasetSettings(DID)
    assert decode_dataset_settings(json.loads(encode_dataset_settings(plain)), "f") == plain
    assert not plain.encrypted and not plain.private_drive
    both = DatasetSettings(DID, "t1", "car:/a", "t2", "bundle:/b")
    doc = json.loads(encode_dataset_settings(both))
    assert doc["arfsPrivate"] == {"since": "t2", "firstTarget": "bundle:/b"}
    assert decode_dataset_settings(doc, "f") == both


@pytest.mark.parametrize(
    "doc",
    [
        [],
        {"version": 2, "datasetId": DID},
        {"version": 1, "datasetId": "x"},
        {"version": 1, "datasetId": DID, "encrypted": {"since": 5}},
        {"version": 1, "datasetId": DID, "encrypted": True},
    ],
)
def test_settings_malformed(doc):
    with pytest.raises(FormatError):
        decode_dataset_settings(doc, "f")


def test_store_remembers_once_and_is_not_a_publish_state(tmp_path):
    store = DatasetSettingsStore(tmp_path)
    assert not store.load(DID).encrypted
    first = store.remember_encrypted(DID, "car:/a", "2026-12-01T20:00:00+00:00")
    again = store.remember_encrypted(DID, "car:/b", "2026-12-02T20:00:00+00:00")
    assert first == again == store.load(DID) and first.first_encrypted_target == "car:/a"
    states = StateStore(tmp_path)
    states.save(PublishState(dataset_id=DID, target="car:/a"))
    assert [s.target for s in states.all()] == ["car:/a"]
    # a damaged file: one error naming it and what deleting it means
    store.path_for(DID).write_text("{")
    with pytest.raises(FormatError, match="deleting forgets"):
        store.load(DID)
    # another dataset's file at this one's place is refused
    other = "did:odf:fed01" + "cd" * 34
    store.path_for(other).parent.mkdir(parents=True)
    store.path_for(other).write_bytes(encode_dataset_settings(DatasetSettings(DID, "t", None)))
    with pytest.raises(FormatError, match="holds the settings of"):
        store.load(other)


def test_encrypting_over_ciphertext_with_a_new_key_is_refused():
    """A second machine with --encrypt but without the dataset's content key would make a
    new key: the target's old objects would stay under one its new envelope lacks."""
    d = decide_encryption(replace(ON_TARGET, encrypt=True, new_key=True))
    assert d.refusal is not None and "keys import" in d.refusal and "content key" in d.refusal
    assert decide_encryption(replace(BASE, encrypt=True, new_key=True)).refusal is None
    assert decide_encryption(replace(ON_TARGET, encrypt=True)).refusal is None
    recorded = replace(ON_TARGET, recorded=True, new_key=True)  # settings, but keys lost
    assert decide_encryption(recorded).refusal is not None
