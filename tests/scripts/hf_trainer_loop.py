"""A Hugging Face ``Trainer``-style training loop in plain torch, written for these tests the
way hand-written Trainer-like loops (transformers' ``Trainer``, accelerate's seedable samplers,
the "custom training loop" course chapters) write their plumbing (not a copy of any):

- a ``TrainingArguments``-like dataclass, ``set_seed`` (``random``, NumPy, ``manual_seed``);
- a map-style ``Dataset`` of variable-length token sequences returning dicts, a
  ``DataCollatorWithPadding``-like collator (``pad_sequence(batch_first=True,
  padding_value=...)``: pad id for ``input_ids``, ``-100`` for token labels, an attention
  mask, random token dropout drawn with ``torch.rand``), ``random_split`` by fractions with a
  seeded ``Generator``;
- a ``SeedableRandomSampler`` (``RandomSampler`` whose generator is reseeded by
  ``set_epoch``), ``BatchSampler`` with ``drop_last``, a ``SkipBatchSampler`` for resuming in
  the middle of an epoch, ``DataLoader(batch_sampler=..., collate_fn=...)``;
- a tiny encoder with a sequence head and a token head (``nn.Embedding(padding_idx=0)``,
  ``LayerNorm``, masked mean pooling, ``Dropout``, ``F.cross_entropy(ignore_index=-100)``),
  AdamW with ``no_decay`` parameter groups, ``get_linear_schedule_with_warmup`` as
  ``LambdaLR``;
- gradient accumulation (``loss / gradient_accumulation_steps``, a last partial window),
  ``clip_grad_norm_`` returning the total norm (logged as ``grad_norm``), with
  ``error_if_nonfinite=True`` to skip a step whose gradients are NaN, and over the gradients of
  a bfloat16 body with a float32 head (``_keep_in_fp32_modules``);
- evaluation under ``model.eval()`` and ``torch.inference_mode()``, ``compute_metrics``:
  a confusion matrix by ``index_put_(accumulate=True)`` and by ``torch.bincount(minlength=)``,
  macro precision/recall/F1, top-2 accuracy, ``torch.unique(return_counts=True)``;
  example predictions drawn inside ``torch.random.fork_rng()``;
- an early-stopping callback on ``eval_f1`` (patience, threshold), keeping the best model;
- checkpoints at an optimizer step: model/optimizer/scheduler/trainer state through
  ``io.BytesIO`` and ``torch.load(weights_only=True)``, the RNG states (``random.getstate``,
  ``np.random.get_state``, ``torch.get_rng_state``) through ``torch.load(weights_only=False)``;
  a fresh trainer resumed from it follows the uninterrupted run bit for bit.

Sections marked "(recorded)" keep what the tests compare with the same script on torch.
"""
import dataclasses
import io
import math
import random

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.nn.utils.rnn import pad_sequence
from jitgrad.optim.lr_scheduler import LambdaLR
from jitgrad.utils.data import (BatchSampler, DataLoader, Dataset, RandomSampler, Sampler,
                                random_split)

PAD_ID, CLS_ID, VOCAB, NUM_LABELS = 0, 1, 20, 3
fixed_results = {}


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@dataclasses.dataclass
class TrainingArguments:
    output_dir: str = "tiny-encoder-run"
    per_device_train_batch_size: int = 12
    per_device_eval_batch_size: int = 32
    gradient_accumulation_steps: int = 3
    learning_rate: float = 1e-2
    weight_decay: float = 0.01
    adam_epsilon: float = 1e-8
    max_grad_norm: float = 1.0
    num_train_epochs: int = 10
    warmup_ratio: float = 0.1
    seed: int = 42
    data_seed: int = 7
    dataloader_drop_last: bool = False
    token_dropout: float = 0.1
    metric_for_best_model: str = "f1"
    greater_is_better: bool = True
    early_stopping_patience: int = 2
    early_stopping_threshold: float = 0.005


