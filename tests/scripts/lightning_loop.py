# ruff: noqa: N812 (the usual F alias)
"""A Lightning-style ``LightningModule`` / ``LightningDataModule`` / ``Trainer`` written in plain
torch for these tests, the way hand-rolled Lightning-like loops (and Lightning's own fit loop,
callbacks and checkpoint format) write their plumbing (not a copy of any):

- a data module: synthetic 8x8 "digits" (ten noisy prototypes, unbalanced classes) made with a
  seeded ``Generator``, ``TensorDataset``, ``random_split`` by counts with a ``Generator``,
  class weights from ``torch.unique(return_counts=True)`` for a ``WeightedRandomSampler``
  (its own generator, whose ``get_state``/``set_state`` travel in checkpoints), validation
  through ``BatchSampler(SequentialSampler(...), drop_last=False)``, an overfit loader over a
  ``Subset`` through ``BatchSampler(RandomSampler(generator=...), drop_last=True)``,
  a ``ConcatDataset`` of the validation and test sets, and an ``IterableDataset`` that shards
  itself with ``get_worker_info()`` for ``predict`` (also with two workers);
- a ``LightningModule``: an MLP with ``BatchNorm1d`` and ``Dropout``, ``training_step``,
  ``validation_step``, ``test_step``, ``predict_step``, ``configure_optimizers`` returning an
  SGD optimizer and a ``ReduceLROnPlateau`` that monitors ``val_loss``;
- a ``Trainer``: a sanity check run inside ``torch.random.fork_rng()``, gradient accumulation
  (``accumulate_grad_batches``, the loss divided by it), ``gradient_clip_val`` through
  ``clip_grad_norm_`` (its total norm logged), ``model.train()``/``eval()`` around validation
  under ``torch.inference_mode()``, ``EarlyStopping`` on ``val_loss`` (``min_delta``,
  ``patience``), ``ModelCheckpoint`` keeping the top two by ``val_acc``; checkpoints of
  epoch, global step, model, optimizer, scheduler, callback states and RNG states
  (``torch.get_rng_state``, the sampler generator's ``get_state``) through ``io.BytesIO`` and
  ``torch.load(weights_only=True)``, resumed into fresh objects to the same trajectory;
- metrics in torch: top-1/top-3 accuracy, a confusion matrix by ``index_put_(accumulate=True)``
  and ``bincount(minlength=)``, per-class precision/recall/F1, ``unique(return_counts=True)``;
- ``train()``/``eval()``: BatchNorm's running statistics and ``num_batches_tracked`` only
  move in training, Dropout is the identity in evaluation.

Sections marked "(recorded)" keep what the tests compare with the same script on torch.
"""
import io

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.utils.data import (BatchSampler, ConcatDataset, DataLoader, IterableDataset,
                                RandomSampler, SequentialSampler, Subset, TensorDataset,
                                WeightedRandomSampler, get_worker_info, random_split)

torch.manual_seed(0)
NUM_CLASSES = 10
fixed_results = {}


# ------------------------------------------------------------------------------ data


def make_digits(n, seed=0, noise=3.0):
    """Ten smoothed random 8x8 prototypes plus noise; class k is drawn with weight 1 + k/3."""
    g = torch.Generator().manual_seed(seed)
    raw = torch.randn(NUM_CLASSES, 1, 10, 10, generator=g)
    prototypes = F.avg_pool2d(raw, 3, stride=1).squeeze(1)  # (10, 8, 8)
    prototypes = prototypes / prototypes.flatten(1).std(dim=1)[:, None, None]
    weights = 1 + torch.arange(NUM_CLASSES, dtype=torch.float) / 3
    labels = torch.multinomial(weights, n, replacement=True, generator=g)
    images = prototypes[labels] + noise * torch.randn(n, 8, 8, generator=g)
    return images, labels


class StreamingDigits(IterableDataset):
    """Streams (index, image) pairs; each worker takes every num_workers-th one."""

    def __init__(self, images):
        self.images = images

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(start, len(self.images), step):
            yield i, self.images[i]


