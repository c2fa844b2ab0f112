"""`keras-bert-app pretrain`: masked LM + NSP pretraining that resumes after a kill.

A run lives in one folder (`--output`): `run_config.json` (the arguments that
define the run), `checkpoints/` (model + optimizer every `--checkpoint-every`
steps), `logs/` (TensorBoard), `metrics.csv`, and at the end `preset/`, a
preset folder that `BertEncoder.from_preset` and `BertPretrainer.from_preset`
load. Rerunning the same command after a kill continues from the last
checkpoint: same weights, optimizer state, schedule step and data position,
ending at the same total step. `keras_bert_app.data` makes the batches
(TFRecords from `create-pretraining-data`, or dynamic masking of corpus files).
"""

import glob
import json
import os
import pathlib
import shutil

RUN_CONFIG_FILE = "run_config.json"
# Arguments that define a run: a rerun must give the same ones to resume.
RUN_KEYS = (
    "preset", "data", "corpus", "batch_size", "steps", "learning_rate", "warmup_steps",
    "optimizer", "weight_decay", "accumulation_steps", "mixed_precision", "no_nsp",
    "max_seq_length", "max_predictions", "seed", "checkpoint_every", "output_bias_init", "dropout",
)
# Values of run keys added later, for run folders written before them.
RUN_KEY_DEFAULTS = {"output_bias_init": "zeros", "dropout": None}
DATA_FEATURES = (
    "input_ids", "input_mask", "segment_ids", "masked_lm_positions",
    "masked_lm_ids", "masked_lm_weights", "next_sentence_labels",
)


def add_arguments(parser):
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="pretraining TFRecords (glob, e.g. 'DIR/*.tfrecord')")
    source.add_argument("--corpus", nargs="+", help="corpus files for dynamic masking")
    parser.add_argument("--preset", required=True, help="built-in preset name or preset folder")
    parser.add_argument("--output", required=True, help="run folder (created; reused to resume)")
    parser.add_argument("--batch-size", type=int, default=32, help="global batch size (all replicas)")
    parser.add_argument("--steps", type=int, required=True, help="optimizer steps of the whole run")
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--warmup-steps", type=int, default=None, help="default: 1%% of --steps, at most 10,000")
    parser.add_argument("--optimizer", choices=("adamw", "lamb"), default="adamw")
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--accumulation-steps", type=int, default=1, help="batches per optimizer step")
    parser.add_argument("--strategy", default="auto", help="auto, tpu, mirrored, multi_worker, cpu, data_parallel, model_parallel")
    parser.add_argument("--tpu", default=None, help="TPU name or grpc:// address (for --strategy tpu)")
    parser.add_argument("--mixed-precision", action="store_true", help="mixed_bfloat16")
    parser.add_argument("--no-jit-compile", action="store_true", help="turn XLA off (default: on for TensorFlow and JAX, CPU included)")
    parser.add_argument("--no-nsp", action="store_true", help="masked LM only (no NSP head)")
    parser.add_argument("--max-seq-length", type=int, default=None, help="--corpus: default 128; --data: read from the records")
    parser.add_argument("--max-predictions", type=int, default=None, help="--corpus: default 20; --data: read from the records")
    parser.add_argument("--checkpoint-every", type=int, default=None, help="steps between checkpoints (divides --steps; default near 1000)")
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument(
        "--output-bias-init", choices=("zeros", "unigram"), default="zeros",
        help="masked-LM output bias at the start: zeros (the paper) or the log frequencies of the "
        "data's masked tokens, which keeps short runs from collapsing rare words' embeddings",
    )
    parser.add_argument(
        "--dropout", type=float, default=None,
        help="dropout rate during this run (default: the preset's); the preset written at the end "
        "keeps the starting preset's rate, the one fine-tuning uses",
    )
    parser.add_argument("--peak-tflops", type=float, default=None, help="peak TFLOP/s of all devices, for MFU (default: detected)")
    parser.add_argument("--verbose", type=int, default=1, choices=(0, 1, 2), help="Keras progress: 1 bar, 2 line per epoch")


