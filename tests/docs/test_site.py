"""The built site: what a newcomer must find on it, checked in its HTML (and at 1280 px when Chromium is here).

The site is built once for this module, as CI builds it (`mkdocs build
--strict` after generating the pages), into a temporary folder.
"""

import html
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from tests.docs.docs_tools import TOOLS, build_docs

pytest.importorskip("mkdocs", reason="the docs extra builds the site")
ROOT = TOOLS.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp("site")
    build_docs().generate()
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
                   cwd=ROOT, check=True, capture_output=True)
    return folder


def page(site, path):
    return (site / path / "index.html").read_text(encoding="utf-8")


def text(markup):
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def test_serving_guide_starts_and_queries_the_server(site):
    markup = page(site, "guides/serving")
    plain = text(markup)
    assert re.search(r"tensorflow_model_server .*--model_base_path=", plain, re.S)
    assert "docker run" in plain and "tensorflow/serving" in plain
    assert "curl -s -X POST http://localhost:8501/v1/models/topics:predict" in plain
    assert "prediction_service_pb2_grpc.PredictionServiceStub(channel)" in plain
    assert markup.count("<ul>") >= 3 and "<li><strong>Warmup</strong>" in markup


def test_no_paragraph_begins_a_line_with_a_dash(site):
    for path in site.rglob("*.html"):
        for paragraph in re.findall(r"<p>(.*?)</p>", path.read_text(encoding="utf-8"), re.S):
            assert not re.search(r"(^|\n)- ", paragraph), (path, paragraph[:80])


def test_classifier_page_shows_the_methods_users_call(site):
    markup = page(site, "reference/api/models")
    start = markup.index('id="keras_bert_app.models.bert_classifier.BertClassifier"')
    end = markup.index('id="keras_bert_app.models.bert_question_answerer.BertQuestionAnswerer"')
    section = text(markup[start:end])
    assert re.search(r"BertClassifier\(\s+encoder: keras_bert_app.BertEncoder,\s+num_classes: int", section)
    assert re.search(r'compile\(\s+optimizer: "auto" \| keras.optimizers.Optimizer = "auto",.*'
                     r"learning_rate: float = None,\s+total_steps: int \| None", section, re.S)
    assert re.search(r"from_preset\(\s*preset: str \| path,\s*load_weights: bool = True", section)
    assert re.search(r"save_to_preset\(\s*preset_dir: str \| path,\s*label_names: list\[str\] \| None", section)
    for hook in ("compile_defaults", "head_config"):  # BertTask's subclass hooks: not for users
        assert f'id="keras_bert_app.models.bert_classifier.BertClassifier.{hook}"' not in markup


def test_every_public_class_has_a_signature(site):
    import inspect

    import keras_bert_app as kba

    signatures = [text(block) for path in (site / "reference" / "api").rglob("*.html")
                  for block in re.findall(r'<div class="doc-signature highlight">(.*?)</div>',
                                          path.read_text(encoding="utf-8"), re.S)]
    for name in kba.__all__:
        if inspect.isclass(getattr(kba, name)):
            assert any(re.match(rf"\s*{name}\(", signature) for signature in signatures), name


def test_no_page_shows_a_temporary_path_and_the_changelog_has_releases(site):
    for path in site.rglob("*.html"):
        assert not re.search(r"/tmp/|/var/folders/", text(path.read_text(encoding="utf-8"))), path
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(r"^## 0\.1\.0$", changelog, re.M) and "--8<--" not in changelog
    assert not re.search(r"issue \d+|idle|cores|lines shorter", changelog, re.I)
    assert "## 0.1.0" in page(site, "changelog") or "0.1.0" in text(page(site, "changelog"))


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium checks the widths (CI installs it)")
def test_nothing_is_wider_than_its_column_at_1280_px(site):
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    import check_site_width

    assert check_site_width.overflows(site) == {}


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium checks the widths (CI installs it)")
def test_the_width_check_finds_a_block_wider_than_its_box(tmp_path):
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    import check_site_width

    (tmp_path / "wide").mkdir()
    (tmp_path / "wide" / "index.html").write_text(
        '<html><body><article><h2>Wide</h2><pre style="width: 300px; overflow: auto"><code>'
        + "x" * 200 + "</code></pre><table><tr><td>fits</td></tr></table></article></body></html>")
    (tmp_path / "index.html").write_text("<html><body><article><pre>short</pre></article></body></html>")
    found = check_site_width.overflows(tmp_path)
    assert list(found) == ["wide/index.html"]
    assert [problem["what"] for problem in found["wide/index.html"]] == ["pre"]


def test_the_results_index_states_the_findings(site):
    plain = text(page(site, "results"))
    assert "<!-- findings -->" not in page(site, "results")
    assert "bag of words still wins" in plain and "below hf-grouped's" in plain
