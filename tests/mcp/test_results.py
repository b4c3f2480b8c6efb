"""What the model reads of a tool result (``ToolResult.readable``)."""

from __future__ import annotations

import json

from nexus_agent.agent.history import carries_nothing
from nexus_agent.mcp.tools import ToolResult


def test_text_blocks_are_read_and_other_results_fall_back_to_their_json() -> None:
    text = ToolResult(
        "s", "t", [{"type": "text", "text": "a"}, {"type": "image", "data": "x"}, {"type": "text", "text": "b"}]
    )
    assert text.readable() == "a\nb"
    # structured content without a text block: the structure, not the empty block list (which reads as "nothing")
    structured = ToolResult("s", "t", [], structured={"temperature": 33, "conditions": "Cloudy"})
    assert json.loads(structured.readable()) == {"temperature": 33, "conditions": "Cloudy"}
    assert not carries_nothing(structured.readable())
    image = ToolResult("s", "t", [{"type": "image", "data": "x" * 10_000, "mimeType": "image/png"}])
    assert image.readable().startswith('[{"type": "image"') and len(image.readable()) == 4000
    assert carries_nothing(ToolResult("s", "t", []).readable())


def test_embedded_text_resources_are_read_with_the_text_blocks() -> None:
    """get_file_contents answers with a one-line text block and the file as an embedded resource: the model must
    read the file, not only "successfully downloaded text file"."""
    res = ToolResult(
        "github",
        "get_file_contents",
        [
            {"type": "text", "text": "successfully downloaded text file (SHA: abc123)"},
            {"type": "resource", "resource": {"uri": "repo://acme/api/README.md", "text": "Default port: 8080"}},
            {"type": "resource", "resource": {"uri": "repo://acme/api/logo.png", "blob": "iVBORw0K"}},
        ],
    )
    assert res.readable() == "successfully downloaded text file (SHA: abc123)\nDefault port: 8080"
    assert "iVBORw0K" not in res.readable()  # a binary resource has no text to read
    only = ToolResult("s", "t", [{"type": "resource", "resource": {"uri": "file:///a.md", "text": "# A"}}])
    assert only.readable() == "# A"
