"""The command line of watched sources: `import --watch`, `sources` with its watch
column, `sources --watch ID` / `--unwatch ID`, and an unknown id refused."""

from __future__ import annotations

import json


def test_import_watch_then_unwatch_and_watch_again(cli, tmp_path):
    folder = tmp_path / "phone"
    folder.mkdir()
    code, _, err = cli("import", str(folder), "--watch")
    assert code == 0, err
    code, out, _ = cli("sources", "--json")
    [source] = json.loads(out)
    assert source["watch"] is True and source["watcher"] is None
    code, out, _ = cli("sources")
    assert "no watcher running" in out
    assert cli("sources", "--unwatch", str(source["id"]))[0] == 0
    assert json.loads(cli("sources", "--json")[1])[0]["watch"] is False
    assert "no" in cli("sources")[1].split()
    code, out, _ = cli("sources", "--watch", str(source["id"]), "--json")
    assert code == 0 and json.loads(out)["watch"] is True


def test_watching_an_unknown_source_is_refused(cli):
    code, _, err = cli("sources", "--watch", "999")
    assert code == 2
    assert "source_not_found" in err
