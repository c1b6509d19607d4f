"""The session's persistence: recording the conversation into a
:class:`~voxwire.store.ConversationStore` as the server confirms it (``recording``) and
starting or resuming a stored conversation at ``connect()`` (``resumption``)."""
