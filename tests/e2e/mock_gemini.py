"""Scripted Gemini API (``:streamGenerateContent?alt=sse``) for Gemini CLI.

``load(turns)`` replaces the script; each main (streaming) request plays the next turn
``{"parts": [{"text"} | {"functionCall": {"name", "args"}}], "prompt_tokens"?: int}``
("Done." past the end). ``:generateContent`` side requests are classified by content
(``compression`` when Gemini asks for a ``<state_snapshot>``, ``next_speaker``, ``other``);
``:countTokens`` answers len(body)/4. Kinds logged: main, side:<what>, count_tokens, other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mockbase import Reply, ScriptedServer

SNAPSHOT = (
    "<state_snapshot>\n<overall_goal>Fix refresh token rotation</overall_goal>\n"
    "<key_knowledge>ACCESS_TTL is 7200</key_knowledge>\n</state_snapshot>"
)


def parts_text(content: dict[str, Any]) -> str:
    out = []
    for part in content.get("parts") or []:
        if "text" in part:
            out.append(str(part["text"]))
        elif "functionResponse" in part:
            out.append(json.dumps(part["functionResponse"]))
    return "\n".join(out)


def call(name: str, prompt_tokens: int | None = None, **args: Any) -> dict[str, Any]:
    turn: dict[str, Any] = {"parts": [{"functionCall": {"name": name, "args": args}}]}
    if prompt_tokens is not None:
        turn["prompt_tokens"] = prompt_tokens
    return turn


def text(msg: str) -> dict[str, Any]:
    return {"parts": [{"text": msg}]}


def _side_kind(body: dict[str, Any]) -> str:
    system = body.get("systemInstruction")
    system_text = parts_text(system) if isinstance(system, dict) else str(system or "")
    contents = body.get("contents") or []
    last = parts_text(contents[-1]) if contents else ""
    if "next_speaker" in json.dumps(body.get("generationConfig", {})) + last:
        return "next_speaker"
    if "Critically evaluate the <state_snapshot>" in last:
        return "compression_verify"
    if "state_snapshot" in system_text or "<state_snapshot>" in last:
        return "compression"
    return "other"


class MockGemini(ScriptedServer):
    def __init__(self, log_path: Path | None = None) -> None:
        super().__init__(log_path)
        self.turns: list[dict[str, Any]] = []
        self.phase = ""

    def load(self, phase: str, turns: list[dict[str, Any]]) -> None:
        with self.lock:
            self.phase, self.turns = phase, list(turns)

    @staticmethod
    def _chunk(turn: dict[str, Any]) -> dict[str, Any]:
        prompt = int(turn.get("prompt_tokens", 1000))
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": turn["parts"]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": prompt,
                "candidatesTokenCount": 20,
                "totalTokenCount": prompt + 20,
            },
            "modelVersion": "gemini-2.5-pro",
        }

    def answer(self, method: str, path: str, body: Any) -> Reply:
        if ":streamGenerateContent" in path:
            with self.lock:
                turn = self.turns.pop(0) if self.turns else text("Done.")
                self.log("main", path, body, phase=self.phase)
            return Reply.sse([(None, self._chunk(turn))], sep="\r\n\r\n")
        if ":generateContent" in path:
            kind = _side_kind(body)
            self.log("side:" + kind, path, body, phase=self.phase)
            if kind == "next_speaker":
                reply = {"reasoning": "answered", "next_speaker": "user"}
                return Reply.json(self._chunk(text(json.dumps(reply))))
            if kind.startswith("compression"):
                return Reply.json(
                    self._chunk({"parts": [{"text": SNAPSHOT}], "prompt_tokens": 2000})
                )
            return Reply.json(self._chunk(text("ok")))
        if ":countTokens" in path:
            self.log("count_tokens", path, body, phase=self.phase)
            return Reply.json({"totalTokens": max(1, len(json.dumps(body)) // 4)})
        self.log("other", path, body, phase=self.phase)
        return Reply.json({"error": {"code": 404, "message": path}}, 404)
