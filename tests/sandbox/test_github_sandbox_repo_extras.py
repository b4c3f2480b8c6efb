"""Releases, stars, collaborators, repository deletion and gists, through the real server, checked on the store."""

from __future__ import annotations

from pathlib import Path

from gh_sandbox_support import call_err, call_ok, git, store_of, world_session

DOCK = {"owner": "harbor-io", "repo": "dock"}


async def test_releases(harbor: Path) -> None:
    async with world_session(harbor) as s:
        listed = await call_ok(s, "list_releases", **DOCK)
        assert [(r["tag_name"], r["draft"], r["prerelease"]) for r in listed] == [
            ("v2.0.0", True, False),
            ("v1.1.0-rc1", False, True),
            ("v1.0.0", False, False),
        ]
        trimmed = await call_ok(s, "list_releases", **DOCK, fields=["tag_name"], perPage=1, page=3)
        assert trimmed == [{"tag_name": "v1.0.0"}]
        latest = await call_ok(s, "get_latest_release", **DOCK)
        assert (latest["tag_name"], latest["name"], latest["author"]["login"]) == ("v1.0.0", "Dock 1.0", "mira-sol")
        rc = await call_ok(s, "get_release_by_tag", **DOCK, tag="v1.1.0-rc1")
        assert rc["prerelease"] and rc["target_commitish"] == "main"
        err = await call_err(s, "get_release_by_tag", **DOCK, tag="v2.0.0")  # a draft has no tag yet
        assert "404" in err
        err = await call_err(s, "get_latest_release", owner="harbor-io", repo="crane")
        assert "404" in err and "no published release" in err
    # A published release whose tag did not exist made it on its target.
    assert (
        git(harbor, "harbor-io/dock", "rev-parse", "v1.1.0-rc1").strip()
        == git(harbor, "harbor-io/dock", "rev-parse", "main").strip()
    )


async def test_stars(harbor: Path) -> None:
    async with world_session(harbor) as s:
        assert await call_ok(s, "star_repository", **DOCK) == "Successfully starred repository harbor-io/dock"
        await call_ok(s, "star_repository", **DOCK)  # twice is fine, counted once
        await call_ok(s, "star_repository", owner="tomas-berg", repo="dotfiles")
        with store_of(harbor) as st:
            assert st.repo("harbor-io", "dock").stars == 12  # 10 unnamed + tomas-berg + mira-sol
            assert {r["login"] for r in st.rows("SELECT login FROM stars WHERE repo_id = 1")} == {
                "tomas-berg",
                "mira-sol",
            }
        mine = await call_ok(s, "list_starred_repositories")
        assert [r["full_name"] for r in mine] == ["tomas-berg/dotfiles", "harbor-io/dock"]
        assert mine[1]["stargazers_count"] == 12
        await call_ok(s, "unstar_repository", **DOCK)
        with store_of(harbor) as st:
            assert st.repo("harbor-io", "dock").stars == 11
        tomas = await call_ok(s, "list_starred_repositories", username="tomas-berg")
        assert [r["full_name"] for r in tomas] == ["harbor-io/dock"]
        err = await call_err(s, "star_repository", owner="harbor-io", repo="nope")
        assert "404" in err


async def test_collaborators(harbor: Path) -> None:
    async with world_session(harbor) as s:
        everyone = await call_ok(s, "list_repository_collaborators", **DOCK)
        assert [(c["login"], c["role_name"]) for c in everyone["items"]] == [
            ("ada-okafor", "read"),
            ("ben-outside", "triage"),
            ("mira-sol", "admin"),
            ("tomas-berg", "read"),
        ]
        assert (everyone["nextPage"], everyone["lastPage"]) == (0, 0)
        outside = await call_ok(s, "list_repository_collaborators", **DOCK, affiliation="outside")
        assert [c["login"] for c in outside["items"]] == ["ben-outside"]
        paged = await call_ok(s, "list_repository_collaborators", **DOCK, perPage=3)
        assert len(paged["items"]) == 3 and paged["nextPage"] == 2 and paged["lastPage"] == 2
        own = await call_ok(s, "list_repository_collaborators", owner="mira-sol", repo="notes")
        assert [(c["login"], c["role_name"]) for c in own["items"]] == [("mira-sol", "admin")]


async def test_delete_repository(harbor: Path) -> None:
    async with world_session(harbor) as s:
        err = await call_err(s, "delete_repository", owner="tomas-berg", repo="dotfiles")
        assert "403" in err and "admin rights" in err
        assert await call_ok(s, "delete_repository", **DOCK) == "Repository harbor-io/dock was deleted."
        err = await call_err(s, "get_file_contents", **DOCK, path="README.md")
        assert "404" in err
    with store_of(harbor) as st:
        assert [r.full_name for r in st.repos()] == [
            "harbor-io/crane",
            "harbor-io/.github",
            "tomas-berg/dotfiles",
            "mira-sol/notes",
        ]
        # Nothing of the repository is left behind in the tables that refer to it.
        for table in ("issues", "labels", "releases", "workflow_runs", "dependabot_alerts", "notifications", "stars"):
            assert st.row(f"SELECT 1 FROM {table} WHERE repo_id = 1") is None, table
        for table in (
            "reviews",
            "review_comments",
            "discussion_comments",
            "workflow_jobs",
            "sub_issues",
        ):
            assert st.row(f"SELECT COUNT(*) AS n FROM {table}")["n"] == 0, table
        # The project keeps its draft item; the dock issues it held are gone from it.
        assert [r["content_type"] for r in st.rows("SELECT content_type FROM project_items")] == ["DraftIssue"]
    assert not (harbor / "repos" / "harbor-io" / "dock.git").exists()


async def test_gists(harbor: Path) -> None:
    async with world_session(harbor) as s:
        created = await call_ok(s, "create_gist", filename="plan.md", content="# Plan\n", description="launch plan")
        gist_id = created["id"]
        assert len(gist_id) == 32 and created["url"] == f"https://gist.github.com/{gist_id}"
        await call_ok(s, "update_gist", gist_id=gist_id, filename="extra.txt", content="more", description="launch")
        got = await call_ok(s, "get_gist", gist_id=gist_id)
        assert {n: f["content"] for n, f in got["files"].items()} == {"extra.txt": "more", "plan.md": "# Plan\n"}
        assert (got["description"], got["public"], got["owner"]["login"]) == ("launch", False, "mira-sol")
        with store_of(harbor) as st:
            row = st.row("SELECT id, description FROM gists WHERE gist_id = ?", (gist_id,))
            files = st.rows("SELECT filename FROM gist_files WHERE gist_id = ? ORDER BY filename", (row["id"],))
        assert row["description"] == "launch" and [f["filename"] for f in files] == ["extra.txt", "plan.md"]
        mine = await call_ok(s, "list_gists")
        assert len(mine) == 3 and mine[0]["id"] == gist_id and "content" not in mine[0]["files"]["plan.md"]
        theirs = await call_ok(s, "list_gists", username="tomas-berg")
        assert [g["id"] for g in theirs] == ["aaaabbbbccccddddeeeeffff00001111"]
        err = await call_err(s, "update_gist", gist_id="aaaabbbbccccddddeeeeffff00001111", filename="x", content="y")
        assert "404" in err  # not the caller's gist
        err = await call_err(s, "get_gist", gist_id="0" * 32)
        assert "404" in err
        err = await call_err(s, "list_gists", since="yesterday")
        assert err.startswith("invalid since timestamp")
