"""The element types of the IR and their names in C."""

from __future__ import annotations

DTYPES = {"float32": "float", "float64": "double", "int32": "int", "int8": "char", "int16": "short", "int64": "long",
          "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int", "uint64": "unsigned long"}
#: the integer element types (computed exactly, verified exactly)
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
