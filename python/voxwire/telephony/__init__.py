"""Telephony: phone calls for voice agents (docs/telephony.md).

* :mod:`voxwire.telephony.twilio` — the Twilio Media Streams bridge, ``voxwire phone``, and a
  Twilio simulator for tests
"""