class DigitsDataModule:
    def __init__(self, n=900, batch_size=32, seed=0):
        self.n, self.batch_size, self.seed = n, batch_size, seed
        self.sampler_generator = torch.Generator().manual_seed(seed + 1)

    def setup(self, stage=None):
        images, labels = make_digits(self.n, seed=self.seed)
        self.images, self.labels = images.flatten(1), labels
        full = TensorDataset(self.images, self.labels)
        self.train_set, self.val_set, self.test_set = random_split(
            full, [600, 150, 150], generator=torch.Generator().manual_seed(self.seed))
        train_labels = self.labels[self.train_set.indices]
        classes, counts = torch.unique(train_labels, return_counts=True)
        self.class_counts = counts
        class_weight = torch.zeros(NUM_CLASSES, dtype=torch.double)
        class_weight[classes] = 1.0 / counts.double()
        self.sample_weights = class_weight[train_labels]

    def train_dataloader(self):
        sampler = WeightedRandomSampler(self.sample_weights, num_samples=len(self.train_set),
                                        replacement=True, generator=self.sampler_generator)
        return DataLoader(self.train_set, batch_size=self.batch_size, sampler=sampler)

    def val_dataloader(self):
        batches = BatchSampler(SequentialSampler(self.val_set), 64, drop_last=False)
        return DataLoader(self.val_set, batch_sampler=batches)

    def test_dataloader(self):
        return DataLoader(self.test_set, batch_size=64)

    def holdout_dataloader(self):
        return DataLoader(ConcatDataset([self.val_set, self.test_set]), batch_size=100)

    def overfit_dataloader(self, n=32, seed=3):
        subset = Subset(self.train_set, list(range(n)))
        sampler = RandomSampler(subset, generator=torch.Generator().manual_seed(seed))
        return DataLoader(subset, batch_sampler=BatchSampler(sampler, 8, drop_last=True))

    def predict_dataloader(self, num_workers=0):
        test_images = self.images[self.test_set.indices]
        return DataLoader(StreamingDigits(test_images), batch_size=16, num_workers=num_workers)


# ---------------------------------------------------------------------------- metrics


def confusion_matrix(preds, target, num_classes=NUM_CLASSES):
    cm = torch.zeros(num_classes, num_classes, dtype=torch.long)
    cm.index_put_((target, preds), torch.ones_like(target), accumulate=True)
    return cm


def classification_metrics(logits, target, num_classes=NUM_CLASSES):
    preds = logits.argmax(dim=1)
    cm = confusion_matrix(preds, target, num_classes)
    cm_bincount = torch.bincount(target * num_classes + preds, minlength=num_classes ** 2)
    tp = cm.diag().float()
    precision = tp / cm.sum(dim=0).clamp(min=1).float()
    recall = tp / cm.sum(dim=1).clamp(min=1).float()
    f1 = torch.nan_to_num(2 * precision * recall / (precision + recall), nan=0.0)
    topk = logits.topk(3, dim=1).indices
    pred_classes, pred_counts = torch.unique(preds, return_counts=True)
    return {
        "acc": (preds == target).float().mean(),
        "top3_acc": (topk == target.unsqueeze(1)).any(dim=1).float().mean(),
        "precision": precision, "recall": recall, "f1": f1, "macro_f1": f1.mean(),
        "confusion": cm, "bincount_agrees": torch.equal(cm.flatten(), cm_bincount),
        "pred_classes": pred_classes, "pred_counts": pred_counts,
    }


# ---------------------------------------------------------------------------- module


class LitDigits(nn.Module):
    """The LightningModule's hooks on an nn.Module."""

    def __init__(self, hidden=32, dropout=0.2, lr=0.1):
        super().__init__()
        self.hparams = {"hidden": hidden, "dropout": dropout, "lr": lr}
        self.net = nn.Sequential(
            nn.Linear(64, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Dropout(dropout),
            nn.Linear(hidden, NUM_CLASSES))
        self.logged = {}
        self._val_outputs = []

    def log(self, name, value):
        self.logged[name] = float(value)

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss.detach())
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self._val_outputs.append((logits, y))
        return F.cross_entropy(logits, y, reduction="sum")

    def on_validation_epoch_end(self):
        logits = torch.cat([o[0] for o in self._val_outputs])
        target = torch.cat([o[1] for o in self._val_outputs])
        self._val_outputs.clear()
        metrics = classification_metrics(logits, target)
        self.log("val_loss", F.cross_entropy(logits, target))
        self.log("val_acc", metrics["acc"])
        self.log("val_top3_acc", metrics["top3_acc"])
        return metrics

    test_step = validation_step
    on_test_epoch_end = on_validation_epoch_end

    def predict_step(self, batch, batch_idx):
        index, x = batch
        return index, self(x).argmax(dim=1)

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams["lr"], momentum=0.9,
                                    weight_decay=1e-4)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min",
                                                               factor=0.5, patience=1)
        return {"optimizer": optimizer,
                "lr_scheduler": {"scheduler": scheduler, "monitor": "val_loss"}}


