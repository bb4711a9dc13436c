"""One chunk copied from a source map to a target key, the fastest way both maps
allow: a grown store's copies, here and on a cluster's workers
(:mod:`nczarr.conversion.growcopy`, :mod:`nczarr.conversion.growcluster`)."""

from __future__ import annotations

from ..maps.base import NOT_SUPPORTED, ZMap

__all__ = ["copy_one", "directory_sizes"]


def copy_one(
    src: ZMap,
    dst: ZMap,
    skey: str,
    dkey: str,
    skip: str,
    size: int | None = None,
    held: int | None = None,
) -> tuple[bool, int]:
    """Copy ``src[skey]`` to ``dst[dkey]`` the fastest way both maps allow; with ``skip``
    ``"size"`` or ``"content"`` (a resume), not if ``dst`` holds it complete already
    (``"listed"``: as ``"size"``, with ``held`` the target's size from a listing, None
    if it holds no such object: no request to ask). ``size``: the source's size if a
    listing gave it (else asked when needed)."""
    if skip == "content":
        try:
            if dst[dkey] == src[skey]:
                return False, 0
        except KeyError:
            pass
    elif skip in ("size", "listed"):
        try:
            target = held if skip == "listed" else dst.getsize(dkey)
            if target is not None:
                size = src.getsize(skey) if size is None else size
                if target == size:
                    return False, 0
        except KeyError:
            pass
    support = dst.copy_support(src)
    if support is not None:
        # a server-side copy given the size is one request (S3: CopyObject); without it
        # the service asks the size first and the report after (a HEAD each)
        if size is None and support == "server":
            size = src.getsize(skey)
        result = dst.copy_from(src, skey, dkey, size, atomic=False)
        if isinstance(result, int):
            return True, result
        if result is not NOT_SUPPORTED:
            return True, size if size is not None else src.getsize(skey)
    data = src[skey]
    dst[dkey] = data
    return True, len(data)


def directory_sizes(zmap: ZMap, parent: str) -> dict[str, int]:
    """``{key: size}`` of the objects directly in directory ``parent`` of ``zmap``, from
    one listing (S3 and most fsspec listings carry sizes: no request per key): how a
    resumed copy learns what the target holds, and a copy its sources' sizes."""
    return {k: n for k, n in zmap.list_sizes(parent) if k.rpartition("/")[0] == parent}
