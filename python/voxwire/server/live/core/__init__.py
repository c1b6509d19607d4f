"""The pure core of the server's GPT-Live emulation: what a Live session *is* and how it
answers, without I/O (as :mod:`voxwire.server.core` is for Realtime; ``tests/test_layering.py``
checks it).

Modules: ``session`` (:class:`~voxwire.server.live.core.session.LiveServerSession`: start,
update, delegation, errors), ``config`` (a session's configuration checked for this server),
``decisions`` (the Decisions API: items, ``decision.create``, triggers, the scenario's scripted
model), ``forks`` (stored sessions and their forks).
"""
