"""Imports point down only, and files stay small (docs/architecture.md): checked by parsing
every source file of python/voxwire. The rules have no exceptions and no allow-list."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "voxwire"
STDLIB = set(sys.stdlib_module_names)

# What a sans-I/O module may not import: clocks, randomness from the system, threads, processes,
# sockets, the event loop. Time and randomness come in as arguments.
NO_IO: set[str] = {
    "asyncio",
    "concurrent",
    "datetime",
    "multiprocessing",
    "os",
    "select",
    "selectors",
    "signal",
    "socket",
    "ssl",
    "subprocess",
    "threading",
    "time",
}

# Per layer (a folder or a top-level module of python/voxwire): which voxwire modules (and
# their submodules) and which third-party top-level packages it may import; "voxwire_exact":
# voxwire modules allowed as such, without their submodules. Standard-library modules are
# allowed everywhere except those listed under "no_stdlib". A nested folder (server/core)
# answers to its own rule and to its parent's.
RULES: dict[str, dict[str, set[str]]] = {
    "protocol": {
        "voxwire": {"voxwire.protocol", "voxwire.exceptions"},
        "third_party": {"msgspec"},
        # No clocks, randomness, threads or I/O: they come in as arguments (sans-I/O).
        "no_stdlib": NO_IO | {"random", "secrets", "uuid"},
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
            "voxwire.store",
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
            "voxwire.logs",
        },
        # faster_whisper, hibari: the optional transcription and voice engines (server extras,
        # imported when used).
        "third_party": {"websockets", "msgspec", "numpy", "webrtcvad", "faster_whisper", "hibari"},
        "no_stdlib": set(),
    },
    # The server's pure core: no engine, no pump, no I/O (ids may draw from a seeded random).
    "server/core": {
        "voxwire": {"voxwire.server.core", "voxwire.protocol", "voxwire.exceptions"},
        "third_party": {"msgspec"},
        "no_stdlib": NO_IO,
    },
    # Engines make content; they may use the core's data types, never the pump.
    "server/engines": {
        "voxwire": {
            "voxwire.server.core",
            "voxwire.server.engines",
            "voxwire.protocol",
            "voxwire.audio",
            "voxwire._core",
            "voxwire.exceptions",
        },
        "third_party": {"msgspec", "numpy", "webrtcvad", "faster_whisper", "hibari"},
        "no_stdlib": set(),
    },
    # Telephony: phone calls on top of the client session (docs/telephony.md), by its public
    # names; each carrier is a sub-package that answers to this rule and its own.
    "telephony": {
        "voxwire": {"voxwire.telephony", "voxwire.agents", "voxwire.audio", "voxwire.exceptions"},
        "voxwire_exact": {"voxwire.asyncio", "voxwire.asyncio.events"},
        "third_party": {"websockets", "msgspec", "numpy"},
        "no_stdlib": set(),
    },
    # The Twilio Media Streams bridge: the session by its public names, the audio core's remote
    # output, websockets (the webhook + media stream server, the simulator's client).
    "telephony/twilio": {
        "voxwire": {
            "voxwire.telephony.twilio",
            "voxwire.agents",
            "voxwire.audio",
            "voxwire.exceptions",
        },
        "voxwire_exact": {"voxwire.asyncio", "voxwire.asyncio.events"},
        "third_party": {"websockets", "msgspec", "numpy"},
        "no_stdlib": set(),
    },
    # The exception tree is the root every layer imports: it imports nothing of voxwire.
    "exceptions.py": {"voxwire": set(), "third_party": set(), "no_stdlib": NO_IO},
    # The secret-redacting log filter the client and the server pump share: standard library only.
    "logs.py": {"voxwire": set(), "third_party": set(), "no_stdlib": NO_IO},
    # The package's front door: the version, the exceptions, and lazily the client.
    "__init__.py": {
        "voxwire": {"voxwire._core", "voxwire.exceptions", "voxwire.agents", "voxwire.asyncio"},
        "third_party": set(),
        "no_stdlib": set(),
    },
    # The scripted transport for users' tests plugs into the client's transport seam; it
    # scripts the protocol's events and never starts the local server. It also re-exports the
    # Twilio call simulator (voxwire.telephony.twilio.simulator).
    "testing.py": {
        "voxwire": {
            "voxwire.protocol",
            "voxwire.asyncio",
            "voxwire.exceptions",
            "voxwire.telephony.twilio.simulator",
        },
        "third_party": set(),
        "no_stdlib": set(),
    },
    # The command line: the audio core, the commands' modules, and the server by its public
    # names.
    "cli.py": {
        "voxwire": {
            "voxwire.audio",
            "voxwire.quickstart",
            "voxwire.demo",
            "voxwire.talk",
            "voxwire.bench",
            "voxwire.exceptions",
            "voxwire.telephony",
        },
        "voxwire_exact": {"voxwire.__version__", "voxwire.server"},
        "third_party": {"numpy"},
        "no_stdlib": set(),
    },
    # The demo: a client session against the local server (public names) and a voice engine
    # that speaks the user's question.
    "quickstart.py": {
        "voxwire": {
            "voxwire.agents",
            "voxwire.asyncio",
            "voxwire.audio",
            "voxwire.exceptions",
            "voxwire.server.engines",
        },
        "voxwire_exact": {"voxwire.server"},
        "third_party": {"numpy"},
        "no_stdlib": set(),
    },
    # `voxwire talk`: a client session with the sound devices, printed by the shared console.
    "talk.py": {
        "voxwire": {
            "voxwire.agents",
            "voxwire.asyncio",
            "voxwire.audio",
            "voxwire.console",
            "voxwire.exceptions",
        },
        "third_party": set(),
        "no_stdlib": set(),
    },
    # Quick measurements of the audio path (voxwire bench / info); soxr: the peer, if installed.
    "bench.py": {
        "voxwire": {"voxwire.audio", "voxwire._core"},
        "third_party": {"numpy", "soxr"},
        "no_stdlib": set(),
    },
    # The live transcript of demo and talk: session events (client side) to lines.
    "console.py": {
        "voxwire": {"voxwire.asyncio", "voxwire.agents"},
        "third_party": {"msgspec"},
        "no_stdlib": set(),
    },
    # `voxwire demo`: a client session against the local server (public names) on a virtual
    # clock, the server's voice engine speaking the user's lines, the shared console.
    "demo": {
        "voxwire": {
            "voxwire.demo",
            "voxwire.agents",
            "voxwire.asyncio",
            "voxwire.audio",
            "voxwire.console",
            "voxwire.quickstart",
            "voxwire.exceptions",
            "voxwire.server.engines",
        },
        "voxwire_exact": {"voxwire.server"},
        "third_party": {"numpy"},
        "no_stdlib": set(),
    },
}

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 60


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


def sources(layer: str) -> list[Path]:
    where = PACKAGE / layer
    return [where] if where.suffix == ".py" else sorted(where.rglob("*.py"))


def allowed_voxwire(name: str, rule: dict[str, set[str]]) -> bool:
    if name in rule.get("voxwire_exact", set()):
        return True
    return any(name == m or name.startswith(m + ".") for m in rule["voxwire"])


def violations(layer: str) -> list[str]:
    rule = RULES[layer]
    bad = []
    for path in sources(layer):
        for lineno, name in imports_of(path):
            top = name.split(".")[0]
            where = f"{path.relative_to(PACKAGE.parent)}:{lineno} imports {name}"
            if top == "voxwire":
                if not allowed_voxwire(name, rule):
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


def test_every_module_answers_to_a_rule() -> None:
    covered = {path for layer in RULES for path in sources(layer)}
    unruled = [
        str(path.relative_to(PACKAGE.parent))
        for path in sorted(PACKAGE.rglob("*.py"))
        if path not in covered
    ]
    assert unruled == []


def test_the_checker_catches_io_in_the_server_core(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "voxwire"
    (fake / "server" / "core").mkdir(parents=True)
    (fake / "server" / "core" / "bad.py").write_text(
        "import time\nimport threading\nfrom websockets import connect\n"
        "from voxwire.server.engines.vad import TurnDetector\nfrom voxwire.server import x\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert len(violations("server/core")) == 5


def oversized(package: Path) -> list[str]:
    """Files over MAX_FILE_LINES lines and functions over MAX_FUNCTION_LINES lines (from the
    ``def`` line to the last line of the body, decorators excluded)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        text = path.read_text()
        name = path.relative_to(package.parent)
        lines = len(text.splitlines())
        if lines > MAX_FILE_LINES:
            found.append(f"{name}: {lines} lines (at most {MAX_FILE_LINES})")
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(
                        f"{name}:{node.lineno} {node.name}: {length} lines "
                        f"(at most {MAX_FUNCTION_LINES})"
                    )
    return found


def test_files_and_functions_stay_small() -> None:
    assert oversized(PACKAGE) == []


def test_the_size_check_catches_a_long_file_and_a_long_function(tmp_path: Path) -> None:
    fake = tmp_path / "voxwire"
    fake.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (fake / "long.py").write_text("def f() -> None:\n" + body + "\n" * MAX_FILE_LINES)
    (fake / "fine.py").write_text("def g() -> None:\n" + body[: -len("    x59 = 59\n")])
    found = oversized(fake)
    assert [entry.split(":")[0] for entry in found] == ["voxwire/long.py", "voxwire/long.py"]
    assert "f: 61 lines" in found[1]
