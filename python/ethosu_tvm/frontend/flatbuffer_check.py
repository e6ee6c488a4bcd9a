"""Structural verification of a .tflite flatbuffer before anything reads it.

The generated `tflite` readers trust every offset in the file, so a damaged file fails deep inside them (struct
errors, negative indices, huge lengths) or, worse, reads garbage. This walks every table the compiler and TVM's
frontend read, following the TFLite schema: each offset, vtable, vector and string must lie inside the file, and a
table's fields inside the table. Builtin-option tables are unions read by TVM with schemas of their own; their
vtables and fields are bounds-checked all the same, and the vectors of the options that hold any are followed.
"""
from __future__ import annotations

import struct

import tflite


class FlatbufferError(ValueError):
    """The bytes break the flatbuffer encoding; the message says what and where."""


# Field kinds: ("scalar", size), ("table", schema), ("union", type field id), ("vector", element size),
# ("tables", schema), ("string",).
_SCHEMAS: dict[str, dict[int, tuple]] = {
    "Model": {0: ("scalar", 4), 1: ("tables", "OperatorCode"), 2: ("tables", "SubGraph"), 3: ("string",),
              4: ("tables", "Buffer"), 5: ("vector", 4), 6: ("tables", "Metadata"), 7: ("tables", "SignatureDef")},
    "OperatorCode": {0: ("scalar", 1), 1: ("string",), 2: ("scalar", 4), 3: ("scalar", 4)},
    "SubGraph": {0: ("tables", "Tensor"), 1: ("vector", 4), 2: ("vector", 4), 3: ("tables", "Operator"),
                 4: ("string",)},
    "Tensor": {0: ("vector", 4), 1: ("scalar", 1), 2: ("scalar", 4), 3: ("string",),
               4: ("table", "QuantizationParameters"), 5: ("scalar", 1), 6: ("table", None), 7: ("vector", 4),
               8: ("scalar", 1), 9: ("tables", None)},
    "QuantizationParameters": {0: ("vector", 4), 1: ("vector", 4), 2: ("vector", 4), 3: ("vector", 8),
                               4: ("scalar", 1), 5: ("union", 4), 6: ("scalar", 4)},
    "Operator": {0: ("scalar", 4), 1: ("vector", 4), 2: ("vector", 4), 3: ("scalar", 1), 4: ("union", 3),
                 5: ("vector", 1), 6: ("scalar", 1), 7: ("vector", 1), 8: ("vector", 4), 9: ("scalar", 8),
                 10: ("scalar", 8), 11: ("scalar", 1), 12: ("union", 11)},
    "Buffer": {0: ("vector", 1), 1: ("scalar", 8), 2: ("scalar", 8)},
    "Metadata": {0: ("string",), 1: ("scalar", 4)},
    "SignatureDef": {0: ("tables", "TensorMap"), 1: ("tables", "TensorMap"), 2: ("string",), 4: ("scalar", 4)},
    "TensorMap": {0: ("string",), 1: ("scalar", 4)},
    # Builtin options with vector fields (the others hold scalars only).
    "ReshapeOptions": {0: ("vector", 4)},
    "SqueezeOptions": {0: ("vector", 4)},
}
# The union member (builtin option type) → its schema, for the option tables that have vectors.
_OPTION_SCHEMAS = {
    (3, tflite.BuiltinOptions.ReshapeOptions): "ReshapeOptions",
    (3, tflite.BuiltinOptions.SqueezeOptions): "SqueezeOptions",
}


class _Walker:
    def __init__(self, buf: bytes):
        self.buf = buf

    def _unpack(self, fmt: str, pos: int, what: str):
        if pos < 0 or pos + struct.calcsize(fmt) > len(self.buf):
            raise FlatbufferError(f"{what} at byte {pos} lies outside the {len(self.buf)}-byte file")
        return struct.unpack_from(fmt, self.buf, pos)[0]

    def _target(self, pos: int, what: str) -> int:
        """The position an unsigned offset stored at `pos` points to."""
        return pos + self._unpack("<I", pos, f"the offset of {what}")

    def _vector(self, pos: int, element_size: int, what: str) -> int:
        length = self._unpack("<I", pos, f"the length of {what}")
        if pos + 4 + length * element_size > len(self.buf):
            raise FlatbufferError(f"{what} at byte {pos} claims {length} elements, past the end of the file")
        return length

    def table(self, pos: int, schema: str | None, what: str, depth: int = 0) -> None:
        if depth > 8:
            raise FlatbufferError(f"{what}: tables nest too deeply")
        vtable = pos - self._unpack("<i", pos, what)
        vtable_size = self._unpack("<H", vtable, f"the vtable of {what}")
        table_size = self._unpack("<H", vtable + 2, f"the vtable of {what}")
        if vtable_size < 4 or vtable_size % 2 or vtable + vtable_size > len(self.buf) or table_size < 4:
            raise FlatbufferError(f"{what} at byte {pos} has a malformed vtable")
        if pos + table_size > len(self.buf):
            raise FlatbufferError(f"{what} at byte {pos} ends past the end of the file")
        fields = {i: self._unpack("<H", vtable + 4 + 2 * i, what) for i in range((vtable_size - 4) // 2)}
        kinds = _SCHEMAS.get(schema, {}) if schema else {}
        for index, offset in fields.items():
            if not offset:
                continue
            kind = kinds.get(index, ("scalar", 1))
            size = kind[1] if kind[0] == "scalar" else 4
            if offset + size > table_size:
                raise FlatbufferError(f"field {index} of {what} at byte {pos} lies outside its table")
            if kind[0] != "scalar":
                self._field(pos + offset, kind, fields, pos, f"field {index} of {what}", depth)

    def _field(self, pos: int, kind: tuple, fields: dict, table: int, what: str, depth: int) -> None:
        target = self._target(pos, what)
        if kind[0] == "table":
            self.table(target, kind[1], what, depth + 1)
        elif kind[0] == "union":
            type_offset = fields.get(kind[1], 0)
            member = self._unpack("<B", table + type_offset, what) if type_offset else 0
            self.table(target, _OPTION_SCHEMAS.get((kind[1], member)), what, depth + 1)
        elif kind[0] == "vector":
            self._vector(target, kind[1], what)
        elif kind[0] == "string":
            self._vector(target, 1, what)
        else:  # a vector of tables
            for i in range(self._vector(target, 4, what)):
                element = target + 4 + 4 * i
                self.table(self._target(element, f"{what}[{i}]"), kind[1], f"{kind[1] or 'table'} {i} of {what}",
                           depth + 1)


def check_flatbuffer(buf: bytes) -> None:
    """Raise FlatbufferError unless every table, vector and string the TFLite schema reaches lies in `buf`."""
    walker = _Walker(buf)
    walker.table(walker._target(0, "the root table"), "Model", "the model")
