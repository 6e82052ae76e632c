"""Reading a free answer as a server streams it, until the answer is complete.

The server backends stream a free request that says when its answer is complete
(`GenerationRequest.complete`), stop reading as soon as it is, and close the response: closing
it is what makes llama.cpp's servers and Ollama stop generating.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

C = TypeVar("C")


@dataclass(frozen=True)
class StreamedAnswer(Generic[C]):
    """What was read of a stream."""

    text: str
    #: chunks that carried text: one token each from llama.cpp's servers and Ollama, which
    #: stream token by token (one chunk may hold more when a character spans tokens)
    pieces: int
    last: C | None  # the last chunk read, where servers put the usage; None: no chunk at all
    complete: bool  # reading stopped because the answer was complete, not because it ended


def read_until_complete(
    chunks: Iterable[C], content: Callable[[C], str | None], complete: Callable[[str], bool]
) -> StreamedAnswer[C]:
    """Read `chunks` until `complete(text so far)` holds or the stream ends.

    Closing the stream is the caller's part.
    """
    text, pieces, last = "", 0, None
    for chunk in chunks:
        last = chunk
        piece = content(chunk)
        if piece:
            text, pieces = text + piece, pieces + 1
            if complete(text):
                return StreamedAnswer(text, pieces, last, complete=True)
    return StreamedAnswer(text, pieces, last, complete=False)
