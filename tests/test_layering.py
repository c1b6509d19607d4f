"""Imports point down only, and files stay small (docs/architecture.md): checked by parsing
every source file of python/voxwire. The rules have no exceptions and no allow-list:

* each layer (a folder or a top-level module) imports only what its rule allows;
* inside ``asyncio/`` and ``asyncio/live/``, each sub-package ("room") imports only the rooms
  below it, and none imports the session's face (the modules directly in the folder);
* the layers (the top-level folders and modules) import each other one way: no two of them
  import each other, through any path (``demo`` uses ``timeline``, ``web`` uses ``demo``);
* no import cycle anywhere in the package, imports under ``TYPE_CHECKING`` and inside
  functions included."""

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
    # The GPT-Live core: as pure as protocol/, whose codec, ids and error events it shares.
    "live": {
        "voxwire": {"voxwire.live", "voxwire.protocol", "voxwire.exceptions"},
        "third_party": {"msgspec"},
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
            "voxwire.live",
            "voxwire.protocol",
            "voxwire.audio",
            "voxwire._core",
            "voxwire.exceptions",
            "voxwire.logs",
            "voxwire.store",
        },
        # opentelemetry: optional client spans (asyncio/observability/tracing.py imports it when
        # installed). mcp, httpx2, anyio: the official MCP SDK, its HTTP client and its streams,
        # the local MCP servers' client (asyncio/agents/mcp_local.py, the mcp extra; imported
        # when used).
        "third_party": {
            "websockets",
            "numpy",
            "msgspec",
            "opentelemetry",
            "mcp",
            "httpx2",
            "anyio",
        },
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
            "voxwire.live",
            "voxwire.protocol",
            "voxwire.audio",
            "voxwire._core",
            "voxwire.exceptions",
            "voxwire.logs",
        },
        # faster_whisper, hibari: the optional transcription and voice engines (server extras,
        # imported when used).
        # h11: the SIP emulation's REST endpoints and webhook (server/sip.py, telephony extra).
        "third_party": {
            "websockets",
            "msgspec",
            "numpy",
            "webrtcvad",
            "faster_whisper",
            "hibari",
            "h11",
        },
        "no_stdlib": set(),
    },
    # The server's pure core: no engine, no pump, no I/O (ids may draw from a seeded random),
    # and nothing of the Live emulation (server/live/), which sits on it.
    "server/core": {
        "voxwire": {
            "voxwire.server.core",
            "voxwire.live",
            "voxwire.protocol",
            "voxwire.exceptions",
        },
        "third_party": {"msgspec"},
        "no_stdlib": NO_IO,
    },
    # The GPT-Live emulation's pump: its pure core, the Realtime core's shared pieces (ids,
    # turns, turn detection, calls), the engines, and of the Realtime pump only what a connection
    # shares (settings) and the phone line; never the Realtime server's responses or lifecycle.
    "server/live": {
        "voxwire": {
            "voxwire.server.live",
            "voxwire.server.core",
            "voxwire.server.engines",
            "voxwire.server.connection",
            "voxwire.server.phone",
            "voxwire.live",
            "voxwire.protocol",
            "voxwire.exceptions",
        },
        "third_party": {"websockets", "msgspec"},
        "no_stdlib": set(),
    },
    # The Live emulation's pure core, as pure as server/core (whose ids it uses): no engine, no
    # pump, no I/O.
    "server/live/core": {
        "voxwire": {
            "voxwire.server.live.core",
            "voxwire.server.core",
            "voxwire.live",
            "voxwire.protocol",
            "voxwire.exceptions",
        },
        "third_party": {"msgspec"},
        "no_stdlib": NO_IO,
    },
    # Engines make content; they may use the cores' data types (the scenario's scripted
    # Decisions model: server/live/core), never the pump.
    "server/engines": {
        "voxwire": {
            "voxwire.server.core",
            "voxwire.server.live.core",
            "voxwire.server.engines",
            "voxwire.protocol",
            "voxwire.audio",
            "voxwire._core",
            "voxwire.exceptions",
        },
        "third_party": {"msgspec", "numpy", "webrtcvad", "faster_whisper", "hibari"},
        "no_stdlib": set(),
    },
    # Phone calls (SIP call control, webhooks, DTMF): above the session, like an application.
    # httpx: the REST client of the telephony extra (imported by telephony/sip.py only).
    # websockets, msgspec, numpy, audio: the Twilio Media Streams bridge (telephony/twilio).
    # store, psycopg: the SIP workers' shared store and calls table (telephony/sip_worker.py,
    # telephony/calls_table.py; the postgres extra).
    "telephony": {
        "voxwire": {
            "voxwire.telephony",
            "voxwire.export",  # voxwire phone --metrics-port: the calls' sessions exported
            "voxwire.asyncio",
            "voxwire.agents",
            "voxwire.protocol",
            "voxwire.audio",
            "voxwire.exceptions",
            "voxwire.logs",  # stdlib only: the websockets log filters
            "voxwire.store",
        },
        "third_party": {"httpx", "websockets", "msgspec", "numpy", "psycopg"},
        "no_stdlib": set(),
    },
    # The Twilio Media Streams bridge: the session by its public names only, the audio core's
    # remote output, websockets (the webhook + media stream server, the simulator's client).
    "telephony/twilio": {
        "voxwire": {
            "voxwire.telephony.twilio",
            "voxwire.export",  # voxwire phone --metrics-port: the calls' sessions exported
            "voxwire.agents",
            "voxwire.audio",
            "voxwire.exceptions",
            "voxwire.logs",  # stdlib only: the websockets log filters
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
            "voxwire.bench_report",
            "voxwire.web",
            "voxwire.exceptions",
            "voxwire.telephony",
            "voxwire.serving",
            "voxwire.export",  # serve --metrics-port: the served connections' events
            "voxwire.arguments",
        },
        "voxwire_exact": {"voxwire.__version__", "voxwire.server"},
        "third_party": {"numpy"},
        "no_stdlib": set(),
    },
    # The command line's argument types and help formatter: standard library only.
    "arguments.py": {"voxwire": set(), "third_party": set(), "no_stdlib": set()},
    # How the serving commands stop (signals, status): standard library only, and the metrics
    # endpoint their --metrics-port starts.
    "serving.py": {"voxwire": {"voxwire.export"}, "third_party": set(), "no_stdlib": set()},
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
    # voxwire bench --report: the table drawn as inline SVG in one HTML file.
    "bench_report.py": {"voxwire": {"voxwire.bench"}, "third_party": set(), "no_stdlib": set()},
    # The live transcript of demo and talk: session events (client side) to lines.
    "console.py": {
        "voxwire": {"voxwire.asyncio", "voxwire.agents"},
        "third_party": {"msgspec"},
        "no_stdlib": set(),
    },
    # A session's events as timed records and the same as one HTML file: below demo (--report)
    # and web (the live page); the report reads the page's static files as package data.
    "timeline": {
        "voxwire": {"voxwire.timeline", "voxwire._core", "voxwire.protocol"},
        # the public names: the session's events and its metrics records (cut_error)
        "voxwire_exact": {
            "voxwire.asyncio",
            "voxwire.asyncio.events",
            "voxwire.asyncio.observability.metrics",
        },
        "third_party": set(),
        "no_stdlib": set(),
    },
    # Metrics export: an observer of sessions' events (the client's events and records) into
    # OpenTelemetry and Prometheus, both optional and imported where used.
    "export": {
        "voxwire": {"voxwire.export", "voxwire.protocol", "voxwire.exceptions"},
        "voxwire_exact": {
            "voxwire.asyncio.events",
            "voxwire.asyncio.events.guardrail",
            "voxwire.asyncio.live.events",
            "voxwire.asyncio.observability.records",
        },
        "third_party": {"opentelemetry", "prometheus_client"},
        "no_stdlib": set(),
    },
    # `voxwire demo`: a client session against the local server (public names) on a virtual
    # clock, the server's voice engine speaking the user's lines, the shared console; --report
    # writes the timeline. Never the browser page: web uses the demo's agents, not the reverse.
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
            "voxwire.timeline",  # --report: the timeline, written as HTML
        },
        "voxwire_exact": {"voxwire.server"},
        "third_party": {"numpy"},
        "no_stdlib": set(),
    },
    # `voxwire web` and the page's Python side: client sessions (public names), the remote
    # output, the timeline; `voxwire web` itself runs the demo's agents on the local server.
    "web": {
        "voxwire": {
            "voxwire.web",
            "voxwire.export",  # voxwire web --metrics-port: the tabs' sessions exported
            "voxwire.timeline",
            "voxwire.agents",
            "voxwire.asyncio",
            "voxwire.audio",
            "voxwire._core",
            "voxwire.protocol",
            "voxwire.exceptions",
            "voxwire.demo.script",
            "voxwire.quickstart",
            "voxwire.logs",  # stdlib only: the websockets log filters
        },
        "voxwire_exact": {"voxwire.server"},
        "third_party": {"websockets"},
        "no_stdlib": set(),
    },
}