# ------------------------------------------------------------------------------ data


def token_group(token):
    """Tokens 2..19 fall in three groups of six."""
    return (token - 2) // 6


class MajorityGroupDataset(Dataset):
    """[CLS] then 4 to 11 tokens; the label is the group most of them fall in (ties to the
    lowest), each token's label its own group (-100 for [CLS])."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.examples = []
        for _ in range(n):
            length = int(rng.integers(4, 12))
            bias = rng.dirichlet(np.ones(3) * 0.7)
            groups = rng.choice(3, size=length, p=bias)
            tokens = 2 + 6 * groups + rng.integers(0, 6, size=length)
            counts = np.bincount(groups, minlength=3)
            self.examples.append({
                "input_ids": [CLS_ID] + tokens.tolist(),
                "label": int(counts.argmax()),
                "token_labels": [-100] + groups.tolist(),
            })

    def __len__(self):
        return len(self.examples)

    def __getitem__(self, idx):
        ex = self.examples[idx]
        return {"input_ids": torch.tensor(ex["input_ids"]), "label": ex["label"],
                "token_labels": torch.tensor(ex["token_labels"])}


class DataCollatorWithPadding:
    """Pads to the batch's longest; in training, drops tokens (sets them to [PAD] and masks
    them out) with probability ``token_dropout``, from the global generator."""

    def __init__(self, pad_token_id=PAD_ID, token_dropout=0.0):
        self.pad_token_id = pad_token_id
        self.token_dropout = token_dropout
        self.training = True

    def __call__(self, features):
        input_ids = pad_sequence([f["input_ids"] for f in features], batch_first=True,
                                 padding_value=self.pad_token_id)
        token_labels = pad_sequence([f["token_labels"] for f in features], batch_first=True,
                                    padding_value=-100)
        attention_mask = (input_ids != self.pad_token_id).long()
        if self.training and self.token_dropout > 0:
            drop = (torch.rand(input_ids.shape) < self.token_dropout) & (token_labels != -100)
            input_ids = input_ids.masked_fill(drop, self.pad_token_id)
            attention_mask = attention_mask.masked_fill(drop, 0)
        return {"input_ids": input_ids, "attention_mask": attention_mask,
                "labels": torch.tensor([f["label"] for f in features]),
                "token_labels": token_labels}


class SeedableRandomSampler(RandomSampler):
    """A permutation that depends only on ``seed + epoch`` (accelerate's pattern)."""

    def __init__(self, data_source, seed=0):
        super().__init__(data_source, generator=torch.Generator())
        self.seed, self.epoch = seed, 0

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        self.generator.manual_seed(self.seed + self.epoch)
        yield from super().__iter__()


class SkipBatchSampler(Sampler):
    """Skips the first ``skip_batches`` batches without loading them."""

    def __init__(self, batch_sampler, skip_batches=0):
        self.batch_sampler, self.skip_batches = batch_sampler, skip_batches

    def __iter__(self):
        for index, batch in enumerate(self.batch_sampler):
            if index >= self.skip_batches:
                yield batch

    def __len__(self):
        return len(self.batch_sampler) - self.skip_batches


# ------------------------------------------------------------------------------ model


@dataclasses.dataclass
class ClassifierOutput:
    loss: object = None
    logits: object = None
    token_logits: object = None


class TinyEncoderForSequenceClassification(nn.Module):
    def __init__(self, vocab_size=VOCAB, hidden_size=24, num_labels=NUM_LABELS, dropout=0.1):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, hidden_size, padding_idx=PAD_ID)
        self.LayerNorm = nn.LayerNorm(hidden_size)
        self.token_classifier = nn.Linear(hidden_size, num_labels)
        self.pre_classifier = nn.Linear(hidden_size, hidden_size)
        self.dropout = nn.Dropout(dropout)
        self.classifier = nn.Linear(hidden_size, num_labels)

    def forward(self, input_ids, attention_mask, labels=None, token_labels=None):
        hidden = self.dropout(self.LayerNorm(self.embeddings(input_ids)))
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        logits = self.classifier(self.dropout(F.gelu(self.pre_classifier(pooled))))
        token_logits = self.token_classifier(hidden)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits, labels)
            if token_labels is not None:
                loss = loss + 0.5 * F.cross_entropy(token_logits.flatten(0, 1),
                                                    token_labels.flatten(), ignore_index=-100)
        return ClassifierOutput(loss=loss, logits=logits, token_logits=token_logits)


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step)
                   / float(max(1, num_training_steps - num_warmup_steps)))

    return LambdaLR(optimizer, lr_lambda)


