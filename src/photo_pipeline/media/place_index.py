"""The shipped gazetteer: GeoNames populated places of 1,000+ people, compact.

``geodata/places.npz`` (built by ``scripts/build_places.py``) holds positions as
float32, names as one UTF-8 blob with offsets, and for each place the index of the
place a person would name there (Tokyo for Kabukichō). Loaded, it takes about 10 MB:
the arrays, and a k-d tree (``pykdtree``, float32) over unit vectors. Names are decoded
only for the places a lookup returns. pykdtree runs each query on an OpenMP thread
team: for a scan batch of a few dozen positions, starting the team costs more than the
search (about 0.1-0.5 ms a batch on 2 busy cores), still nothing next to a decode.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import numpy as np
from numpy.typing import ArrayLike
from pykdtree.kdtree import KDTree

_DATA = "places.npz"


@dataclass(frozen=True)
class Gazetteer:
    """Places by index: position, name, region, country, recognised place."""

    latitude: np.ndarray  # float32 degrees
    longitude: np.ndarray
    names: bytes
    name_offsets: np.ndarray
    country: np.ndarray  # index into countries
    countries: tuple[str, ...]
    region: np.ndarray  # index into regions ("" for none)
    regions: tuple[str, ...]
    city: np.ndarray  # index of the place a person would name at this one
    tree: KDTree

    def nearest(self, positions: Sequence[tuple[float, float]]) -> np.ndarray:
        """The index of the nearest place to each ``(lat, lon)``."""
        _, indexes = self.tree.query(unit_vectors(positions), k=1)
        nearest: np.ndarray = indexes.astype(np.int64)
        return nearest

    def name(self, index: int) -> str:
        start, end = self.name_offsets[index], self.name_offsets[index + 1]
        return self.names[start:end].decode("utf-8")

    def country_code(self, index: int) -> str:
        return str(self.countries[self.country[index]])

    def region_name(self, index: int) -> str | None:
        return self.regions[self.region[index]] or None

    def position(self, index: int) -> tuple[float, float]:
        return float(self.latitude[index]), float(self.longitude[index])

    def __len__(self) -> int:
        return len(self.latitude)


def unit_vectors(positions: ArrayLike) -> np.ndarray:
    """``(lat, lon)`` degrees as float32 points on the unit sphere: nearest in 3-D is
    nearest on the globe, across the antimeridian too."""
    degrees = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
    lat, lon = np.radians(degrees[:, 0]), np.radians(degrees[:, 1])
    xyz = np.column_stack((np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)))
    return np.ascontiguousarray(xyz, dtype=np.float32)


def _strings(blob: np.ndarray, offsets: np.ndarray) -> tuple[str, ...]:
    data = blob.tobytes()
    return tuple(data[a:b].decode("utf-8") for a, b in itertools.pairwise(offsets))


def load() -> Gazetteer:
    """Read the shipped file and build the tree (tens of milliseconds)."""
    with (
        resources.files("photo_pipeline.media.geodata").joinpath(_DATA).open("rb") as raw,
        np.load(raw, allow_pickle=False) as data,
    ):
        latitude, longitude = data["latitude"], data["longitude"]
        tree = KDTree(unit_vectors(np.column_stack((latitude, longitude))), leafsize=16)
        return Gazetteer(
            latitude=latitude,
            longitude=longitude,
            names=data["names"].tobytes(),
            name_offsets=data["name_offsets"],
            country=data["country"],
            countries=_strings(data["countries"], data["country_offsets"]),
            region=data["region"],
            regions=_strings(data["regions"], data["region_offsets"]),
            city=data["city"],
            tree=tree,
        )
