"""``odfweb3 keys``: identities, recipients, rotation, export/import, through main()."""

from __future__ import annotations

import json
import stat

from odfweb3.cli.main import main
from odfweb3.crypto.envelope import decode_envelope, open_envelope
from odfweb3.crypto.keyfiles import ContentKeyStore, IdentityStore

DID = "did:odf:fed01" + "ab" * 32


def run(capsys, env, *argv):
    code = main(["--json", *argv], env=env)
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_keys_workflow(capsys, tmp_path):
    ks = tmp_path / "keys"
    env = {"ODFWEB3_KEYSTORE": str(ks), "HOME": str(tmp_path)}
    code, alice, _ = run(capsys, env, "keys", "identity", "new", "alice")
    assert code == 0 and alice["publicKey"].startswith("odf-x25519-pub:")
    _, bob, _ = run(capsys, env, "keys", "identity", "new", "bob")
    code, listed, _ = run(capsys, env, "keys", "identity", "list")
    assert [i["name"] for i in listed["identities"]] == ["alice", "bob"]
    code, exported, _ = run(capsys, env, "keys", "identity", "export", "bob")
    assert exported["publicKey"] == bob["publicKey"]

    assert run(capsys, env, "keys", "recipients", "add", DID, "alice")[0] == 0
    code, out, _ = run(capsys, env, "keys", "recipients", "add", DID, bob["publicKey"])
    assert code == 0 and [r["id"] for r in out["recipients"]] == [alice["id"], bob["id"]]
    pw_env = env | {"ODFWEB3_PASSPHRASE": "a long passphrase"}
    code, out, _ = run(capsys, pw_env, "keys", "recipients", "add", DID, "--passphrase")
    assert code == 0 and out["recipients"][2]["id"] == "passphrase:default"

    code, out, err = run(capsys, env, "keys", "recipients", "remove", DID, bob["id"])
    assert code == 0 and out["currentEpoch"] == 2
    assert "can still read" in err
    by_id = {r["id"]: r for r in out["recipients"]}
    assert by_id[bob["id"]]["epochs"] == [1] and not by_id[bob["id"]]["active"]
    assert by_id[alice["id"]]["epochs"] == [1, 2]
    assert by_id["passphrase:default"]["epochs"] == [1, 2]  # rotation did not need it again

    code, out, _ = run(capsys, env, "keys", "rotate", DID)
    assert code == 0 and out["epochs"] == [1, 2, 3]
    code, out, _ = run(capsys, env, "keys", "recipients", "list", DID)
    assert {r["id"]: r["epochs"] for r in out["recipients"]}[alice["id"]] == [1, 2, 3]

    stored = ContentKeyStore(ks).load(DID)
    bob_ring = open_envelope(stored.envelope, IdentityStore(ks).load("bob"))
    assert bob_ring.epochs == [1]

    # export wrapped by a passphrase, import elsewhere; the wrong passphrase fails
    exp = tmp_path / "export.json"
    ex_env = env | {"ODFWEB3_PASSPHRASE": "export pass"}
    assert run(capsys, ex_env, "keys", "export", DID, "--out", str(exp))[0] == 0
    assert stat.S_IMODE(exp.stat().st_mode) == 0o600
    assert decode_envelope(exp.read_bytes()).dataset_id == DID
    other = env | {"ODFWEB3_KEYSTORE": str(tmp_path / "k2")}
    code, _, err = run(capsys, other | {"ODFWEB3_PASSPHRASE": "wrong"}, "keys", "import", str(exp))
    assert code == 2 and "wrong passphrase" in err
    code, out, _ = run(
        capsys, other | {"ODFWEB3_PASSPHRASE": "export pass"}, "keys", "import", str(exp)
    )
    assert code == 0 and out["epochs"] == [1, 2, 3]
    assert (
        ContentKeyStore(tmp_path / "k2").load(DID).ring.current_key() == stored.ring.current_key()
    )

    # no key bytes anywhere in what the commands printed at -v
    main(["-v", "keys", "recipients", "list", DID], env=env)
    printed = "".join(capsys.readouterr())
    for key in stored.ring:
        assert key.secret.hex() not in printed


def test_keys_usage_errors(capsys, tmp_path):
    env = {"ODFWEB3_KEYSTORE": str(tmp_path / "keys"), "HOME": str(tmp_path)}
    code, _, err = run(capsys, env, "keys", "recipients", "add", DID)
    assert code == 64 and "public key or --passphrase" in err
    code, _, err = run(capsys, env, "keys", "rotate", DID)
    assert code == 66 and "no content keys" in err
    code, _, err = run(capsys, env, "keys", "recipients", "add", DID, "--passphrase")
    assert code == 64 and "ODFWEB3_PASSPHRASE" in err
    code, _, err = run(capsys, env, "keys", "recipients", "add", "nodir", "alice")
    assert code == 64 and "did:odf:" in err
