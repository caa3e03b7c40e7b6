"""DataType and AttrType: the names of the dtype table's codes and of the attribute type codes."""

from onemodel_viewer.format import dtypes
from onemodel_viewer.format.dtypes import DTYPES, AttrType, DataType


def test_every_table_code_is_named_by_its_onnx_name():
    """Each row of the dtype table has the DataType member of its code, named as the row (upper case)."""
    for code, d in DTYPES.items():
        assert DataType(code).name.lower() == d.name
    assert set(DataType) - {DataType.UNDEFINED} == set(DTYPES)


def test_attribute_types_are_defined_once():
    """The package hands out the one AttrType of dtypes."""
    from onemodel_viewer import format as omf

    assert omf.AttrType is AttrType
    assert [t.value for t in AttrType] == list(range(15))


def test_complex_and_string():
    assert {d.code for d in DTYPES.values() if d.is_complex} == {DataType.COMPLEX64, DataType.COMPLEX128}
    assert dtypes.STRING == DataType.STRING == 8