# --------------------------------------------------------------------------- callbacks


class EarlyStopping:
    def __init__(self, monitor="val_loss", min_delta=0.0, patience=3, mode="min"):
        self.monitor, self.min_delta, self.patience, self.mode = monitor, min_delta, patience, mode
        self.wait_count, self.stopped_epoch = 0, 0
        self.best_score = torch.tensor(float("inf") if mode == "min" else float("-inf"))

    def on_validation_end(self, trainer, module):
        current = torch.tensor(module.logged[self.monitor])
        delta = -self.min_delta if self.mode == "min" else self.min_delta
        improved = (torch.lt if self.mode == "min" else torch.gt)(current - delta,
                                                                   self.best_score)
        if improved:
            self.best_score, self.wait_count = current, 0
        else:
            self.wait_count += 1
            if self.wait_count >= self.patience:
                self.stopped_epoch = trainer.current_epoch
                trainer.should_stop = True

    def state_dict(self):
        return {"wait_count": self.wait_count, "stopped_epoch": self.stopped_epoch,
                "best_score": self.best_score, "patience": self.patience}

    def load_state_dict(self, state):
        self.wait_count, self.stopped_epoch = state["wait_count"], state["stopped_epoch"]
        self.best_score = state["best_score"]


class ModelCheckpoint:
    """Keeps the top-k checkpoints by a monitored value, in memory, plus the last one."""

    def __init__(self, monitor="val_acc", mode="max", save_top_k=2):
        self.monitor, self.mode, self.save_top_k = monitor, mode, save_top_k
        self.best_k_models = {}  # name -> score
        self.blobs = {}
        self.last = None

    def on_validation_end(self, trainer, module):
        score = module.logged[self.monitor]
        name = f"epoch={trainer.current_epoch}-step={trainer.global_step}.ckpt"
        blob = trainer.dump_checkpoint()
        self.last = blob
        self.best_k_models[name] = score
        self.blobs[name] = blob
        if len(self.best_k_models) > self.save_top_k:
            pick = min if self.mode == "max" else max
            worst = pick(self.best_k_models, key=self.best_k_models.get)
            del self.best_k_models[worst]
            self.blobs.pop(worst, None)  # (a resumed run has not the earlier files)

    @property
    def best_model_path(self):
        pick = max if self.mode == "max" else min
        return pick(self.best_k_models, key=self.best_k_models.get)

    def state_dict(self):
        return {"best_k_models": dict(self.best_k_models)}

    def load_state_dict(self, state):
        self.best_k_models = dict(state["best_k_models"])


# ----------------------------------------------------------------------------- trainer


