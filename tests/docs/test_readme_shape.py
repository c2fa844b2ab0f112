"""The README stays a page a newcomer reads in one sitting, and its two commands are the ones CI and users run."""

import re

from tests.test_readme_commands import README, ROOT

MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"


def test_readme_is_short_and_undated():
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 10_000
    assert not re.search(rf"\b({MONTHS}) (\d{{1,2}}, )?(19|20)\d\d\b|\b\d{{1,2}} ({MONTHS}) (19|20)\d\d\b|\b20\d\d-\d\d-\d\d\b", text)
    assert not re.search(r"\b\d+(\.\d+)? ?(ms|s|min)\b(?! *\|)", re.sub(r"```.*?```", "", text, flags=re.S))


def test_the_two_commands_agree_with_ci():
    text = README.read_text(encoding="utf-8")
    blocks = re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M)
    assert 'pip install -e ".[demo]" && keras-bert-app quickstart\n' in blocks
    (tests_line,) = [block for block in blocks if "tools/run_tests.py" in block]
    install, _, run = tests_line.strip().partition(" && ")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert run in ci.splitlines()  # the same test command, as its own line
    assert '-c constraints.txt -e ".[test]"' in install
    # CI installs the test extra at the same constraints (with the beam and docs extras beside it).
    assert re.search(r'-c constraints\.txt (--override \S+ \\\n\s*)?-e "\.\[test[],]', ci), ci


def test_the_command_table_lists_every_command():
    from keras_bert_app.commands.main import COMMANDS

    text = README.read_text(encoding="utf-8")
    listed = re.findall(r"^\| `([a-z-]+)` \|", text, re.M)
    assert listed == list(COMMANDS)
