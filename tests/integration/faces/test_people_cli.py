"""The people commands, in-process on both databases: import (faces on), `people list`,
`people name`, `assets --person`, `people split` and `merge`; exit 3 for a person not
found, 2 for a bad name."""

from __future__ import annotations

import json
import shutil

from tests.support.face_photos import OBAMA


def test_people_commands(cli, tmp_path, monkeypatch, face_images):
    folder = tmp_path / "photos"
    folder.mkdir()
    for name in [*OBAMA[:3], "biden.jpg"]:
        shutil.copy(face_images / name, folder / name)
    monkeypatch.setenv("PHOTO_PIPELINE_FACES", "on")
    code, _out, err = cli("import", str(folder), "--wait")
    assert code == 0, err

    code, out, _ = cli("people", "list", "--json")
    [obama] = json.loads(out)
    assert (obama["name"], obama["faces"], obama["assets"]) == (None, 3, 3)
    code, out, _ = cli("people", "name", str(obama["id"]), "Barack Obama")
    assert code == 0 and "Barack Obama" in out
    code, out, _ = cli("assets", "--person", "barack obama", "--json")
    assert sorted(json.loads(out)[i]["name"] for i in range(3)) == sorted(OBAMA[:3])

    code, out, _ = cli("people", "show", "Barack Obama", "--json")
    face = json.loads(out)[0]["id"]
    code, out, _ = cli("people", "split", str(face), "--json")
    alone = json.loads(out)["id"]
    code, out, _ = cli("people", "merge", "Barack Obama", str(alone), "--json")
    assert json.loads(out)["faces_moved"] == 1

    assert cli("people", "show", "Nobody")[0] == 3
    assert cli("assets", "--person", "Nobody")[0] == 3
    assert cli("people", "name", "Barack Obama", "   ")[0] == 2
    assert cli("people", "release", "999999")[0] == 3
