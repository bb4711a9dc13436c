"""Parse the header of a netCDF-3 file (CDF-1 classic, CDF-2 64-bit offset, CDF-5).

Pure: bytes in, :class:`CDFHeader` out. A parser of the published format (the
"NetCDF Classic Format Specification" of the netCDF users' guide) rather than a
library, because no maintained Python library reads a netCDF-3 header without the
data behind it: netCDF4-python (netcdf-c) opens local files only and reads values,
``scipy.io.netcdf_file`` maps the whole file and reads no CDF-5, and both hide the
offsets (``begin``) and the record size that a byte-range copy needs. The header
is a few kilobytes at the start of the file, so a remote file costs one or two
ranged reads (:func:`header_size_hint`).

All integers are big-endian. CDF-1 has 32-bit offsets and sizes, CDF-2 64-bit
offsets, CDF-5 64-bit offsets, sizes and counts and the extra integer types.
"""

from __future__ import annotations

import struct

from ..errors import MetadataError
from ..records import record

__all__ = [
    "CDF_TYPES",
    "CDFAttribute",
    "CDFDimension",
    "CDFHeader",
    "CDFVariable",
    "HeaderTruncated",
    "parse_header",
    "type_size",
]

#: netCDF-3 type codes -> (netCDF type name, big-endian numpy dtype string).
CDF_TYPES: dict[int, tuple[str, str]] = {
    1: ("byte", ">i1"),
    2: ("char", "|S1"),
    3: ("short", ">i2"),
    4: ("int", ">i4"),
    5: ("float", ">f4"),
    6: ("double", ">f8"),
    7: ("ubyte", ">u1"),
    8: ("ushort", ">u2"),
    9: ("uint", ">u4"),
    10: ("int64", ">i8"),
    11: ("uint64", ">u8"),
}
_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 4, 6: 8, 7: 1, 8: 2, 9: 4, 10: 8, 11: 8}
_TAG_DIMENSION, _TAG_VARIABLE, _TAG_ATTRIBUTE = 10, 11, 12
_STREAMING = 0xFFFFFFFF


class HeaderTruncated(MetadataError):
    """The bytes given end inside the header; ``needed`` is a length that may hold it."""

    def __init__(self, message: str, needed: int) -> None:
        super().__init__(message)
        self.needed = needed


@record
class CDFDimension:
    name: str
    size: int  # 0 for the record dimension


@record
class CDFAttribute:
    name: str
    type_code: int
    raw: bytes  # the values, big-endian, without padding


@record
class CDFVariable:
    name: str
    dimids: tuple[int, ...]
    attributes: tuple[CDFAttribute, ...]
    type_code: int
    vsize: int
    begin: int


@record
class CDFHeader:
    version: int  # 1, 2 or 5
    numrecs: int | None  # None: streaming (count from the file size)
    dimensions: tuple[CDFDimension, ...]
    attributes: tuple[CDFAttribute, ...]
    variables: tuple[CDFVariable, ...]
    size: int  # bytes the header takes


class _Reader:
    def __init__(self, data: bytes, version: int, what: str) -> None:
        self.data = data
        self.pos = 4
        self.version = version
        self.what = what

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise HeaderTruncated(
                f"{self.what}: the netCDF-3 header ends early (needs {end} bytes, "
                f"has {len(self.data)})",
                needed=max(end, 2 * len(self.data)),
            )
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def int32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def count(self) -> int:
        """NON_NEG: 32 bits, 64 in CDF-5."""
        if self.version == 5:
            value = struct.unpack(">q", self.take(8))[0]
        else:
            value = struct.unpack(">i", self.take(4))[0]
        if value < 0:
            raise MetadataError(f"{self.what}: negative count {value} in the netCDF-3 header")
        return value

    def offset(self) -> int:
        if self.version == 1:
            return struct.unpack(">I", self.take(4))[0]
        return struct.unpack(">q", self.take(8))[0]

    def name(self) -> str:
        n = self.count()
        raw = self.take(n)
        self.take(-n % 4)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise MetadataError(
                f"{self.what}: a name in the header is not UTF-8: {raw!r}"
            ) from None

    def tag(self, expected: int) -> int:
        """Element count of a list with tag ``expected`` (ABSENT -> 0)."""
        tag = self.int32()
        n = self.count()
        if tag == 0 and n == 0:
            return 0
        if tag != expected:
            raise MetadataError(
                f"{self.what}: corrupt netCDF-3 header: list tag {tag} at byte "
                f"{self.pos}, expected {expected}"
            )
        return n

    def type_code(self) -> int:
        code = self.int32()
        if code not in CDF_TYPES or (self.version != 5 and code > 6):
            raise MetadataError(f"{self.what}: unknown netCDF-3 type code {code} in the header")
        return code

    def attributes(self) -> tuple[CDFAttribute, ...]:
        out = []
        for _ in range(self.tag(_TAG_ATTRIBUTE)):
            name = self.name()
            code = self.type_code()
            n = self.count()
            size = n * _SIZES[code]
            raw = self.take(size)
            self.take(-size % 4)
            out.append(CDFAttribute(name, code, raw))
        return tuple(out)


def parse_header(data: bytes, what: str) -> CDFHeader:
    """The header at the start of ``data`` (``what`` names the file in errors).

    Raises
    ------
    HeaderTruncated
        ``data`` ends inside the header (read more and call again).
    MetadataError
        Not a netCDF-3 file, or a header that contradicts itself.
    """
    if len(data) < 4 or data[:3] != b"CDF" or data[3] not in (1, 2, 5):
        raise MetadataError(f"{what}: not a netCDF-3 file (no CDF\\x01/\\x02/\\x05 magic)")
    reader = _Reader(data, data[3], what)
    raw_numrecs = reader.count() if reader.version == 5 else struct.unpack(">I", reader.take(4))[0]
    numrecs = None if raw_numrecs == _STREAMING else raw_numrecs
    dims = tuple(
        CDFDimension(reader.name(), reader.count()) for _ in range(reader.tag(_TAG_DIMENSION))
    )
    gatts = reader.attributes()
    variables = []
    for _ in range(reader.tag(_TAG_VARIABLE)):
        name = reader.name()
        dimids = tuple(reader.count() for _ in range(reader.count()))
        for d in dimids:
            if d >= len(dims):
                raise MetadataError(
                    f"{what}: variable {name!r} names dimension id {d}; the header has {len(dims)}"
                )
        vatts = reader.attributes()
        code = reader.type_code()
        vsize = reader.count() if reader.version == 5 else struct.unpack(">I", reader.take(4))[0]
        begin = reader.offset()
        variables.append(CDFVariable(name, dimids, vatts, code, vsize, begin))
    return CDFHeader(reader.version, numrecs, dims, gatts, tuple(variables), reader.pos)


def type_size(code: int) -> int:
    """Bytes per value of netCDF-3 type ``code``."""
    return _SIZES[code]
