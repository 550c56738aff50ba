"""The HTTP/1.1 protocol `polyembed serve` runs: uvicorn's httptools protocol with the request head capped.

Why: httptools keeps a request's head until it is complete, with no limit of its own (and grows a long header
value by concatenation, a copy per piece), and only then does the application see it, so an ASGI check of the
headers (`admission.head_refusal`) comes after the memory and the time are spent. Here the head is counted as it
arrives, and one over `max_header_bytes` or `max_headers` gets a 431 (OpenAI's error body) and its connection is
closed, before more of it is read. Other connections are served on.
"""

from __future__ import annotations

import json
import logging
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from polyembed.serve.admission import error_body

logger = logging.getLogger(__name__)


class HeadLimitedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing with a 431 a request head over `max_header_bytes` (the reads that
    went wholly into an incomplete head, or its URL and header names and values) or `max_headers` fields. A head
    is refused at most one read past the limit, so what a connection holds of it stays bounded."""

    max_header_bytes: ClassVar[int] = 64 * 2**10
    max_headers: ClassVar[int] = 100

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True  # the next bytes belong to a request head (one begun, or the next one)
        self._messages = 0  # requests parsed to their end: a read in which one ends holds more than a head
        self._read = 0  # bytes of the reads that went wholly into the current head
        self._fields_bytes = 0  # its URL and the names and values of its complete fields
        self._fields = 0
        self._too_large: str | None = None

    def data_received(self, data: bytes) -> None:
        in_head, messages = self._in_head, self._messages
        super().data_received(data)
        if self.transport.is_closing():
            return
        if self._too_large is None and in_head and self._in_head and messages == self._messages:
            self._read += len(data)  # all of it is head the parser holds until the head is complete
            if self._read > self.max_header_bytes:
                self._too_large = f"the request head has over {self.max_header_bytes:,} bytes; at most " \
                                  f"{self.max_header_bytes:,}"
        if self._too_large is not None:
            self._refuse(self._too_large)

    def on_url(self, url: bytes) -> None:
        self._fields_bytes += len(url)
        self._check()
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._fields += 1
        self._fields_bytes += len(name) + len(value)
        self._check()
        if self._too_large is None:
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        if self._too_large is None:  # else the request never reaches the application
            super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if self._too_large is None:
            super().on_body(body)

    def on_message_complete(self) -> None:
        if self._too_large is None:
            super().on_message_complete()
        self._in_head, self._read, self._fields_bytes, self._fields = True, 0, 0, 0
        self._messages += 1

    def _check(self) -> None:
        if self._too_large is not None:
            return
        if self._fields > self.max_headers:
            self._too_large = f"the request has over {self.max_headers:,} header fields; at most {self.max_headers:,}"
        elif self._fields_bytes > self.max_header_bytes:
            self._too_large = f"the request head has over {self.max_header_bytes:,} bytes; at most " \
                              f"{self.max_header_bytes:,}"

    def _refuse(self, message: str) -> None:
        """Answer 431 and close: the rest of the head is never read."""
        logger.warning("refused a request with 431: %s", message)
        payload = json.dumps(error_body(message)).encode("utf-8")
        head = [b"HTTP/1.1 431 Request Header Fields Too Large\r\n"]
        head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
        head += [b"content-type: application/json\r\n", b"content-length: %d\r\n" % len(payload),
                 b"connection: close\r\n\r\n"]
        self.transport.write(b"".join(head) + payload)
        self.transport.close()


def head_limited_protocol(max_header_bytes: int, max_headers: int) -> type[HeadLimitedProtocol]:
    """The protocol class to hand uvicorn (`uvicorn.run(..., http=...)`) for these limits."""
    return type("HeadLimitedProtocol", (HeadLimitedProtocol,),
                {"max_header_bytes": max_header_bytes, "max_headers": max_headers})