# ---------------------------------------------------------------------------- metrics


def confusion_matrix(preds, labels, num_classes):
    cm = torch.zeros(num_classes, num_classes, dtype=torch.long)
    cm.index_put_((labels, preds), torch.ones_like(labels), accumulate=True)
    return cm


def compute_metrics(logits, labels, num_classes=NUM_LABELS):
    preds = logits.argmax(dim=-1)
    cm = confusion_matrix(preds, labels, num_classes)
    cm_bincount = torch.bincount(labels * num_classes + preds,
                                 minlength=num_classes ** 2).view(num_classes, num_classes)
    tp = cm.diag().double()
    predicted, actual = cm.sum(dim=0).double(), cm.sum(dim=1).double()
    precision = torch.where(predicted > 0, tp / predicted.clamp(min=1), torch.zeros_like(tp))
    recall = torch.where(actual > 0, tp / actual.clamp(min=1), torch.zeros_like(tp))
    denom = precision + recall
    f1 = torch.where(denom > 0, 2 * precision * recall / denom.clamp(min=1e-12),
                     torch.zeros_like(tp))
    top2 = (logits.topk(2, dim=-1).indices == labels[:, None]).any(dim=-1)
    values, counts = torch.unique(preds, return_counts=True)
    return {
        "accuracy": (preds == labels).float().mean().item(),
        "precision": precision.mean().item(),
        "recall": recall.mean().item(),
        "f1": f1.mean().item(),
        "top2_accuracy": top2.float().mean().item(),
        "confusion_matrix": cm,
        "bincount_agrees": torch.equal(cm, cm_bincount),
        "pred_counts": dict(zip(values.tolist(), counts.tolist())),
    }


# ---------------------------------------------------------------------------- trainer


class EarlyStoppingCallback:
    def __init__(self, patience, threshold):
        self.patience, self.threshold = patience, threshold
        self.patience_counter = 0

    def on_evaluate(self, args, state, metric_value):
        better = (np.greater if args.greater_is_better else np.less)
        best = state["best_metric"]
        if best is None or (better(metric_value, best)
                            and abs(metric_value - best) > self.threshold):
            self.patience_counter = 0
        else:
            self.patience_counter += 1
        return self.patience_counter >= self.patience


