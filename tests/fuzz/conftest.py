"""Counts what the fuzz suite tried and prints the figures at the end of the run (CI's log)."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

#: Cases counted by the fuzz tests: "what: kind" -> how many ("core frames: truncated" …).
CASES: Counter[str] = Counter()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not CASES:
        return
    terminalreporter.section("fuzz cases")
    groups: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for name, count in CASES.items():
        what, _, kind = name.partition(": ")
        groups[what][kind] += count
    for what, kinds in sorted(groups.items()):
        detail = ", ".join(f"{kind} {n:,}" for kind, n in sorted(kinds.items()) if kind)
        terminalreporter.write_line(
            f"{what}: {sum(kinds.values()):,}" + (f" ({detail})" if detail else "")
        )
