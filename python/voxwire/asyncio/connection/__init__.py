"""The connection: the transport seam and websockets (``transport``), URLs and API keys
(``endpoint``), opening a connection (``dial``) and probing endpoints (``health``), moving
frames between the socket and the protocol core (``pump``), and moving to a new server session
after a loss (``reconnect``) or before the session's time limit (``renewal``)."""
