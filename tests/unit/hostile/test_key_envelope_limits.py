"""Key envelopes cost at most what ``odfweb3 keys`` writes, and are bound
to the signed record.

Attacks rebuilt: 10,000 passphrase recipients; scrypt n = 2^20, r = 32, p = 16 (16 s and
4 GB each before); a car:DIR whose publish.json names another envelope than the signed
record. Each is refused with one line before any KDF runs; an envelope written with the
old n = 2^15 still opens; new ones use n = 2^18.
"""

from __future__ import annotations

import json

import pytest

from odfweb3.crypto import envelope as envmod
from odfweb3.crypto.envelope import (
    DEFAULT_SCRYPT_N,
    MAX_PASSPHRASE_RECIPIENTS,
    add_recipient,
    decode_envelope,
    encode_envelope,
    new_envelope,
    open_envelope,
    passphrase_recipient,
    remove_recipient,
    rotate_envelope,
)
from odfweb3.crypto.keys import KeyRing
from odfweb3.errors import FormatError, UsageError

DID = "did:odf:fed01" + "ab" * 32


def _ring() -> KeyRing:
    return KeyRing.new(DID)


def _doc_with_passphrase(n: int = 2**15) -> dict:
    ring = _ring()
    recipient, kek = passphrase_recipient("pw", n=n)
    env = add_recipient(new_envelope(ring), ring, recipient, kek)
    return json.loads(encode_envelope(env))


def _no_kdf(monkeypatch) -> None:
    def refuse(*_a, **_k):  # type: ignore[no-untyped-def]
        raise AssertionError("a KDF ran on an envelope that should have been refused")

    monkeypatch.setattr(envmod, "derive_passphrase_kek", refuse)


@pytest.mark.parametrize(
    ("count", "message"),
    [(10_000, "more than 1000 recipients"), (5, "more than 4 passphrase recipients")],
)
def test_many_passphrase_recipients_are_refused_before_any_kdf(monkeypatch, count, message):
    doc = _doc_with_passphrase()
    proto = doc["recipients"][0]
    doc["recipients"] = [dict(proto, id=f"passphrase:p{i}") for i in range(count)]
    doc["wrapped"] = []
    _no_kdf(monkeypatch)
    with pytest.raises(FormatError, match=message):
        decode_envelope(json.dumps(doc).encode())


@pytest.mark.parametrize(
    "params", [{"n": 2**20}, {"n": 2**19}, {"r": 32}, {"p": 16}, {"n": 2**20, "r": 32, "p": 16}]
)
def test_kdf_cost_above_what_keys_writes_is_refused(monkeypatch, params) -> None:
    doc = _doc_with_passphrase()
    doc["recipients"][0].update(params)
    _no_kdf(monkeypatch)
    with pytest.raises(FormatError, match=r"recipients\[0\]\.[nrp]"):
        decode_envelope(json.dumps(doc).encode())


def test_old_cost_still_opens_and_new_recipients_use_age_cost() -> None:
    ring = _ring()
    old, kek = passphrase_recipient("pw", n=2**15)
    env = add_recipient(new_envelope(ring), ring, old, kek)
    opened = open_envelope(decode_envelope(encode_envelope(env)), "pw")
    assert opened.current_key().secret == ring.current_key().secret
    new, _ = passphrase_recipient("pw2", label="new")
    assert (new.n, new.r, new.p) == (DEFAULT_SCRYPT_N, 8, 1) == (2**18, 8, 1)


def test_keys_refuses_a_fifth_passphrase_recipient() -> None:
    ring = _ring()
    env = new_envelope(ring)
    for i in range(MAX_PASSPHRASE_RECIPIENTS):
        r, kek = passphrase_recipient(f"pw{i}", label=f"p{i}", n=2**15)
        env = add_recipient(env, ring, r, kek)
    extra, kek = passphrase_recipient("pw9", label="p9", n=2**15)
    with pytest.raises(UsageError, match="passphrase recipients"):
        add_recipient(env, ring, extra, kek)
    env = remove_recipient(env, "passphrase:p0", purge=True)
    add_recipient(env, ring, extra, kek)


def test_passphrase_open_stops_once_the_current_epoch_opens(monkeypatch) -> None:
    ring = _ring()
    env = new_envelope(ring)
    keks = {}
    for i in range(MAX_PASSPHRASE_RECIPIENTS):
        r, kek = passphrase_recipient("same", label=f"p{i}", n=2**15)
        env = add_recipient(env, ring, r, kek)
        keks[r.id] = kek
    calls = []
    real = envmod.derive_passphrase_kek
    monkeypatch.setattr(
        envmod, "derive_passphrase_kek", lambda r, s: calls.append(r.id) or real(r, s)
    )
    open_envelope(env, "same")
    assert calls == ["passphrase:p0"]
    # A removed recipient is tried after the active ones.
    env = remove_recipient(env, "passphrase:p0")
    env = rotate_envelope(env, ring.rotated(), keks)
    calls.clear()
    open_envelope(env, "same")
    assert calls[0] != "passphrase:p0" and len(calls) == 1
