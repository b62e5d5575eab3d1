"""kamu's SetDataSchema evolution rules (schema_diff.schema_change), case by case."""

import pytest

from odfweb3.odf.model_gen import (
    DataField,
    DataSchema,
    DataTypeInt64,
    DataTypeList,
    DataTypeOption,
    DataTypeString,
    DataTypeStruct,
    ExtraAttributes,
)
from odfweb3.odf.schema_diff import schema_change


def f(name, t=None, extra=None):
    return DataField(name=name, type=t or DataTypeString(), extra=extra)


def opt(t):
    return DataTypeOption(inner=t)


def s(*fields, extra=None):
    return DataSchema(fields=fields, extra=extra)


BASE = s(f("offset", DataTypeInt64()), f("v"))
ATTR = ExtraAttributes(entries='{"kamu.dev/x": 1}')

CASES = {
    "the same": (BASE, BASE, "identical"),
    "the same attributes, other JSON text": (
        s(f("v"), extra=ExtraAttributes(entries='{"a.b/c": 1, "a.b/d": 2}')),
        s(f("v"), extra=ExtraAttributes(entries='{ "a.b/d": 2, "a.b/c": 1 }')),
        "identical",
    ),
    "schema attributes changed": (BASE, s(*BASE.fields, extra=ATTR), "allowed"),
    "field attributes changed": (BASE, s(f("offset", DataTypeInt64()), f("v", extra=ATTR)),
                                 "allowed"),
    "fields reordered": (BASE, s(f("v"), f("offset", DataTypeInt64())), "allowed"),
    "an optional field added": (BASE, s(*BASE.fields, f("w", opt(DataTypeString()))), "allowed"),
    "a required field added": (BASE, s(*BASE.fields, f("w")), "incompatible"),
    "a field removed": (BASE, s(f("v")), "incompatible"),
    "a field renamed": (BASE, s(f("offset", DataTypeInt64()), f("w")), "incompatible"),
    "a type changed": (BASE, s(f("offset", DataTypeInt64()), f("v", DataTypeInt64())),
                       "incompatible"),
    "a field became optional": (
        BASE, s(f("offset", DataTypeInt64()), f("v", opt(DataTypeString()))), "incompatible"),
    "a field became required": (s(f("v", opt(DataTypeString()))), s(f("v")), "incompatible"),
    "an optional field added in a struct": (
        s(f("p", DataTypeStruct(fields=(f("a"),)))),
        s(f("p", DataTypeStruct(fields=(f("a"), f("b", opt(DataTypeInt64())))))),
        "allowed",
    ),
    "a field removed from a struct": (
        s(f("p", DataTypeStruct(fields=(f("a"), f("b"))))),
        s(f("p", DataTypeStruct(fields=(f("a"),)))),
        "incompatible",
    ),
    "a list's item type changed": (
        s(f("l", DataTypeList(item_type=DataTypeString()))),
        s(f("l", DataTypeList(item_type=DataTypeInt64()))),
        "incompatible",
    ),
    "a list's fixed length changed": (
        s(f("l", DataTypeList(item_type=DataTypeString(), fixed_length=2))),
        s(f("l", DataTypeList(item_type=DataTypeString(), fixed_length=3))),
        "incompatible",
    ),
    # kamu's diff: once the names do not line up (here: an optional field added), the
    # types of the fields matched by name are not compared
    "a type changed beside an added optional field (kamu compares no types then)": (
        BASE,
        s(f("offset", DataTypeInt64()), f("v", DataTypeInt64()), f("w", opt(DataTypeString()))),
        "allowed",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_schema_change(case):
    prev, new, want = CASES[case]
    assert schema_change(prev, new) == want
