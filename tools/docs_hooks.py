"""MkDocs hook (mkdocs.yml `hooks:`): generate the reference and results pages before each build.

So `mkdocs build --strict` and `mkdocs serve` work as `python tools/build_docs.py` does. The
results index's `<!-- findings -->` line becomes each results page's findings.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import build_docs  # noqa: E402  (tools/ is not a package)


def on_pre_build(config):
    from mkdocs.exceptions import PluginError

    try:
        build_docs.generate(config["docs_dir"])
    except build_docs.ResultsError as error:
        raise PluginError(str(error)) from None


FINDINGS = "<!-- findings -->"


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "results/index.md" and FINDINGS in markdown:
        return markdown.replace(FINDINGS, build_docs.index_findings())
    return markdown