class Trainer:
    def __init__(self, max_epochs=8, accumulate_grad_batches=2, gradient_clip_val=1.0,
                 callbacks=(), num_sanity_val_steps=1, save_epochs=()):
        self.max_epochs = max_epochs
        self.accumulate_grad_batches = accumulate_grad_batches
        self.gradient_clip_val = gradient_clip_val
        self.callbacks = list(callbacks)
        self.num_sanity_val_steps = num_sanity_val_steps
        self.current_epoch, self.global_step, self.should_stop = 0, 0, False
        self.history = []
        self.save_epochs, self.saved = save_epochs, {}

    def dump_checkpoint(self):
        buf = io.BytesIO()
        torch.save({
            "epoch": self.current_epoch, "global_step": self.global_step,
            "state_dict": self.module.state_dict(),
            "optimizer_states": [self.optimizer.state_dict()],
            "lr_schedulers": [self.scheduler.state_dict()],
            "callbacks": {type(cb).__name__: cb.state_dict() for cb in self.callbacks},
            "hyper_parameters": dict(self.module.hparams),
            "rng_states": {"torch": torch.get_rng_state(),
                           "sampler": self.datamodule.sampler_generator.get_state()},
            "history": list(self.history),
        }, buf)
        return buf.getvalue()

    def restore(self, blob):
        ckpt = torch.load(io.BytesIO(blob), weights_only=True)
        self.module.load_state_dict(ckpt["state_dict"])
        self.optimizer.load_state_dict(ckpt["optimizer_states"][0])
        self.scheduler.load_state_dict(ckpt["lr_schedulers"][0])
        for cb in self.callbacks:
            cb.load_state_dict(ckpt["callbacks"][type(cb).__name__])
        torch.set_rng_state(ckpt["rng_states"]["torch"])
        self.datamodule.sampler_generator.set_state(ckpt["rng_states"]["sampler"])
        self.current_epoch = ckpt["epoch"] + 1  # saved at the end of that epoch
        self.global_step = ckpt["global_step"]
        self.history = list(ckpt["history"])
        return ckpt

    def _eval_loop(self, loader, step, epoch_end, max_batches=None):
        module = self.module
        module.eval()
        with torch.inference_mode():
            for batch_idx, batch in enumerate(loader):
                if max_batches is not None and batch_idx >= max_batches:
                    break
                step(batch, batch_idx)
            metrics = epoch_end()
        module.train()
        return metrics

    def fit(self, module, datamodule, ckpt_path=None):
        self.module, self.datamodule = module, datamodule
        datamodule.setup("fit")
        config = module.configure_optimizers()
        self.optimizer = config["optimizer"]
        self.scheduler = config["lr_scheduler"]["scheduler"]
        monitor = config["lr_scheduler"]["monitor"]
        if ckpt_path is not None:
            self.restore(ckpt_path)
        elif self.num_sanity_val_steps:
            with torch.random.fork_rng():
                self._eval_loop(datamodule.val_dataloader(), module.validation_step,
                                module.on_validation_epoch_end, self.num_sanity_val_steps)
            module.logged.clear()
        self.losses, self.grad_norms = [], []
        module.train()
        while self.current_epoch < self.max_epochs and not self.should_stop:
            loader = datamodule.train_dataloader()
            n_batches = len(loader)
            for batch_idx, batch in enumerate(loader):
                loss = module.training_step(batch, batch_idx)
                (loss / self.accumulate_grad_batches).backward()
                self.losses.append(loss.item())
                if (batch_idx + 1) % self.accumulate_grad_batches and batch_idx + 1 < n_batches:
                    continue
                norm = nn.utils.clip_grad_norm_(module.parameters(), self.gradient_clip_val)
                self.grad_norms.append(norm.item())
                self.optimizer.step()
                self.optimizer.zero_grad()
                self.global_step += 1
            metrics = self._eval_loop(datamodule.val_dataloader(), module.validation_step,
                                      module.on_validation_epoch_end)
            self.scheduler.step(module.logged[monitor])
            self.history.append({"epoch": self.current_epoch, "step": self.global_step,
                                 "val_loss": module.logged["val_loss"],
                                 "val_acc": module.logged["val_acc"],
                                 "lr": self.optimizer.param_groups[0]["lr"]})
            self.last_val_metrics = metrics
            for cb in self.callbacks:
                cb.on_validation_end(self, module)
            if self.current_epoch in self.save_epochs:
                self.saved[self.current_epoch] = self.dump_checkpoint()
            self.current_epoch += 1
        return self

    def test(self, module, datamodule, ckpt_blob=None, loader=None):
        if ckpt_blob is not None:
            module.load_state_dict(torch.load(io.BytesIO(ckpt_blob),
                                              weights_only=True)["state_dict"])
        return self._eval_loop(loader or datamodule.test_dataloader(), module.test_step,
                               module.on_test_epoch_end)

    def predict(self, module, loader):
        module.eval()
        with torch.inference_mode():
            outputs = [module.predict_step(batch, i) for i, batch in enumerate(loader)]
        module.train()
        return outputs


# ------------------------------------------------------------------ train()/eval() checks

torch.manual_seed(0)
probe = LitDigits(hidden=16, dropout=0.5)
bn = probe.net[1]
x_probe = torch.randn(12, 64)
probe.eval()
modes_eval = [m.training for m in probe.modules()]
with torch.no_grad():
    out_a, out_b = probe(x_probe), probe(x_probe)
eval_is_deterministic = torch.equal(out_a, out_b)
eval_stats_unchanged = (torch.equal(bn.running_mean, torch.zeros(16))
                        and int(bn.num_batches_tracked) == 0)
