"""Tool documents: what the retrievers see of a tool."""

from __future__ import annotations

from nexus_agent.registry import Tool
from nexus_agent.routing.docs import tool_document


def _tool(props: dict[str, object]) -> Tool:
    return Tool(
        server="github",
        name="search_issues",
        description="Search issues.",
        input_schema={
            "type": "object",
            "properties": props,
        },
    )


def test_operation_enums_are_listed_but_output_field_selections_are_not() -> None:
    doc = tool_document(
        _tool(
            {
                "state": {"type": "string", "enum": ["open", "closed"]},
                # GitHub's projection parameter: its values name the result's columns, not what the tool does
                "fields": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["title", "body", "created_at"]},
                    "description": "Subset of fields to return for each issue.",
                },
                "labels": {"type": "array", "items": {"type": "string", "enum": ["bug", "docs"]}},
            }
        )
    )
    assert "Operations/options: open, closed, bug, docs." in doc
    assert "title" not in doc and "created at" not in doc
    assert "Parameters: state, fields, labels." in doc  # the parameter itself still counts
