"""A Chrome trace's JSON read as a stream, one event at a time (pure: no torch; stdlib json only).

``json.load`` of a whole trace holds the text and every event as Python objects at once: a 1.1M-event
MI300X trace (20 copies of a real one) peaked at 1.84 GB for 196 MB from the original, though three events in
four (Python functions, CPU ops) feed no figure; read here, 357 MB and 122 MB (docs/traces.md, "Large traces"). Here the top-level object is walked key by key, and the
``traceEvents`` list element by element (``json.JSONDecoder.raw_decode`` on a window of the text, so every
value is decoded by the standard library's own parser); each event is handed to ``take(index, event)``,
which checks it and says whether to keep it. What is held at once: the window (1 MiB of text and the event
being read) and the kept events; the time grows linearly with the file.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from collections.abc import Callable
from typing import BinaryIO

CHUNK_BYTES = 1 << 20
_LOOKAHEAD = 64  # characters past a value that show it is whole (longer than any JSON number a trace holds)
_WS = re.compile(r"[ \t\n\r]*")
EVENTS_KEY = "traceEvents"


# below 2^40 µs (12.7 days) a float's step is at most 2^-12 µs (0.24 ns): round(us * 1000) is the text's ns
EXACT_BELOW_US = 2.0**40


class ExactUs(float):
    """A time in µs too large for a float to hold to the ns (the Unix epoch clock: 1.7e15 µs, a float's step
    there is 0.25 µs), with its integer ns as the text wrote them (``ns``)."""

    __slots__ = ("ns",)
    ns: int


def parse_float(text: str) -> float:
    """A JSON number with a fraction or exponent: a float, or an ``ExactUs`` carrying its integer ns where a
    float cannot hold them (written ``1758927066581847.260``: whole µs and up to 3 digits of ns)."""
    value = float(text)
    if abs(value) < EXACT_BELOW_US or "e" in text or "E" in text:
        return value
    whole, _, frac = text.partition(".")
    exact = ExactUs(value)
    sign = -1 if whole.startswith("-") else 1
    exact.ns = int(whole) * 1000 + sign * int((frac + "000")[:3])  # digits past the ns are below the clock's
    return exact


def ns_of(us: object) -> int | None:
    """The integer ns of a time in µs as the JSON text wrote it: exact for an integer, an ``ExactUs`` and a float
    below ``EXACT_BELOW_US`` that is a whole number of ns up to the float's own step; None for what is no number,
    a float past it without its text, or a time finer than the ns (the figures then take the floats as they are)."""
    if isinstance(us, ExactUs):
        return us.ns
    if isinstance(us, bool) or not isinstance(us, (int, float)):
        return None
    if isinstance(us, int):
        return us * 1000
    if abs(us) >= EXACT_BELOW_US:
        return None
    ns = us * 1000
    whole = round(ns)
    return whole if abs(ns - whole) <= 2 * math.ulp(ns) else None


class TraceJSONError(ValueError):
    """Not a Chrome trace's JSON; the message says where (the event's index, or the line and column)."""


class _Text:
    """A window on the decoded text: ``buf[pos:]`` is what is not read yet."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self.buf, self.pos, self.eof = "", 0, False
        self._lines = 0  # lines dropped from the window's front
        self._column0 = (
            0  # characters of the window's first line dropped with them (its columns go on from there)
        )

    def more(self) -> bool:
        """Read the next chunk into the window; False at the end of the stream."""
        if self.eof:
            return False
        data = self._stream.read(CHUNK_BYTES)
        self.eof = not data
        text = self._decoder.decode(data, final=self.eof)
        if self.pos > len(self.buf) // 2:  # drop what is read, so the window stays about one chunk
            self._lines += self.buf.count("\n", 0, self.pos)
            nl = self.buf.rfind("\n", 0, self.pos)
            self._column0 = self.pos - (nl + 1) if nl >= 0 else self._column0 + self.pos
            self.buf, self.pos = self.buf[self.pos :], 0
        self.buf += text
        return bool(text) or not self.eof

    def where(self, pos: int | None = None) -> str:
        p = self.pos if pos is None else pos
        line = self._lines + self.buf.count("\n", 0, p) + 1
        nl = self.buf.rfind("\n", 0, p)  # -1: the line began before the window (a one-line trace past 1 MiB)
        return f"line {line} column {p - nl if nl >= 0 else self._column0 + p + 1}"

    def skip_ws(self) -> str:
        """The next character past whitespace ("" at the end of the stream)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.more():
                return ""

    def value(self, decoder: json.JSONDecoder, what: str) -> object:
        """One JSON value from ``pos``; a number or word at the window's end is read again with more text."""
        self.skip_ws()
        while True:
            try:
                obj, end = decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                # near the window's end the parser may have run out of text (``1.5e`` of ``1.5e3``): read on
                near_end = exc.pos >= len(self.buf) - _LOOKAHEAD or exc.msg.startswith("Unterminated string")
                if near_end and self.more():
                    continue
                ran_out = exc.pos >= len(self.buf) - 1 or exc.msg.startswith("Unterminated string")
                why = "the file ends inside it (cut short)" if ran_out else exc.msg
                raise TraceJSONError(f"{what} at {self.where(exc.pos)}: {why}") from None
            # a number at the window's end may go on in the next chunk (``1`` of ``1.5e3``): read on
            if end + _LOOKAHEAD <= len(self.buf) or self.eof:
                self.pos = end
                return obj
            self.more()  # and decode again: the window may have moved


