#!/usr/bin/env python3
"""Checks that every relative link in the project's Markdown resolves.

Looks at README.md, docs/**/*.md, bench/README.md and any other tracked
*.md outside build folders: each inline link or image `[text](target)`
whose target is not a URL (http:, https:, mailto:) or a bare #anchor must
name an existing file or folder, relative to the Markdown file. A
`#heading` after a file name is checked too when the target is Markdown:
the heading must exist in that file (GitHub's slug rules: lower case,
punctuation other than '-' and '_' dropped, spaces to '-').

Usage: python3 scripts/check_doc_links.py [files...]   (exit 1 on a broken link)
"""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def markdown_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / p for p in out.split() if not p.startswith(("build", "third_party/"))]


def slug(heading: str) -> str:
    text = re.sub(r"[`*_]", lambda m: "_" if m.group(0) == "_" else "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found, seen = set(), {}
    in_fence = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
        if in_fence or not line.startswith("#"):
            continue
        s = slug(line.lstrip("#"))
        n = seen.get(s, 0)
        seen[s] = n + 1
        found.add(s if n == 0 else f"{s}-{n}")
    return found


def links(path: Path):
    in_fence = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        line = re.sub(r"`[^`]*`", "", line)  # code spans are not links
        for m in LINK.finditer(line):
            yield number, m.group(1)


def check(path: Path) -> list[str]:
    problems = []
    for number, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve()
        where = f"{path.relative_to(ROOT)}:{number}"
        if not dest.exists():
            problems.append(f"{where}: {target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: {target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    return problems


def main() -> int:
    files = [Path(a).resolve() for a in sys.argv[1:]] or markdown_files()
    problems = [p for f in files for p in check(f)]
    for p in problems:
        print(p)
    print(f"check_doc_links: {len(files)} files, {len(problems)} broken links", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
