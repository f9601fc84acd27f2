"""Learning-rate schedules, gradient clipping and checkpoints, written for these tests in the
way PyTorch users and its "saving and loading a general checkpoint" recipe commonly write them
(modelled on the API usage of that recipe and of torch.optim.lr_scheduler, not a copy of it):

- SGD with momentum under ``StepLR``, ``CosineAnnealingLR``, ``OneCycleLR`` (stepped per
  batch), ``ExponentialLR``, ``LambdaLR`` and ``ReduceLROnPlateau`` (stepped with the metric)
- ``clip_grad_norm_`` (its returned norm, ``norm_type``) and ``clip_grad_value_``
- a dict checkpoint of epoch, model, optimizer and scheduler state through ``torch.save`` /
  ``torch.load(weights_only=True)``, resuming, a state_dict through ``io.BytesIO``
- ``BatchNorm1d`` and ``Dropout`` under ``train()``/``eval()``
- the schedules alone (``OneCycleLR`` cos/linear, ``three_phase``, momentum cycling)
"""
import io
import os
import tempfile

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.optim.lr_scheduler import (CosineAnnealingLR, ExponentialLR, LambdaLR, OneCycleLR,
                                        ReduceLROnPlateau, StepLR)

torch.manual_seed(0)
EPOCHS, BATCH = 12, 32

# three classes: which of three random centres a point is nearest to
centres = torch.randn(3, 8)
points = torch.randn(128, 8)
classes = torch.cdist(points, centres).argmin(dim=1)


class Classifier(nn.Module):
    def __init__(self, n_in=8, hidden=32, n_out=3):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(n_in, hidden), nn.BatchNorm1d(hidden), nn.ReLU(),
                                  nn.Dropout(0.3))
        self.head = nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.head(self.body(x))


def new_run():
    net = Classifier()
    return net, torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)


def clip(net, how):
    if how == "norm":
        norm = nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
        assert norm >= 0
    elif how == "value":
        nn.utils.clip_grad_value_(net.parameters(), clip_value=0.05)


def train(make_scheduler, every_batch=False, clipping=None):
    """Trains a fresh model; returns it with its optimizer, scheduler, LRs and val losses."""
    net, sgd = new_run()
    sched = make_scheduler(sgd)
    lr_trace, val_trace = [], []
    for _ in range(EPOCHS):
        net.train()
        for xb, yb in zip(points.split(BATCH), classes.split(BATCH)):
            sgd.zero_grad()
            F.cross_entropy(net(xb), yb).backward()
            clip(net, clipping)
            sgd.step()
            if every_batch:
                sched.step()
        net.eval()
        with torch.no_grad():
            val = F.cross_entropy(net(points), classes).item()
        val_trace.append(val)
        if isinstance(sched, ReduceLROnPlateau):
            sched.step(val)  # this one watches the metric
        elif not every_batch:
            sched.step()
        lr_trace.append(sgd.param_groups[0]["lr"])
    return net, sgd, sched, lr_trace, val_trace


runs = {
    "step": train(lambda o: StepLR(o, step_size=4, gamma=0.5), clipping="norm"),
    "cosine": train(lambda o: CosineAnnealingLR(o, T_max=EPOCHS, eta_min=0.001),
                    clipping="value"),
    "onecycle": train(lambda o: OneCycleLR(o, max_lr=0.2, steps_per_epoch=4, epochs=EPOCHS),
                      every_batch=True),
    "exponential": train(lambda o: ExponentialLR(o, gamma=0.9)),
    "lambda": train(lambda o: LambdaLR(o, lr_lambda=lambda e: 0.95 ** e)),
    "plateau": train(lambda o: ReduceLROnPlateau(o, mode="min", factor=0.5, patience=1)),
}
schedule_lrs, first_losses, final_losses = {}, {}, {}
for name, (*_, lr_trace, val_trace) in runs.items():
    schedule_lrs[name] = lr_trace
    first_losses[name], final_losses[name] = val_trace[0], val_trace[-1]
    print(f"{name}: lr {lr_trace[-1]:.5f}, val {val_trace[0]:.3f} -> {val_trace[-1]:.3f}")

# clipping a large gradient leaves it with exactly the requested norm
w = nn.Parameter(torch.ones(10))
(1000.0 * w).sum().backward()
before = nn.utils.clip_grad_norm_([w], max_norm=2.0, norm_type=2.0)
clipped_norm = w.grad.norm().item()
print(f"gradient norm {before.item():.1f} clipped to {clipped_norm:.4f}")

# a general checkpoint of the StepLR run, and a fresh model/optimizer/scheduler resumed from it
net, sgd, sched, _, val_trace = runs["step"]
ckpt_file = os.path.join(tempfile.mkdtemp(), "checkpoint.tar")
torch.save({"epoch": EPOCHS, "net": net.state_dict(), "sgd": sgd.state_dict(),
            "sched": sched.state_dict(), "val_loss": val_trace[-1]}, ckpt_file)
state = torch.load(ckpt_file, weights_only=True)
net2, sgd2 = new_run()
sched2 = StepLR(sgd2, step_size=4, gamma=0.5)
net2.load_state_dict(state["net"])
sgd2.load_state_dict(state["sgd"])
sched2.load_state_dict(state["sched"])
epoch, last_val = state["epoch"], state["val_loss"]
resumed_lr = sgd2.param_groups[0]["lr"]
for m in (net, net2):
    m.eval()
with torch.no_grad():
    same_eval_output = torch.equal(net(points), net2(points))

# one more training step on each, with the same dropout draw: they stay identical
for m, opt in ((net, sgd), (net2, sgd2)):
    m.train()
    torch.manual_seed(123)
    opt.zero_grad()
    F.cross_entropy(m(points[:BATCH]), classes[:BATCH]).backward()
    opt.step()
same_after_step = all(torch.equal(p, q) for p, q in zip(net.parameters(), net2.parameters()))
same_buffers = all(torch.equal(p, q) for p, q in zip(net.buffers(), net2.buffers()))

# a state_dict through memory instead of a file
blob = io.BytesIO()
torch.save(net.state_dict(), blob)
blob.seek(0)
net3 = Classifier()
load_result = net3.load_state_dict(torch.load(blob))
net.eval()
net3.eval()
with torch.no_grad():
    same_via_buffer = torch.equal(net(points), net3(points))
    eval_deterministic = torch.equal(net(points), net(points))  # no dropout, running stats
net.train()
train_outputs_differ = not torch.equal(net(points), net(points))  # dropout draws differ
print("resumed at epoch", epoch, "lr", resumed_lr, same_eval_output, same_after_step)


def lr_and_momentum(make_scheduler, steps=19):
    """The (lr, momentum) after each of ``steps`` scheduler steps, without any training."""
    sgd = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.5, momentum=0.9)
    sched = make_scheduler(sgd)
    trace = []
    for _ in range(steps):
        sgd.step()
        sched.step()
        group = sgd.param_groups[0]
        trace.append((group["lr"], group["momentum"]))
    return trace


sched_only = {
    "step": lr_and_momentum(lambda o: StepLR(o, step_size=3, gamma=0.1)),
    "cosine": lr_and_momentum(lambda o: CosineAnnealingLR(o, T_max=10, eta_min=0.01)),
    "onecycle": lr_and_momentum(lambda o: OneCycleLR(
        o, max_lr=1.0, total_steps=20, anneal_strategy='cos', pct_start=0.25, div_factor=10,
        final_div_factor=100)),
    "onecycle_linear": lr_and_momentum(lambda o: OneCycleLR(
        o, max_lr=1.0, total_steps=20, anneal_strategy='linear', three_phase=True)),
}
