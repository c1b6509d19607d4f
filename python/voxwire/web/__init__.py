"""voxwire.web: talk to an agent from a browser page, and watch any session on a timeline.

* :class:`WebServer` — the page on a loopback port: ``/talk`` runs one session per tab (the
  page's microphone in, the agent's audio out through a :class:`~voxwire.audio.RemoteOutput`
  whose clock only the page's "played" reports move: a barge-in truncates at what was heard);
  ``/?watch`` shows a :class:`Timeline` fed from code, live.
* :class:`Timeline` — a session's events as timed records (an observer: it needs no session
  option; ``raw_server_events=True`` adds server VAD's positions and truncation answers).
* :func:`write_report` — the same timeline as one self-contained HTML file.
* :func:`mint_client_secret` — an ephemeral key for a browser that talks to the hosted
  service itself, minted from the application's server with the agent's configuration.

``voxwire web`` (:mod:`voxwire.web.command`) serves the page for an agent; docs/web.md.
"""

from voxwire.timeline.observer import Record, Timeline
from voxwire.timeline.report import render_report, write_report
from voxwire.web.bridge import SessionRecipe, TabBridge
from voxwire.web.client_secrets import ClientSecret, client_secret_request, mint_client_secret
from voxwire.web.server import WebServer

__all__ = [
    "ClientSecret",
    "Record",
    "SessionRecipe",
    "TabBridge",
    "Timeline",
    "WebServer",
    "client_secret_request",
    "mint_client_secret",
    "render_report",
    "write_report",
]
