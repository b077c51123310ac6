"""The OpenAI API as vLLM answers it, for the simulated endpoints: a request body checked as
vLLM checks it (its messages where it has one) and the bodies of its answers, streamed ones
as byte templates with a hole for the token (a token costs one write and no JSON encoding)."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from aiohttp import web

DEFAULT_MAX_TOKENS = 16
"""OpenAI's default for completions; used for chat too (vLLM fills the context instead)."""
_WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "again")
_FIRST_WORD = tuple(json.dumps(w).encode() for w in _WORDS)
_NEXT_WORD = tuple(json.dumps(" " + w).encode() for w in _WORDS)
_HOLE = "\x00"
_HOLE_JSON = json.dumps(_HOLE)
_ERROR_TYPES = {400: "BadRequestError", 404: "NotFoundError", 503: "ServiceUnavailableError"}


@dataclass(frozen=True)
class Ask:
    """A validated request."""

    model: str
    prompt_tokens: int
    max_tokens: int
    stream: bool
    include_usage: bool
    chat: bool


@dataclass(frozen=True)
class Problem:
    status: int
    message: str
    param: str | None = None


def parse_request(body: bytes, *, chat: bool) -> Ask | Problem:
    """Validate a request body as vLLM does, with its messages where it has one."""
    try:
        data = json.loads(body)
    except ValueError as exc:  # UnicodeDecodeError included
        return Problem(400, f"The request body is not valid JSON: {exc}")
    if not isinstance(data, dict):
        return Problem(400, "The request body must be a JSON object.")
    model = data.get("model")
    if not isinstance(model, str):
        return Problem(400, "`model` must be a string.", "model")
    words = _message_words(data.get("messages")) if chat else _prompt_words(data.get("prompt"))
    if isinstance(words, Problem):
        return words
    if words == 0:
        return Problem(400, "The prompt is empty.", "messages" if chat else "prompt")
    newer = chat and data.get("max_completion_tokens") is not None
    field = "max_completion_tokens" if newer else "max_tokens"
    max_tokens = data.get(field)
    if max_tokens is None:
        max_tokens = DEFAULT_MAX_TOKENS
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        return Problem(400, f"`{field}` must be an integer.", field)
    if max_tokens < 1:
        return Problem(400, f"{field} must be at least 1, got {max_tokens}.", field)
    stream = data.get("stream")
    stream = False if stream is None else stream
    if not isinstance(stream, bool):
        return Problem(400, "`stream` must be a boolean.", "stream")
    options = data.get("stream_options")
    if options is not None and not isinstance(options, dict):
        return Problem(400, "`stream_options` must be an object.", "stream_options")
    if options is not None and not stream:
        return Problem(400, "Stream options can only be defined when `stream=True`.", "stream")
    include_usage = (options or {}).get("include_usage")
    include_usage = False if include_usage is None else include_usage
    if not isinstance(include_usage, bool):
        return Problem(400, "`include_usage` must be a boolean.", "stream_options")
    if data.get("n") not in (None, 1):
        return Problem(400, "The simulated server makes one choice per request (n=1).", "n")
    return Ask(model, words, max_tokens, stream, include_usage, chat)


def _prompt_words(prompt: object) -> int | Problem:
    """A string's words, or the length of a list of token ids (or of a one-string list)."""
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if isinstance(prompt, str):
        return len(prompt.split())
    if isinstance(prompt, list) and all(
        isinstance(t, int) and not isinstance(t, bool) for t in prompt
    ):
        return len(prompt)
    return Problem(400, "`prompt` must be a string or a list of token ids.", "prompt")


def _message_words(messages: object) -> int | Problem:
    """The words of the messages' text: string contents and "text" parts."""
    if not isinstance(messages, list) or not messages:
        return Problem(400, "`messages` must be a non-empty list.", "messages")
    words = 0
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return Problem(400, f"`messages[{i}]` needs a string `role`.", "messages")
        content = message.get("content")
        if content is None:  # an assistant message with tool calls only
            continue
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
            return Problem(400, f"`messages[{i}].content` must be a string or parts.", "messages")
        for part in parts:
            if part.get("type") != "text":
                continue  # an image or audio part
            if not isinstance(part.get("text"), str):
                return Problem(400, f"`messages[{i}]` has a text part with no text.", "messages")
            words += len(part["text"].split())
    return words


def error_response(problem: Problem) -> web.Response:
    body = {
        "error": {
            "message": problem.message,
            "type": _ERROR_TYPES[problem.status],
            "param": problem.param,
            "code": problem.status,
        }
    }
    return web.json_response(body, status=problem.status)


def _event(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data, separators=(",", ":")).encode() + b"\n\n"


class Shape:
    """One request's bodies in OpenAI's shapes (chat.completion and chat.completion.chunk, or
    text_completion), the streamed ones as byte templates with a hole for the token."""

    def __init__(self, ask: Ask) -> None:
        self.ask = ask
        self._id = ("chatcmpl-" if ask.chat else "cmpl-") + uuid.uuid4().hex
        self._created = int(time.time())
        self._head, self._tail = self._template(None)
        self._last_tail = self._template("length")[1]
        role = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None}
        self._role = _event(self._body([{**role, "finish_reason": None}], chunk=True))

    def chunk(self, k: int) -> bytes:
        """The event for token `k`; the first carries the chat role, the last the finish."""
        word = (_NEXT_WORD if k else _FIRST_WORD)[k % len(_WORDS)]
        tail = self._last_tail if k == self.ask.max_tokens - 1 else self._tail
        event = self._head + word + tail
        return self._role + event if k == 0 and self.ask.chat else event

    def ending(self) -> bytes:
        usage = _event(self._body([], chunk=True, usage=self._usage()))
        return (usage if self.ask.include_usage else b"") + b"data: [DONE]\n\n"

    def response(self) -> dict[str, Any]:
        text = " ".join(_WORDS[k % len(_WORDS)] for k in range(self.ask.max_tokens))
        choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": "length"}
        if self.ask.chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice.update(text=text, stop_reason=None)
        return self._body([choice], chunk=False, usage=self._usage())

    def _template(self, finish_reason: str | None) -> tuple[bytes, bytes]:
        choice: dict[str, Any] = {"index": 0}
        if self.ask.chat:
            choice.update(delta={"content": _HOLE}, logprobs=None, finish_reason=finish_reason)
        else:
            choice.update(text=_HOLE, logprobs=None, finish_reason=finish_reason, stop_reason=None)
        head, _, tail = _event(self._body([choice], chunk=True)).partition(_HOLE_JSON.encode())
        return head, tail

    def _body(self, choices: list[dict[str, Any]], *, chunk: bool, **extra: Any) -> dict[str, Any]:
        kind = "text_completion"
        if self.ask.chat:
            kind = "chat.completion.chunk" if chunk else "chat.completion"
        return {
            "id": self._id,
            "object": kind,
            "created": self._created,
            "model": self.ask.model,
            "choices": choices,
            **extra,
        }

    def _usage(self) -> dict[str, int]:
        prompt, completion = self.ask.prompt_tokens, self.ask.max_tokens
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
