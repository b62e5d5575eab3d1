"""Mutation fuzzer for every odfweb3 decoder (``make fuzz``; not part of ``make test``).

For each parser: valid seed inputs made with odfweb3's own encoders, then N mutated
inputs (bit flips, byte sets, inserts, deletes, splices, truncations, length-field bumps,
random tails) from a seeded RNG. A parser passes when every input either parses or raises
an ``OdfWeb3Error``; anything else (IndexError, struct.error, RecursionError, ...) is a
finding: the input is saved under ``fuzz-findings/<parser>/`` and counted.

    .venv/bin/python tools/fuzz.py                 # 1,000,000 inputs per parser
    .venv/bin/python tools/fuzz.py -n 20000 car    # fewer, one parser

Prints one line per parser: inputs, seconds, inputs/s, findings (and the exception types).

The IPFS readers run with their budgets on (a hostile DAG must hit a bound, not exhaust
memory): ``dag_walk`` and ``hamt``
take a mutated root node whose CID is computed from the mutated bytes (so the walk gets
past the hash check and into the structure) above a store of valid blocks (a multi-level
file, a sharded directory, an amplifying DAG); ``car_dir`` and ``car_dir_summary`` read a
whole ``car:DIR`` publish whose CAR or ``publish.json`` is the mutated input. An input that
takes longer than ``--slow`` seconds (default 2) is a finding too: a budget that does not
bound time.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import hashlib
import io
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

__all__ = ["PARSERS", "main", "mutate", "seeds_for"]

Parser = Callable[[bytes], object]


# -- the parsers under test (each takes bytes) ------------------------------------------------


def _block(data: bytes) -> object:
    from odfweb3.odf.codec import decode_block

    return decode_block(data)


def _dagpb(data: bytes) -> object:
    from odfweb3_ipfs.formats.dagpb import decode_pbnode

    return decode_pbnode(data)


def _unixfs(data: bytes) -> object:
    from odfweb3_ipfs.formats.unixfs_data import decode_unixfs_data

    return decode_unixfs_data(data)


def _car(data: bytes) -> object:
    from odfweb3_ipfs.formats.car import iter_car

    roots, blocks = iter_car(io.BytesIO(data))
    return roots, sum(1 for _ in blocks)


def _ipns(data: bytes) -> object:
    from odfweb3_ipfs.formats.ipns import decode_record

    return decode_record(data)


def _dagcbor(data: bytes) -> object:
    from odfweb3_ipfs.formats.dagcbor import decode_dagcbor

    return decode_dagcbor(data)


def _cid(data: bytes) -> object:
    from odfweb3_ipfs.formats.cid import Cid

    return Cid.decode(data.decode("latin-1"))


def _ans104_item(data: bytes) -> object:
    from odfweb3_arweave.formats.ans104 import decode_data_item

    return decode_data_item(data)


def _ans104_bundle(data: bytes) -> object:
    from odfweb3_arweave.formats.ans104 import decode_bundle

    return decode_bundle(data)


def _ans104_tags(data: bytes) -> object:
    from odfweb3_arweave.formats.ans104 import decode_tags

    return decode_tags(data)


def _manifest(data: bytes) -> object:
    from odfweb3_arweave.formats.manifest import decode_manifest

    return decode_manifest(data)


def _tx_json(data: bytes) -> object:
    from odfweb3_arweave.formats.tx import from_json

    return from_json(data)


def _sealed(data: bytes) -> object:
    from odfweb3.crypto.segments import decrypt_bytes

    return decrypt_bytes(data, _content_key(), "data/x")


def _envelope(data: bytes) -> object:
    from odfweb3.crypto.envelope import decode_envelope

    return decode_envelope(data)


def _walk_budget() -> int:
    return 1 << 20  # bytes a fuzzed file may produce (the budgets derive blocks from it)


def _dag_walk(data: bytes) -> object:
    """A mutated dag-pb file or directory node: read as a file, listed as a directory and
    walked whole, each with its budget on (each step's own errors are expected)."""
    from odfweb3.errors import OdfWeb3Error
    from odfweb3_ipfs.formats.cid import Cid
    from odfweb3_ipfs.formats.unixfs_reader import iter_dag, list_directory, read_file

    store, _ = _dag_store()
    root = Cid.of_block(data, codec=0x70)
    get = _getter({**store, root.raw: data})
    out: list[int] = []
    with contextlib.suppress(OdfWeb3Error):
        out.append(sum(len(c) for c in read_file(root, get, max_size=_walk_budget())))
    with contextlib.suppress(OdfWeb3Error):
        out.append(len(list_directory(root, get, max_entries=4096)))
    out.append(sum(1 for _ in iter_dag(root, get, max_blocks=len(store) + 1)))
    return out


def _hamt(data: bytes) -> object:
    """A mutated HAMT root shard above valid sub-shards, listed, budgets on."""
    from odfweb3_ipfs.formats.cid import Cid
    from odfweb3_ipfs.formats.unixfs_reader import list_directory

    store, _ = _dag_store()
    root = Cid.of_block(data, codec=0x70)
    return len(list_directory(root, _getter({**store, root.raw: data}), max_entries=4096))


def _car_dir(data: bytes) -> object:
    """A whole offline publish whose one CAR file is ``data``."""
    out, doc = _car_dir_seed()
    (out / doc["extra"]["cars"][0]).write_bytes(data)
    (out / "publish.json").write_bytes(_car_dir_files()["publish.json"])
    return _read_car_dir(out)


def _car_dir_summary(data: bytes) -> object:
    """A whole offline publish whose ``publish.json`` is ``data``."""
    out, doc = _car_dir_seed()
    (out / doc["extra"]["cars"][0]).write_bytes(_car_dir_files()[doc["extra"]["cars"][0]])
    (out / "publish.json").write_bytes(data)
    return _read_car_dir(out)


def _read_car_dir(out: Path) -> object:
    from odfweb3.odf.chain import iter_objects, walk_chain
    from odfweb3.read.replica import read_object_verified
    from odfweb3_ipfs.read.car_replica import CarDirReplica, check_car_dir

    replica = CarDirReplica(check_car_dir(out), f"car:{out}", out)
    entries = list(walk_chain(replica.read_block, replica.head()))
    return sum(read_object_verified(replica, o) for o in iter_objects(entries) if o.kind != "block")


def _config(data: bytes) -> object:
    from odfweb3.config import load_config

    path = _tmp() / "odfweb3.yaml"
    path.write_bytes(data)
    return load_config(path, env={}, cwd=_tmp())


# The YAML config parser runs ~1,500 inputs/s (file + PyYAML + JSON Schema per input): a million
# takes over 10 minutes, so it gets a tenth of the count (docs/security.md, Fuzzing).
# The car:DIR readers (a whole publish written and checked per input) run 400-800 inputs/s:
# a tenth too.
CAPS: dict[str, int] = {"config": 100_000, "car_dir": 100_000, "car_dir_summary": 100_000}

PARSERS: dict[str, Parser] = {
    "block": _block,
    "dagpb": _dagpb,
    "unixfs": _unixfs,
    "car": _car,
    "ipns": _ipns,
    "dagcbor": _dagcbor,
    "cid": _cid,
    "ans104_item": _ans104_item,
    "ans104_bundle": _ans104_bundle,
    "ans104_tags": _ans104_tags,
    "manifest": _manifest,
    "tx_json": _tx_json,
    "sealed": _sealed,
    "envelope": _envelope,
    "config": _config,
    "dag_walk": _dag_walk,
    "hamt": _hamt,
    "car_dir": _car_dir,
    "car_dir_summary": _car_dir_summary,
}

#: Mutations per parser in the test suite's smoke run (tests/unit/test_fuzz_decoders.py):
#: the car:DIR readers write and check a whole publish per input.
SMOKE: dict[str, int] = {"car_dir": 300, "car_dir_summary": 300}


# -- seeds: valid inputs made with our own encoders ------------------------------------------


@cache
def _tmp() -> Path:
    path = Path(tempfile.mkdtemp(prefix="odfweb3-fuzz-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)  # also when run by the tests
    return path


@cache
def _content_key() -> object:
    from odfweb3.crypto.keys import ContentKey

    return ContentKey("did:odf:fuzz", 1, bytes(range(32)))


@cache
def _wallet() -> object:
    from odfweb3_arweave.wallet import generate_wallet

    return generate_wallet()


@cache
def _dataset() -> Path:
    from odfweb3.odf.builder import create_root_dataset

    return create_root_dataset(_tmp() / "ds", blocks=4, data_bytes=3000, seed=5, fsync=False).path


def _getter(store: dict[bytes, bytes]) -> Callable[[object], bytes]:
    from odfweb3.errors import NotFound

    def get(cid: object) -> bytes:
        try:
            return store[cid.raw]  # type: ignore[attr-defined]
        except KeyError:
            raise NotFound(f"fuzz: no block {cid}") from None

    return get


@cache
def _dag_store() -> tuple[dict[bytes, bytes], tuple[bytes, ...]]:
    """Valid blocks: the dataset imported with tiny chunks, 3 links per node and every
    directory sharded at fanout 16 (multi-level files, sub-shards), plus an amplifying file
    (64 x 64 links to one 1 KiB leaf) and a HAMT whose shard links one sub-shard 16 times.
    Returns the store and the seed roots (file nodes and shards with links)."""
    from odfweb3_ipfs.formats.cid import Cid
    from odfweb3_ipfs.formats.dagpb import PBLink, decode_pbnode, encode_pbnode
    from odfweb3_ipfs.formats.unixfs_data import DataType, UnixFSData, encode_unixfs_data
    from odfweb3_ipfs.publish.unixfs_import import import_tree

    store: dict[bytes, bytes] = {}
    import_tree(
        _dataset(),
        sink=lambda cid, data: store.__setitem__(cid.raw, bytes(data)),
        chunk_size=512,
        max_links=3,
        hamt_threshold=1,
        fanout=16,
        threads=1,
    )

    def put(data: bytes, codec: int = 0x70) -> bytes:
        cid = Cid.of_block(data, codec=codec)
        store[cid.raw] = data
        return data

    leaf = Cid.of_block(put(b"\0" * 1024, 0x55), codec=0x55)
    file_meta = encode_unixfs_data(UnixFSData(type=DataType.FILE))
    inner = put(encode_pbnode([PBLink(leaf, b"", 1024)] * 64, file_meta))
    amplifier = put(encode_pbnode([PBLink(Cid.of_block(inner, codec=0x70))] * 64, file_meta))
    shard_meta = encode_unixfs_data(
        UnixFSData(type=DataType.HAMT_SHARD, data=b"\xff\xff", hash_type=0x22, fanout=16)
    )
    sub = put(encode_pbnode([PBLink(leaf, b"0name")], shard_meta))
    sub_cid = Cid.of_block(sub, codec=0x70)
    bomb = put(encode_pbnode([PBLink(sub_cid, f"{i:X}".encode()) for i in range(16)], shard_meta))
    roots = [d for d in store.values() if _ok(decode_pbnode, d) and decode_pbnode(d).links]
    return store, (amplifier, bomb, *roots[:12])


@cache
def _car_dir_seed() -> tuple[Path, dict[str, object]]:
    """An honest car:DIR publish of the fuzz dataset (re-written before each input)."""
    import json

    from odfweb3.crypto.keystore import Keystore
    from odfweb3.publish.execute import publish_dataset
    from odfweb3_ipfs.publish.car_target import CarTarget

    out = _tmp() / "car-dir"
    publish_dataset(_dataset(), CarTarget(out, Keystore(_tmp() / "keys")))
    doc = json.loads((out / "publish.json").read_text("utf-8"))
    return out, doc


@cache
def _car_dir_files() -> dict[str, bytes]:
    out, doc = _car_dir_seed()
    names = ["publish.json", *doc["extra"]["cars"]]  # type: ignore[index]
    return {n: (out / n).read_bytes() for n in names}


def _blocks() -> list[bytes]:
    return [p.read_bytes() for p in sorted((_dataset() / "blocks").iterdir())]


def _dag_blocks() -> list[tuple[object, bytes]]:
    from odfweb3_ipfs.publish.unixfs_import import import_tree

    out: list[tuple[object, bytes]] = []
    import_tree(_dataset(), sink=lambda cid, data: out.append((cid, data)))
    return out


def seeds_for(name: str) -> list[bytes]:
    """Valid inputs for parser ``name``."""
    return list(_seeds(name))


@cache
def _seeds(name: str) -> tuple[bytes, ...]:
    if name == "block":
        return tuple(_blocks())
    if name in ("dagpb", "unixfs"):
        from odfweb3_ipfs.formats.dagpb import decode_pbnode

        nodes = [d for c, d in _dag_blocks() if getattr(c, "codec", 0x70) == 0x70]
        nodes = [d for d in nodes if _ok(decode_pbnode, d)]
        if name == "dagpb":
            return tuple(nodes[:8])
        return tuple(n.data for n in (decode_pbnode(d) for d in nodes[:8]) if n.data)
    if name == "car":
        from odfweb3_ipfs.formats.car import CarWriter

        blocks = _dag_blocks()
        buf = io.BytesIO()
        writer = CarWriter(buf, blocks[-1][0])  # type: ignore[arg-type]
        for cid, data in blocks[:6]:
            writer.write_block(cid, data)  # type: ignore[arg-type]
        return (buf.getvalue(),)
    if name in ("ipns", "dagcbor"):
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

        from odfweb3_ipfs.formats.ipns import OdfExtension, create_record, encode_record

        key = Ed25519PrivateKey.from_private_bytes(bytes(32))
        ext = OdfExtension(dataset_id="did:odf:fed01" + "ab" * 32, head="f1620" + "cd" * 32)
        rec = create_record(
            key,
            "/ipfs/bafkqaaa",
            3,
            validity=datetime(2030, 1, 1, tzinfo=UTC),
            extensions={"_odf": ext},
            now=datetime(2024, 1, 1, tzinfo=UTC),
        )
        if name == "ipns":
            return (encode_record(rec),)
        return (rec.data,) if getattr(rec, "data", None) else (b"\xa1avb\x01\x02",)
    if name == "cid":
        return tuple(str(c).encode() for c, _ in _dag_blocks()[:4])
    if name in ("ans104_item", "ans104_bundle", "ans104_tags"):
        from odfweb3_arweave.formats.ans104 import (
            create_data_item,
            encode_bundle,
            encode_data_item,
            encode_tags,
        )
        from odfweb3_arweave.formats.tags import Tag

        tags = [Tag.of("App-Name", "odfweb3"), Tag.of("Content-Type", "text/plain")]
        if name == "ans104_tags":
            return (encode_tags(tags),)
        items = [
            create_data_item(_wallet(), b"odfweb3 fuzz seed", tags),  # type: ignore[arg-type]
            create_data_item(_wallet(), bytes(700), anchor=bytes(32)),  # type: ignore[arg-type]
        ]
        if name == "ans104_item":
            return tuple(encode_data_item(i) for i in items)
        return (encode_bundle(items),)
    if name == "manifest":
        from odfweb3_arweave.formats.manifest import PathManifest, encode_manifest

        ids = {f"blocks/{i}": "A" * 42 + "BCDE"[i] for i in range(4)}
        return (encode_manifest(PathManifest(paths=ids, index="blocks/0")),)
    if name == "tx_json":
        from odfweb3_arweave.formats.tags import Tag
        from odfweb3_arweave.formats.tx import new_transaction, sign_transaction, to_json

        w = _wallet()
        tx = new_transaction(
            owner=w.owner,  # type: ignore[attr-defined]
            reward=1000,
            last_tx=bytes(32),
            tags=[Tag.of("a", "b")],
            data=b"hello",
        )
        return (to_json(sign_transaction(tx, w), include_data=True).encode(),)  # type: ignore[arg-type]
    if name == "sealed":
        from odfweb3.crypto.segments import encrypt_bytes

        return (
            encrypt_bytes(b"plain " * 50, _content_key(), "data/x"),  # type: ignore[arg-type]
            encrypt_bytes(b"", _content_key(), "data/x"),  # type: ignore[arg-type]
        )
    if name == "envelope":
        from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

        from odfweb3.crypto import envelope as env
        from odfweb3.crypto.keys import KeyRing

        pub = X25519PrivateKey.from_private_bytes(bytes(range(32))).public_key().public_bytes_raw()
        ring = KeyRing.new("did:odf:fed01" + "ab" * 32)
        sealed = env.add_recipient(env.new_envelope(ring), ring, env.x25519_recipient(pub))
        return (env.encode_envelope(sealed),)
    if name in ("dag_walk", "hamt"):
        from odfweb3_ipfs.formats.dagpb import decode_pbnode
        from odfweb3_ipfs.formats.unixfs_data import DataType, decode_unixfs_data

        _, roots = _dag_store()
        shard = DataType.HAMT_SHARD
        kinds = [(r, decode_unixfs_data(decode_pbnode(r).data or b"").type) for r in roots]
        if name == "hamt":
            return tuple(r for r, t in kinds if t == shard)
        return tuple(r for r, t in kinds if t != shard)
    if name == "car_dir":
        _out, doc = _car_dir_seed()
        return (_car_dir_files()[doc["extra"]["cars"][0]],)  # type: ignore[index]
    if name == "car_dir_summary":
        return (_car_dir_files()["publish.json"],)
    if name == "config":
        return (
            b"ipfs:\n  api: http://127.0.0.1:5001\narweave:\n  gateway: http://127.0.0.1:1984\n",
            b"state_dir: /tmp/x\n",
        )
    raise KeyError(name)


def _ok(parse: Callable[[bytes], object], data: bytes) -> bool:
    try:
        parse(data)
    except Exception:
        return False
    return True


# -- mutation ------------------------------------------------------------------------------------

_INTERESTING = (0, 1, 0x7F, 0x80, 0xFF, 0xFE, 0x40, 0x20)


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One to four random edits of ``data``."""
    buf = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(9)
        n = len(buf)
        if op == 0 and n:  # flip a bit
            i = rng.randrange(n)
            buf[i] ^= 1 << rng.randrange(8)
        elif op == 1 and n:  # set an interesting byte
            buf[rng.randrange(n)] = rng.choice(_INTERESTING)
        elif op == 2:  # insert random bytes
            i = rng.randint(0, n)
            buf[i:i] = rng.randbytes(rng.randint(1, 8))
        elif op == 3 and n:  # delete a run
            i = rng.randrange(n)
            del buf[i : i + rng.randint(1, 16)]
        elif op == 4 and n:  # truncate
            del buf[rng.randrange(n) :]
        elif op == 5 and n > 4:  # duplicate a slice somewhere (splice)
            i, j = sorted(rng.sample(range(n), 2))
            k = rng.randint(0, n)
            buf[k:k] = buf[i:j][:64]
        elif op == 6 and n >= 8:  # a 64-bit little-endian field made huge or zero
            i = rng.randrange(n - 7)
            buf[i : i + 8] = rng.choice((b"\xff" * 8, bytes(8), (2**31).to_bytes(8, "little")))
        elif op == 7:  # random tail
            buf += rng.randbytes(rng.randint(1, 32))
        elif n:  # swap two bytes
            i, j = rng.randrange(n), rng.randrange(n)
            buf[i], buf[j] = buf[j], buf[i]
    return bytes(buf)


# -- the run ------------------------------------------------------------------------------------


def fuzz_one(
    name: str, count: int, seed: int, findings: Path, slow: float = 2.0
) -> tuple[float, Counter[str]]:
    """Run ``count`` mutated inputs through parser ``name``; return (seconds, finding types).

    An input that parses (or fails) in more than ``slow`` seconds is a finding too."""
    from odfweb3.errors import OdfWeb3Error

    parse = PARSERS[name]
    seeds = seeds_for(name)
    rng = random.Random(seed)
    found: Counter[str] = Counter()
    started = time.perf_counter()
    for _ in range(count):
        data = mutate(rng, rng.choice(seeds)) if rng.random() < 0.97 else rng.randbytes(64)
        kind = ""
        began = time.perf_counter()
        try:
            parse(data)
        except OdfWeb3Error:
            pass
        except Exception as exc:
            kind = f"{type(exc).__name__}: {str(exc)[:60]}"
        if not kind and time.perf_counter() - began > slow:
            kind = f"Slow: over {slow} s (a budget that does not bound time)"
        if kind:
            if found[kind] < 3:
                out = findings / name
                out.mkdir(parents=True, exist_ok=True)
                (out / hashlib.sha256(data).hexdigest()[:16]).write_bytes(data)
            found[kind] += 1
    return time.perf_counter() - started, found


def main(argv: list[str] | None = None) -> int:
    """Command line: ``fuzz.py [-n COUNT] [--seed S] [PARSER...]``; exit 1 on findings."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parsers", nargs="*", choices=[*PARSERS, []], default=[])
    ap.add_argument("-n", "--count", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--findings", type=Path, default=Path("fuzz-findings"))
    ap.add_argument("--slow", type=float, default=2.0, help="seconds one input may take")
    args = ap.parse_args(argv)
    names = args.parsers or list(PARSERS)
    total = 0
    print(f"# odfweb3 fuzz: {args.count} inputs per parser, seed {args.seed}, {os.cpu_count()} cpu")
    for name in names:
        count = min(args.count, CAPS.get(name, args.count))
        seconds, found = fuzz_one(name, count, args.seed, args.findings, args.slow)
        total += sum(found.values())
        rate = count / seconds if seconds else 0.0
        detail = "; ".join(f"{k} x{v}" for k, v in found.most_common(5)) or "none"
        print(
            f"{name:14} {count:>9} inputs {seconds:8.1f} s {rate:9.0f}/s  findings: {detail}",
            flush=True,
        )
    return 1 if total else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    sys.exit(main())
