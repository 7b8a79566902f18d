#!/usr/bin/env python3
"""Scrub machine facts from recorded CLI stdout: paths, ports, the user's home. Usage:
scrub.py <recorded.jsonl>... (rewrites each file in place)."""
import re
import sys

RULES = [
    (re.compile(r'127\.0\.0\.1:\d+'), '127.0.0.1:PORT'),
    (re.compile(r'(/tmp|/var/folders)/[^"\\\s]*'), '<tmp>'),
    (re.compile(r'/(work|home|Users)/[^"\\\s]*'), '<path>'),
    (re.compile(r'/root\b[^"\\\s]*'), '<home>'),
]

for path in sys.argv[1:]:
    with open(path, encoding='utf-8') as f:
        text = f.read()
    for pattern, replacement in RULES:
        text = pattern.sub(replacement, text)
    with open(path, 'w', encoding='utf-8') as f:
        f.write(text)
