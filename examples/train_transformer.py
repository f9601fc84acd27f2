"""A torch script with the import changed (and the loss under ``jitgrad.jit``, the one
jitgrad-specific line): a small transformer encoder learns to sort
sequences of digits (each output position attends to the whole input).

It uses ``nn.TransformerEncoder`` (pre-norm, GELU, ``batch_first``), ``nn.Embedding``,
``F.cross_entropy``, ``optim.AdamW`` and a warm-up then cosine schedule
(``SequentialLR(LinearLR, CosineAnnealingLR)``); the loss is computed under ``jitgrad.jit``.
Run: ``python examples/train_transformer.py`` (about 7 s on two cores, 5 of them compiling
kernels the first time; a later run loads them from the kernel cache and takes about 2 s).
"""

from __future__ import annotations

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

VOCAB, LENGTH, D_MODEL = 10, 8, 48


class Sorter(nn.Module):
    """Token and position embeddings, two encoder layers, a linear read-out per position."""

    def __init__(self) -> None:
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, D_MODEL)
        self.positions = nn.Parameter(torch.randn(LENGTH, D_MODEL) * 0.1)
        layer = nn.TransformerEncoderLayer(D_MODEL, nhead=4, dim_feedforward=96, dropout=0.0,
                                           activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(D_MODEL),
                                             enable_nested_tensor=False)
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.tokens(x) + self.positions))


def batch(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randint(0, VOCAB, (n, LENGTH), generator=generator)
    return x, x.sort(dim=1).values


def main(steps: int = 300) -> float:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model = Sorter()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    warmup = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=20)
    decay = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps - 20)
    sched = torch.optim.lr_scheduler.SequentialLR(opt, [warmup, decay], milestones=[20])

    @torch.jit
    def loss_fn(x, y):
        logits = model(x)
        return F.cross_entropy(logits.reshape(-1, VOCAB), y.reshape(-1))

    for step in range(steps):
        x, y = batch(64, gen)
        opt.zero_grad()
        loss = loss_fn(x, y)
        loss.backward()
        opt.step()
        sched.step()
        if step % 100 == 0:
            print(f"step {step:3d}  loss {loss.item():.3f}  lr {sched.get_last_lr()[0]:.5f}")
    x, y = batch(512, gen)
    with torch.no_grad():
        accuracy = (model(x).argmax(-1) == y).float().mean().item()
    print(f"accuracy on new sequences: {accuracy:.3f}")
    return accuracy


if __name__ == "__main__":
    main()
