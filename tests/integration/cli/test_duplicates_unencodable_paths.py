"""A copy whose name is not UTF-8 (a Latin-1 card) is shown in one form wherever the
duplicates are listed: ``duplicates --json``, the API's groups and keepers, the human
listing — ``paths.display`` (undecodable bytes as ``\\x`` escapes), which is also how
a keeper decision names it."""

from __future__ import annotations

import json
import os
import shutil

from tests.factories import photos
from tests.support.api_server import running_server
from tests.support.import_jobs import run_import

LATIN1 = b"caf\xe9.jpg"
SHOWN = r"caf\xe9.jpg"


def card(tmp_path):
    root = tmp_path / "card"
    photo = photos.jpeg(root / "a.jpg", seed=3)
    latin1 = os.fsencode(root) + b"/" + LATIN1
    shutil.copy(photo, latin1)
    os.utime(latin1, (1e9, 1e9))  # the older copy: the suggested keeper
    return root


def test_duplicates_json_names_a_non_utf8_copy_in_one_form(cli, tmp_path):
    root = card(tmp_path)
    assert cli("import", str(root), "--wait")[0] == 0
    code, out, _ = cli("duplicates", "--json")
    assert code == 0
    [group] = json.loads(out)
    files = {f"{f['source']}/{f['path']}": f["keep"] for f in group["files"]}
    assert files == {f"{root}/{SHOWN}": True, f"{root}/a.jpg": False}
    assert group["keeper"] == f"{root}/{SHOWN}"

    code, out, _ = cli("duplicates")
    assert f"keep (oldest) {root}/{SHOWN}\n" in out


def test_the_api_lists_a_non_utf8_copy_as_a_decision_names_it(db_url, session_factory, tmp_path):
    root = card(tmp_path)
    run_import(session_factory, root)
    with running_server(db_url, tmp_path / "home") as server, server.client() as client:
        [group] = client.get("/api/duplicates", params={"kind": "exact"}).json()["exact"]
        members = [f"{f['source']}/{f['path']}" for f in group["files"]]
        assert members[0] == group["keeper"] == f"{root}/{SHOWN}"
        # What the web UI posts for the keeper it shows: accepted as that member.
        answer = client.post(
            "/api/duplicates/decisions", json={"group": group["group"], "keep": members[:1]}
        )
        assert answer.status_code == 201, answer.text