class Trainer:
    def __init__(self, model, args, train_dataset, eval_dataset, data_collator):
        self.model, self.args = model, args
        self.train_dataset, self.eval_dataset = train_dataset, eval_dataset
        self.data_collator = data_collator
        self.early_stopping = EarlyStoppingCallback(args.early_stopping_patience,
                                                    args.early_stopping_threshold)
        self.state = {"global_step": 0, "epoch": 0, "best_metric": None, "best_step": None,
                      "log_history": []}
        self.best_model_state = None
        self.checkpoints = {}
        self.skipped_nonfinite = 0
        self.optimizer = self.create_optimizer()
        self.num_update_steps_per_epoch = math.ceil(
            len(self.get_batch_sampler()) / args.gradient_accumulation_steps)
        self.max_steps = self.num_update_steps_per_epoch * args.num_train_epochs
        self.lr_scheduler = get_linear_schedule_with_warmup(
            self.optimizer, math.ceil(self.max_steps * args.warmup_ratio), self.max_steps)

    def create_optimizer(self):
        no_decay = ["bias", "LayerNorm.weight"]
        named = list(self.model.named_parameters())
        groups = [
            {"params": [p for n, p in named if not any(nd in n for nd in no_decay)],
             "weight_decay": self.args.weight_decay},
            {"params": [p for n, p in named if any(nd in n for nd in no_decay)],
             "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=self.args.learning_rate, eps=self.args.adam_epsilon)

    def get_batch_sampler(self, epoch=0, skip_batches=0):
        sampler = SeedableRandomSampler(self.train_dataset, seed=self.args.data_seed)
        sampler.set_epoch(epoch)
        batches = BatchSampler(sampler, self.args.per_device_train_batch_size,
                               drop_last=self.args.dataloader_drop_last)
        return SkipBatchSampler(batches, skip_batches)

    def get_train_dataloader(self, epoch, skip_batches=0):
        return DataLoader(self.train_dataset,
                          batch_sampler=self.get_batch_sampler(epoch, skip_batches),
                          collate_fn=self.data_collator)

    def get_eval_dataloader(self):
        return DataLoader(self.eval_dataset, batch_size=self.args.per_device_eval_batch_size,
                          shuffle=False, collate_fn=self.data_collator)

    def training_step(self, inputs):
        self.model.train()
        loss = self.model(**inputs).loss
        (loss / self.args.gradient_accumulation_steps).backward()
        return loss.detach()

    def evaluate(self):
        self.model.eval()
        self.data_collator.training = False
        all_logits, all_labels, losses = [], [], []
        with torch.inference_mode():
            for inputs in self.get_eval_dataloader():
                out = self.model(**inputs)
                losses.append(out.loss * len(inputs["labels"]))
                all_logits.append(out.logits)
                all_labels.append(inputs["labels"])
        self.data_collator.training = True
        logits, labels = torch.cat(all_logits), torch.cat(all_labels)
        metrics = compute_metrics(logits, labels)
        metrics["loss"] = (torch.stack(losses).sum() / len(labels)).item()
        # (made in inference mode, the per-batch logits are inference tensors; their cat,
        # made outside it, is not)
        metrics["is_inference"] = (all_logits[0].is_inference(), logits.is_inference())
        self.model.train()
        return {f"eval_{k}": v for k, v in metrics.items()}

    def sample_predictions(self, k=4):
        """Predictions on a few random eval examples for the log: drawn in a forked RNG so
        the training stream (dropout, token dropout) is untouched."""
        with torch.random.fork_rng():
            idx = torch.randperm(len(self.eval_dataset))[:k].tolist()
            self.model.eval()
            with torch.inference_mode():
                batch = self.data_collator([self.eval_dataset[i] for i in idx])
                preds = self.model(**batch).logits.argmax(-1).tolist()
            self.model.train()
        return list(zip(idx, preds))

    def save_checkpoint(self):
        buf = io.BytesIO()
        torch.save({"model": self.model.state_dict(),
                    "optimizer": self.optimizer.state_dict(),
                    "scheduler": self.lr_scheduler.state_dict(),
                    "trainer_state": dict(self.state),
                    "patience_counter": self.early_stopping.patience_counter,
                    "best_model": self.best_model_state}, buf)
        rng = io.BytesIO()
        torch.save({"python": random.getstate(), "numpy": np.random.get_state(),
                    "cpu": torch.get_rng_state()}, rng)
        self.checkpoints[self.state["global_step"]] = (buf.getvalue(), rng.getvalue())

    def load_checkpoint(self, step):
        blob, rng_blob = self.checkpoints[step]
        ckpt = torch.load(io.BytesIO(blob), weights_only=True)
        self.model.load_state_dict(ckpt["model"])
        self.optimizer.load_state_dict(ckpt["optimizer"])
        self.lr_scheduler.load_state_dict(ckpt["scheduler"])
        self.state = dict(ckpt["trainer_state"])
        self.early_stopping.patience_counter = ckpt["patience_counter"]
        self.best_model_state = ckpt["best_model"]
        return torch.load(io.BytesIO(rng_blob), weights_only=False)

    def restore_rng(self, rng_state):
        random.setstate(rng_state["python"])
        np.random.set_state(rng_state["numpy"])
        torch.set_rng_state(rng_state["cpu"])

    def train(self, resume=None, save_steps=(), nan_at_step=None):
        args, model = self.args, self.model
        start_epoch, skip_batches, rng_state = 0, 0, None
        if resume is not None:
            rng_state = self.load_checkpoint(resume)
            start_epoch = self.state["global_step"] // self.num_update_steps_per_epoch
            done_in_epoch = self.state["global_step"] % self.num_update_steps_per_epoch
            skip_batches = done_in_epoch * args.gradient_accumulation_steps
            if skip_batches == 0:  # saved after an epoch's evaluation: restore it here
                self.restore_rng(rng_state)
                rng_state = None
        self.losses, self.grad_norms, self.lrs = [], [], []
        model.zero_grad(set_to_none=True)
        for epoch in range(start_epoch, args.num_train_epochs):
            offset = skip_batches if epoch == start_epoch else 0
            loader = self.get_train_dataloader(epoch, offset)
            n_batches = len(loader) + offset
            # (making the iterator draws the loader's base seed from the global generator: a
            # mid-epoch checkpoint's state comes after that draw, so it is restored after it)
            batches = iter(loader)
            if rng_state is not None:
                self.restore_rng(rng_state)
                rng_state = None
            tr_loss = torch.tensor(0.0)
            for step, inputs in enumerate(batches, start=offset):
                tr_loss += self.training_step(inputs)
                last_in_epoch = step + 1 == n_batches
                if (step + 1) % args.gradient_accumulation_steps and not last_in_epoch:
                    continue
                if self.state["global_step"] == nan_at_step and not self.skipped_nonfinite:
                    model.classifier.weight.grad[0, 0] = float("nan")  # (once)
                try:
                    grad_norm = nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm,
                                                         error_if_nonfinite=True)
                except RuntimeError as err:
                    self.nonfinite_message = str(err)
                    self.skipped_nonfinite += 1
                    model.zero_grad(set_to_none=True)
                    tr_loss.zero_()
                    continue
                self.optimizer.step()
                self.lr_scheduler.step()
                model.zero_grad(set_to_none=True)
                self.state["global_step"] += 1
                window = (step % args.gradient_accumulation_steps) + 1
                self.losses.append((tr_loss / window).item())
                self.grad_norms.append(grad_norm.item())
                self.lrs.append(self.lr_scheduler.get_last_lr()[0])
                tr_loss.zero_()
                if self.state["global_step"] in save_steps and not last_in_epoch:
                    self.save_checkpoint()
            self.state["epoch"] = epoch + 1
            stop = self.evaluate_and_track()
            if self.state["global_step"] in save_steps:
                self.save_checkpoint()
            if stop:
                self.state["stopped_epoch"] = epoch + 1
                break
        return self.state

    def evaluate_and_track(self):
        metrics = self.evaluate()
        metrics["examples"] = self.sample_predictions()
        metrics["step"] = self.state["global_step"]
        self.state["log_history"].append(
            {k: v for k, v in metrics.items() if k != "eval_confusion_matrix"})
        value = metrics[f"eval_{self.args.metric_for_best_model}"]
        stop = self.early_stopping.on_evaluate(self.args, self.state, value)
        if self.early_stopping.patience_counter == 0:
            self.state["best_metric"] = value
            self.state["best_step"] = self.state["global_step"]
            self.best_model_state = {k: v.clone() for k, v in self.model.state_dict().items()}
        return stop


# ------------------------------------------------------------------------- the run

args = TrainingArguments()
set_seed(args.seed)
full_dataset = MajorityGroupDataset(180, seed=0)
train_dataset, eval_dataset = random_split(full_dataset, [0.75, 0.25],
                                           generator=torch.Generator().manual_seed(args.seed))
split_indices = (list(train_dataset.indices), list(eval_dataset.indices))
label_values, label_counts = torch.unique(
    torch.tensor([ex["label"] for ex in full_dataset.examples]), return_counts=True)


def make_trainer(**overrides):
    set_seed(args.seed)
    run_args = dataclasses.replace(args, **overrides)
    model = TinyEncoderForSequenceClassification()
    collator = DataCollatorWithPadding(token_dropout=run_args.token_dropout)
    return Trainer(model, run_args, train_dataset, eval_dataset, collator)


# one collated batch and the sampler's epochs (recorded)
collator = DataCollatorWithPadding(token_dropout=0.0)
first_batch = collator([full_dataset[i] for i in range(4)])
fixed_results["batch_input_ids"] = first_batch["input_ids"]
fixed_results["batch_token_labels"] = first_batch["token_labels"]
fixed_results["batch_attention_mask"] = first_batch["attention_mask"]
sampler = SeedableRandomSampler(range(10), seed=args.data_seed)
epoch_orders = []
for epoch in (0, 1, 0):
    sampler.set_epoch(epoch)
    epoch_orders.append(list(sampler))
shuffled = RandomSampler(range(10), generator=torch.Generator().manual_seed(3))
all_batches = [list(b) for b in BatchSampler(shuffled, 3, drop_last=True)]
shuffled.generator.manual_seed(3)
skip_sampler = SkipBatchSampler(BatchSampler(shuffled, 3, drop_last=True), 1)
skip_batches_seen = [list(b) for b in skip_sampler]

# fixed weights: gradient accumulation of 4 micro-batches equals one batch of 32 (recorded)
set_seed(0)
probe_model = TinyEncoderForSequenceClassification(dropout=0.0)
big = collator([train_dataset[i] for i in range(32)])
probe_model(**big).loss.backward()  # with the token loss, for the torch comparison
full_loss_grads = {n: p.grad.clone() for n, p in probe_model.named_parameters()}
probe_model.zero_grad(set_to_none=True)
# (the token loss is a mean over each micro-batch's own tokens: the sequence loss alone is a
# mean over equal-sized micro-batches, which accumulation reproduces)
probe_model(big["input_ids"], big["attention_mask"], big["labels"]).loss.backward()
big_grads = {n: p.grad.clone() for n, p in probe_model.named_parameters()
             if p.grad is not None}
probe_model.zero_grad(set_to_none=True)
micro = 4
for start in range(0, 32, 8):
    mb = collator([train_dataset[i] for i in range(start, start + 8)])
    out = probe_model(mb["input_ids"], mb["attention_mask"], mb["labels"])
    (out.loss / micro).backward()
accum_grads = {n: p.grad.clone() for n, p in probe_model.named_parameters()
               if p.grad is not None}
fixed_results["full_loss_grads"] = full_loss_grads
fixed_results["big_batch_grads"] = big_grads
fixed_results["accumulated_grads"] = accum_grads
clip_params = [p for _, p in sorted(probe_model.named_parameters()) if p.grad is not None]
fixed_results["total_norm"] = nn.utils.clip_grad_norm_(clip_params, max_norm=0.05)
fixed_results["clipped_norm"] = torch.linalg.vector_norm(
    torch.stack([torch.linalg.vector_norm(p.grad) for p in clip_params]))
fixed_results["inf_norm"] = nn.utils.clip_grad_norm_(clip_params, 1e3, norm_type=float("inf"))


# a bfloat16 body with float32 head (transformers' ``_keep_in_fp32_modules``): the total norm
# over gradients of two dtypes (recorded)
class HalfBodyClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 16).to(torch.bfloat16)
        self.classifier = nn.Linear(16, NUM_LABELS)  # kept in float32

    def forward(self, x):
        return self.classifier(F.gelu(self.body(x.to(torch.bfloat16))).float())


