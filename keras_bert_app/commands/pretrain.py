"""`keras-bert-app pretrain`: masked LM + NSP, ELECTRA or left-to-right LM pretraining, resumable (`kba.pretrain`).

    keras-bert-app pretrain --preset bert_mini_uncased --data 'data/*.tfrecord' --output runs/mini \\
        --batch-size 32 --steps 10000 --learning-rate 1e-4 --warmup-steps 100
    keras-bert-app pretrain --objective electra --preset bert_tiny_uncased --corpus wiki.txt \\
        --output runs/electra --steps 10000
    keras-bert-app pretrain --preset bert_base_uncased --data 'short/*.tfrecord' --output runs/base \\
        --steps 1000000 --batch-size 256 --phase2-data 'long/*.tfrecord' --phase2-steps 100000
    keras-bert-app pretrain --objective ltr --preset bert_tiny_uncased --corpus wiki.txt --output runs/ltr \\
        --steps 10000
    keras-bert-app pretrain --objective mlm --corruption 1.0,0.0 --preset bert_tiny_uncased --corpus wiki.txt \\
        --output runs/mask100 --steps 10000 --adam-beta2 0.98
    keras-bert-app pretrain --preset bert_base_chinese --corpus zh/*.txt --output runs/zh \\
        --whole-word-masking --segmenter jieba --steps 10000

Rerunning the same command after a kill continues from the last checkpoint.
"""

from keras_bert_app.commands.create_pretraining_data import add_masking_arguments
from keras_bert_app.commands.options import add_jit_compile_argument, jit_compile_value, keywords


