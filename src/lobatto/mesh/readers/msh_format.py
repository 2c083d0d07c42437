"""The pieces of lobatto.mesh.readers.msh_check: the element types gmsh defines, and readers of a
MSH file's binary words and ASCII numbers whose errors name the file and what was expected."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np

from lobatto.errors import InputError

#: MSH element type -> (dimension, nodes), as gmsh 4.15 gives them (getElementProperties); the
#: polygon, polyhedron, one-node and XFEM types, which lobatto cannot use, are left out
ELEMENT_TYPES = {
    1: (1, 2), 2: (2, 3), 3: (2, 4), 4: (3, 4), 5: (3, 8), 6: (3, 6), 7: (3, 5), 8: (1, 3), 9: (2, 6), 10: (2, 9),
    11: (3, 10), 12: (3, 27), 13: (3, 18), 14: (3, 14), 15: (0, 1), 16: (2, 8), 17: (3, 20), 18: (3, 15),
    19: (3, 13), 20: (2, 9), 21: (2, 10), 22: (2, 12), 23: (2, 15), 24: (2, 15), 25: (2, 21), 26: (1, 4),
    27: (1, 5), 28: (1, 6), 29: (3, 20), 30: (3, 35), 31: (3, 56), 32: (3, 22), 33: (3, 28), 36: (2, 16),
    37: (2, 25), 38: (2, 36), 39: (2, 12), 40: (2, 16), 41: (2, 20), 42: (2, 28), 43: (2, 36), 44: (2, 45),
    45: (2, 55), 46: (2, 66), 47: (2, 49), 48: (2, 64), 49: (2, 81), 50: (2, 100), 51: (2, 121), 52: (2, 18),
    53: (2, 21), 54: (2, 24), 55: (2, 27), 56: (2, 30), 57: (2, 24), 58: (2, 28), 59: (2, 32), 60: (2, 36),
    61: (2, 40), 62: (1, 7), 63: (1, 8), 64: (1, 9), 65: (1, 10), 66: (1, 11), 71: (3, 84), 72: (3, 120),
    73: (3, 165), 74: (3, 220), 75: (3, 286), 79: (3, 34), 80: (3, 40), 81: (3, 46), 82: (3, 52), 83: (3, 58),
    92: (3, 64), 93: (3, 125), 94: (3, 216), 95: (3, 343), 96: (3, 512), 97: (3, 729), 98: (3, 1000),
    99: (3, 32), 100: (3, 44), 101: (3, 56), 102: (3, 68), 103: (3, 80), 104: (3, 92), 105: (3, 104),
    118: (3, 30), 119: (3, 55), 120: (3, 91), 121: (3, 140), 122: (3, 204), 123: (3, 285), 124: (3, 385),
    125: (3, 21), 126: (3, 29), 127: (3, 37), 128: (3, 45), 129: (3, 53), 130: (3, 61), 131: (3, 69),
    137: (3, 16),
}
#: node and element tags above this are refused (lobatto keeps tags as int64)
MAX_TAG = 2**62
#: the SDK reads an ASCII MSH 4.1 element with one fgets of a 10000-byte buffer
MAX_ELEMENT_LINE = 9999
#: the SDK reads header and name lines into buffers of 256 bytes (MSH 2.2) or 1024 (MSH 4.1)
MAX_HEADER_LINE = 255
INT_TOKEN = re.compile(rb"[-+]?\d+")


class MshReader:
    """The file's bytes and a position; every error names the file."""

    def __init__(self, path: Path, data: bytes):
        self.path, self.data, self.pos = path, data, 0
        self.order = "<"

    def fail(self, message: str):
        raise InputError(f"{self.path}: {message}")

    def line(self, what: str) -> bytes:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            if self.pos >= len(self.data):
                self.fail(f"truncated MSH file: it ends before {what}")
            end = len(self.data)
        text = self.data[self.pos:end].rstrip(b"\r")
        self.pos = end + 1
        return text

    def end_of_section(self, name: str) -> None:
        """Past optional blank space, the line ``$End<name>``."""
        while self.pos < len(self.data) and self.data[self.pos:self.pos + 1] in b" \t\r\n":
            self.pos += 1
        at = self.pos
        if self.line(f"$End{name}") != f"$End{name}".encode():
            self.fail(f"damaged MSH file: the ${name} section holds more or other data than it announces "
                      f"(expected $End{name} at byte {at})")

    def body(self, name: str) -> bytes:
        """The text of an ASCII section up to its ``$End<name>`` line (which is consumed)."""
        marker = b"\n$End" + name.encode()
        at = self.data.find(marker, self.pos - 1)
        if at < 0:
            self.fail(f"truncated MSH file: the ${name} section has no $End{name} line")
        text = self.data[self.pos:at + 1]
        self.pos = at + 1
        if self.line(f"$End{name}") != f"$End{name}".encode():
            self.fail(f"damaged MSH file: the ${name} section ends in a damaged $End{name} line")
        return text

    def take(self, dtype, count: int, what: str) -> np.ndarray:
        dtype = np.dtype(dtype).newbyteorder(self.order)
        need = dtype.itemsize * count
        if count < 0 or self.pos + need > len(self.data):
            self.fail(f"truncated or damaged MSH file: {what} take {need} bytes from byte {self.pos}, "
                      f"but the file has {len(self.data)} bytes")
        out = np.frombuffer(self.data, dtype, count, self.pos)
        self.pos += need
        return out

    def scalars(self, code: str, count: int, what: str) -> tuple:
        """``count`` int32 (code 'i') or uint64 ('Q') values; faster than take() for a few."""
        need = struct.calcsize(f"<{count}{code}")
        if self.pos + need > len(self.data):
            self.fail(f"truncated or damaged MSH file: {what} take {need} bytes from byte {self.pos}, "
                      f"but the file has {len(self.data)} bytes")
        values = struct.unpack_from(f"{self.order}{count}{code}", self.data, self.pos)
        self.pos += need
        return values

    def skip(self, itemsize: int, count: int, what: str) -> None:
        need = itemsize * count
        if count < 0 or self.pos + need > len(self.data):
            self.fail(f"truncated or damaged MSH file: {what} take {need} bytes from byte {self.pos}, "
                      f"but the file has {len(self.data)} bytes")
        self.pos += need

    def size(self, what: str, limit: int | None = None) -> int:
        """One size_t count of a binary MSH 4.1 section, at most what the rest of the file can hold."""
        (value,) = self.scalars("Q", 1, what)
        room = len(self.data) - self.pos
        if value > (room if limit is None else min(room, limit)):
            self.fail(f"damaged MSH file: {what} is {value}, more than the {room} bytes left in the file hold")
        return value