half_model = HalfBodyClassifier()
F.cross_entropy(half_model(torch.randn(6, 8)), torch.tensor([0, 1, 2, 0, 1, 2])).backward()
fixed_results["mixed_dtype_grads"] = {n: p.grad.clone().float()
                                      for n, p in half_model.named_parameters()}
half_norm = nn.utils.clip_grad_norm_(half_model.parameters(), max_norm=0.1)
fixed_results["mixed_dtype_norm"] = half_norm
mixed_norm_dtype = half_norm.dtype
# (compared with a bfloat16 ulp: jitgrad rounds the clip coefficient to bfloat16 first)
mixed_clipped_grads = {n: p.grad.float() for n, p in half_model.named_parameters()}
probe_metrics = compute_metrics(torch.randn(40, NUM_LABELS), torch.randint(0, 3, (40,)))
fixed_results["probe_confusion"] = probe_metrics["confusion_matrix"]
fixed_results["probe_f1"] = probe_metrics["f1"]
fixed_results["probe_top2"] = probe_metrics["top2_accuracy"]

# the run: checkpoints at two optimizer steps, a NaN step skipped (recorded: first losses)
trainer = make_trainer()
steps_per_epoch = trainer.num_update_steps_per_epoch
save_steps = (5 * steps_per_epoch + 2, 6 * steps_per_epoch)  # mid-epoch, epoch end
trainer.train(save_steps=save_steps)
losses, grad_norms, lrs = trainer.losses, trainer.grad_norms, trainer.lrs
log_history = trainer.state["log_history"]
final_state = {k: v.clone() for k, v in trainer.model.state_dict().items()}
eval_metrics = trainer.evaluate()

