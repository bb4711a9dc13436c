"""The compact chunk index of a netCDF file source (``nczarr.ncfile.layout.ChunkIndex``).

It stands in for a ``{chunk key: ChunkRef}`` dict (a Python object, a key string and
a dict slot per chunk) with machine arrays over the variable's chunk grid; it must
answer exactly as that dict would.
"""

from __future__ import annotations

import pytest

from nczarr.ncfile.layout import ChunkIndex, ChunkRef, chunk_grid, contiguous_index, cut_contiguous


def test_answers_as_a_dict_of_its_keys() -> None:
    index = ChunkIndex((3, 4))
    index["2.1"] = ChunkRef(200, 10)
    index.add((0, 3), 30, 11, reencode=False)
    index.update({"1.0": ChunkRef(100, 12, pad=4), "0.0": ChunkRef(-1, 0, reencode=True)})
    assert list(index) == ["0.0", "0.3", "1.0", "2.1"]  # C order of the grid
    assert len(index) == 4
    assert index["1.0"] == ChunkRef(100, 12, 4, False)
    assert index["0.0"].reencode and not index["0.3"].reencode
    assert dict(index.items())["2.1"] == ChunkRef(200, 10)
    assert index.get("1.1") is None and "1.1" not in index


def test_a_key_set_twice_keeps_its_last_value() -> None:
    index = ChunkIndex((5,))
    index["3"] = ChunkRef(1, 1)
    index["0"] = ChunkRef(2, 2)
    index["3"] = ChunkRef(3, 3, reencode=True)
    assert index["3"] == ChunkRef(3, 3, reencode=True)
    assert list(index) == ["0", "3"]
    index["3"] = ChunkRef(4, 4)  # after a lookup sorted it
    assert index["3"] == ChunkRef(4, 4) and len(index) == 2


@pytest.mark.parametrize(
    "key", ["01.0", "1", "1.0.0", "3.0", "0.4", "-1.0", "a.b", "", "1.+0", "\u00b2.0"]
)
def test_keys_outside_the_grid_or_not_canonical_are_absent(key: str) -> None:
    index = ChunkIndex((3, 4))
    index["1.0"] = ChunkRef(0, 1)
    assert key not in index
    with pytest.raises(KeyError):
        index[key]


def test_setting_a_chunk_outside_the_grid_is_refused() -> None:
    index = ChunkIndex((2, 2))
    with pytest.raises(KeyError, match="not in a grid"):
        index["2.0"] = ChunkRef(0, 1)
    with pytest.raises(KeyError, match="not in a grid"):
        index.add((0, 0, 0), 0, 1, reencode=False)


def test_scalar_and_empty_grids() -> None:
    scalar = ChunkIndex(())
    scalar["0"] = ChunkRef(8, 4)
    assert list(scalar) == ["0"] and scalar["0"] == ChunkRef(8, 4)
    assert chunk_grid((0, 5), (1, 5)) == (0, 1)
    assert list(ChunkIndex(chunk_grid((0, 5), (1, 5)))) == []


def test_a_chunk_costs_tens_of_bytes_not_an_object() -> None:
    """What it is for: a million chunks in ~8 to ~20 MB, not ~300 MB of objects."""
    index = ChunkIndex((100_000,))
    for i in range(100_000):
        index.add((i,), i * 1000, 1000, reencode=False)
    assert index.dense and index.nbytes == 100_000 * 8  # in grid order, none missing
    index.add((7,), 5, 1 << 32, 3, reencode=True)  # past 4 GiB: lengths widen
    assert index["7"] == ChunkRef(5, 1 << 32, 3, True) and index["8"] == ChunkRef(8000, 1000)
    # set again, then sorted by the lookup: one entry a position, dense again
    assert index.dense and index.nbytes == 100_000 * 12  # lengths widened
    index.add((7,), 6, 10, reencode=False)  # set again: the last setting stays
    assert not index.dense  # positions kept until the next lookup sorts them
    assert index["7"] == ChunkRef(6, 10) and len(index) == 100_000


def test_a_dense_index_answers_as_a_dict_and_widens_offsets() -> None:
    """Chunks in grid order with none missing hold no positions; an offset past 4 GiB
    widens the offsets, a gap or a step back keeps positions from then on."""
    refs = {"0.0": ChunkRef(10, 3), "0.1": ChunkRef(1 << 33, 4), "1.0": ChunkRef(20, 5)}
    index = ChunkIndex((2, 2))
    for key, ref in refs.items():
        index[key] = ref
    assert index.dense and dict(index.items()) == refs and index.nbytes == 3 * 12
    assert "1.1" not in index and index.get("1.1") is None
    index["1.1"] = ChunkRef(30, 6, pad=2)
    assert index.dense and index["1.1"] == ChunkRef(30, 6, 2) and len(index) == 4
    gap = ChunkIndex((4,))
    gap.add((0,), 1, 1, reencode=False)
    gap.add((2,), 3, 3, reencode=False)  # 1 missing
    assert not gap.dense and list(gap) == ["0", "2"] and "1" not in gap
    assert gap["2"] == ChunkRef(3, 3)


@pytest.mark.parametrize(("rows", "shape"), [(3, (10, 4)), (5, (10, 4)), (4, (0, 2)), (2, (7,))])
def test_a_strided_index_holds_nothing_and_answers_as_cut_contiguous(rows, shape) -> None:
    """Contiguous data cut into rows, netCDF-3 records: offsets by rule, not held."""
    grid = chunk_grid(shape, (rows, *shape[1:]))
    index = contiguous_index(grid, 1000, shape, 4, rows)
    expected = cut_contiguous(1000, shape, 4, rows)
    assert dict(index.items()) == expected and len(index) == len(expected)
    assert index.nbytes == 0 and list(index) == list(expected)
    assert f"{grid[0]}" + ".0" * (len(shape) - 1) not in index
    if expected:  # setting a chunk holds them all, as added
        last = list(expected)[-1]
        index[last] = ChunkRef(-1, 0, reencode=True)
        assert dict(index.items()) == {**expected, last: ChunkRef(-1, 0, reencode=True)}
        assert index.nbytes > 0


def test_a_strided_index_needs_one_chunk_across() -> None:
    with pytest.raises(ValueError, match="strided index"):
        ChunkIndex.strided((3, 2), 3, 0, 10, 10, 10)
