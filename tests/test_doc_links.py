"""Every relative link of the README and the docs resolves: the file exists, and so does its #anchor.

Anchors are GitHub's heading slugs: the heading's text without Markdown marks, lower case, every
character that is not a letter, digit, space, `-` or `_` removed, spaces as `-`, and a repeated slug
numbered (`-1`, `-2`). Links inside code (fenced blocks and inline spans) and HTML comments are text,
not links.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = sorted([ROOT / "README.md", ROOT / "data" / "README.md", *(ROOT / "docs").glob("*.md")])
_FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.MULTILINE)


def prose(text: str) -> str:
    """The text with code and comments blanked out (their links are examples, not links)."""
    return _INLINE_CODE.sub("", _COMMENT.sub("", _FENCE.sub("", text)))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """The anchors of a Markdown file's headings, repeats numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for heading in _HEADING.findall(_FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return frozenset(found)


def relative_links(path: Path) -> list[str]:
    targets = _LINK.findall(prose(path.read_text(encoding="utf-8")))
    return [target for target in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(d.relative_to(ROOT)) for d in DOCUMENTS])
def test_every_relative_link_and_anchor_resolves(document: Path) -> None:
    broken = []
    for target in relative_links(document):
        name, _, anchor = target.partition("#")
        linked = (document.parent / name).resolve() if name else document
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            broken.append(f"{target}: no heading #{anchor} in {linked.relative_to(ROOT)}")
    assert broken == [], f"{document.relative_to(ROOT)}: {broken}"


def test_the_checker_sees_links_and_slugs_as_github_does(tmp_path: Path) -> None:
    assert slug("Choosing the 1.5B's program (`--optimizer program`, dev selection)") == (
        "choosing-the-15bs-program---optimizer-program-dev-selection"
    )
    assert slug("results.html at the size of the test split") == "resultshtml-at-the-size-of-the-test-split"
    page = tmp_path / "page.md"
    page.write_text(
        "# A\n\n## Twice\n\n## Twice\n\n[ok](#twice-1) [gone](#nope) `[code](#nope)` ![img](x.png)\n"
        "<!-- [hidden](#nope) -->\n```\n[fenced](#nope)\n```\n[web](https://example.com/x)\n",
        encoding="utf-8",
    )
    assert relative_links(page) == ["#twice-1", "#nope", "x.png"]
    assert anchors(page) == {"a", "twice", "twice-1"}