# resume from the mid-epoch checkpoint and from the epoch-boundary one in fresh trainers
resumed = {}
for step in save_steps:
    fresh = make_trainer()
    fresh.checkpoints = trainer.checkpoints
    torch.manual_seed(1234)  # a different stream: the checkpoint's RNG state must win
    fresh.train(resume=step)
    resumed[step] = {
        "losses": fresh.losses,
        "state": {k: v.clone() for k, v in fresh.model.state_dict().items()},
        "log_history": fresh.state["log_history"],
        "global_step": fresh.state["global_step"],
    }

# a run whose gradients turn NaN at one step: clip_grad_norm_ raises, the step is skipped
nan_trainer = make_trainer(num_train_epochs=1)
nan_trainer.train(nan_at_step=2)
nan_losses = nan_trainer.losses
nonfinite_message = nan_trainer.nonfinite_message

# best model by eval_f1, predictions on the eval set in inference mode
best = TinyEncoderForSequenceClassification()
best.load_state_dict(trainer.best_model_state)
best.eval()
eval_batch = DataCollatorWithPadding()
eval_batch.training = False
with torch.inference_mode():
    batch = eval_batch([eval_dataset[i] for i in range(len(eval_dataset))])
    best_logits = best(**batch).logits
best_metrics = compute_metrics(best_logits, batch["labels"])
try:
    best_logits.sum().backward()
    inference_backward_error = None
except RuntimeError as err:
    inference_backward_error = str(err)
try:
    best_logits.mul_(2)
    inference_inplace_error = None
except RuntimeError as err:
    inference_inplace_error = str(err)

print(f"steps/epoch {steps_per_epoch}, {trainer.state['global_step']} steps, "
      f"stopped at epoch {trainer.state.get('stopped_epoch')}")
for entry in log_history:
    print(f"step {entry['step']:3d} loss {entry['eval_loss']:.4f} "
          f"acc {entry['eval_accuracy']:.3f} f1 {entry['eval_f1']:.3f}")
print("best", trainer.state["best_metric"], best_metrics["accuracy"])
