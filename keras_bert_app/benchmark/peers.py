"""The measured peers: keras-hub `BertMaskedLM`/`BertBackbone` and HF `BertForPreTraining`/`BertModel`.

Each `measure_*` takes the worker spec, the training batch and the inference
batches (from `measurement.make_batch`) and returns (train timings, inference
timings, extra result fields).
"""

from keras_bert_app.benchmark.measurement import encoder_inputs, progress, time_inference, time_steps
from keras_bert_app.extras import require


def measure_keras_hub(spec, batch, inference_batches):
    """keras-hub `BertMaskedLM` training step (MLM only, our AdamW) and `BertBackbone` forward."""
    import keras

    keras_hub = require("keras_hub", extra="bench", feature="The keras-hub peer of `bench`")

    from keras_bert_app.models import bert_pretrainer
    from keras_bert_app.training.optimizer import create_optimizer

    jit = spec["jit"] and keras.config.backend() != "torch"
    config = spec["encoder"]
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config["vocabulary_size"],
        num_layers=config["num_layers"],
        num_heads=config["num_heads"],
        hidden_dim=config["hidden_dim"],
        intermediate_dim=config["intermediate_dim"],
        dropout=config.get("dropout", 0.1),
        max_sequence_length=config.get("max_sequence_length", 512),
        num_segments=config.get("num_segments", 2),
    )
    masked_lm = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
    masked_lm.compile(
        optimizer=create_optimizer(
            bert_pretrainer.PAPER_LEARNING_RATE,
            total_steps=bert_pretrainer.PAPER_TOTAL_STEPS,
            warmup_steps=bert_pretrainer.PAPER_WARMUP_STEPS,
        ),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        weighted_metrics=[keras.metrics.SparseCategoricalAccuracy()],
        jit_compile=jit,
    )
    x = {**encoder_inputs(batch), "mask_positions": batch["mask_positions"]}
    progress(f"training step (MLM only), batch {spec['batch_size']}, jit_compile={jit}")
    train = time_steps(
        lambda: masked_lm.train_on_batch(x, batch["mlm_labels"], sample_weight=batch["mlm_weights"]),
        spec["warmup"],
        spec["steps"],
    )
    backbone.compile(jit_compile=jit)
    inference = time_inference(spec, inference_batches, lambda b: backbone.predict_on_batch(encoder_inputs(b)))
    return train, inference, {"parameters": backbone.count_params()}


def measure_hf(spec, batch, inference_batches):
    """HF `BertForPreTraining` training step (torch AdamW, clip 1.0) and `BertModel` forward."""
    import torch
    import transformers

    hf_config = _hf_config(spec["encoder"])
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    train = _time_hf_training(spec, batch, hf_config, device)  # its model is freed on return

    encoder = transformers.BertModel(hf_config).to(device).eval()

    def forward(b):
        with torch.inference_mode(), _autocast(spec, device):
            out = encoder(**_hf_inputs(b, device))
            return out.last_hidden_state.float().cpu().numpy(), out.pooler_output.float().cpu().numpy()

    inference = time_inference(spec, inference_batches, forward)
    extra = {
        "parameters": sum(p.numel() for p in encoder.parameters()),
        "attention": getattr(encoder.config, "_attn_implementation", "default"),
    }
    return train, inference, extra


def _time_hf_training(spec, batch, hf_config, device):
    import torch
    import transformers

    model = transformers.BertForPreTraining(hf_config).to(device)
    model.train()
    no_decay = ("bias", "LayerNorm.weight")
    groups = [
        {"params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=1e-4, betas=(0.9, 0.999), eps=1e-6)
    labels = torch.full(batch["token_ids"].shape, -100, dtype=torch.long)
    labels.scatter_(1, torch.as_tensor(batch["mask_positions"], dtype=torch.long),
                    torch.as_tensor(batch["mlm_labels"], dtype=torch.long))
    train_inputs = dict(
        _hf_inputs(batch, device),
        labels=labels.to(device),
        next_sentence_label=torch.as_tensor(batch["nsp_labels"], dtype=torch.long, device=device),
    )

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        with _autocast(spec, device):
            loss = model(**train_inputs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.item()  # blocks until the step is done

    progress(f"training step, batch {spec['batch_size']}, torch {device}, attention "
             f"{getattr(model.config, '_attn_implementation', 'default')}")
    return time_steps(train_step, spec["warmup"], spec["steps"])


def _hf_config(config):
    """Our encoder config as a `transformers.BertConfig`."""
    import transformers

    return transformers.BertConfig(
        vocab_size=config["vocabulary_size"],
        hidden_size=config["hidden_dim"],
        num_hidden_layers=config["num_layers"],
        num_attention_heads=config["num_heads"],
        intermediate_size=config["intermediate_dim"],
        hidden_act="gelu",
        hidden_dropout_prob=config.get("dropout", 0.1),
        attention_probs_dropout_prob=config.get("dropout", 0.1),
        max_position_embeddings=config.get("max_sequence_length", 512),
        type_vocab_size=config.get("num_segments", 2),
        layer_norm_eps=config.get("layer_norm_epsilon", 1e-12),
    )


def _autocast(spec, device):
    import contextlib

    import torch

    if spec["mixed_precision"]:
        return torch.autocast(device_type=device, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _hf_inputs(batch, device):
    import torch

    return {
        "input_ids": torch.as_tensor(batch["token_ids"], dtype=torch.long, device=device),
        "token_type_ids": torch.as_tensor(batch["segment_ids"], dtype=torch.long, device=device),
        "attention_mask": torch.as_tensor(batch["padding_mask"], dtype=torch.long, device=device),
    }
