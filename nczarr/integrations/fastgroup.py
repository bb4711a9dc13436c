"""A zarr-python ``Group`` whose arrays read and write through nczarr's codec pipeline.

zarr-python picks an array's codec pipeline from its global configuration when the
array is opened (``codec_pipeline.path``), not from the store. :func:`nczarr.open_zarr`
returns a :class:`FastGroup`: the same ``zarr.Group`` (a subclass; every method,
attribute and result is zarr-python's own), except that every call it makes into
zarr-python runs under :func:`~nczarr.integrations.fastpipeline.fast_pipeline`, so the
arrays it opens or creates get :class:`~nczarr.integrations.fastpipeline.NCZarrCodecPipeline`
(batched chunk reads over the map, no task and thread hop per chunk; zarr's own
pipeline for everything it does not handle), and the subgroups it returns are
:class:`FastGroup` too. Arrays opened elsewhere keep zarr's configuration.
"""

from __future__ import annotations

from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

import zarr

from .fastpipeline import fast_pipeline

__all__ = ["FastGroup"]

T = TypeVar("T")


def _fast(node: Any) -> Any:
    """``node`` with a plain ``zarr.Group`` re-wrapped as a :class:`FastGroup`."""
    if isinstance(node, zarr.Group) and not isinstance(node, FastGroup):
        return FastGroup(node._async_group)
    return node


class FastGroup(zarr.Group):
    """``zarr.Group`` whose arrays get nczarr's codec pipeline (module docstring)."""

    def _sync(self, coroutine: Coroutine[Any, Any, T]) -> T:
        with fast_pipeline():
            return super()._sync(coroutine)

    def __getitem__(self, path: str) -> Any:
        return _fast(super().__getitem__(path))

    def get(self, path: str, default: Any = None) -> Any:
        return _fast(super().get(path, default))

    def members(self, max_depth: int | None = 0, **kwargs: Any) -> tuple[tuple[str, Any], ...]:
        return tuple((name, _fast(node)) for name, node in super().members(max_depth, **kwargs))

    def groups(self) -> Generator[tuple[str, zarr.Group], None]:
        for name, group in super().groups():
            yield name, _fast(group)

    def group_values(self) -> Generator[zarr.Group, None]:
        for _, group in self.groups():
            yield group

    def create_group(self, name: str, **kwargs: Any) -> zarr.Group:
        return _fast(super().create_group(name, **kwargs))

    def require_group(self, name: str, **kwargs: Any) -> zarr.Group:
        return _fast(super().require_group(name, **kwargs))