def _expect(text: _Text, allowed: str, what: str) -> str:
    ch = text.skip_ws()
    if ch == "" or ch not in allowed:
        found = "the end of the file (cut short)" if ch == "" else repr(ch)
        raise TraceJSONError(
            f"{what} at {text.where()}: expected {' or '.join(map(repr, allowed))}, found {found}"
        )
    text.pos += 1
    return ch


def _events(text: _Text, decoder: json.JSONDecoder, take: Callable[[int, object], bool]) -> list:
    kept: list = []
    shared: dict[str, str] = {}
    _expect(text, "[", EVENTS_KEY)
    if text.skip_ws() == "]":
        text.pos += 1
        return kept
    i = 0
    while True:
        text.skip_ws()
        ev = text.value(decoder, f"event {i} of {EVENTS_KEY}")
        if take(i, ev):
            kept.append(_one_copy(ev, shared))
        i += 1
        if _expect(text, ",]", f"after event {i - 1} of {EVENTS_KEY}") == "]":
            return kept


def _one_copy(value: object, shared: dict[str, str]) -> object:
    """``value`` with every key, and every short string, held once for the whole trace: the decoder shares
    them only within one value, and a kept event's keys and category repeat in every event (about a third of
    its memory). Done on the kept events only, after the C decoder built them (a hook on every object of the
    trace cost a quarter of the reading time)."""
    if isinstance(value, dict):  # in place: whoever holds the event (the duplicate check) holds the same one
        items = [(shared.setdefault(k, k), _one_copy(v, shared)) for k, v in value.items()]
        value.clear()
        value.update(items)
        return value
    if isinstance(value, str) and len(value) <= 32:
        return shared.setdefault(value, value)
    if isinstance(value, list):
        return [_one_copy(v, shared) for v in value]
    return value


def read_trace_json(stream: BinaryIO, take: Callable[[int, object], bool]) -> dict:
    """``{"traceEvents": [kept events], other top-level keys ...}`` from a Chrome trace's JSON (an object, or a
    bare list of events); ``take(index, event)`` sees every event in order and says whether to keep it."""
    text, decoder = _Text(stream), json.JSONDecoder(parse_float=parse_float)
    first = text.skip_ws()
    if first == "[":
        doc: dict = {EVENTS_KEY: _events(text, decoder, take)}
    elif first == "{":
        doc = {}
        text.pos += 1
        if text.skip_ws() == "}":
            text.pos += 1
        else:
            while True:
                text.skip_ws()
                key = text.value(decoder, "a key of the top-level object")
                if not isinstance(key, str):
                    raise TraceJSONError(f"a key of the top-level object at {text.where()} is not a string")
                _expect(text, ":", f"after key {key!r}")
                if key == EVENTS_KEY and key in doc:  # json.load keeps the last: half the events, silently
                    raise TraceJSONError(
                        f"a second {EVENTS_KEY!r} at {text.where()}: one trace, one list of events"
                    )
                if key == EVENTS_KEY and text.skip_ws() == "[":
                    doc[key] = _events(text, decoder, take)
                else:
                    doc[key] = text.value(decoder, f"the value of {key!r}")
                if _expect(text, ",}", f"after the value of {key!r}") == "}":
                    break
    else:
        found = "an empty file" if first == "" else f"{first!r} at {text.where()}"
        raise TraceJSONError(f"a JSON object or list of events expected, found {found}")
    if text.skip_ws() != "":
        raise TraceJSONError(f"more after the end of the JSON document at {text.where()}")
    return doc
