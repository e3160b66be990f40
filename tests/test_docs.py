"""The README a newcomer scans (issue 35 item 5): its first screen says what chipdse does and gives the two
commands; the rest lives in docs/, every page of which the site's navigation lists and every README link reaches."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
FIRST_SCREEN_LINES = 45
"""A first screen: about the lines a 1080p terminal or a repository page shows before scrolling."""


def test_first_screen_says_what_it_does_and_gives_both_commands() -> None:
    first = "\n".join(README.splitlines()[:FIRST_SCREEN_LINES])
    assert "<!-- ci:explore -->" in first and "<!-- ci:test -->" in first
    assert "chipdse explore" in first and "pytest" in first
    for word in ("chiplet", "exact", "Pareto", "report.html"):
        assert word in first, word
    assert "![" in first, "no picture of the report on the first screen"
    picture = re.search(r"!\[[^\]]*\]\(([^)]+)\)", README, re.S)
    assert picture is not None and (ROOT / picture.group(1)).is_file()


def test_readme_is_short_and_every_link_resolves() -> None:
    assert len(README.splitlines()) <= 120
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        assert (ROOT / target).exists(), target


def test_every_docs_page_is_in_the_site_navigation() -> None:
    cfg = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))
    listed = {next(iter(entry.values())) for entry in cfg["nav"]}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert listed == pages
