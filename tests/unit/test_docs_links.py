"""Every relative link of the repository's Markdown resolves: the file it names exists, and its `#anchor`
names a heading of that file (or of the same file), as GitHub renders them.

The Markdown is parsed with markdown-it-py (CommonMark, what GitHub's renderer follows), so links inside
code spans and code blocks are not links, and reference-style links and images count like inline ones.
Anchors follow GitHub's slugs: the heading's text, lower-cased, punctuation dropped, spaces turned to `-`,
and a repeated heading numbered `-1`, `-2`, ... Links with a scheme (`https:`, `mailto:`) are not checked:
the tests make no network call.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[2]
# Folders that are not the project's own writing: installed packages, caches, build output.
SKIPPED_FOLDERS = frozenset({".venv", "node_modules", ".git", "cdk.out", "dist", "build"})

_parser = MarkdownIt("commonmark")


def markdown_files(root: Path) -> list[Path]:
    """The Markdown files under `root`, leaving out installed packages, caches and hidden folders."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(
            name for name in subfolders if name not in SKIPPED_FOLDERS and not name.startswith(".")
        )
        found.extend(Path(folder, name) for name in sorted(files) if name.endswith(".md"))
    return found


def slug(text: str) -> str:
    """GitHub's anchor for a heading's text: lower case, punctuation dropped, each space a `-`."""
    kept = "".join(char for char in text.lower() if char.isalnum() or char in " -_")
    return kept.replace(" ", "-")


def _inline_text(token: Token) -> str:
    """The text a heading renders: its words and code spans, without markup."""
    return "".join(child.content for child in token.children or () if child.type in ("text", "code_inline"))


def anchors(text: str) -> set[str]:
    """Every heading anchor of a Markdown document; a repeated heading gets `-1`, `-2`, ... as on GitHub."""
    tokens = _parser.parse(text)
    seen: dict[str, int] = {}
    found: set[str] = set()
    for opening, inline in pairwise(tokens):
        if opening.type != "heading_open":
            continue
        base = slug(_inline_text(inline))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def _targets(tokens: list[Token]) -> Iterator[str]:
    for token in tokens:
        if token.type == "link_open":
            yield str(token.attrs.get("href", ""))
        elif token.type == "image":
            yield str(token.attrs.get("src", ""))
        if token.children:
            yield from _targets(token.children)


def links(text: str) -> list[str]:
    """Every link and image target of a Markdown document, in order."""
    return list(_targets(_parser.parse(text)))


@dataclass(frozen=True)
class BrokenLink:
    source: Path
    target: str
    reason: str

    def __str__(self) -> str:
        shown = self.source.relative_to(ROOT) if self.source.is_relative_to(ROOT) else self.source
        return f"{shown}: {self.target} ({self.reason})"


def broken_links(source: Path) -> list[BrokenLink]:
    """The relative links of `source` whose file is missing or whose anchor names no heading."""
    text = source.read_text(encoding="utf-8")
    broken: list[BrokenLink] = []
    for target in links(text):
        parts = urlsplit(target)
        if parts.scheme or parts.netloc:
            continue
        path = unquote(parts.path)
        linked = (source.parent / path).resolve() if path else source
        if not linked.exists():
            broken.append(BrokenLink(source, target, f"no file {linked}"))
            continue
        fragment = unquote(parts.fragment)
        if not fragment or linked.suffix != ".md":
            continue  # anchors of other files (a source line, say) are GitHub's own
        headings = anchors(text) if linked == source else anchors(linked.read_text(encoding="utf-8"))
        if fragment not in headings:
            broken.append(BrokenLink(source, target, f"no heading #{fragment} in {linked.name}"))
    return broken


MARKDOWN = markdown_files(ROOT)


def test_the_walk_finds_the_documentation() -> None:
    names = {path.relative_to(ROOT).as_posix() for path in MARKDOWN}
    assert {"README.md", "CHANGELOG.md", "bench/README.md", "docs/scaling.md"} <= names
    assert not any(name.startswith((".venv/", "node_modules/")) for name in names)


@pytest.mark.parametrize("source", MARKDOWN, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(source: Path) -> None:
    broken = [str(link) for link in broken_links(source)]
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_slugs_are_githubs() -> None:
    assert slug("Try it: two commands") == "try-it-two-commands"
    assert slug("Write-sharded bucket index (bucketIndexShards, default 16)") == (
        "write-sharded-bucket-index-bucketindexshards-default-16"
    )
    assert slug("Scaling: partition heat, fan-out (measures 11 to 15)") == (
        "scaling-partition-heat-fan-out-measures-11-to-15"
    )
    assert slug("Uploads and the API's rate limit") == "uploads-and-the-apis-rate-limit"
    assert slug("[0.3.0] - 2026-11-22") == "030---2026-11-22"


def test_a_heading_anchor_reads_code_spans_and_numbers_repeats() -> None:
    text = "# Title\n\n## The `enrich` switch\n\n## Results\n\n### Results\n"
    assert anchors(text) == {"title", "the-enrich-switch", "results", "results-1"}


def test_links_inside_code_are_not_links() -> None:
    text = "See [a](a.md) and ![b](b.png).\n\n`[c](c.md)`\n\n```\n[d](d.md)\n```\n\n[e]\n\n[e]: e.md#top\n"
    assert links(text) == ["a.md", "b.png", "e.md#top"]


def test_a_missing_file_a_missing_anchor_and_a_missing_image_are_each_reported(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n## Deploying it\n", encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text(
        "# Project\n\n## Try it\n\n"
        "[fine](docs/guide.md#deploying-it) [fine too](#try-it) [external](https://example.com/x.md#nope)\n"
        "[gone](docs/missing.md) [wrong anchor](docs/guide.md#deploying) [own](#nowhere)\n"
        "![shot](docs/screenshots/missing.png)\n",
        encoding="utf-8",
    )
    assert [(link.target, link.reason.split(" ")[0]) for link in broken_links(readme)] == [
        ("docs/missing.md", "no"),
        ("docs/guide.md#deploying", "no"),
        ("#nowhere", "no"),
        ("docs/screenshots/missing.png", "no"),
    ]
    assert "no heading #deploying in guide.md" in str(broken_links(readme)[1])
