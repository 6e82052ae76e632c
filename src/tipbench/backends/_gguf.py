"""Read a GGUF file's header: metadata and the parameter count, without loading weights."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from tipbench._errors import ModelNotFound

_SCALARS = {
    0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i",
    6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d",
}  # fmt: skip
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class GGUFHeader:
    """What a GGUF header says about its model."""

    metadata: dict[str, Any]
    parameter_count: int

    @property
    def name(self) -> str:
        return str(self.metadata.get("general.name", ""))


def read_gguf_header(path: Path) -> GGUFHeader:
    """Read the metadata and sum the tensor shapes of a GGUF file.

    Raises:
        ModelNotFound: if the file is missing or not a GGUF (v2+) file.
    """
    try:
        with path.open("rb") as f:
            if f.read(4) != b"GGUF":
                raise ModelNotFound(f"{path} is not a GGUF model file")
            version, n_tensors, n_kv = struct.unpack("<IQQ", f.read(20))
            if version < 2:
                raise ModelNotFound(f"{path}: GGUF version {version} is too old")
            metadata = {}
            for _ in range(n_kv):
                key = _string(f)
                metadata[key] = _value(f, _u32(f))
            count = 0
            for _ in range(n_tensors):
                _string(f)
                n_dims = _u32(f)
                dims = struct.unpack(f"<{n_dims}Q", f.read(8 * n_dims))
                f.read(12)  # tensor type (u32) and data offset (u64)
                count += math.prod(dims)
    except OSError as exc:
        raise ModelNotFound(f"cannot read model file {path}: {exc.strerror}") from None
    except struct.error:
        raise ModelNotFound(f"{path}: truncated GGUF header") from None
    return GGUFHeader(metadata=metadata, parameter_count=count)


def _u32(f: IO[bytes]) -> int:
    value: int = struct.unpack("<I", f.read(4))[0]
    return value


def _string(f: IO[bytes]) -> str:
    (length,) = struct.unpack("<Q", f.read(8))
    return f.read(length).decode("utf-8", errors="replace")


def _value(f: IO[bytes], kind: int) -> Any:
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        item_kind = _u32(f)
        (count,) = struct.unpack("<Q", f.read(8))
        if item_kind in _SCALARS:  # read numeric arrays in one go
            fmt = _SCALARS[item_kind]
            size = struct.calcsize(fmt)
            return list(struct.unpack(f"<{count}{fmt[1]}", f.read(size * count)))
        return [_value(f, item_kind) for _ in range(count)]
    if kind in _SCALARS:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
    raise struct.error(f"unknown GGUF value type {kind}")
