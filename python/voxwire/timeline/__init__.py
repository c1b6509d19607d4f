"""A session's events as timed records, and the same records as one HTML file.

* :class:`Timeline` (``observer``) — an observer: it needs no session option
  (``raw_server_events=True`` adds server VAD's positions and truncation answers).
* :func:`write_report` / :func:`render_report` (``report``) — the timeline as one
  self-contained HTML file that draws what the browser page (:mod:`voxwire.web`) draws.

Below both ``voxwire.web`` (which shows a timeline live) and ``voxwire.demo`` (``--report``);
``voxwire.web`` re-exports these names. docs/web.md.
"""

from voxwire.timeline.observer import Record, Timeline
from voxwire.timeline.report import render_report, write_report

__all__ = ["Record", "Timeline", "render_report", "write_report"]
