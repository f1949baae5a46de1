"""Past agent sessions: importing what the agents recorded before ctxmode was installed, and
the knowledge candidates proposed from them.

- ``sources``: where each agent keeps its transcripts, and which belong to this project;
- ``readers``: each agent's transcript -> the hook payloads its hooks would have sent;
- ``opencode``: OpenCode's sessions database, read-only;
- ``qwen``, ``copilot``: Qwen Code's chats, Copilot CLI's session events (``lines``: reading
  JSON Lines from an offset);
- ``importer``: ``ctxmode history import`` (the hooks' adapters, extraction and recording);
- ``inbox``: candidates (decisions, constraints, conventions, fixes) with their evidence,
  accepted into contexts or rejected, never promoted on their own.

May import: ``core``, ``sessions``, ``knowledge``. Never ``search``, the ``store`` facade or
a face.
"""
