"""The local server's GPT-Live emulation, in the Realtime server's shape: the pump here, its pure
core in :mod:`voxwire.server.live.core`.

Modules: ``connection`` (:class:`~voxwire.server.live.connection.LiveConnection`: the Live
websocket ``/v1/live/sessions`` and a stored session's fork), ``sip`` (a SIP call accepted as
Live, served to its sideband). They reuse the Realtime server's connection settings, phone line,
voice and turn detector; of the Realtime pump only ``server.py`` (which routes a handshake here)
and ``sip.py`` (a Live call's sideband) import them, and ``server/core/`` never does
(``tests/test_layering.py``). docs/live.md.
"""
