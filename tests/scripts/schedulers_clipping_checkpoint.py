# ruff: noqa: B007, E402, F841, N801, N802, N803, N806, UP008, UP031, UP032 (tutorial code as is)
"""LR schedulers, gradient clipping, checkpoints (state_dict save/load), train()/eval() modes."""
import io
import os
import tempfile

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.optim.lr_scheduler import (CosineAnnealingLR, ExponentialLR, LambdaLR, OneCycleLR,
                                        ReduceLROnPlateau, StepLR)

torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.bn = nn.BatchNorm1d(32)
        self.drop = nn.Dropout(0.3)
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.bn(self.fc1(x)))))


X = torch.randn(128, 8)
true_w = torch.randn(8, 3)
Y = (X @ true_w).argmax(dim=1)


def run(scheduler_factory, epochs=12, per_batch=False, clip=None):
    model = Net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = scheduler_factory(optimizer)
    lrs, losses = [], []
    for epoch in range(epochs):
        model.train()
        for i in range(0, 128, 32):
            xb, yb = X[i:i + 32], Y[i:i + 32]
            optimizer.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            if clip == "norm":
                total_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
                assert total_norm >= 0
            elif clip == "value":
                nn.utils.clip_grad_value_(model.parameters(), clip_value=0.05)
            optimizer.step()
            if per_batch:
                scheduler.step()
        model.eval()
        with torch.no_grad():
            val_loss = F.cross_entropy(model(X), Y).item()
        losses.append(val_loss)
        if isinstance(scheduler, ReduceLROnPlateau):
            scheduler.step(val_loss)
        elif not per_batch:
            scheduler.step()
        lrs.append(optimizer.param_groups[0]["lr"])
    return model, optimizer, scheduler, lrs, losses


results = {}
results["step"] = run(lambda opt: StepLR(opt, step_size=4, gamma=0.5), clip="norm")
results["cosine"] = run(lambda opt: CosineAnnealingLR(opt, T_max=12, eta_min=0.001),
                        clip="value")
results["onecycle"] = run(lambda opt: OneCycleLR(opt, max_lr=0.2, steps_per_epoch=4, epochs=12),
                          per_batch=True)
results["exponential"] = run(lambda opt: ExponentialLR(opt, gamma=0.9))
results["lambda"] = run(lambda opt: LambdaLR(opt, lr_lambda=lambda epoch: 0.95 ** epoch))
results["plateau"] = run(lambda opt: ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=1))
for name, (_, _, _, lrs, losses) in results.items():
    print(f"{name:12s} lr {lrs[0]:.4f} -> {lrs[-1]:.4f}  val loss {losses[0]:.4f} -> "
          f"{losses[-1]:.4f}")
schedule_lrs = {name: r[3] for name, r in results.items()}
final_losses = {name: r[4][-1] for name, r in results.items()}
first_losses = {name: r[4][0] for name, r in results.items()}

# clip_grad_norm_ really rescales: a huge gradient comes out with norm max_norm
p = nn.Parameter(torch.ones(10))
(p * 1000.0).sum().backward()
reported = nn.utils.clip_grad_norm_([p], max_norm=2.0, norm_type=2.0)
clipped_norm = p.grad.norm().item()
print("clip_grad_norm_ reported", reported.item(), "now", clipped_norm)

# saving & loading a general checkpoint for inference and/or resuming training
model, optimizer, scheduler, _, losses = results["step"]
PATH = os.path.join(tempfile.mkdtemp(), "model.pt")
EPOCH = 12
torch.save({
    'epoch': EPOCH,
    'model_state_dict': model.state_dict(),
    'optimizer_state_dict': optimizer.state_dict(),
    'scheduler_state_dict': scheduler.state_dict(),
    'loss': losses[-1],
}, PATH)

model2 = Net()
optimizer2 = torch.optim.SGD(model2.parameters(), lr=0.1, momentum=0.9)
scheduler2 = StepLR(optimizer2, step_size=4, gamma=0.5)
checkpoint = torch.load(PATH, weights_only=True)
model2.load_state_dict(checkpoint['model_state_dict'])
optimizer2.load_state_dict(checkpoint['optimizer_state_dict'])
scheduler2.load_state_dict(checkpoint['scheduler_state_dict'])
epoch = checkpoint['epoch']
loss = checkpoint['loss']
model.eval()
model2.eval()
with torch.no_grad():
    same_eval_output = torch.equal(model(X), model2(X))
resumed_lr = optimizer2.param_groups[0]["lr"]

# resuming: one more identical training step on both gives identical parameters
model.train()
model2.train()
for m, opt in ((model, optimizer), (model2, optimizer2)):
    torch.manual_seed(123)  # the same dropout mask
    opt.zero_grad()
    F.cross_entropy(m(X[:32]), Y[:32]).backward()
    opt.step()
same_after_step = all(torch.equal(a, b) for a, b in zip(model.parameters(), model2.parameters()))
same_buffers = all(torch.equal(a, b) for a, b in zip(model.buffers(), model2.buffers()))

# a state_dict through an in-memory buffer; eval() disables dropout and uses running stats
buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
buffer.seek(0)
model3 = Net()
missing = model3.load_state_dict(torch.load(buffer))
model.eval()
model3.eval()
with torch.no_grad():
    same_via_buffer = torch.equal(model(X), model3(X))
    eval_deterministic = torch.equal(model(X), model(X))
model.train()
train_outputs_differ = not torch.equal(model(X), model(X))
print('checkpoint round trips:', same_eval_output, same_after_step, same_via_buffer)

# deterministic: the LR schedules alone (no training) are torch's
sched_only = {}
for name, factory in {
    "step": lambda opt: StepLR(opt, step_size=3, gamma=0.1),
    "cosine": lambda opt: CosineAnnealingLR(opt, T_max=10, eta_min=0.01),
    "onecycle": lambda opt: OneCycleLR(opt, max_lr=1.0, total_steps=20, anneal_strategy='cos',
                                       pct_start=0.25, div_factor=10, final_div_factor=100),
    "onecycle_linear": lambda opt: OneCycleLR(opt, max_lr=1.0, total_steps=20,
                                              anneal_strategy='linear', three_phase=True),
}.items():
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=0.5, momentum=0.9)
    sched = factory(opt)
    seq = []
    for _ in range(19):
        opt.step()
        sched.step()
        seq.append((opt.param_groups[0]["lr"], opt.param_groups[0]["momentum"]))
    sched_only[name] = seq
