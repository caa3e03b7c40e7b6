"""Write ``onemodel_viewer/format/ort/fbs.py``: ORT's flatbuffer schema (ort.fbs) as data.

The ``onnxruntime`` wheel ships flatc's Python output for ``ort.fbs`` in
``onnxruntime/tools/ort_format_model/ort_flatbuffers_py/fbs``. Each accessor method there
names its vtable slot (``self._tab.Offset(N)``) and how it reads the field (``Get(<type>Flags``,
``String``, ``Indirect`` + ``obj = T()``, ``Vector``, ``Union``). This script reads those
methods with ``ast`` (nothing is imported or run) and writes one table per schema table:
``(field, voffset, kind, element, default)``. The reader never imports onnxruntime;
``tests/test_ort_schema.py`` re-derives the table from the installed wheel and compares.

    python scripts/gen_ort_schema.py            # rewrite fbs.py
    python scripts/gen_ort_schema.py --print    # print it
"""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "onemodel_viewer", "format", "ort", "fbs.py")

# ort.fbs: ``union TypeInfoValue { tensor_type:TensorTypeAndShape, sequence_type:SequenceType, map_type:MapType }``
# (the generated Python names the union's members but not their tables)
UNION_MEMBERS = {"TypeInfoValue": {"tensor_type": "TensorTypeAndShape", "sequence_type": "SequenceType", "map_type": "MapType"}}
UNION_OF_FIELD = {("TypeInfo", "value"): "TypeInfoValue"}

SCALARS = {
    "Bool": "bool", "Int8": "int8", "Uint8": "uint8", "Int16": "int16", "Uint16": "uint16",
    "Int32": "int32", "Uint32": "uint32", "Int64": "int64", "Uint64": "uint64",
    "Float32": "float32", "Float64": "float64",
}


def fbs_dir() -> str:
    spec = importlib.util.find_spec("onnxruntime")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("onnxruntime is not installed")
    return os.path.join(list(spec.submodule_search_locations)[0], "tools", "ort_format_model", "ort_flatbuffers_py", "fbs")


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _src(node) -> str:
    return ast.unparse(node)


