"""Sub-issues, issue types and custom issue fields, through the real server, checked on the store."""

from __future__ import annotations

from pathlib import Path

from gh_sandbox_support import call_err, call_ok, store_of, world_session

from nexus_agent.sandbox.github.handlers import issue_fields

DOCK = {"owner": "harbor-io", "repo": "dock"}


def _children(data: Path, number: int) -> list[int]:
    with store_of(data) as st:
        repo = st.repo("harbor-io", "dock")
        rows = st.rows(
            "SELECT i.number FROM sub_issues s JOIN issues i ON i.id = s.child_id "
            "WHERE s.parent_id = (SELECT id FROM issues WHERE repo_id = ? AND number = ?) ORDER BY s.position",
            (repo.id, number),
        )
        return [r["number"] for r in rows]


def _id(data: Path, number: int) -> int:
    with store_of(data) as st:
        return st.issue(st.repo("harbor-io", "dock").id, number).id


async def test_sub_issues_add_reorder_move_and_remove(harbor: Path) -> None:
    docs = _id(harbor, 4)
    async with world_session(harbor) as s:
        parent = await call_ok(s, "sub_issue_write", method="add", **DOCK, issue_number=1, sub_issue_id=docs)
        assert parent["number"] == 1 and parent["sub_issues_summary"] == {
            "total": 3,
            "completed": 1,
            "percent_completed": 33,
        }
        assert _children(harbor, 1) == [2, 3, 4]
        await call_ok(
            s,
            "sub_issue_write",
            method="reprioritize",
            **DOCK,
            issue_number=1,
            sub_issue_id=docs,
            before_id=_id(harbor, 2),
        )
        assert _children(harbor, 1) == [4, 2, 3]
        listed = await call_ok(s, "issue_read", method="get_sub_issues", **DOCK, issue_number=1)
        assert [i["number"] for i in listed] == [4, 2, 3]
        # A child has one parent: moving it needs replace_parent.
        err = await call_err(s, "sub_issue_write", method="add", **DOCK, issue_number=2, sub_issue_id=docs)
        assert "already has a parent issue (harbor-io/dock#1)" in err and "replace_parent" in err
        await call_ok(
            s, "sub_issue_write", method="add", **DOCK, issue_number=2, sub_issue_id=docs, replace_parent=True
        )
        assert _children(harbor, 1) == [2, 3] and _children(harbor, 2) == [4]
        parent_of = await call_ok(s, "issue_read", method="get_parent", **DOCK, issue_number=4)
        assert parent_of["parent"]["number"] == 2
        got = await call_ok(s, "issue_read", method="get", **DOCK, issue_number=2)
        assert got["has_parent"] and got["has_children"] and got["parent"]["number"] == 1
        # No cycles: issue 1 is an ancestor of issue 2.
        err = await call_err(
            s,
            "sub_issue_write",
            method="add",
            **DOCK,
            issue_number=2,
            sub_issue_id=_id(harbor, 1),
            replace_parent=True,
        )
        assert "ancestor" in err
        await call_ok(s, "sub_issue_write", method="remove", **DOCK, issue_number=2, sub_issue_id=docs)
        assert _children(harbor, 2) == []
        err = await call_err(s, "sub_issue_write", method="remove", **DOCK, issue_number=2, sub_issue_id=docs)
        assert "404" in err and "is not a sub-issue" in err
        err = await call_err(s, "sub_issue_write", method="add", **DOCK, issue_number=1, sub_issue_id=_id(harbor, 5))
        assert "is a pull request" in err
        err = await call_err(s, "issue_read", method="get_parent", **DOCK, issue_number=1)
        assert "has no parent issue" in err


async def test_issue_types_and_fields(harbor: Path) -> None:
    async with world_session(harbor) as s:
        types = await call_ok(s, "list_issue_types", owner="harbor-io")
        assert [t["name"] for t in types] == ["Bug", "Feature", "Task"]
        assert await call_ok(s, "list_issue_types", **DOCK) == types
        fields = await call_ok(s, "list_issue_fields", owner="harbor-io", repo="dock")
        assert [(f["name"], f["data_type"]) for f in fields] == [
            ("Priority", "SINGLE_SELECT"),
            ("Estimate", "NUMBER"),
            ("Due", "DATE"),
            ("Notes", "TEXT"),
        ]
        assert [o["name"] for o in fields[0]["options"]] == ["P0", "P1", "P2"]
        created = await call_ok(
            s,
            "issue_write",
            method="create",
            **DOCK,
            title="Rate limits",
            type="Task",
            issue_fields=[
                {"field_name": "priority", "field_option_name": "p2"},
                {"field_name": "Estimate", "value": 5},
            ],
        )
        number = int(created["url"].rsplit("/", 1)[1])
        with store_of(harbor) as st:
            issue = st.issue(st.repo("harbor-io", "dock").id, number)
            kind = st.row(
                "SELECT t.name FROM issue_types t JOIN issue_type_of o ON o.type_id = t.id WHERE o.issue_id = ?",
                (issue.id,),
            )
            values = st.rows(
                "SELECT f.name, v.value FROM issue_field_values v JOIN issue_fields f ON f.id = v.field_id "
                "WHERE v.issue_id = ?",
                (issue.id,),
            )
        assert kind is not None and kind["name"] == "Task"
        assert {r["name"]: r["value"] for r in values} == {"Priority": "P2", "Estimate": "5"}
        await call_ok(
            s,
            "issue_write",
            method="update",
            **DOCK,
            issue_number=number,
            type=None,
            issue_fields=[{"field_name": "Estimate", "delete": True}, {"field_name": "Due", "value": "2025-05-01"}],
        )
        got = await call_ok(s, "issue_read", method="get", **DOCK, issue_number=number)
        assert "issue_type" not in got
        assert {v["data_type"]: v["value"] for v in got["issue_field_values"]} == {
            "single_select": "P2",
            "date": "2025-05-01",
        }
        listed = await call_ok(
            s,
            "list_issues",
            **DOCK,
            field_filters=[{"field_name": "Priority", "value": "P0"}],
            fields=["number", "field_values"],
        )
        assert [i["number"] for i in listed["issues"]] == [3]
        assert {"field": "Priority", "value": "P0"} in listed["issues"][0]["field_values"]
        err = await call_err(s, "issue_write", method="update", **DOCK, issue_number=number, type="Epic")
        assert "422" in err and "'Epic'" in err and "Bug, Feature, Task" in err
        err = await call_err(
            s,
            "issue_write",
            method="update",
            **DOCK,
            issue_number=number,
            issue_fields=[{"field_name": "Priority", "field_option_name": "P9"}],
        )
        assert "'P9' is not an option of field 'Priority'" in err
        err = await call_err(
            s,
            "issue_write",
            method="update",
            **DOCK,
            issue_number=number,
            issue_fields=[{"field_name": "Due", "value": "next week"}],
        )
        assert "YYYY-MM-DD" in err
        # A user's repository has no issue types, as on GitHub.
        err = await call_err(s, "issue_write", method="create", owner="mira-sol", repo="notes", title="t", type="Bug")
        assert err == issue_fields.NO_TYPES
        err = await call_err(s, "list_issue_types", owner="mira-sol")
        assert "404" in err
