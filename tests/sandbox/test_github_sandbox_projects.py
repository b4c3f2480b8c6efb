"""Projects (v2): projects, fields, items, views, status updates, iteration fields, through the real server,
checked on the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gh_sandbox_support import call_err, call_ok, store_of, text_of, world_session

ROADMAP = {"owner": "harbor-io", "project_number": 1}


def _value(data: Path, item_id: int, field: str) -> Any:
    with store_of(data) as st:
        row = st.row(
            "SELECT v.value FROM project_item_values v JOIN project_fields f ON f.id = v.field_id "
            "WHERE v.item_id = ? AND f.name = ?",
            (item_id, field),
        )
        return None if row is None else json.loads(row["value"])


async def test_reading_projects(harbor: Path) -> None:
    async with world_session(harbor) as s:
        org = await call_ok(s, "projects_list", method="list_projects", owner="harbor-io")
        assert [(p["number"], p["title"], p["owner_type"]) for p in org["projects"]] == [(1, "Roadmap", "org")]
        mine = await call_ok(s, "projects_list", method="list_projects", owner="mira-sol", query="pers is:open")
        assert [p["title"] for p in mine["projects"]] == ["Personal"]
        fields = await call_ok(s, "projects_list", method="list_project_fields", **ROADMAP)
        names = [f["name"] for f in fields["fields"]]
        assert names[:3] == ["Title", "Assignees", "Status"] and names[-3:] == ["Priority", "Sprint", "Points"]
        sprint = next(f for f in fields["fields"] if f["name"] == "Sprint")
        assert [it["title"] for it in sprint["configuration"]["iterations"]] == ["Sprint 1", "Sprint 2"]
        items = await call_ok(
            s,
            "projects_list",
            method="list_project_items",
            **ROADMAP,
            field_names=["Status", "Priority", "Sprint", "Points"],
        )
        first = items["items"][0]
        values = {f["name"]: f.get("value") for f in first["fields"]}
        assert first["content"]["title"] == "Login form"
        assert values["Status"]["name"] == "In Progress" and values["Sprint"]["title"] == "Sprint 1"
        assert values["Points"] == 3
        only_title = await call_ok(s, "projects_list", method="list_project_items", **ROADMAP)
        assert [f["name"] for f in only_title["items"][2]["fields"]] == ["Title"]
        assert only_title["items"][2]["content_type"] == "DraftIssue"
        filtered = await call_ok(s, "projects_list", method="list_project_items", **ROADMAP, query="status:Todo is:pr")
        assert [i["content"]["number"] for i in filtered["items"]] == [5]
        none = await call_ok(s, "projects_list", method="list_project_items", **ROADMAP, query="-no:Priority is:issue")
        assert [i["content"]["title"] for i in none["items"]] == ["Login form"]
        views = await call_ok(s, "projects_list", method="list_project_views", **ROADMAP)
        assert [(v["name"], v["layout"]) for v in views["views"]] == [("View 1", "table"), ("Board", "board")]
        board = await call_ok(s, "projects_get", method="get_project_view", view_id=views["views"][1]["id"])
        assert len(board["visible_fields"]) == 2
        updates = await call_ok(s, "projects_list", method="list_project_status_updates", **ROADMAP)
        update = updates["statusUpdates"][0]
        assert (update["status"], update["target_date"]) == ("ON_TRACK", "2025-04-30")
        again = await call_ok(s, "projects_get", method="get_project_status_update", status_update_id=update["id"])
        assert again == update
        got = await call_ok(s, "projects_get", method="get_project", **ROADMAP)
        assert (got["title"], got["short_description"], got["public"]) == ("Roadmap", "What ships when", True)
        item = await call_ok(
            s, "projects_get", method="get_project_item", **ROADMAP, item_id=first["id"], field_names=["Priority"]
        )
        assert item["fields"][0]["value"]["name"] == "High"
        err = await call_err(s, "projects_get", method="get_project", owner="harbor-io", project_number=9)
        assert "404" in err
        err = await call_err(s, "projects_list", method="list_project_items", **ROADMAP, field_names=["Nope"])
        assert "no field named 'Nope'" in err


async def test_writing_project_items(harbor: Path) -> None:
    async with world_session(harbor) as s:
        added = await call_ok(
            s,
            "projects_write",
            method="add_project_item",
            **ROADMAP,
            item_owner="harbor-io",
            item_repo="dock",
            item_type="issue",
            issue_number=3,
        )
        assert added["message"] == "Successfully added issue harbor-io/dock#3 to project harbor-io/1"
        item_id = added["item_id"]
        same = await call_ok(
            s,
            "projects_write",
            method="add_project_item",
            **ROADMAP,
            item_owner="harbor-io",
            item_repo="dock",
            item_type="issue",
            issue_number=3,
        )
        assert same["item_id"] == item_id  # adding twice returns the item
        updated = await call_ok(
            s,
            "projects_write",
            method="update_project_item",
            **ROADMAP,
            item_id=item_id,
            updated_field={"name": "status", "value": "Done"},
        )
        assert updated["fields"][0]["value"]["name"] == "Done"
        await call_ok(
            s,
            "projects_write",
            method="update_project_item",
            **ROADMAP,
            item_owner="harbor-io",
            item_repo="dock",
            issue_number=3,
            updated_field={"name": "Points", "value": 8},
        )
        assert _value(harbor, item_id, "Points") == 8
        batch = await call_ok(
            s,
            "projects_write",
            method="update_project_items",
            **ROADMAP,
            items=[{"item_id": item_id}, {"item_id": 1}, {"item_id": 999}],
            updated_field={"name": "Sprint", "value": "Sprint 2"},
        )
        assert (batch["succeeded"], batch["failed"]) == (2, 1)
        assert batch["results"][2]["error"]["code"] == "not_found"
        with store_of(harbor) as st:
            sprint = st.row("SELECT configuration FROM project_fields WHERE name = 'Sprint'")["configuration"]
        second = json.loads(sprint)["iterations"][1]["id"]
        assert _value(harbor, item_id, "Sprint") == second == _value(harbor, 1, "Sprint")
        await call_ok(
            s,
            "projects_write",
            method="update_project_item",
            **ROADMAP,
            item_id=item_id,
            updated_field={"name": "Points", "value": None},
        )
        assert _value(harbor, item_id, "Points") is None
        err = await call_err(
            s,
            "projects_write",
            method="update_project_item",
            **ROADMAP,
            item_id=item_id,
            updated_field={"name": "Priority", "value": "Urgent"},
        )
        assert "'Urgent' is not a valid value" in err and "High" in err
        err = await call_err(
            s,
            "projects_write",
            method="update_project_item",
            **ROADMAP,
            item_id=item_id,
            updated_field={"name": "Labels", "value": "bug"},
        )
        assert "follows the item's content" in err
        failed = await s.call_tool(
            "projects_write",
            {
                "method": "update_project_items",
                **ROADMAP,
                "items": [{"item_id": 998}],
                "updated_field": {"name": "Points", "value": 1},
            },
        )
        assert failed.is_error and json.loads(text_of(failed))["succeeded"] == 0
        deleted = await call_ok(s, "projects_write", method="delete_project_item", **ROADMAP, item_id=item_id)
        assert deleted == "project item successfully deleted"
        with store_of(harbor) as st:
            assert st.row("SELECT 1 FROM project_items WHERE id = ?", (item_id,)) is None
        err = await call_err(
            s,
            "projects_write",
            method="add_project_item",
            **ROADMAP,
            item_owner="harbor-io",
            item_repo="dock",
            item_type="pull_request",
            pull_request_number=3,
        )
        assert "is not a pull request" in err


async def test_writing_projects_views_and_updates(harbor: Path) -> None:
    async with world_session(harbor) as s:
        created = await call_ok(
            s, "projects_write", method="create_project", owner="mira-sol", owner_type="user", title="Reading list"
        )
        assert (created["number"], created["url"]) == (2, "https://github.com/users/mira-sol/projects/2")
        err = await call_err(
            s, "projects_write", method="create_project", owner="tomas-berg", owner_type="user", title="Not mine"
        )
        assert "cannot create projects for tomas-berg" in err
        field = await call_ok(
            s,
            "projects_write",
            method="create_iteration_field",
            owner="mira-sol",
            project_number=2,
            field_name="Week",
            iteration_duration=7,
            start_date="2025-03-03",
        )
        assert [(i["title"], i["start_date"]) for i in field["configuration"]["iterations"]] == [
            ("Iteration 1", "2025-03-03"),
            ("Iteration 2", "2025-03-10"),
            ("Iteration 3", "2025-03-17"),
        ]
        err = await call_err(
            s,
            "projects_write",
            method="create_iteration_field",
            owner="mira-sol",
            project_number=2,
            field_name="Week",
            iteration_duration=7,
            start_date="2025-03-03",
        )
        assert "already has a field named 'Week'" in err
        update = await call_ok(
            s,
            "projects_write",
            method="create_project_status_update",
            **ROADMAP,
            body="Slipping a week",
            status="AT_RISK",
            target_date="2025-05-07",
        )
        assert update["status"] == "AT_RISK" and update["creator"] == {"login": "mira-sol"}
        with store_of(harbor) as st:
            assert [r["status"] for r in st.rows("SELECT status FROM project_status_updates ORDER BY id")] == [
                "ON_TRACK",
                "AT_RISK",
            ]
        err = await call_err(s, "projects_write", method="create_project_status_update", **ROADMAP, target_date="May 7")
        assert "must be YYYY-MM-DD" in err
        view = await call_ok(
            s,
            "projects_write",
            method="create_project_view",
            **ROADMAP,
            name="Plan",
            layout="roadmap",
            filter="is:open",
        )
        assert (view["number"], view["layout"], view["filter"]) == (3, "roadmap", "is:open")
        err = await call_err(
            s,
            "projects_write",
            method="update_project_view",
            **ROADMAP,
            view_id=view["id"],
            visible_field_names=["Status"],
        )
        assert err == "visible fields are not supported for roadmap views"
        changed = await call_ok(
            s,
            "projects_write",
            method="update_project_view",
            **ROADMAP,
            view_id=view["id"],
            layout="table",
            visible_field_names=["Title", "Priority"],
            filter=None,
        )
        assert changed["layout"] == "table" and changed["filter"] == "" and len(changed["visible_fields"]) == 2
        gone = await call_ok(s, "projects_write", method="delete_project_view", **ROADMAP, view_id=view["id"])
        assert gone == {"deleted_view_id": view["id"]}
        with store_of(harbor) as st:
            assert [r["name"] for r in st.rows("SELECT name FROM project_views WHERE project_id = 1")] == [
                "View 1",
                "Board",
            ]
        err = await call_err(
            s, "projects_write", method="delete_project_view", owner="mira-sol", project_number=2, view_id=view["id"]
        )
        assert "ProjectV2View" in err