def add_arguments(parser):
    from keras_bert_app.training.objectives import OBJECTIVES  # plain data: no TensorFlow

    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", help="pretraining TFRecords (glob, e.g. 'DIR/*.tfrecord')")
    source.add_argument("--corpus", nargs="+", help="corpus files for dynamic masking")
    parser.add_argument("--preset", required=True, help="built-in preset name or preset folder")
    parser.add_argument("--output", required=True, help="run folder (created; reused to resume)")
    parser.add_argument("--batch-size", type=int, default=32, help="global batch size (all replicas)")
    parser.add_argument("--steps", type=int, required=True, help="optimizer steps of the whole run")
    parser.add_argument(
        "--objective", choices=tuple(OBJECTIVES), default="mlm_nsp",
        help="mlm_nsp: BERT's masked LM + next sentence prediction; mlm_sop: ALBERT's masked LM + sentence-order "
        "prediction (sop records or --pairing sop); mlm: masked LM alone (RoBERTa); electra: replaced-token detection "
        "(a small generator fills the masked positions; the preset is the discriminator, with preset/generator/); "
        "ltr: left-to-right LM, the paper's 'LTR & No NSP' baseline (a causal mask, next-token prediction at every "
        "position; the preset stays causal). Default: mlm_nsp",
    )
    parser.add_argument(
        "--generator-size", type=float, default=None,
        help="electra: generator width, heads and feed-forward as a fraction of the encoder's (default 0.25)",
    )
    parser.add_argument("--rtd-weight", type=float, default=None, help="electra: weight of the replaced-token loss (default 50)")
    parser.add_argument("--learning-rate", type=float, default=None, help="peak rate (default 1e-4; electra 5e-4 at a global batch of 128 or more, "
                        "scaled linearly below it: 1.25e-4 at 32)")
    parser.add_argument("--warmup-steps", type=int, default=None,
                        help="default: 1%% of --steps, at most 10,000 (electra: the reference's 10,000 of 1,000,000)")
    parser.add_argument("--optimizer", choices=("adamw", "lamb"), default="adamw",
                        help="adamw (BERT, RoBERTa) or lamb (ALBERT); default adamw")
    parser.add_argument("--weight-decay", type=float, default=0.01,
                        help="decoupled weight decay, not on LayerNorm or biases (default 0.01)")
    parser.add_argument("--adam-beta2", type=float, default=0.999,
                        help="second-moment decay of adamw and lamb (default 0.999, BERT's; RoBERTa's is 0.98)")
    parser.add_argument("--adam-epsilon", type=float, default=1e-6,
                        help="epsilon of adamw and lamb (default 1e-6, BERT's and RoBERTa's)")
    parser.add_argument("--accumulation-steps", type=int, default=1, help="batches per optimizer step")
    parser.add_argument("--strategy", default="auto", help="auto, tpu, mirrored, multi_worker, cpu, data_parallel, model_parallel")
    parser.add_argument("--tpu", default=None, help="TPU name or grpc:// address (for --strategy tpu)")
    parser.add_argument("--mixed-precision", action="store_true", help="mixed_bfloat16")
    add_jit_compile_argument(parser)
    parser.add_argument("--no-nsp", action="store_true", help="masked LM only (no NSP head)")
    parser.add_argument("--max-seq-length", type=int, default=None,
                        help="tokens per sequence: --corpus: default 128; --data: read from the records")
    parser.add_argument("--max-predictions", type=int, default=None, help="--corpus: default 20; --data: read from the records")
    corpus_options = parser.add_argument_group("masking and pairing of --corpus (--data records hold their own)")
    add_masking_arguments(corpus_options, ", once before the first epoch")
    corpus_options.add_argument(
        "--pairing", choices=["nsp", "sop", "full_sentences", "segments"], default=None,
        help="how sequences are made: nsp (BERT's next-sentence pairs), sop (ALBERT's sentence-order pairs), "
        "full_sentences (RoBERTa: whole sentences packed across documents, no pair label), segments (ELECTRA: "
        "plain two-segment examples of one document, no pair label); full_sentences and segments are packed once "
        "and masked anew at every step. Default: the objective's: nsp, sop for mlm_sop, full_sentences for mlm, "
        "segments for electra",
    )
    phase2 = parser.add_argument_group(
        "two-phase pretraining (the paper's 90% of steps at 128, the last 10% at 512)",
        "the last --phase2-steps of --steps read --phase2-data (records of another length), with the same "
        "optimizer state and schedule; position embeddings past phase 1's length train in phase 2 only",
    )
    phase2.add_argument("--phase2-data", default=None, help="phase-2 TFRecords (glob), e.g. 'long/*.tfrecord'")
    phase2.add_argument("--phase2-steps", type=int, default=None, help="steps of phase 2, the last of --steps")
    phase2.add_argument("--phase2-batch-size", type=int, default=None, help="global batch size of phase 2 (default: --batch-size)")
    phase2.add_argument(
        "--phase2-max-seq-length", type=int, default=None, help="check: the phase-2 records hold this length"
    )
    parser.add_argument("--checkpoint-every", type=int, default=None, help="steps between checkpoints (divides --steps; default near 1000)")
    parser.add_argument("--seed", type=int, default=12345,
                        help="seed of initialisation, data order and masking (default 12345)")
    parser.add_argument(
        "--corruption", default=None, metavar="MASK,RND",
        help="shares of the masked positions that become [MASK] and a random token, the rest kept: in the "
        "paper's MASK/SAME/RND (Table 8), 0.8,0.1 is 80/10/10, 1.0,0.0 is 100/0/0, 0.8,0.0 is 80/20/0 and 0.8,0.2 "
        "is 80/0/20. Default: the "
        "objective's (0.8,0.1; electra 0.85,0). --data records have theirs drawn again per batch; refused for ltr "
        "and with whole-word or n-gram masking",
    )
    parser.add_argument(
        "--output-bias-init", choices=("zeros", "unigram"), default="zeros",
        help="masked-LM output bias at the start: zeros (the paper) or the log frequencies of the "
        "data's masked tokens, which keeps short runs from collapsing rare words' embeddings (refused for electra)",
    )
    parser.add_argument(
        "--dropout", type=float, default=None,
        help="dropout rate during this run (default: the preset's); the preset written at the end "
        "keeps the starting preset's rate, the one fine-tuning uses",
    )
    parser.add_argument("--peak-tflops", type=float, default=None, help="peak TFLOP/s of all devices, for MFU (default: detected)")
    parser.add_argument("--verbose", type=int, default=1, choices=(0, 1, 2), help="Keras progress: 1 bar, 2 line per epoch")


def run(args):
    from keras_bert_app.training.pretrain import pretrain

    pretrain(
        args.preset,
        args.output,
        args.steps,
        corruption=corruption_shares(args.corruption),
        jit_compile=jit_compile_value(args),
        next_sentence_prediction=not args.no_nsp,
        log=print,
        **keywords(
            args, "data", "corpus", "batch_size", "learning_rate", "warmup_steps", "optimizer", "weight_decay",
            "accumulation_steps", "strategy", "tpu", "mixed_precision", "max_seq_length", "max_predictions",
            "checkpoint_every", "seed", "output_bias_init", "dropout", "peak_tflops", "verbose", "objective",
            "generator_size", "rtd_weight", "whole_word_masking", "masking", "max_ngram", "segmenter",
            "entity_masking", "pairing", "phase2_data", "phase2_steps", "phase2_batch_size", "phase2_max_seq_length",
            "adam_beta2", "adam_epsilon",
        ),
    )
    return 0


def corruption_shares(text):
    """`--corruption MASK,RND` as a `(mask, random)` pair of floats (None stays None); one-line error otherwise."""
    from keras_bert_app import errors

    if text is None:
        return None
    try:
        mask, random = (float(share) for share in text.split(","))
    except ValueError:
        raise errors.ArgumentError(
            "corruption", f"--corruption takes two shares MASK,RND such as 0.8,0.1; got {text!r}."
        ) from None
    return (mask, random)
