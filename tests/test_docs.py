"""Every fenced Python block of README.md, docs/*.md and examples/*.md runs (tests/docs_blocks.py
says how, and what the markers mean); and the docs keep one list of what is built."""

from __future__ import annotations

import asyncio
import ctypes.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.audio.test_devices import ASOUNDRC
from tests.children import child_env
from tests.docs_blocks import (
    BLOCK_TIMEOUT_S,
    HOSTED,
    KNOWN_NEEDS,
    PIP_INSTALL,
    POSTGRES,
    ROOT,
    SOUND_CARD,
    Block,
    all_blocks,
    blocks,
    compiled,
    pages,
    run_block,
)
from tests.store.conftest import _why_no_postgres

BLOCKS = all_blocks()
RUNNABLE = [b for b in BLOCKS if b.fragment is None and b.run_by is None]


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.id)
def test_block_runs(
    block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    unknown = [
        need for need in block.needs if need not in KNOWN_NEEDS and not need.startswith(PIP_INSTALL)
    ]
    assert not unknown, f"{block.id}: unknown '# needs:' {unknown}; known: {KNOWN_NEEDS}"
    for need in block.needs:
        if need.startswith(PIP_INSTALL):
            pytest.importorskip(_import_name(need.removeprefix(PIP_INSTALL)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    if POSTGRES in block.needs:
        reason = _why_no_postgres()
        if reason is not None:
            pytest.skip(reason)
        monkeypatch.setenv("VOXWIRE_STORE", request.getfixturevalue("pg_cluster"))
    if SOUND_CARD in block.needs:
        run_with_null_sound_card(block, tmp_path)
    else:
        asyncio.run(run_block(block))


def run_with_null_sound_card(block: Block, home: Path) -> None:
    """In a child process whose ALSA default device is README's null-device recipe."""
    if ctypes.util.find_library("portaudio") is None:
        pytest.skip("the PortAudio library is not installed (apt install libportaudio2)")
    (home / ".asoundrc").write_text(ASOUNDRC)
    child = subprocess.run(
        [sys.executable, "-m", "tests.docs_blocks", str(block.page), str(block.line)],
        env=child_env(HOME=str(home)),
        cwd=home,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_S + 30,
        check=False,
    )
    assert child.returncode == 0, child.stdout + child.stderr


def _import_name(requirement: str) -> str:
    """The module a distribution is imported as: ``psycopg[binary]>=3.2`` -> ``psycopg``."""
    name = re.split(r"[\[<>=!~; ]", requirement.strip(), maxsplit=1)[0]
    return {"webrtcvad-wheels": "webrtcvad"}.get(name, name).replace("-", "_").lower()


def _installed_by_voxwire() -> set[str]:
    """The modules voxwire's own dependencies and its user extras install (not dev, bench and
    wheels, which no application installs)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = list(project["dependencies"])
    for extra, listed in project["optional-dependencies"].items():
        if extra not in ("dev", "bench", "wheels"):
            requirements += listed
    return {_import_name(r) for r in requirements} | {"voxwire", "tests"}


def _imported(block: Block) -> set[str]:
    import ast

    try:
        tree = ast.parse(block.source)
    except SyntaxError:
        return set()  # a fragment that is not Python on its own
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return {name for name in names if name not in sys.stdlib_module_names}


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_a_block_says_what_to_install_that_no_extra_brings(block: Block) -> None:
    """A reader copying a block gets its imports from voxwire and its extras, or the block
    says what else to install (``# needs: pip install openai``): the official client in
    docs/server.md's first block and uvicorn in the GPT-Live SIP one did not say so."""
    told = {_import_name(n.removeprefix(PIP_INSTALL)) for n in block.needs if PIP_INSTALL in n}
    missing = _imported(block) - _installed_by_voxwire() - told
    assert not missing, f"{block.id}: imports {sorted(missing)}; add '# needs: pip install ...'"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_every_python_block_runs_here_or_in_the_test_it_names(block: Block) -> None:
    assert block.fragment is None, (
        f"{block.id} is marked '# fragment: {block.fragment}' and never runs: make it a program "
        "(the tests run it), name the test that runs it ('# run by: tests/...'), or write it as "
        "prose"
    )
    compiled(block)  # a SyntaxError names the page and line
    if block.run_by is not None:
        runner = ROOT / block.run_by
        assert runner.is_file(), f"{block.id}: '# run by: {block.run_by}' names no test file"
        # It reads the block from the page through tests/docs_blocks.py, by this marker.
        text = runner.read_text(encoding="utf-8")
        assert "docs_blocks" in text, f"{block.id}: {block.run_by} does not read the page's block"
        assert block.page.name in text, f"{block.id}: {block.run_by} does not read {block.page}"


def test_no_python_block_escapes_the_collector(tmp_path: Path) -> None:
    """Any fence CommonMark reads as Python is collected (then run, or refused as a fragment):
    indented in a list, with tildes, spelled python3, Python or pycon."""
    page = tmp_path / "page.md"
    page.write_text(
        "# A page\n\n1. In a list:\n\n   ```python\n   x = 1\n   ```\n\n"
        "~~~py\ny = 2\n~~~\n\n```Python3\nz = 3\n```\n\n````pycon title\nw = 4\n````\n\n"
        "```sh\nnot = python\n```\n\n```python\n# fragment: a listing\nv(5)\n```\n",
        encoding="utf-8",
    )
    found = blocks(page)
    assert [b.source for b in found] == [
        "x = 1\n",
        "y = 2\n",
        "z = 3\n",
        "w = 4\n",
        "# fragment: a listing\nv(5)\n",
    ]
    assert [b.line for b in found] == [6, 10, 14, 18, 26]
    assert found[-1].fragment == "a listing"


def test_the_collector_finds_the_pages_and_their_blocks() -> None:
    names = {page.relative_to(ROOT).as_posix() for page in pages()}
    assert {"README.md", "docs/session.md", "docs/agents.md", "docs/server.md"} <= names
    assert len(RUNNABLE) >= 20
    assert any(HOSTED in b.needs for b in RUNNABLE)
    assert any(SOUND_CARD in b.needs for b in RUNNABLE)


_NOT_BUILT = re.compile(r"^#+ .*\b(not done|not built|not yet built|to do|todo)\b", re.I | re.M)
_TEST_COUNT = re.compile(r"\(\d+ tests?\b|\b\d+ tests? pass", re.I)


@pytest.mark.parametrize("page", [p for p in pages() if p.name != "README.md"], ids=str)
def test_only_readme_lists_what_is_built(page: Path) -> None:
    """README's table says what is built and what is not; pages describe what they document
    (with its limits) and keep no list of their own that could go stale."""
    text = page.read_text(encoding="utf-8")
    lists = _NOT_BUILT.findall(text)
    assert not lists, f"{page.name}: a 'not done' list {lists}; README's 'Not built yet' has it"
    counts = _TEST_COUNT.findall(text)
    assert not counts, f"{page.name}: test counts {counts} go stale; name the files instead"


def test_the_devices_page_gives_the_alsa_recipe_the_device_tests_use() -> None:
    page = (ROOT / "docs" / "devices.md").read_text(encoding="utf-8")
    assert f"```\n{ASOUNDRC}```" in page