def run(args):
    _check_arguments(args)
    run_dir = pathlib.Path(args.output).expanduser()
    checkpoint_dir = run_dir / "checkpoints"
    import keras

    from keras_bert_app import presets
    from keras_bert_app.training.checkpointing import list_checkpoints

    config = presets.read_config(args.preset)
    data_shape = _data_shape(args, config["encoder"])
    args.max_seq_length, args.max_predictions = data_shape
    run_config = _run_config(args)
    resuming = _check_run_dir(run_dir, run_config, checkpoint_dir)
    if resuming and list_checkpoints(checkpoint_dir)[-1][0] >= args.steps and (run_dir / "preset").is_dir():
        print(f"Run in {run_dir} already finished ({args.steps} steps); its preset is {run_dir / 'preset'}.")
        return 0

    from keras_bert_app.training.distribution import create_distribution
    from keras_bert_app.training.optimizer import set_mixed_precision

    set_mixed_precision(args.mixed_precision)
    keras.utils.set_random_seed(args.seed)
    distribution = create_distribution(args.strategy, tpu_address=args.tpu)
    distribution.per_replica_batch_size(args.batch_size)
    print(f"Distribution: {distribution.name}, {distribution.num_replicas} replica(s), global batch {args.batch_size}.")
    with distribution.scope():
        pretrainer = _build_pretrainer(args, resuming)
    if args.output_bias_init == "unigram" and not resuming:
        _init_output_bias(args, pretrainer)
    if distribution.is_chief:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / RUN_CONFIG_FILE).write_text(json.dumps(run_config, indent=2) + "\n")
    return _train(args, pretrainer, distribution, run_dir, checkpoint_dir, config)


