"""``voxwire.live``: a sans-I/O protocol core for OpenAI's GPT-Live API (full-duplex speech with
delegation), built like :mod:`voxwire.protocol` and sharing its codec, id and error machinery.

Frames in (:meth:`LiveProtocol.receive_text`), typed events out
(:meth:`LiveProtocol.events_received`), commands queued (``send_*``,
:meth:`LiveProtocol.data_to_send`). No asyncio, no clocks, no sockets. docs/live.md.
"""

from voxwire.live import client_events, decisions, server_events
from voxwire.live.codec import (
    decode_client_event,
    decode_fork_client_event,
    decode_server_event,
    decode_sideband_client_event,
    encode_event,
    unknown_fields,
)
from voxwire.live.decisions import (
    ChoiceOption,
    ChoiceQuestion,
    Decision,
    DecisionAnswer,
    DecisionQuestion,
    DecisionsConfig,
    PredicateQuestion,
    ScoreLevel,
    ScoreQuestion,
)
from voxwire.live.delegations import Answer, Delegation, DelegationBook, FunctionCall
from voxwire.live.objects import (
    ClientDelegation,
    DecisionsDelegation,
    ForkSessionConfig,
    LiveSessionConfig,
    LiveSessionResource,
    ResponsesBackend,
    ResponsesDelegation,
    SessionUsage,
)
from voxwire.live.protocol import LiveProtocol, LiveState

__all__ = [
    "Answer",
    "ChoiceOption",
    "ChoiceQuestion",
    "ClientDelegation",
    "Decision",
    "DecisionAnswer",
    "DecisionQuestion",
    "DecisionsConfig",
    "DecisionsDelegation",
    "Delegation",
    "DelegationBook",
    "ForkSessionConfig",
    "FunctionCall",
    "LiveProtocol",
    "LiveSessionConfig",
    "LiveSessionResource",
    "LiveState",
    "PredicateQuestion",
    "ResponsesBackend",
    "ResponsesDelegation",
    "ScoreLevel",
    "ScoreQuestion",
    "SessionUsage",
    "client_events",
    "decisions",
    "decode_client_event",
    "decode_fork_client_event",
    "decode_server_event",
    "decode_sideband_client_event",
    "encode_event",
    "server_events",
    "unknown_fields",
]
