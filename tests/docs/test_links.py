"""Links in the README and the docs stay inside the repository, or go to public web pages.

A relative link must name a file of the repository (or a page the docs
build generates); an absolute one must be an https page on a public host,
never a local file, a machine on the local network or a path beside the
checkout (such as ../shared).
"""

import ipaddress
import pathlib
import re
import urllib.parse

from tests.test_readme_commands import ROOT, documentation_files

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
GENERATED = {"docs/reference/cli.md", "docs/changelog.md", "docs/results/benchmarks.md", "docs/results/finetune-parity.md",
             "docs/results/objectives-study.md", "docs/results/chinese-masking.md", "docs/results/quickstart.md",
             "docs/results/serving.md", "docs/results/distillation.md"}


def links():
    for path in documentation_files() + [ROOT / "CHANGELOG.md"]:
        text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)  # not code
        text = re.sub(r"`[^`\n]*`", "", text)
        for target in LINK.findall(text):
            yield path, target


def problem(path, target):
    parsed = urllib.parse.urlparse(target)
    if parsed.scheme:
        if parsed.scheme != "https" or not parsed.hostname:
            return "not an https web page"
        host = parsed.hostname
        if host == "localhost" or host.endswith((".local", ".internal")):
            return "a local host"
        try:
            if not ipaddress.ip_address(host).is_global:
                return "a private address"
        except ValueError:
            pass
        return ""
    if not parsed.path:
        return ""  # an anchor on the same page
    resolved = (path.parent / parsed.path).resolve()
    try:
        relative = resolved.relative_to(ROOT).as_posix()
    except ValueError:
        return "outside the repository"
    if resolved.exists() or relative in GENERATED or relative.startswith("docs/reference/api/"):
        return ""
    return "no such file"


def test_links_stay_in_the_repository_or_go_to_public_pages():
    found = list(links())
    assert len(found) > 20
    bad = [f"{path.relative_to(ROOT)}: {target}: {why}" for path, target in found if (why := problem(path, target))]
    assert not bad, "\n".join(bad)


def test_the_checks_catch_bad_links():
    readme = ROOT / "README.md"
    assert problem(readme, "../shared/ARCHITECTURE.md") == "outside the repository"
    assert problem(readme, "docs/nowhere.md") == "no such file"
    assert problem(readme, "file:///etc/passwd") == "not an https web page"
    assert problem(readme, "https://192.168.1.4/x") == "a private address"
    assert problem(readme, "http://example.com") == "not an https web page"
    assert problem(readme, "https://arxiv.org/abs/1810.04805") == ""
    assert problem(readme, "docs/guides/serving.md#rest") == ""