fixed_results["eval_out"] = out_a
probe.train()
modes_train = [m.training for m in probe.modules()]
train_a = probe(x_probe)
train_b = probe(x_probe)
train_outputs_differ = not torch.equal(train_a, train_b)
fixed_results["train_out"] = train_a.detach()
fixed_results["running_mean"] = bn.running_mean.clone()
fixed_results["running_var"] = bn.running_var.clone()
num_batches_tracked = int(bn.num_batches_tracked)
# (the net without Dropout in eval: BatchNorm normalises with its running statistics)
with torch.no_grad():
    probe.eval()
    h = probe.net[0](x_probe)
    manual_bn = (h - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias
    bn_eval_matches = torch.allclose(bn(h), manual_bn, atol=1e-6)
    probe.train()

# metrics on fixed logits (recorded)
metric_logits = torch.randn(60, NUM_CLASSES)
metric_target = torch.randint(0, NUM_CLASSES, (60,))
fixed_metrics = classification_metrics(metric_logits, metric_target)
for key in ("acc", "top3_acc", "precision", "recall", "f1", "confusion", "pred_counts"):
    fixed_results[f"metric_{key}"] = fixed_metrics[key]

# ------------------------------------------------------------------------------- the run

dm = DigitsDataModule()
dm.setup()
split_indices = [list(s.indices) for s in (dm.train_set, dm.val_set, dm.test_set)]
class_counts = dm.class_counts.tolist()
first_sampled = list(WeightedRandomSampler(dm.sample_weights, 600, replacement=True,
                                           generator=torch.Generator().manual_seed(1)))
sampled_counts = torch.bincount(dm.labels[dm.train_set.indices][first_sampled],
                                minlength=NUM_CLASSES)


def make_run(**trainer_kwargs):
    torch.manual_seed(0)
    module = LitDigits()
    callbacks = [EarlyStopping(monitor="val_loss", min_delta=1e-3, patience=2),
                 ModelCheckpoint(monitor="val_acc", mode="max", save_top_k=2)]
    trainer = Trainer(callbacks=callbacks, **trainer_kwargs)
    return module, DigitsDataModule(), trainer


RESUME_EPOCH = 2
module, datamodule, trainer = make_run(save_epochs=(RESUME_EPOCH,))
trainer.fit(module, datamodule)
losses, grad_norms, history = trainer.losses, trainer.grad_norms, trainer.history
early_stopping, checkpoint = trainer.callbacks
final_state = {k: v.clone() for k, v in module.state_dict().items()}
steps_per_epoch = -(-len(datamodule.train_dataloader()) // trainer.accumulate_grad_batches)

# the sanity check ran inside fork_rng: a run without it follows the same trajectory
module_plain, dm_plain, trainer_plain = make_run(num_sanity_val_steps=0, max_epochs=1)
trainer_plain.fit(module_plain, dm_plain)
sanity_free_losses = trainer_plain.losses

# resume from the checkpoint written after the third epoch into fresh objects
module_resumed, dm_resumed, trainer_resumed = make_run()
torch.manual_seed(1234)  # a different stream: the checkpoint's states must win
trainer_resumed.fit(module_resumed, dm_resumed, ckpt_path=trainer.saved[RESUME_EPOCH])
resumed_losses = trainer_resumed.losses
resumed_history = trainer_resumed.history
resumed_state = {k: v.clone() for k, v in module_resumed.state_dict().items()}
resumed_callback_states = [cb.state_dict() for cb in trainer_resumed.callbacks]
callback_states = [cb.state_dict() for cb in trainer.callbacks]

test_metrics = trainer.test(module, datamodule,
                            ckpt_blob=checkpoint.blobs[checkpoint.best_model_path])
val_metrics = trainer.test(module, datamodule, loader=datamodule.val_dataloader())
holdout_metrics = trainer.test(module, datamodule, loader=datamodule.holdout_dataloader())
holdout_size = len(datamodule.holdout_dataloader().dataset)
predictions = trainer.predict(module, datamodule.predict_dataloader())
predicted_index = torch.cat([p[0] for p in predictions])
predicted_class = torch.cat([p[1] for p in predictions])
worker_predictions = trainer.predict(module, datamodule.predict_dataloader(num_workers=2))
worker_index = torch.cat([p[0] for p in worker_predictions])
worker_class = torch.cat([p[1] for p in worker_predictions])
predictions_are_inference = predictions[0][1].is_inference()

# overfit a Subset of 32 (Lightning's overfit_batches): the loss goes towards zero
torch.manual_seed(0)
overfit = LitDigits(dropout=0.0)
overfit_opt = torch.optim.Adam(overfit.parameters(), lr=1e-2)
overfit_losses = []
for epoch in range(8):
    for batch_idx, batch in enumerate(datamodule.overfit_dataloader(seed=epoch)):
        overfit_opt.zero_grad()
        loss = overfit.training_step(batch, batch_idx)
        loss.backward()
        overfit_opt.step()
        overfit_losses.append(loss.item())

print(f"stopped={trainer.should_stop} at epoch {early_stopping.stopped_epoch}, "
      f"{trainer.global_step} steps")
for entry in history:
    print(entry)
print("best", checkpoint.best_model_path, "test acc", float(test_metrics["acc"]))