# asyncio/ by concern: each room may import the rooms listed (and the two foundations every
# part uses, errors.py and supervisor.py); the face (session.py, reading.py, sending.py,
# options.py, hosts.py, dispatch.py, images.py) may import every room, and no room imports it.
ASYNCIO = PACKAGE / "asyncio"
ASYNCIO_FOUNDATIONS = {"errors": set(), "supervisor": {"errors"}}
ASYNCIO_ROOMS: dict[str, set[str]] = {
    "observability": set(),
    "events": {"observability"},
    "connection": {"events"},
    "audio": {"events", "observability"},
    "agents": {"events", "observability"},
    "persistence": {"events", "agents"},
    # GPT-Live sessions: reuse the tool machinery, the events, the audio output, the
    # reconnection policy and the persistence machinery.
    "live": {"events", "agents", "observability", "audio", "connection", "persistence"},
}

# asyncio/live/ the same way: its foundations (what the application receives, and the wait for a
# command's answer) and two rooms (the listener's side, the agent's parts); the face
# (session.py and its halves connection.py, handling.py, sideband.py; config.py, recording.py,
# spans.py) may import both rooms, and neither room imports the face or the other room.
LIVE = ASYNCIO / "live"
LIVE_FOUNDATIONS = {"decision_events": set(), "events": {"decision_events"}, "replies": set()}
LIVE_ROOMS: dict[str, set[str]] = {"audio": set(), "agents": set()}

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


