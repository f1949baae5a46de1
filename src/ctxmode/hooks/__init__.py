"""Agent hooks: ``ctxmode hook EVENT [--agent A]`` (entry point ``ctxmode.hooks.runner.main``).

Contracts:
- fail open: any error, bad or oversized payload, locked or corrupt store -> exit 0, nothing or
  one JSON object on stdout, a line in ``<project root>/.context/hooks.log``;
- fast: only the standard library and ctxmode core are imported, lazily; one store open;
- bounded: injected text stays under the agent's cap (``handlers.OUTPUT_CAP_CHARS``) and the
  snapshot under ``Settings.snapshot_bytes``;
- fenced: injected text is escaped XML inside ``<ctxmode_data>``, labelled as reference data;
- idempotent: a retried hook call (same payload, or the same ``tool_use_id``) records nothing
  new.

``sessions.adapters`` turns each agent's payload into a ``NormalizedHookEvent``;
``handlers`` records and decides what to print; ``runner`` parses argv/stdin and owns the
fail-open boundary (``hooklog`` writes its log);
``in_agent`` runs the same path for Claude Code's ``mcp_tool`` hook calls inside ``ctxmode
serve``; ``backfill`` records, at PreCompact and SessionEnd, the calls a Claude Code transcript
holds that no hook recorded.

May import: ``core``, ``sessions`` and the ``store`` facade (whose domain imports are lazy);
never ``search``, ``knowledge`` at module level, the MCP SDK, click or another face.
"""
