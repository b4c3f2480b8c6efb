"""The README is a front door: at most 130 lines, every link inside the repository and pointing at a file that
exists (anchors included), and the two commands it gives are the scripts CI runs."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(md: str) -> set[str]:
    """GitHub's heading anchors: lower-case, punctuation dropped, spaces to hyphens."""
    out = set()
    for line in md.splitlines():
        if m := re.match(r"#+ (.*)", line):
            text = re.sub(r"\]\([^)]*\)", "]", m.group(1))  # a link's text stays, its target goes
            out.add(re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-"))
    return out


def test_the_readme_is_short_and_links_only_inside_the_repository() -> None:
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 130
    links = _LINK.findall(text)
    assert links, "the README links its docs"
    for link in links:
        assert "://" not in link and not link.startswith("mailto:"), f"README links outside the repository: {link}"
        path, _, anchor = link.partition("#")
        target = REPO / path if path else REPO / "README.md"
        assert target.exists(), f"README links a missing file: {link}"
        if anchor and target.suffix == ".md":
            assert anchor in _anchors(target.read_text()), f"README links a missing heading: {link}"


def test_the_readme_gives_the_two_commands_ci_runs() -> None:
    text = (REPO / "README.md").read_text()
    assert 'scripts/nexus-agent run --mcp github -p "' in text and "\nscripts/test\n" in text
    assert "scripts/test" in (REPO / ".ci" / "run").read_text()
