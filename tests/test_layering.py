"""Imports point down only (docs/architecture.md): checked by parsing every source file."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "voxwire"
STDLIB = set(sys.stdlib_module_names)

# Per layer: which voxwire modules and which third-party top-level packages it may import.
# Standard-library modules are allowed everywhere except those listed under "no_stdlib".
RULES: dict[str, dict[str, set[str]]] = {
    "protocol": {
        "voxwire": {"voxwire.protocol", "voxwire.exceptions"},
        "third_party": {"msgspec"},
        # No clocks, randomness, threads or I/O: they come in as arguments (sans-I/O).
        "no_stdlib": {
            "asyncio",
            "concurrent",
            "datetime",
            "os",
            "random",
            "secrets",
            "select",
            "selectors",
            "socket",
            "ssl",
            "subprocess",
            "threading",
            "time",
            "uuid",
        },
    },
    "audio": {
        "voxwire": {"voxwire._core", "voxwire.audio", "voxwire.exceptions"},
        "third_party": {"numpy", "sounddevice", "webrtcvad"},  # webrtcvad: local barge-in
        "no_stdlib": {"asyncio", "socket"},
    },
    "agents": {
        "voxwire": {"voxwire.agents", "voxwire.protocol", "voxwire.exceptions"},
        "third_party": {"msgspec"},
        "no_stdlib": {"asyncio", "socket"},
    },
    "asyncio": {
        "voxwire": {
            "voxwire.asyncio",
            "voxwire.agents",
            "voxwire.protocol",
            "voxwire.audio",
            "voxwire._core",
            "voxwire.exceptions",
            "voxwire.logs",
        },
        # opentelemetry: optional client spans (asyncio/tracing.py imports it when installed).
        "third_party": {"websockets", "numpy", "msgspec", "opentelemetry"},
        "no_stdlib": set(),
    },
    "store": {
        # Persistence sits beside asyncio/: the session plugs it in, it never imports the
        # session. psycopg / psycopg_pool: the PostgreSQL driver (the postgres extra, imported
        # only by store/postgres.py).
        "voxwire": {"voxwire.store", "voxwire.protocol", "voxwire.exceptions"},
        "third_party": {"msgspec", "psycopg", "psycopg_pool"},
        "no_stdlib": set(),
    },
    "server": {
        "voxwire": {
            "voxwire.server",
            "voxwire.protocol",
            "voxwire.audio",
            "voxwire._core",
            "voxwire.exceptions",
        },
        # faster_whisper, hibari: the optional transcription and voice engines (server extras,
        # imported when used).
        "third_party": {"websockets", "msgspec", "numpy", "webrtcvad", "faster_whisper", "hibari"},
        "no_stdlib": set(),
    },
}


def imports_of(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                pkg = path.relative_to(PACKAGE.parent).with_suffix("").parts[: -node.level]
                base = ".".join(pkg)
                found.append((node.lineno, f"{base}.{node.module}" if node.module else base))
            elif node.module == "voxwire":  # from voxwire import _core: the submodule counts
                found += [(node.lineno, f"voxwire.{a.name}") for a in node.names]
            elif node.module:
                found.append((node.lineno, node.module))
    return found


def violations(layer: str) -> list[str]:
    rule = RULES[layer]
    bad = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for lineno, name in imports_of(path):
            top = name.split(".")[0]
            where = f"{path.relative_to(PACKAGE.parent)}:{lineno} imports {name}"
            if top == "voxwire":
                if not any(name == m or name.startswith(m + ".") for m in rule["voxwire"]):
                    bad.append(where)
            elif top in STDLIB or top == "__future__":
                if top in rule["no_stdlib"]:
                    bad.append(where)
            elif top not in rule["third_party"]:
                bad.append(where)
    return bad


@pytest.mark.parametrize("layer", sorted(RULES))
def test_layer_imports_point_down(layer: str) -> None:
    assert violations(layer) == []


def test_the_checker_catches_a_bad_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "voxwire"
    (fake / "protocol").mkdir(parents=True)
    (fake / "protocol" / "bad.py").write_text("import asyncio\nfrom voxwire.asyncio import x\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert len(violations("protocol")) == 2
