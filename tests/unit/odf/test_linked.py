"""ObjectLink columns and linkedObjects summaries (ODF RFC-017, kamu's names and refusals),
and the bounded Parquet reader of link columns."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from odfweb3.errors import FormatError
from odfweb3.odf.builder import create_root_dataset
from odfweb3.odf.linked import (
    LinkedSummary,
    decode_summary,
    encode_summary,
    link_columns,
    object_link_extra,
)
from odfweb3.odf.model_gen import (
    AddData,
    DataField,
    DataSchema,
    DataTypeInt64,
    DataTypeOption,
    DataTypeString,
    DataTypeStruct,
    ExtraAttributes,
    SetDataSchema,
)
from odfweb3.odf.multihash import hash_bytes, multihash_to_str
from odfweb3.odf.parquet_links import read_links
from tests.support.linked import versioned_file_schema


def schema(*fields: DataField) -> SetDataSchema:
    return SetDataSchema(schema=DataSchema(fields=fields))


def link(name: str, t=None, extra=None) -> DataField:
    return DataField(name=name, type=t or DataTypeString(), extra=extra or object_link_extra())


def test_link_columns_as_kamu_declares_them():
    # the field extra exactly as kamu's test_attr_type_extended serializes it
    assert json.loads(object_link_extra().entries or "") == {
        "opendatafabric.org/type": {"kind": "ObjectLink", "linkType": {"kind": "Multihash"}}
    }
    assert link_columns(versioned_file_schema()) == ("content_hash",)
    nullable = schema(link("a", DataTypeOption(inner=DataTypeString())), link("b"))
    assert link_columns(nullable) == ("a", "b")
    assert link_columns(SetDataSchema(raw_arrow_schema=b"\x00")) == ()
    plain = schema(DataField(name="x", type=DataTypeString()))
    assert link_columns(plain) == ()


@pytest.mark.parametrize(
    ("field", "message"),
    [
        (link("n", DataTypeInt64()), "not a String column"),
        (
            link(
                "d",
                extra=ExtraAttributes(
                    json.dumps(
                        {
                            "opendatafabric.org/type": {
                                "kind": "ObjectLink",
                                "linkType": {"kind": "Did"},
                            }
                        }
                    )
                ),
            ),
            "not Multihash",
        ),
        (
            DataField(name="s", type=DataTypeStruct(fields=(link("inner"),))),
            "inside a struct",
        ),
    ],
)
def test_link_columns_kamu_refuses(field, message):
    with pytest.raises(FormatError, match=message):
        link_columns(schema(field))


def test_summary_round_trip_and_refusals():
    extra = encode_summary(LinkedSummary(3, 1200), ExtraAttributes('{"a.org/x":1}'))
    assert json.loads(extra.entries or "") == {
        "a.org/x": 1,
        "opendatafabric.org/linkedObjects": {"numObjectsNaive": 3, "sizeNaive": 1200},
    }
    assert decode_summary(AddData(extra=extra)) == LinkedSummary(3, 1200)
    assert decode_summary(AddData()) is None
    for bad in (
        {"numObjects": 3, "sizeNaive": 1},  # the RFC draft's name: kamu denies it
        {"numObjectsNaive": -1, "sizeNaive": 1},
        {"numObjectsNaive": 1, "sizeNaive": 1, "more": 0},
        {"numObjectsNaive": True, "sizeNaive": 1},
    ):
        value = json.dumps({"opendatafabric.org/linkedObjects": bad})
        with pytest.raises(FormatError, match="linkedObjects"):
            decode_summary(AddData(extra=ExtraAttributes(value)))


def parquet(columns: dict[str, pa.Array], **kw) -> io.BytesIO:
    buf = io.BytesIO()
    pq.write_table(pa.table(columns), buf, **kw)
    buf.seek(0)
    return buf


def test_read_links_streams_row_groups_and_skips_nulls():
    hashes = [hash_bytes(b"%d" % i) for i in range(50)]
    values = [multihash_to_str(h) if i % 5 else None for i, h in enumerate(hashes)]
    f = parquet({"content_hash": pa.array(values), "other": pa.array(range(50))}, row_group_size=7)
    assert pq.ParquetFile(f).metadata.num_row_groups == 8
    f.seek(0)
    got = list(read_links(f, ("content_hash",), "data/x"))
    assert got == [h for i, h in enumerate(hashes) if i % 5]
    # large_string and string_view columns are strings too
    f = parquet({"c": pa.array(values[:3], type=pa.large_string())})
    assert len(list(read_links(f, ("c",), "data/x"))) == 2
    f = parquet({"c": pa.array(values[:3], type=pa.string_view())})
    assert len(list(read_links(f, ("c",), "data/x"))) == 2


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: io.BytesIO(b"short"), "too short"),
        (lambda: io.BytesIO(b"x" * 100), "no PAR1 trailer"),
        (
            lambda: io.BytesIO(b"PAR1" + b"\0" * 40 + (1 << 30).to_bytes(4, "little") + b"PAR1"),
            "footer",
        ),
        (
            lambda: io.BytesIO(b"PAR1" + b"\x07" * 40 + (20).to_bytes(4, "little") + b"PAR1"),
            "Parquet",
        ),
        (lambda: parquet({"other": pa.array(["a"])}), "has no column 'c'"),
        (lambda: parquet({"c": pa.array([1, 2])}), "not a string"),
        (lambda: parquet({"c": pa.array(["not-a-hash"])}), "not a multibase hash"),
        (lambda: parquet({"c": pa.array(["f" + "0" * 400])}), "not a multihash"),
    ],
)
def test_read_links_refuses_in_one_line(make, message):
    with pytest.raises(FormatError, match=message) as err:
        list(read_links(make(), ("c",), "ds/data/f1620aa"))
    assert "\n" not in str(err.value) and str(err.value).startswith("ds/data/f1620aa")


def test_pyarrow_is_not_loaded_without_link_columns(tmp_path):
    # a publish's chain load and a deep validation of a dataset without ObjectLink columns
    # never load it (the dataset is written here, whatever its writer imports)
    ds = create_root_dataset(tmp_path / "ds", blocks=3, data_bytes=3000, seed=1).path
    code = f"""
import sys
from odfweb3.odf.validate import validate_dataset
from odfweb3.publish.chain_cache import load_chain
from odfweb3.odf.layout import DatasetReader
assert validate_dataset({str(ds)!r}, deep=True).ok
load_chain(DatasetReader.open({str(ds)!r})).objects()
print("pyarrow" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
