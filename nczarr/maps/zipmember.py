"""Reading one member of a zip archive without trusting it: :func:`read_member`.

zipfile inflates whatever one read of compressed data holds (a few KB of bzip2 can
become gigabytes); here every read stops at the member's declared size (or the
caller's cap), a member that inflates beyond its size or fails its CRC is refused as
corrupt (a :class:`~nczarr.errors.StorageError` naming key and archive), and stored
members are read with ``os.pread`` (no shared file offset between threads).
"""

from __future__ import annotations

import lzma
import os
import struct
import zipfile
import zlib
from typing import Any

from ..errors import NCZarrError, StorageError, UnsupportedError, raise_os_error
from ..inflate import crc32
from .ziparchive import READ_BLOCK
from .zipcodec import BOUNDED_DECODERS

__all__ = ["LOCAL_HEADER", "data_offset", "pread", "read_member", "read_streaming"]

#: A zip local file header (signature, versions, flags, method, times, CRC, sizes,
#: name and extra lengths).
LOCAL_HEADER = struct.Struct("<4s5H3L2H")


def read_member(
    reader: zipfile.ZipFile,
    key: str,
    info: zipfile.ZipInfo,
    cap: int | None,
    path: str,
    offsets: dict[str, int],
) -> bytes:
    """The content of member ``info`` (its first ``cap`` bytes when ``cap`` is given),
    never inflating more than that; corruption is a StorageError naming the key.
    ``offsets`` caches where members' data start (see :func:`data_offset`)."""
    where = f"{key!r} from {path!r}"
    if info.flag_bits & 0x1:
        raise UnsupportedError(f"cannot read {where}: the member is encrypted")
    size = info.file_size if cap is None else min(cap, info.file_size)
    method = info.compress_type
    try:
        if method == zipfile.ZIP_STORED:
            if info.compress_size != info.file_size:
                raise StorageError(
                    f"cannot read {where}: corrupt member (stored with "
                    f"{info.compress_size} bytes for {info.file_size})"
                )
            data = pread(reader.fp, data_offset(reader.fp, key, info, path, offsets), size)
        elif method in BOUNDED_DECODERS:
            raw = pread(
                reader.fp, data_offset(reader.fp, key, info, path, offsets), info.compress_size
            )
            # One byte more than declared shows a member inflating beyond its size.
            want = size + 1 if size == info.file_size else size
            data = BOUNDED_DECODERS[method](raw, want)
        else:
            data = read_streaming(reader, info, size)
    except NCZarrError:
        raise
    except (zlib.error, lzma.LZMAError, EOFError, ValueError, zipfile.BadZipFile) as exc:
        raise StorageError(f"cannot read {where}: corrupt member ({exc})") from exc
    except NotImplementedError as exc:
        raise UnsupportedError(f"cannot read {where}: {exc}") from exc
    except RuntimeError as exc:  # e.g. encryption zipfile refuses
        raise UnsupportedError(f"cannot read {where}: {exc}") from exc
    except OSError as exc:
        if exc.errno is None:
            # bz2 reports corrupt streams as a bare OSError ("Invalid data stream")
            raise StorageError(f"cannot read {where}: corrupt member ({exc})") from exc
        raise_os_error(exc, f"{key!r} in {path!r}")
    if len(data) > info.file_size:
        raise StorageError(
            f"cannot read {where}: corrupt member (it inflates beyond its declared "
            f"size of {info.file_size} bytes)"
        )
    if len(data) < size:
        raise StorageError(
            f"cannot read {where}: corrupt member (it ends after {len(data)} of {size} bytes)"
        )
    if size == info.file_size and crc32(data) != info.CRC:
        raise StorageError(
            f"cannot read {where}: corrupt member (Bad CRC-32 for file {info.filename!r})"
        )
    return data[:size] if len(data) > size else data


def read_streaming(reader: zipfile.ZipFile, info: zipfile.ZipInfo, size: int) -> bytes:
    """Methods decoded by zipfile only (Deflate64): read in blocks up to ``size``."""
    chunks = []
    left = size + 1
    with reader.open(info) as f:
        while left > 0 and (block := f.read(min(left, READ_BLOCK))):
            chunks.append(block)
            left -= len(block)
    return b"".join(chunks)


def pread(f: Any, offset: int, size: int) -> bytes:
    """``size`` bytes at ``offset`` of the open archive file ``f`` (``os.pread`` where
    present, else ``seek`` + ``read``, under the map's lock)."""
    pread = getattr(os, "pread", None)
    if pread is None:
        f.seek(offset)  # type: ignore[union-attr]
        return f.read(size)  # type: ignore[union-attr]
    fd = f.fileno()  # type: ignore[union-attr]
    data = pread(fd, size, offset)
    while len(data) < size:  # pread may stop short (e.g. above 2 GiB)
        more = pread(fd, size - len(data), offset + len(data))
        if not more:
            break
        data += more
    return data


def data_offset(f: Any, key: str, info: zipfile.ZipInfo, path: str, offsets: dict[str, int]) -> int:
    """Where member ``info``'s data start in archive file ``f`` (after its local
    header), remembered in ``offsets``."""
    offset = offsets.get(key)
    if offset is None:
        header = pread(f, info.header_offset, LOCAL_HEADER.size)
        fields = LOCAL_HEADER.unpack(header) if len(header) == LOCAL_HEADER.size else None
        if fields is None or fields[0] != b"PK\x03\x04":
            raise StorageError(f"cannot read {key!r} from {path!r}: bad local file header")
        offset = info.header_offset + LOCAL_HEADER.size + fields[9] + fields[10]
        offsets[key] = offset
    return offset
