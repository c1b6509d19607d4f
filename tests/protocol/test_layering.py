"""protocol/ stays sans-I/O: it imports the stdlib, itself, voxwire.exceptions and msgspec only,
and none of the stdlib modules that bring clocks, randomness or I/O (DESIGN.md, layering)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import voxwire.protocol

PROTOCOL_DIR = Path(voxwire.protocol.__file__).parent

FORBIDDEN_STDLIB = {
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
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}:{node.lineno}: use absolute imports"
            found.append((node.lineno, node.module or ""))
    return found


def is_allowed(module: str) -> bool:
    top = module.split(".")[0]
    if module == "voxwire.exceptions" or module.startswith("voxwire.protocol"):
        return True
    if top == "msgspec" or top == "__future__":
        return True
    return top in sys.stdlib_module_names and top not in FORBIDDEN_STDLIB


def test_protocol_sources_exist() -> None:
    assert len(list(PROTOCOL_DIR.glob("*.py"))) >= 10


def test_protocol_imports_only_allowed_modules() -> None:
    offenders = [
        f"{path.name}:{line}: {module}"
        for path in sorted(PROTOCOL_DIR.glob("*.py"))
        for line, module in imported_modules(path)
        if not is_allowed(module)
    ]
    assert offenders == []


def test_the_rule_catches_forbidden_imports(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import time\nfrom asyncio import sleep\nimport pydantic\nimport msgspec\n")
    flagged = [module for _, module in imported_modules(bad) if not is_allowed(module)]
    assert flagged == ["time", "asyncio", "pydantic"]