def _check_arguments(args):
    for name in ("batch_size", "steps", "accumulation_steps"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1; got {getattr(args, name)}.")
    if args.warmup_steps is None:
        args.warmup_steps = min(10_000, args.steps // 100)
    if not 0 <= args.warmup_steps <= args.steps:
        raise ValueError(f"--warmup-steps must be in [0, --steps={args.steps}]; got {args.warmup_steps}.")
    if args.checkpoint_every is None:
        args.checkpoint_every = max(d for d in range(1, min(1000, args.steps) + 1) if args.steps % d == 0)
    if args.checkpoint_every < 1 or args.steps % args.checkpoint_every:
        raise ValueError(
            f"--checkpoint-every ({args.checkpoint_every}) must divide --steps ({args.steps}): "
            "training runs in equal segments between checkpoints."
        )
    if args.dropout is not None and not 0 <= args.dropout < 1:
        raise ValueError(f"--dropout must be in [0, 1); got {args.dropout}.")
    if args.corpus:
        missing = [pattern for pattern in args.corpus if not glob.glob(os.path.expanduser(pattern))]
        if missing:
            raise FileNotFoundError(f"--corpus: no file matches {missing}.")


def _data_shape(args, encoder_config):
    """`(max_seq_length, max_predictions)` of the data, checked against the records and model."""
    if args.data:
        records_shape = _records_shape(args.data)
        for name, given, found in zip(("--max-seq-length", "--max-predictions"), (args.max_seq_length, args.max_predictions), records_shape):
            if given is not None and given != found:
                raise ValueError(f"{name} is {given} but the records in {args.data!r} hold {found}.")
        shape = records_shape
    else:
        shape = (args.max_seq_length or 128, args.max_predictions or 20)
    limit = encoder_config.get("max_sequence_length", 512)
    if shape[0] > limit:
        raise ValueError(f"Sequences of {shape[0]} tokens are longer than the model's max_sequence_length {limit}.")
    return shape


def _records_shape(pattern):
    """Feature lengths of the first record, after checking the feature names."""
    import tensorflow as tf

    files = sorted(tf.io.gfile.glob(pattern))
    if not files:
        raise FileNotFoundError(f"--data: no file matches {pattern!r}.")
    try:
        raw = next(iter(tf.data.TFRecordDataset(files[0]).take(1)), None)
    except tf.errors.OpError as error:
        raise ValueError(f"{files[0]} is not a readable TFRecord file ({error.message.splitlines()[0]}).") from None
    if raw is None:
        raise ValueError(f"{files[0]} holds no record.")
    example = tf.train.Example.FromString(raw.numpy())
    features = example.features.feature
    if set(features) != set(DATA_FEATURES):
        raise ValueError(
            f"{files[0]}: expected pretraining features {sorted(DATA_FEATURES)}; got {sorted(features)}."
        )

    def length(name):
        feature = features[name]
        return len(feature.int64_list.value) or len(feature.float_list.value)

    shape = (length("input_ids"), length("masked_lm_positions"))
    for name, expected in (("input_mask", shape[0]), ("segment_ids", shape[0]), ("masked_lm_ids", shape[1]), ("masked_lm_weights", shape[1])):
        if length(name) != expected:
            raise ValueError(f"{files[0]}: feature {name!r} has length {length(name)}, expected {expected}.")
    return shape


def _run_config(args):
    return {key: getattr(args, key) for key in RUN_KEYS}


def _check_run_dir(run_dir, run_config, checkpoint_dir):
    """True when `run_dir` holds checkpoints of this same run; errors for another run's folder."""
    from keras_bert_app.training.checkpointing import list_checkpoints

    stored_path = run_dir / RUN_CONFIG_FILE
    if stored_path.is_file():
        stored = json.loads(stored_path.read_text())
        differences = [
            f"{key}: {stored.get(key)!r} there, {run_config[key]!r} now"
            for key in RUN_KEYS
            if stored.get(key, RUN_KEY_DEFAULTS.get(key)) != run_config[key]
        ]
        if differences:
            raise ValueError(
                f"{run_dir} holds a run with another configuration ({'; '.join(differences)}). "
                "Rerun with the same arguments to resume it, or pass a new --output."
            )
        return bool(list_checkpoints(checkpoint_dir))
    if run_dir.exists() and any(run_dir.iterdir()):
        raise FileExistsError(
            f"{run_dir} is not empty and has no {RUN_CONFIG_FILE}: not a pretraining run folder. "
            "Pass a new or empty --output."
        )
    return False


def _build_pretrainer(args, resuming):
    from keras_bert_app import presets
    from keras_bert_app.models.bert_encoder import BertEncoder
    from keras_bert_app.models.bert_pretrainer import HEAD_WEIGHTS_FILE, BertPretrainer
    from keras_bert_app.training.optimizer import create_optimizer

    # --dropout changes this run's encoder only (see _write_preset).
    overrides = {} if args.dropout is None else {"dropout": args.dropout}
    has_weights = presets.weights_path(args.preset) is not None
    builtin = args.preset in presets.names() and not pathlib.Path(args.preset).is_dir()
    if not has_weights and not builtin:
        raise ValueError(
            f"--preset {args.preset!r} is a folder with no {presets.ENCODER_WEIGHTS_FILE}"
            + (" (the run being resumed started from it)" if resuming else "")
            + ": pass a preset folder with weights, or a built-in name for fresh weights."
        )
    if resuming:
        encoder = BertEncoder.from_preset(args.preset, load_weights=False, **overrides)
        pretrainer = BertPretrainer(encoder, next_sentence_prediction=not args.no_nsp)
    elif has_weights:
        print(f"Starting from the weights of preset {args.preset!r}.")
        heads = presets.preset_dir(args.preset) / HEAD_WEIGHTS_FILE
        if not heads.is_file():
            print(f"  (no {HEAD_WEIGHTS_FILE} there: fresh pretraining heads)")
        pretrainer = BertPretrainer.from_preset(args.preset, next_sentence_prediction=not args.no_nsp, **overrides)
    else:
        print(f"Preset {args.preset!r} has no weights here: starting from freshly initialised weights.")
        encoder = BertEncoder.from_preset(args.preset, load_weights=False, **overrides)
        pretrainer = BertPretrainer(encoder, next_sentence_prediction=not args.no_nsp)
    pretrainer.compile(
        optimizer=create_optimizer(
            args.learning_rate,
            total_steps=args.steps,
            warmup_steps=args.warmup_steps,
            weight_decay=args.weight_decay,
            name=args.optimizer,
            accumulation_steps=args.accumulation_steps,
        ),
        jit_compile=not args.no_jit_compile and "auto",  # "auto": XLA on TF and JAX (training/xla.py)
    )
    return pretrainer


def _init_output_bias(args, pretrainer):
    """`--output-bias-init unigram`: the bias of fresh heads at the data's log token frequencies."""
    import numpy as np
    from keras import ops

    from keras_bert_app.training.output_bias import count_masked_targets, unigram_output_bias

    bias = pretrainer.masked_lm_head.output_bias
    if np.any(ops.convert_to_numpy(bias)):
        raise ValueError(
            f"--output-bias-init unigram starts fresh pretraining heads, but the heads of --preset "
            f"{args.preset!r} are trained (their output bias is not zero): drop the option to continue from them."
        )
    counts = count_masked_targets(_dataset(args, repeat=False), pretrainer.encoder.vocabulary_size)
    bias.assign(unigram_output_bias(counts))
    print(
        f"Masked-LM output bias set to the log frequencies of {int(counts.sum()):,} masked tokens "
        f"({int(np.count_nonzero(counts)):,} distinct) of the data."
    )


def _dataset(args, repeat=True):
    """The global-batch dataset, repeated forever (fit stops after --steps) or one pass.

    Full batches only, so every step has the same global batch (and splits
    evenly across replicas).
    """
    batches = args.batch_size
    if args.data:
        from keras_bert_app.data.pretraining_records import pretraining_dataset

        return pretraining_dataset(
            args.data, batches, max_seq_length=args.max_seq_length,
            max_predictions_per_seq=args.max_predictions, shuffle=True, seed=args.seed,
            repeat=repeat, drop_remainder=True,
        )
    from keras_bert_app.data.dynamic_pretraining import dynamic_pretraining_dataset
    from keras_bert_app.preprocessing.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer.from_preset(args.preset)
    dataset = dynamic_pretraining_dataset(
        args.corpus, tokenizer, batches, max_seq_length=args.max_seq_length,
        max_predictions_per_seq=args.max_predictions, seed=args.seed, drop_remainder=True,
    )
    return dataset.repeat() if repeat else dataset


def _train(args, pretrainer, distribution, run_dir, checkpoint_dir, preset_config):
    import keras

    from keras_bert_app.training.checkpointing import ResumableCheckpoint, restore_latest
    from keras_bert_app.training.throughput import ThroughputCallback, bert_training_flops, peak_flops

    batches_per_step = args.accumulation_steps
    num_epochs = args.steps // args.checkpoint_every
    with distribution.scope():
        start_step = restore_latest(pretrainer, checkpoint_dir)
    if start_step:
        print(f"Resumed from step {start_step} of {args.steps} (checkpoint {checkpoint_dir}/step-{start_step:08d}.weights.h5).")
    dataset = _dataset(args).skip(start_step * batches_per_step)

    encoder = pretrainer.encoder
    flops = bert_training_flops(
        encoder.num_layers, encoder.hidden_dim, encoder.intermediate_dim,
        encoder.vocabulary_size, args.max_seq_length, args.max_predictions,
    )
    peak = args.peak_tflops * 1e12 if args.peak_tflops else peak_flops(num_devices=distribution.num_replicas)
    chief = distribution.is_chief
    callbacks = [
        ResumableCheckpoint(checkpoint_dir, args.checkpoint_every, enabled=chief),
        ThroughputCallback(args.batch_size, args.max_seq_length, flops, peak, print_fn=print if chief else None),
    ]
    if chief:
        callbacks += [
            keras.callbacks.CSVLogger(str(run_dir / "metrics.csv"), append=True),
            keras.callbacks.TensorBoard(str(run_dir / "logs"), update_freq=max(1, args.checkpoint_every // 10)),
        ]
    start_epoch = start_step // args.checkpoint_every
    pretrainer.fit(
        dataset,
        epochs=num_epochs,
        initial_epoch=start_epoch,
        steps_per_epoch=args.checkpoint_every * batches_per_step,
        callbacks=callbacks,
        shuffle=False,  # the datasets shuffle, with a seed
        verbose=args.verbose,
    )
    if chief:
        _write_preset(pretrainer, args.preset, run_dir / "preset", preset_config)
        print(f"Done: {args.steps} steps. Preset: {run_dir / 'preset'}")
    return 0


def _write_preset(pretrainer, source_preset, folder, source_config):
    """The run's result as a preset folder: config, vocabulary, encoder + head weights.

    The encoder config keeps the starting preset's dropout rate: `--dropout`
    is a choice of how to pretrain, and fine-tuning from the preset uses the
    model's own rate.
    """
    from keras_bert_app import presets

    temporary = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(temporary, ignore_errors=True)
    tokenizer = dict(source_config.get("tokenizer", {"vocabulary": presets.VOCABULARY_FILE}))
    presets.write_config_entry(temporary, "name", folder.parent.name)
    presets.write_config_entry(temporary, "description", f"Pretrained from {source_preset} by keras-bert-app pretrain.")
    presets.write_config_entry(temporary, "tokenizer", tokenizer)
    shutil.copyfile(presets.vocabulary_path(source_preset), temporary / tokenizer["vocabulary"])
    pretrainer.save_to_preset(temporary)
    encoder_config = presets.read_config(temporary)["encoder"]
    if "dropout" in source_config.get("encoder", {}):
        encoder_config["dropout"] = source_config["encoder"]["dropout"]
        presets.write_config_entry(temporary, "encoder", encoder_config)
    shutil.rmtree(folder, ignore_errors=True)
    temporary.rename(folder)
