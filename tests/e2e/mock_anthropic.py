"""Scripted Anthropic Messages API (``POST /v1/messages``, SSE or JSON) for Claude Code.

The script is a list of episodes ``{"match": <prompt substring>, "turns": [turn, ...]}``; a turn
is ``{"text"?, "tool_use"?: [{"name", "input"}], "usage"?: {...}}``. A main request (one with
``tools``) whose last user message has fresh text selects the first unused episode whose
``match`` it contains; every main request then plays the next turn ("Done." past the end).
Compaction requests (Claude Code's "detailed summary" prompt) get ``SUMMARY``; requests without
tools (titles, quota checks) are ``side``. Kinds logged: main, compact, side, count_tokens, other.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from mockbase import Reply, ScriptedServer

COMPACT_MARKERS = ("Your task is to create a detailed summary", "create a detailed summary")
SUMMARY = "<summary>ACCESS_TTL shortened to 7200; test_rotation fails; one commit made.</summary>"
USAGE = {
    "input_tokens": 1200,
    "output_tokens": 40,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    out = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif isinstance(block, dict) and block.get("type") == "tool_result":
            out.append(text_of(block.get("content")))
    return "\n".join(out)


def _fresh_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        str(b.get("text", ""))
        for b in content or []
        if isinstance(b, dict) and b.get("type") == "text"
    )


class MockAnthropic(ScriptedServer):
    def __init__(self, script: list[dict[str, Any]], log_path: Path | None = None) -> None:
        super().__init__(log_path)
        self.script = script
        self.used: set[int] = set()
        self.episode: int | None = None
        self.turn = 0
        self.ids = itertools.count(1)

    def _next_turn(self, body: dict[str, Any]) -> tuple[dict[str, Any], int | None]:
        users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
        fresh = _fresh_text(users[-1]) if users else ""
        for i, episode in enumerate(self.script):
            if fresh and i not in self.used and episode["match"] in fresh:
                self.used.add(i)
                self.episode, self.turn = i, 0
                break
        if self.episode is None:
            return {"text": "Done."}, None
        turns = self.script[self.episode]["turns"]
        if self.turn >= len(turns):
            return {"text": "Done."}, self.episode
        self.turn += 1
        return turns[self.turn - 1], self.episode

    def answer(self, method: str, path: str, body: Any) -> Reply:
        path = path.split("?")[0]
        if path.endswith("/count_tokens"):
            self.log("count_tokens", path, body)
            return Reply.json({"input_tokens": len(json.dumps(body)) // 4})
        if method != "POST" or not path.endswith("/v1/messages"):
            self.log("other", path, body)
            return Reply.json({})
        with self.lock:
            users = [m for m in body.get("messages") or [] if m.get("role") == "user"]
            last = text_of(users[-1].get("content")) if users else ""
            if any(marker in last for marker in COMPACT_MARKERS):
                kind, turn, episode = "compact", {"text": SUMMARY}, None
            elif not body.get("tools"):
                kind, turn, episode = "side", {"text": "Scripted session"}, None
            else:
                kind = "main"
                turn, episode = self._next_turn(body)
            rec = self.log(kind, path, body, episode=episode)
        return self._message(rec["n"], body, turn)

    def _message(self, n: int, body: dict[str, Any], turn: dict[str, Any]) -> Reply:
        blocks: list[dict[str, Any]] = []
        if turn.get("text"):
            blocks.append({"type": "text", "text": turn["text"]})
        for call in turn.get("tool_use") or []:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_mock_{next(self.ids):04d}",
                    "name": call["name"],
                    "input": call.get("input", {}),
                }
            )
        stop = "tool_use" if turn.get("tool_use") else "end_turn"
        usage = {**USAGE, **(turn.get("usage") or {})}
        model = body.get("model", "claude-mock")
        message = {
            "id": f"msg_mock_{n:04d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return Reply.json(message)
        events: list[tuple[str | None, Any]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {**message, "content": [], "stop_reason": None, "usage": usage},
                },
            )
        ]
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events += [
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": start},
                ),
                (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": i, "delta": delta},
                ),
                ("content_block_stop", {"type": "content_block_stop", "index": i}),
            ]
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return Reply.sse(events)
