"""The docs site: generated references current, every command and public query documented, every link valid."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from nsysql.sql import catalog

from conftest import REPO, load_script

DOCS = REPO / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _generator():
    return load_script("scripts/make_reference_docs.py")


def test_generated_references_are_current():
    assert _generator().stale() == [], "run: python scripts/make_reference_docs.py"


def test_every_command_is_documented_on_a_command_page():
    pages = "\n".join(p.read_text(encoding="utf-8") for p in sorted((DOCS / "commands").glob("*.md")))
    paths = _generator().command_paths()
    assert {"summarize", "cache list", "report"} <= set(paths)
    missing = [p for p in paths if not re.search(rf"nsysql {re.escape(p)}(?![\w-])", pages)]
    assert not missing, f"no page under docs/commands/ names: {', '.join('nsysql ' + p for p in missing)}"


def test_every_public_query_is_documented():
    reference = (DOCS / "sql-reference.md").read_text(encoding="utf-8")
    for q in catalog.all_queries().values():
        assert q.purpose.strip(), f"{q.path}: the header has no purpose"
        for c in q.columns:
            assert c.type.strip() and c.unit.strip(), f"{q.path}: column {c.name} needs a type and a unit"
        assert f"\n### {q.id}\n" in reference, f"{q.id} is missing from docs/sql-reference.md"


def _markdown_files():
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("page", _markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_point_to_files(page):
    """mkdocs --strict checks the docs' links and anchors; this also covers the README, and runs without mkdocs."""
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        assert path.exists(), f"{page.relative_to(REPO)} links to {target}, which does not exist"


def test_every_docs_page_is_in_the_nav():
    nav = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", (REPO / "mkdocs.yml").read_text(encoding="utf-8"), re.M))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages == nav, f"in docs/ only: {sorted(pages - nav)}; in the nav only: {sorted(nav - pages)}"


def test_readme_is_one_screen_with_the_ci_command():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 150
    at = lines.index("<!-- test-command -->")
    assert lines[at + 1] == "```bash" and lines[at + 2].startswith("python3 ")  # what .ci/run reads


def test_strict_build(tmp_path):
    """`mkdocs build --strict`: no warnings (broken link or anchor, a page out of the nav). Needs the docs extra."""
    pytest.importorskip("mkdocs")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


PATH_NAMED = re.compile(r"`((?:nsysql|queries|scripts|tests|docs|bench|capture|fixtures)/[^`\s]*)`")
# records of past sessions, kept unchanged: they name the files of their day, some since moved
RECORDS = {"docs/performance-history.md", "docs/changelog.md"}


@pytest.mark.parametrize("page", [p for p in _markdown_files() if str(p.relative_to(REPO)) not in RECORDS],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_files_the_docs_name_exist(page):
    """A repository path in backticks (`queries/findings/launch_bound.sql`) names a file that is there; placeholders
    (NAME, <table>, *) only need their folder."""
    for named in PATH_NAMED.findall(page.read_text(encoding="utf-8")):
        path = named.rstrip(".,;:)")
        parts = path.split("/")
        fixed = next((i for i, part in enumerate(parts) if re.search(r"[*<>{]|^[A-Z_]+(\.\w+)?$", part)), len(parts))
        assert (REPO / "/".join(parts[:fixed])).exists(), f"{page.relative_to(REPO)} names {named}, which is not there"
