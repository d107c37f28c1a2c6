#!/usr/bin/env python3
"""Checks the relative links of README.md and docs/*.md.

Every relative link must name a file or folder that exists; a link with an
#anchor into a Markdown file must name one of its headings, as GitHub makes
an anchor from a heading (lower case, punctuation dropped but - and _,
spaces to -, -1, -2... after a repeated one) or an explicit id/name. Links in
code (fenced blocks, inline `code`) and to other schemes (http:, mailto:) are
not checked. Usage: docs_links.py [ROOT]; prints each broken link as
FILE:LINE: and exits 1 when there is one.
"""
import glob
import os
import re
import sys
import unicodedata

LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^()\s>]*(?:\([^()\s]*\)[^()\s>]*)*)>?(?:\s+"[^"]*")?\s*\)')
HEADING = re.compile(r'^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$')
EXPLICIT = re.compile(r'<a\s+[^>]*(?:name|id)\s*=\s*"([^"]+)"', re.I)
FENCE = re.compile(r'^ {0,3}(```+|~~~+)')


def strip_code(line):
    """The line with inline code spans blanked (same length)."""
    return re.sub(r'(`+)(.+?)\1', lambda m: ' ' * len(m.group(0)), line)


def text_lines(path):
    """(number, line, in_code) for each line of a Markdown file."""
    fence = None
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip('\n')
            m = FENCE.match(line)
            if fence is None and m:
                fence = m.group(1)[0] * 3
                yield n, line, True
                continue
            if fence is not None:
                if line.lstrip().startswith(fence):
                    fence = None
                yield n, line, True
                continue
            yield n, line, False


def heading_text(raw):
    """The text GitHub renders for a heading's Markdown."""
    t = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', raw)   # links and images: their text
    t = re.sub(r'<[^>]+>', '', t)                          # inline HTML tags
    t = t.replace('`', '')
    t = re.sub(r'(\*\*|__|\*)', '', t)                     # emphasis markers
    return t


def slug(text):
    """GitHub's anchor for a heading's text (before the -N of repeats)."""
    out = []
    for ch in text.strip().lower():
        cat = unicodedata.category(ch)
        if ch in '-_' or cat[0] in 'LN' or cat == 'Mn':
            out.append(ch)
        elif ch == ' ':
            out.append('-')
    return ''.join(out)


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen = {}
        found = set()
        for _, line, code in text_lines(path):
            if code:
                continue
            for name in EXPLICIT.findall(line):
                found.add(name)
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(heading_text(m.group(2)))
            k = seen.get(base, 0)
            seen[base] = k + 1
            found.add(base if k == 0 else f'{base}-{k}')
        _anchors[path] = found
    return _anchors[path]


def check(root, rel):
    path = os.path.join(root, rel)
    broken = []
    for n, line, code in text_lines(path):
        if code:
            continue
        for m in LINK.finditer(strip_code(line)):
            target = m.group(1)
            if not target or re.match(r'^[a-zA-Z][a-zA-Z0-9+.-]*:', target) or target.startswith('//'):
                continue
            file_part, _, anchor = target.partition('#')
            if file_part.startswith('/'):
                broken.append(f'{rel}:{n}: {target}: an absolute path (use a relative one)')
                continue
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if not os.path.exists(dest):
                broken.append(f'{rel}:{n}: {target}: no such file')
                continue
            if anchor and dest.endswith('.md') and os.path.isfile(dest):
                if anchor not in anchors(dest):
                    broken.append(f'{rel}:{n}: {target}: no heading with the anchor #{anchor} in '
                                  f'{os.path.relpath(dest, root)}')
    return broken


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), '..', '..'))
    files = ['README.md'] + sorted(os.path.relpath(p, root)
                                   for p in glob.glob(os.path.join(root, 'docs', '*.md')))
    broken = []
    checked = 0
    for rel in files:
        if not os.path.isfile(os.path.join(root, rel)):
            broken.append(f'{rel}: missing')
            continue
        broken += check(root, rel)
        checked += 1
    for b in broken:
        print(b)
    print(f'docs_links: {checked} files, {len(broken)} broken link(s)')
    return 1 if broken else 0


if __name__ == '__main__':
    sys.exit(main())