def test_the_live_emulation_lives_in_its_own_rooms() -> None:
    """The server's GPT-Live emulation is server/live/ (pump) and server/live/core/ (pure): no
    ``live*`` module among the Realtime server's files."""
    server = PACKAGE / "server"
    stray = [
        str(path.relative_to(PACKAGE.parent))
        for path in sorted(server.rglob("live*.py"))
        if (server / "live") not in path.parents
    ]
    assert stray == []
    assert (server / "live" / "core" / "session.py").is_file()


def test_the_checker_keeps_the_realtime_core_and_the_live_core_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "voxwire"
    (fake / "server" / "core").mkdir(parents=True)
    (fake / "server" / "live" / "core").mkdir(parents=True)
    (fake / "server" / "core" / "calls.py").write_text(
        "from voxwire.server.live.core.config import start_problem\n"
    )
    (fake / "server" / "live" / "core" / "session.py").write_text(
        "import time\nfrom voxwire.server.core.ids import ServerIds\n"
        "from voxwire.server.live.connection import LiveConnection\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert len(violations("server/core")) == 1
    assert [v.split(" imports ")[1] for v in violations("server/live/core")] == [
        "time",
        "voxwire.server.live.connection",
    ]


def room_violations(
    folder: Path,
    rooms: dict[str, set[str]] = ASYNCIO_ROOMS,
    foundations: dict[str, set[str]] = ASYNCIO_FOUNDATIONS,
) -> list[str]:
    """Imports of a room (or a foundation) of ``folder`` that reach above it."""
    allowed_by = {**rooms, **foundations}
    root = len(folder.parts) - 1 - folder.parts[::-1].index("voxwire")
    package = ".".join(folder.parts[root:])  # voxwire.asyncio, voxwire.asyncio.live
    bad = []
    for path in sorted(folder.rglob("*.py")):
        parts = path.relative_to(folder).with_suffix("").parts
        room = parts[0]
        if room not in allowed_by:
            continue  # the face and the package's __init__: may import everything
        allowed = {room} | allowed_by[room]
        if room in rooms:
            allowed |= set(foundations)
        for lineno, name in imports_of(path):
            if name == package or name.startswith(package + "."):
                target = _room_target(name, package)
                if target not in allowed:
                    where = path.relative_to(Path(*folder.parts[:root]))
                    bad.append(f"{where}:{lineno} imports {name} ({room} may not import {target})")
    return bad


def _room_target(name: str, package: str) -> str:
    """The room, foundation or face module an import of ``package`` lands in."""
    parts = name.removeprefix(package).lstrip(".").split(".")
    return parts[0] or "__init__"


def test_asyncio_rooms_import_only_rooms_below() -> None:
    assert room_violations(ASYNCIO) == []


def test_live_session_rooms_import_only_rooms_below() -> None:
    assert room_violations(LIVE, LIVE_ROOMS, LIVE_FOUNDATIONS) == []


def test_the_room_checker_catches_a_live_room_importing_the_face_or_a_sibling(
    tmp_path: Path,
) -> None:
    live = tmp_path / "voxwire" / "asyncio" / "live"
    (live / "audio").mkdir(parents=True)
    (live / "audio" / "bad.py").write_text(
        "from voxwire.asyncio.live.session import LiveSession\n"
        "from voxwire.asyncio.live.agents.delegation import ClientWork\n"
        "from voxwire.asyncio.live import LiveSession as Face\n"
        "from voxwire.asyncio.live.events import LiveEvent\n"
        "from voxwire.asyncio.live.audio.transcripts import HeardClock\n"
        "from voxwire.asyncio.events import SessionEvent\n"
    )
    found = room_violations(live, LIVE_ROOMS, LIVE_FOUNDATIONS)
    assert [entry.split(" (")[1] for entry in found] == [
        "audio may not import session)",
        "audio may not import agents)",
        "audio may not import __init__)",
    ]


def test_the_room_checker_catches_a_part_importing_the_face(tmp_path: Path) -> None:
    rooms = tmp_path / "voxwire" / "asyncio"
    (rooms / "events").mkdir(parents=True)
    (rooms / "events" / "bad.py").write_text(
        "from voxwire.asyncio.session import RealtimeSession\n"
        "from voxwire.asyncio.connection.pump import Pump\n"
        "from voxwire.asyncio.observability.metrics import Metrics\n"
    )
    assert len(room_violations(rooms)) == 2


def module_graph(package: Path) -> dict[str, set[str]]:
    """Every module of ``package`` and the package modules it imports, by dotted name; ``from
    pkg import name`` counts as importing the submodule ``pkg.name`` when there is one."""
    modules: dict[str, Path] = {}
    for path in package.rglob("*.py*"):
        if path.suffix not in (".py", ".pyi"):
            continue
        parts = path.relative_to(package.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in modules else owner(node.module) or "")
            elif isinstance(node, ast.Import):
                found |= {owner(alias.name) or "" for alias in node.names}
        graph[name] = {m for m in found if m and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph``: its strongly connected components of two or more
    modules (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None and child in graph:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if child is not None:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles() -> None:
    assert cycles(module_graph(PACKAGE)) == []


def layer_graph(package: Path) -> dict[str, set[str]]:
    """The top-level layers of ``package`` (its folders and modules) and the layers each
    imports."""
    graph: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        layer = path.relative_to(package).parts[0].removesuffix(".py")
        found = graph.setdefault(layer, set())
        for _, name in imports_of(path):
            parts = name.split(".")
            if parts[0] == package.name and len(parts) > 1 and parts[1] != layer:
                found.add(parts[1])
    return graph


def test_layers_import_each_other_one_way() -> None:
    assert cycles(layer_graph(PACKAGE)) == []


def test_the_layer_checker_catches_two_layers_importing_each_other(tmp_path: Path) -> None:
    fake = tmp_path / "voxwire"
    for layer in ("demo", "web", "timeline"):
        (fake / layer).mkdir(parents=True)
    (fake / "demo" / "__init__.py").write_text("from voxwire.timeline import Timeline\n")
    (fake / "demo" / "run.py").write_text("def report() -> None:\n    from voxwire.web import x\n")
    (fake / "web" / "command.py").write_text("from voxwire.demo.script import agents\n")
    (fake / "timeline" / "observer.py").write_text("import json\n")
    assert cycles(layer_graph(fake)) == [["demo", "web"]]


def test_the_cycle_checker_catches_a_type_only_cycle(tmp_path: Path) -> None:
    fake = tmp_path / "voxwire"
    (fake / "agents").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "agents" / "__init__.py").write_text("")
    (fake / "agents" / "a.py").write_text("from voxwire.agents.b import B\n")
    (fake / "agents" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from voxwire.agents import a\n"
    )
    (fake / "agents" / "c.py").write_text("from voxwire.agents.a import A\n")
    assert cycles(module_graph(fake)) == [["voxwire.agents.a", "voxwire.agents.b"]]


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