class MshTokens:
    """Whitespace-separated numbers of an ASCII section, read the way fscanf reads them."""

    def __init__(self, reader: MshReader, name: str, text: bytes):
        if b"_" in text:
            reader.fail(f"damaged MSH file: the ${name} section holds '_', which is no part of a number")
        self.reader, self.name, self.tokens, self.i = reader, name, text.split(), 0

    def fail(self, message: str):
        self.reader.fail(f"damaged MSH file: ${self.name}: {message}")

    def ints(self, count: int, what: str, low: int = 0, high: int = MAX_TAG) -> np.ndarray:
        if count < 0 or self.i + count > len(self.tokens):
            self.fail(f"{what}: the section ends early ({len(self.tokens) - self.i} numbers left, "
                      f"{count} needed)")
        part = self.tokens[self.i:self.i + count]
        try:
            values = [int(t) for t in part]
        except ValueError:
            bad = next((t for t in part if not INT_TOKEN.fullmatch(t) or len(t) > 40), part[0])
            self.fail(f"{what}: expected an integer, got {bad[:40].decode('ascii', 'replace')!r}")
        if count and (min(values) < low or max(values) > high):
            v = next(v for v in values if not low <= v <= high)
            self.fail(f"{what}: {v} is out of range ({low}..{high})")
        self.i += count
        return np.array(values, dtype=np.int64) if count > 16 else values

    def int(self, what: str, low: int = 0, high: int = MAX_TAG) -> int:
        return int(self.ints(1, what, low, high)[0])

    def floats(self, count: int, what: str) -> np.ndarray:
        if count < 0 or self.i + count > len(self.tokens):
            self.fail(f"{what}: the section ends early ({len(self.tokens) - self.i} numbers left, "
                      f"{count} needed)")
        part = self.tokens[self.i:self.i + count]
        try:
            values = np.array(part, dtype=np.float64) if count > 16 else np.array([float(t) for t in part])
        except (ValueError, OverflowError):
            bad = next((t for t in part if not _is_float(t)), part[0])
            self.fail(f"{what}: expected a number, got {bad[:40].decode('ascii', 'replace')!r}")
        self.i += count
        return values

    def done(self) -> None:
        if self.i != len(self.tokens):
            self.fail(f"{len(self.tokens) - self.i} numbers more than the section announces")


def _is_float(token: bytes) -> bool:
    try:
        float(token)
        return True
    except ValueError:
        return False


class MshContents:
    """What the cross-checks need: node tags, and per element block its tags, type, entity, nodes."""

    def __init__(self):
        self.physical_names = []     # (dim, tag, name)
        self.entities = set()        # (dim, tag)
        self.node_tags = None        # sorted
        self.node_xyz = None         # (n, 3) in the order of node_tags
        self.blocks = []             # (entity dim, entity tag or None, type, element tags, (n, k) node tags)
        self.periodic = []           # (link number, affine values (16,) or None, (n, 2) slave, master node tags)
        self.seen = []


