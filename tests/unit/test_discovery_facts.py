"""The chain facts every discovery format renders, and their incremental extension.

Croissant, DCAT and DataCite all render :class:`DiscoveryFacts`; a newer head's facts come
from the older head's and the blocks above it, and must equal the facts of the whole chain.
"""

import pytest

from odfweb3.descriptor.croissant import build_croissant, croissant_from_facts, data_file_urls
from odfweb3.descriptor.datacite import build_datacite, datacite_from_facts
from odfweb3.descriptor.dcat import build_dcat, dcat_from_facts
from odfweb3.descriptor.discovery_facts import Presentation, discovery_facts
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.chain import walk_chain
from odfweb3.odf.derivative import create_derivative_dataset
from odfweb3.odf.layout import DatasetReader
from odfweb3.odf.model_gen import AddData, ExecuteTransform


def chain(path):
    return list(walk_chain(DatasetReader.open(path)))


@pytest.fixture(scope="module")
def chains(tmp_path_factory):
    base = tmp_path_factory.mktemp("facts")
    root = create_root_dataset(base / "r", blocks=4, data_bytes=4000, seed=4321, fsync=False)
    deriv = create_derivative_dataset(base / "d", [root.path], transactions=3, seed=4322)
    return chain(root.path), chain(deriv.path)


@pytest.mark.parametrize("which", [0, 1])
def test_extending_by_the_blocks_above_equals_the_whole_chain(chains, which):
    entries = chains[which]
    whole = discovery_facts(entries)
    for above in range(len(entries) - 1):
        older = discovery_facts(entries[above:])
        assert older.extended(reversed(entries[:above])) == whole
    assert whole.extended([]) == whole


def test_facts_hold_every_data_file_oldest_first_with_its_schema(chains):
    root, deriv = chains
    for entries in (root, deriv):
        facts = discovery_facts(entries)
        written = [
            e.block.event.new_data.physical_hash
            for e in reversed(entries)
            if isinstance(e.block.event, AddData | ExecuteTransform) and e.block.event.new_data
        ]
        assert [f.physical_hash for f in facts.files] == written and written
        assert all(f.schema is not None for f in facts.files)
        assert facts.sequence == entries[0].block.sequence_number
        assert facts.head == entries[0].hash
    root_did = discovery_facts(root).dataset_id
    facts = discovery_facts(deriv)
    assert facts.inputs == (root_did,)
    assert facts.input_states[root_did].last_block is not None


def test_every_format_renders_the_same_from_facts_as_from_the_chain(chains):
    publisher = {"name": "Ada Lovelace", "type": "Person"}
    url_of = data_file_urls(ipfs="bafyexample")
    for entries in chains:
        facts = discovery_facts(entries)
        shown = Presentation(publisher, "ipns://k51", None, "ipns://k51", url_of)
        assert croissant_from_facts(facts, shown) == build_croissant(
            entries, publisher, url_of=url_of, landing="ipns://k51", identity="ipns://k51"
        )
        assert dcat_from_facts(facts, shown) == build_dcat(
            entries, publisher, url_of=url_of, landing="ipns://k51", identity="ipns://k51"
        )
        for which in ("version", "concept"):
            assert datacite_from_facts(facts, shown, which=which) == build_datacite(
                entries, publisher, which=which, landing="ipns://k51", identity="ipns://k51"
            )


def test_a_chain_not_ending_at_its_seed_is_refused(chains):
    with pytest.raises(ValueError, match="Seed"):
        discovery_facts(chains[0][:-1])
    with pytest.raises(ValueError, match="Seed"):
        discovery_facts([])


def test_data_files_packed_are_the_data_files() -> None:
    """Kept packed, made when asked: equal to (and hashed as) the tuple of the same files,
    each with the schema object it was given, whatever its hash's length."""
    import hashlib

    from odfweb3.descriptor.discovery_facts import DataFile, DataFiles
    from odfweb3.odf.model_gen import DataSchema

    one, two = DataSchema(fields=[]), DataSchema(fields=[])  # equal, yet two schemas
    files = [
        DataFile(i, b"\x16\x20" + hashlib.sha3_256(b"%d" % i).digest(), 100 + i, s)
        for i, s in enumerate((None, one, one, two, one, None))
    ]
    files.append(DataFile(9, b"\x13\x40" + bytes(64), 7, two))  # another length
    packed = DataFiles(files)
    assert len(packed) == 7 and list(packed) == files and packed == tuple(files)
    assert tuple(files) == packed
    bare = [DataFile(f.sequence, f.physical_hash, f.size, None) for f in files]
    assert hash(DataFiles(bare)) == hash(tuple(bare))  # a schema (its field list) is not
    assert [packed[i] for i in range(-7, 7)] == files + files
    assert list(packed[2:5]) == files[2:5] and list(reversed(packed)) == files[::-1]
    assert all(a.schema is b.schema for a, b in zip(packed, files, strict=True))
    assert packed != tuple(files[:-1]) and DataFiles() == ()
    with pytest.raises(IndexError):
        packed[7]