def parse_module(path: str):
    """(kind, name, payload) for one generated module: ``table``/``struct``/``enum``."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    if not methods:  # an enum: NAME = value
        vals = {t.targets[0].id: t.value.value for t in cls.body if isinstance(t, ast.Assign)}
        return "enum", cls.name, vals
    if "SizeOf" in methods:  # a struct: fields at fixed offsets
        size = methods["SizeOf"].body[0].value.value
        fields = []
        for name, f in methods.items():
            src = _src(f)
            m = re.search(r"number_types\.(\w+)Flags, self\._tab\.Pos \+ flatbuffers\.number_types\.UOffsetTFlags\.py_type\((\d+)\)", src)
            if m:
                fields.append((snake(name), int(m.group(2)), SCALARS[m.group(1)]))
        return "struct", cls.name, (size, tuple(sorted(fields, key=lambda x: x[1])))
    fields = {}
    for name, f in methods.items():
        if name.endswith(("Length", "IsNone", "AsNumpy")) or name in ("Init", "GetRootAs") or name.startswith("GetRootAs") or "BufferHasIdentifier" in name:
            continue
        src = _src(f)
        m = re.search(r"self\._tab\.Offset\((\d+)\)", src)
        if not m:
            continue
        vo = int(m.group(1))
        fname = snake(name)
        obj = re.search(r"obj = (\w+)\(\)", src)
        ret = f.body[-1].value if isinstance(f.body[-1], ast.Return) else None
        try:
            default = ast.literal_eval(ret) if ret is not None else None
        except ValueError:
            default = None
        if "Union(" in src:
            fields[fname] = (vo, "union", UNION_OF_FIELD[(cls.name, fname)], None)
        elif "Vector(o)" in src:
            if "Indirect(x)" in src:
                fields[fname] = (vo, "vector", "table:" + obj.group(1), None)
            elif obj:
                fields[fname] = (vo, "vector", "struct:" + obj.group(1), None)
            elif "self._tab.String(a" in src:
                fields[fname] = (vo, "vector", "string", None)
            else:
                s = re.search(r"Get\(flatbuffers\.number_types\.(\w+)Flags", src)
                fields[fname] = (vo, "vector", SCALARS[s.group(1)], None)
        elif "Indirect(" in src:
            fields[fname] = (vo, "table", obj.group(1), None)
        elif obj:
            fields[fname] = (vo, "struct", obj.group(1), None)
        elif "self._tab.String(" in src:
            fields[fname] = (vo, "string", None, None)
        else:
            s = re.search(r"number_types\.(\w+)Flags, o \+ self\._tab\.Pos", src)
            fields[fname] = (vo, "scalar", SCALARS[s.group(1)], default)
    return "table", cls.name, tuple(sorted(((n,) + v for n, v in fields.items()), key=lambda x: x[1]))


def derive(directory: str | None = None) -> dict:
    d = directory or fbs_dir()
    out = {"table": {}, "struct": {}, "enum": {}}
    for fn in sorted(os.listdir(d)):
        if fn.endswith(".py") and fn != "__init__.py":
            kind, name, payload = parse_module(os.path.join(d, fn))
            out[kind][name] = payload
    return out


def render(schema: dict) -> str:
    lines = [
        '"""ONNX Runtime\'s ort.fbs as data: every table\'s fields, with vtable offset, kind and element.',
        "",
        "GENERATED by ``scripts/gen_ort_schema.py`` from the flatc output shipped in the onnxruntime",
        "wheel (``onnxruntime/tools/ort_format_model/ort_flatbuffers_py/fbs``); do not edit. ``tests/",
        "test_ort_schema.py`` re-derives it from the installed wheel.",
        "",
        "``TABLES[name]``: ``(field, voffset, kind, element, default)`` in slot order. ``kind``:",
        "``scalar`` (element: the scalar type; default: the schema default), ``string``, ``table``",
        "(element: the table), ``struct`` (element: the struct), ``union`` (element: the union;",
        "its type byte is the field ``<field>_type`` one slot before), ``vector`` (element:",
        "``string``, a scalar type, ``table:<T>`` or ``struct:<S>``).",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "TABLES: dict[str, tuple[tuple[str, int, str, str | None, object], ...]] = {",
    ]
    for name, fields in sorted(schema["table"].items()):
        lines.append(f"    {name!r}: (")
        for f in fields:
            lines.append(f"        {f!r},")
        lines.append("    ),")
    lines.append("}")
    lines.append("")
    lines.append("STRUCTS: dict[str, tuple[int, tuple[tuple[str, int, str], ...]]] = {")
    for name, (size, fields) in sorted(schema["struct"].items()):
        lines.append(f"    {name!r}: ({size}, {fields!r}),")
    lines.append("}")
    lines.append('"""``STRUCTS[name]``: ``(size, ((field, offset, scalar type), ...))``."""')
    lines.append("")
    lines.append("ENUMS: dict[str, dict[str, int]] = {")
    for name, vals in sorted(schema["enum"].items()):
        lines.append(f"    {name!r}: {vals!r},")
    lines.append("}")
    lines.append("")
    lines.append("UNIONS: dict[str, dict[int, str]] = {")
    for uname, members in sorted(UNION_MEMBERS.items()):
        codes = {schema["enum"][uname][m]: t for m, t in members.items()}
        lines.append(f"    {uname!r}: {codes!r},")
    lines.append("}")
    lines.append('"""``UNIONS[union][type code]``: the member table (0 is NONE)."""')
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    text = render(derive())
    if "--print" in sys.argv:
        print(text)
    else:
        with open(OUT, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {os.path.relpath(OUT)}")
