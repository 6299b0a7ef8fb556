#!/usr/bin/env python3
"""Marks pages made by an earlier clmulti that cannot be made again here (two H200s
are not lent today): a notice at the top of each page, once, saying which build made
it and what it lacks. Pages carry the build path of the layer in their notes: the
folder is cut to its file name, as today's pages write it.

    scripts/mark-old-pages.py FOLDER "WHAT MADE IT"
"""
import pathlib
import re
import sys

folder, made = pathlib.Path(sys.argv[1]), sys.argv[2]
words = (
    f"Made by {made}, before pages carried a where-it-ran header and an answer; "
    "it could not be made again here (two H200s are not lent today). Its statements "
    "are that build's, on that machine; today's clmulti words some of them otherwise "
    "(see the README's pages of today)."
)
marker = "clmulti-old-page"
build_path = re.compile(r"/[\w.+/-]*/(libclmulti_[a-z_]+\.so)")
for page in sorted(folder.rglob("*")):
    if page.suffix not in (".md", ".html") or not page.is_file():
        continue
    text = page.read_text()
    text = build_path.sub(r"\1", text)
    if marker not in text:
        if page.suffix == ".md":
            text = f"<!-- {marker} -->\n> **An earlier page.** {words}\n\n" + text
        else:
            notice = (
                f'<p class="{marker}" style="border:1px solid #c90;padding:.5em;'
                f'background:#fff8e0"><strong>An earlier page.</strong> {words}</p>'
            )
            text = text.replace("<body>", "<body>" + notice, 1)
    page.write_text(text)
    print(page)
