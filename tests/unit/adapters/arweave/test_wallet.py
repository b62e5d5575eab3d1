"""JWK wallets: the arweave-js fixture key, errors without key material, save mode 0600."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from odfweb3.errors import ConfigError, SignatureError
from odfweb3_arweave.formats.b64 import b64url_encode
from odfweb3_arweave.wallet import (
    Wallet,
    load_wallet,
    owner_to_address,
    save_wallet,
    verify_signature,
    wallet_from_jwk,
)

from .conftest import VECTORS

ARWEAVE_JS_KEYFILE = VECTORS / "arweave_js_keyfile.json"
SECRET_FIELDS = ("d", "p", "q", "dp", "dq", "qi")


def _jwk() -> dict[str, str]:
    data: dict[str, str] = json.loads(ARWEAVE_JS_KEYFILE.read_text())
    return data


def test_arweave_js_keyfile_address() -> None:
    wallet = load_wallet(ARWEAVE_JS_KEYFILE)
    # arweave-js names the fixture after its address.
    assert wallet.address == "fOVzBRTBnyt4VrUUYadBH8yras_-jhgpmNgg-5b3vEw"
    assert wallet.owner_b64 == _jwk()["n"]
    assert len(wallet.owner) == 512
    assert owner_to_address(wallet.owner) == wallet.address


def test_jwk_round_trip() -> None:
    assert load_wallet(ARWEAVE_JS_KEYFILE).to_jwk() == _jwk()


def test_jwk_without_crt_fields_loads() -> None:
    jwk = {k: v for k, v in _jwk().items() if k not in ("dp", "dq", "qi")}
    assert wallet_from_jwk(jwk).to_jwk() == _jwk()


def test_sign_and_verify(fixed_wallet: Wallet) -> None:
    signature = fixed_wallet.sign(b"message")
    assert len(signature) == 512
    verify_signature(fixed_wallet.owner, b"message", signature)
    with pytest.raises(SignatureError):
        verify_signature(fixed_wallet.owner, b"messagf", signature)
    tampered = bytes([signature[0] ^ 1]) + signature[1:]
    with pytest.raises(SignatureError):
        verify_signature(fixed_wallet.owner, b"message", tampered)


def test_verify_accepts_any_salt_length(fixed_wallet: Wallet) -> None:
    # arweave-js under Node signs with the maximum salt length (512 - 32 - 2).
    for salt in (0, 32, 478):
        verify_signature(fixed_wallet.owner, b"m", fixed_wallet.sign(b"m", salt_length=salt))


def test_signature_by_other_wallet_fails(fixed_wallet: Wallet, session_wallet: Wallet) -> None:
    with pytest.raises(SignatureError):
        verify_signature(session_wallet.owner, b"m", fixed_wallet.sign(b"m"))


def test_generated_wallet(session_wallet: Wallet) -> None:
    assert len(session_wallet.owner) == 512
    jwk = session_wallet.to_jwk()
    assert wallet_from_jwk(jwk).address == session_wallet.address


def test_repr_hides_key_material(fixed_wallet: Wallet) -> None:
    text = repr(fixed_wallet)
    assert fixed_wallet.address in text
    for name in SECRET_FIELDS:
        assert fixed_wallet.to_jwk()[name] not in text
    assert "_key" not in text


def test_save_wallet_mode_0600_and_round_trip(fixed_wallet: Wallet, tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    save_wallet(fixed_wallet, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_wallet(path).address == fixed_wallet.address
    assert list(tmp_path.iterdir()) == [path]  # no temp file left behind
    with pytest.raises(ConfigError, match="already exists"):
        save_wallet(fixed_wallet, path)
    save_wallet(fixed_wallet, path, overwrite=True)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def _assert_no_secret(message: str) -> None:
    for name in SECRET_FIELDS:
        value = _jwk()[name]
        assert value not in message and value[:12] not in message


def _write(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "wallet.json"
    path.write_text(content)
    return path


def _small_jwk() -> dict[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    n = key.private_numbers()

    def enc(value: int) -> str:
        return b64url_encode(value.to_bytes((value.bit_length() + 7) // 8, "big"))

    return {
        "kty": "RSA",
        "n": enc(n.public_numbers.n),
        "e": "AQAB",
        "d": enc(n.d),
        "p": enc(n.p),
        "q": enc(n.q),
    }


BAD_JWKS = {
    "not-json": ("{not json " + _jwk()["d"], "not JSON"),
    "array": ("[1, 2]", "not a JWK"),
    "no-kty": (json.dumps({k: v for k, v in _jwk().items() if k != "kty"}), "no 'kty'"),
    "ec": (json.dumps({**_jwk(), "kty": "EC"}), "not 'RSA'"),
    "public-only": (json.dumps({"kty": "RSA", "n": _jwk()["n"], "e": "AQAB"}), "lacks private"),
    "bad-b64": (json.dumps({**_jwk(), "d": "+/+/" + _jwk()["d"]}), "not base64url"),
    "inconsistent": (json.dumps({**_jwk(), "p": _jwk()["q"], "q": _jwk()["p"][:-4]}), "valid key"),
    "exponent": (json.dumps({**_jwk(), "e": "Aw"}), "65537"),
}


@pytest.mark.parametrize("case", sorted(BAD_JWKS))
def test_bad_wallet_files(case: str, tmp_path: Path) -> None:
    content, expected = BAD_JWKS[case]
    path = _write(tmp_path, content)
    with pytest.raises(ConfigError, match=expected) as info:
        load_wallet(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    _assert_no_secret(message)
    assert info.value.__cause__ is None  # no chained exception that could quote the file


def test_too_small_key(tmp_path: Path) -> None:
    path = _write(tmp_path, json.dumps(_small_jwk()))
    with pytest.raises(ConfigError, match="2048 bits"):
        load_wallet(path)


def test_unreadable_wallet(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_wallet(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="cannot read"):
        load_wallet(tmp_path)  # a directory
