"""Curation: what a person decides about their photos, kept in the catalogue and in
each photo's XMP sidecar (``pipeline.xmp``; the originals are never touched): a
favourite (heart), a rating 0-5 (0: unrated), a reject flag, tags (keywords,
hierarchical as ``Places|France|Paris``) and albums (an asset in many; an album has a
name, a cover and the date range of its photos).

Every change is idempotent (setting what is already set changes nothing) and bumps the
asset's curation ``version``; the assets changed since a writer last wrote them are
listed by :mod:`.changes` (the outbox the XMP sidecar writer reads), which also
keeps when each field last changed (the XMP read-back's "newer wins").

- :mod:`.assets`: the asset ids a request names, checked;
- :mod:`.changes`: versions, field change times and the outbox of changed assets;
- :mod:`.marks`: favourite, rating and reject;
- :mod:`.tags`: tags and the assets they are on;
- :mod:`.albums`: albums and their photos;
- :mod:`.filters`: the listing filters (album, tag with its children, rating range,
  favourite, rejected) and the curation fields of listed rows.
"""

from photo_pipeline.pipeline.curation.albums import (
    AlbumExists,
    AlbumNotFound,
    InvalidAlbumName,
    NotInAlbum,
    add_to_album,
    album,
    create_album,
    delete_album,
    find_album,
    list_albums,
    remove_from_album,
    update_album,
)
from photo_pipeline.pipeline.curation.assets import MAX_ASSET_IDS, AssetNotFound, TooManyAssets
from photo_pipeline.pipeline.curation.changes import mark_written, pending_changes
from photo_pipeline.pipeline.curation.filters import (
    CurationFilter,
    RatingRange,
    curation_fields,
    curation_of,
    parse_rating_range,
    with_curation,
)
from photo_pipeline.pipeline.curation.marks import (
    MAX_RATING,
    Changed,
    InvalidRating,
    set_favorite,
    set_rating,
    set_rejected,
)
from photo_pipeline.pipeline.curation.tags import (
    InvalidTag,
    TagNotFound,
    add_tag,
    list_tags,
    normalise_tag,
    remove_tag,
)

__all__ = [
    "MAX_ASSET_IDS",
    "MAX_RATING",
    "AlbumExists",
    "AlbumNotFound",
    "AssetNotFound",
    "Changed",
    "CurationFilter",
    "InvalidAlbumName",
    "InvalidRating",
    "InvalidTag",
    "NotInAlbum",
    "RatingRange",
    "TagNotFound",
    "TooManyAssets",
    "add_tag",
    "add_to_album",
    "album",
    "create_album",
    "curation_fields",
    "curation_of",
    "delete_album",
    "find_album",
    "list_albums",
    "list_tags",
    "mark_written",
    "normalise_tag",
    "parse_rating_range",
    "pending_changes",
    "remove_from_album",
    "remove_tag",
    "set_favorite",
    "set_rating",
    "set_rejected",
    "update_album",
    "with_curation",
]
