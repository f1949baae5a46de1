"""The agents ctxmode plugs into: where each keeps its hooks and MCP servers, and the installer.

- ``specs``: per-agent layouts, hook events and entries (data, no I/O);
- ``files``: reading and writing the agents' JSON, JSONC and TOML config files safely;
- ``jsonc``: a JSON-with-comments reader/editor that keeps comments;
- ``install``: install and uninstall of ctxmode for an agent; ``agent_status``: its status;
- ``claude``: Claude Code's command and in-agent (``mcp_tool``) hook handlers, which to write;
- ``trust``: the trust records Codex needs before it runs a project's hooks;
- ``gitexclude``: per-machine project files kept out of git in the clone's ``info/exclude``;
- ``opencode_plugin.js``: the OpenCode plugin that forwards its events to the hooks.

The hook payload adapters live with the session events (``sessions.adapters``): the hooks and
the transcript import (``history``) use them.
May import: ``core``. Never a face.
"""
