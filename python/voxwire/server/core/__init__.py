"""The server's pure core: what one connection's session *is* and how it answers, without I/O.

No asyncio, threads, sockets, clocks or websockets here (``tests/test_layering.py`` checks it):
time comes in as arguments, events go out as return values. The pump (``voxwire.server``'s
``server``, ``connection``, ``responses``, ``transcriptions``, ``faults``) moves them over the
wire and owns the tasks; the engines (``voxwire.server.engines``) make voice, detect turns,
transcribe and decide answers.

Modules: ``session`` (client events to server events and commands), ``config`` (session
defaults, validation, merging), ``conversation``, ``input_buffer``, ``response`` (one response's
events), ``planning`` (a ``response.create`` resolved against the session), ``turn`` (a
responder's input and outputs), ``turn_detection`` (what a turn detector reports), ``faults``
(fault declarations), ``wire`` (encoding server events), ``errors``, ``ids``.
"""
