#!/usr/bin/env bash
# Builds the manual (docs/, an mdBook: book.toml at the repository root) into book/ with
# warnings as errors, then checks offline every internal link and anchor of the built HTML
# (PyPI's linkchecker; http(s) links are ignored: CI has no internet) and the relative links
# and anchors of README.md. A broken link fails this script.
# Tools are installed once and cached, so warm runs install nothing:
#   ~/.cache/oxprof-ci/mdbook-$MDBOOK_VERSION/bin/mdbook   (cargo install, no default features)
#   ~/.cache/oxprof-ci/linkchecker-$LINKCHECKER_VERSION/   (a venv)
# Cost on the 2-core CI machine (2026-11-29): installing mdbook cold 4 min 18 s wall, 160 s of
# CPU at load 4-6 (15 min at load 14-24 from other builds), the venv 7 s of CPU (2 min wall,
# downloads); a warm run 4 s of CPU (7 s wall at load 4, 20 s at load 19).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
MDBOOK_VERSION=0.5.4
LINKCHECKER_VERSION=10.6.0
CACHE="$HOME/.cache/oxprof-ci"

MDBOOK="$CACHE/mdbook-$MDBOOK_VERSION/bin/mdbook"
if ! "$MDBOOK" --version 2>/dev/null | grep -qx "mdbook v$MDBOOK_VERSION"; then
  echo "installing mdbook $MDBOOK_VERSION into $CACHE (once)"
  rm -rf "$CACHE/mdbook-$MDBOOK_VERSION"
  # No default features: no search index, file watcher or web server (the check needs none),
  # which keeps the cold build short. A target dir of cargo's own (not the workspace's),
  # deleted once installed.
  env -u CARGO_TARGET_DIR cargo install mdbook --locked --quiet --version "$MDBOOK_VERSION" \
    --no-default-features --root "$CACHE/mdbook-$MDBOOK_VERSION"
fi

VENV="$CACHE/linkchecker-$LINKCHECKER_VERSION"
if ! "$VENV/bin/linkchecker" --version >/dev/null 2>&1; then
  echo "installing linkchecker $LINKCHECKER_VERSION into $VENV (once)"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "linkchecker==$LINKCHECKER_VERSION"
fi

SCRATCH="$(mktemp -d /tmp/oxprof-check-docs.XXXXXX)"
trap 'rm -rf "$SCRATCH"' EXIT

# mdbook has no switch to deny warnings (an unclosed HTML tag, a missing include): any
# WARN or ERROR line it prints fails the build here.
"$MDBOOK" build "$ROOT" 2>&1 | tee "$SCRATCH/mdbook.log"
if grep -qE '(^|[^A-Za-z])(WARN|ERROR)([^A-Za-z]|$)' "$SCRATCH/mdbook.log"; then
  echo "check-docs: mdbook printed warnings (above); fix them" >&2
  exit 1
fi

# Every page and every anchor it links to; external links are never fetched. print.html (the
# whole book on one page, the same links again) is left out: each anchor into it re-reads it.
cat > "$SCRATCH/linkcheckerrc" <<'EOF'
[filtering]
ignore=
  ^https?:
  ^mailto:
  /print\.html
[AnchorCheck]
EOF
# linkchecker run as root switches to the user nobody (seteuid) before it loads its plugins,
# and nobody cannot read ~/.cache (mode 700): AnchorCheck would silently not load. It reads
# only the pages built here, so it keeps the caller's user.
linkchecker() {
  "$VENV/bin/python" -c 'import sys
import linkcheck.command.linkchecker as cmd
cmd.drop_privileges = lambda: None
sys.argv[0] = "linkchecker"
sys.exit(cmd.linkchecker())' --config "$SCRATCH/linkcheckerrc" --no-status --recursion-level 1 --output text "$@"
}
# The checker must report a missing anchor (a guard against it silently checking less).
printf '<a href="b.html#nowhere">x</a>\n' > "$SCRATCH/a.html"
printf '<h1 id="here">b</h1>\n' > "$SCRATCH/b.html"
if linkchecker "$SCRATCH/a.html" > "$SCRATCH/selftest.log" 2>&1; then
  cat "$SCRATCH/selftest.log"
  echo "check-docs: linkchecker did not report a missing anchor (above): the link check would be void" >&2
  exit 1
fi
mapfile -t pages < <(find "$ROOT/book" -name '*.html' ! -name print.html | sort)
echo "check-docs: checking the links of ${#pages[@]} pages"
if ! linkchecker "${pages[@]}" > "$SCRATCH/linkchecker.log" 2>&1; then
  cat "$SCRATCH/linkchecker.log"
  echo "check-docs: broken links in the manual (above): fix the link or the page it names" >&2
  exit 1
fi
tail -n 3 "$SCRATCH/linkchecker.log"

# README.md's relative links (GitHub renders it from the repository, not from the book):
# each must name an existing file, and an anchor into a Markdown file one of its headings.
python3 - "$ROOT" <<'PY'
import os, re, sys
root = sys.argv[1]
def slug(heading):  # GitHub's heading anchors
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")
def anchors(path):
    found, fenced = set(), False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            found.add(slug(m.group(1)))
    return found
text, bad = open(os.path.join(root, "README.md"), encoding="utf-8").read(), []
text = re.sub(r"```.*?```", "", text, flags=re.S)  # links inside code blocks are not links
for target in re.findall(r"\]\(([^)\s]+)\)", text):
    if re.match(r"[a-z]+:", target):
        continue
    path, _, anchor = target.partition("#")
    full = os.path.join(root, path) if path else os.path.join(root, "README.md")
    if not os.path.exists(full):
        bad.append(f"{target}: no such file")
    elif anchor and full.endswith(".md") and anchor not in anchors(full):
        bad.append(f"{target}: no heading with that anchor")
for b in bad:
    print(f"README.md: broken link {b}", file=sys.stderr)
if bad:
    sys.exit("check-docs: README.md has broken links (above): fix the link or the page it names")
print("check-docs: README.md's relative links resolve")
PY
echo "check-docs: the manual builds and its links resolve (book/index.html)"
