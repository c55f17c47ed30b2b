"""The documentation a newcomer follows: every relative link in the tracked Markdown files leads to a file that
exists (and to a heading that exists, where it names one), the README stays a short front door with the two
commands, and no page sends the reader to a folder outside the repository."""
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def tracked(*patterns):
    out = subprocess.run(["git", "ls-files", "-z", "--", *patterns], cwd=ROOT, capture_output=True,
                         check=True).stdout.decode().split("\0")
    return [ROOT / f for f in out if f]


def prose(text):
    """The lines of a Markdown text outside fenced code blocks."""
    inside = False
    for line in text.splitlines():
        if FENCE.match(line.lstrip()):
            inside = not inside
            continue
        if not inside:
            yield line


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation other than - and _ dropped, spaces as -."""
    s = re.sub(r"[`*]", "", heading.strip().lower())
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for line in prose(path.read_text()):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            a = slug(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else f"{a}-{n}")
    return out


def links(path):
    for line in prose(path.read_text()):
        for target in LINK.findall(re.sub(r"`[^`]*`", "", line)):
            if not re.match(r"^[a-z]+:", target):       # http:, https:, mailto: are not checked here
                yield target


DOCS = tracked("*.md")


def test_the_markdown_files_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in DOCS}
    assert {"README.md", "docs/usage.md", "docs/testbeds.md", "docs/testing.md", "docs/measurements.md"} <= names


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, "\n".join(broken)


def test_the_readme_is_a_front_door():
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 120, f"README.md has {len(lines)} lines; the rest belongs in docs/"
    first = next(line for line in lines[1:] if line.strip())
    assert first.startswith("favorlab reproduces"), first
    for command in ("./favorlab quick", "./favorlab test"):
        assert command in text


def test_every_favorlab_command_the_docs_name_exists():
    script = (ROOT / "favorlab").read_text()
    commands = set()
    for pattern in re.findall(r"^\s*([a-z|-]+)\)", script, re.M):
        commands.update(pattern.split("|"))
    named = set()
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        named.update((page.name, c) for c in re.findall(r"\./favorlab ([a-z][a-z-]*)", page.read_text()))
    unknown = sorted(f"{page}: ./favorlab {c}" for page, c in named if c not in commands)
    assert not unknown, unknown


def test_no_tracked_file_sends_the_reader_outside_the_repository():
    # the folder beside the clone, as a pattern that does not spell its own path, so no file is exempt
    r = subprocess.run(["git", "grep", "-n", "-E", "-e", r"\.\./shared", "--", "."], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stdout
