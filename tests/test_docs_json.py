"""Every JSON field the commands print is documented: the keys of ``--check --json`` (with problems,
findings and external data), ``--stats --json`` (numbers and strings), ``--diff --json`` (a changed
tensor) and ``--patch --json`` on bundled files each appear as code in the CLI reference, diff or
workbench page. A field added to an output without a word in the docs fails here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from onemodel_viewer.cli import main

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("cli.md", "diff.md", "workbench.md")
VALID = ROOT / "testdata" / "valid"


def keys(value, out: set[str]) -> set[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(k)
            keys(v, out)
    elif isinstance(value, list):
        for v in value:
            keys(v, out)
    return out


def run_json(capsys, *argv: str) -> list:
    main(list(argv))
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def documented(key: str, text: str) -> bool:
    # as code (`key`, `detail.key`) or inside a documented object's field list ("key")
    return f"`{key}`" in text or f".{key}`" in text or f'"{key}"' in text


def test_every_json_field_is_documented(tmp_path, capsys):
    changed = tmp_path / "changed.onemodel"
    patched = run_json(capsys, "--patch", str(VALID / "showcase.onemodel"), str(changed), "bytes@315460=0000c03f",
                       "--json")
    broken = tmp_path / "bad.onemodel"
    patched += run_json(capsys, "--patch", str(VALID / "dtypes.onemodel"), str(broken),
                        "manifest.graph.initializers[0].dims[0]=-2", "--json")
    shared = tmp_path / "shared"
    shutil.copytree(ROOT / "testdata" / "external" / "shared-two-models", shared)
    outputs = {
        "--check": run_json(capsys, "--check", "--json", str(broken), str(shared / "a.onnx"), str(shared / "b.onnx")),
        "--stats": run_json(capsys, "--stats", "--json", str(VALID / "showcase.onemodel"), )
        + run_json(capsys, "--stats", "--json", str(VALID / "strings.onemodel")),
        "--diff": run_json(capsys, "--diff", str(VALID / "showcase.onemodel"), str(changed), "--json"),
        "--patch": patched,
    }
    text = "\n".join((ROOT / "docs" / p).read_text(encoding="utf-8") for p in PAGES)
    found = {cmd: keys(out, set()) for cmd, out in outputs.items()}
    # the runs above reach the fields that need a problem, a finding, a weights file, a changed tensor
    assert {"problems", "findings", "rule", "code", "files", "shared_with", "file"} <= found["--check"]
    assert {"histogram", "min_len"} <= found["--stats"]
    assert {"detail", "rel_l2", "totals", "not_compared"} <= found["--diff"]
    assert {"appeared", "disappeared", "input"} <= found["--patch"]
    missing = {cmd: sorted(k for k in ks if not documented(k, text)) for cmd, ks in found.items()}
    assert not any(missing.values()), f"JSON fields not in docs/{'/'.join(PAGES)}: {missing}"
