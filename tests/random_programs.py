"""Seeded random programs, written once and run under torch and under jitgrad.

Two families (see tests/test_random_programs.py):

* ``function_program(seed)``: a random custom ``autograd.Function`` with 1-3 tensor inputs
  (and sometimes a Python scalar argument) and 1-3 outputs ``u_j(s * sum_k w_jk x_k)``, whose
  ``backward`` reads a random mix of saved inputs, saved outputs, saved intermediates and
  tensors stored as ``ctx`` attributes, with random ``mark_non_differentiable`` and
  ``set_materialize_grads(False)``; then a loss over some of its outputs (and sometimes a
  second path from an input).
* ``inplace_program(seed)``: ``y = x.clone()``, then 1-4 in-place ops on ``y`` or on views of
  it, and a loss over ``y`` (and sometimes over a view taken before the ops).

A program is plain data; ``build(lib)`` turns it into code for ``lib`` (torch or jitgrad).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

# unary u(z): (forward, derivative from (z, y), which the derivative reads: "z" or "y")
UNARY = {
    "sin": (lambda z: z.sin(), lambda z, y: z.cos(), "z"),
    "square": (lambda z: z * z, lambda z, y: 2 * z, "z"),
    "exp": (lambda z: z.exp(), lambda z, y: y, "y"),
    "tanh": (lambda z: z.tanh(), lambda z, y: 1 - y * y, "y"),
    "sigmoid": (lambda z: z.sigmoid(), lambda z, y: y * (1 - y), "y"),
}


class FunctionProgram:
    """A random custom Function and a loss over it (plain data; see ``build``)."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.seed = seed
        self.n_in = rng.randint(1, 3)
        self.n_out = rng.randint(1, 3)
        self.shape = rng.choice([(3,), (2, 2)])
        self.scalar = rng.random() < 0.3  # a Python float argument after the tensors
        self.requires = [rng.random() < 0.8 for _ in range(self.n_in)]
        if not any(self.requires):
            self.requires[rng.randrange(self.n_in)] = True
        self.outs = []
        for _ in range(self.n_out):
            used = sorted(rng.sample(range(self.n_in), rng.randint(1, min(2, self.n_in))))
            weights = [round(rng.choice([-1, 1]) * rng.uniform(0.3, 1.5), 2) for _ in used]
            unary = rng.choice(sorted(UNARY))
            reads = UNARY[unary][2]
            # how backward gets what it needs: the inputs (recompute), the intermediate z, the
            # output y (if the derivative reads y), or z stored as a ctx attribute
            ways = ["inputs", "mid", "attr"] + (["output"] if reads == "y" else [])
            self.outs.append({"used": used, "weights": weights, "unary": unary,
                              "way": rng.choice(ways)})
        self.nondiff = {j for j in range(self.n_out) if rng.random() < 0.2}
        self.materialize = rng.random() < 0.7
        self.single = self.n_out == 1 and rng.random() < 0.7
        self.loss_outputs = sorted(rng.sample(range(self.n_out), rng.randint(1, self.n_out)))
        self.loss_post = {j: rng.choice(["lin", "square", "sin"]) for j in self.loss_outputs}
        self.loss_weights = {j: round(rng.uniform(0.5, 2.0), 2) for j in self.loss_outputs}
        self.extra_path = rng.random() < 0.3  # a second path from input 0 to the loss
        self.store_scale_on_ctx = rng.random() < 0.5
        self.values = [np.round(np.random.default_rng(seed * 7 + i).uniform(-1, 1, self.shape), 3)
                       for i in range(self.n_in)]
        self.cotangent_seed = seed * 13 + 5

    def __repr__(self) -> str:
        return (f"FunctionProgram(seed={self.seed}, n_in={self.n_in}, outs={self.outs}, "
                f"nondiff={self.nondiff}, materialize={self.materialize}, "
                f"scalar={self.scalar}, requires={self.requires})")

    # ------------------------------------------------------------------ code for one library
    def function(self, lib: Any) -> type:
        """The custom Function class for ``lib``."""
        prog = self

        class RandomFunction(lib.autograd.Function):
            @staticmethod
            def forward(ctx, *args):
                xs, s = (args[:-1], args[-1]) if prog.scalar else (args, 1.0)
                if prog.store_scale_on_ctx:
                    ctx.scale = s
                outs, to_save = [], []
                saved_at = {}
                for j, o in enumerate(prog.outs):
                    z = sum(w * s * xs[k] for k, w in zip(o["used"], o["weights"]))
                    y = UNARY[o["unary"]][0](z)
                    outs.append(y)
                    if o["way"] == "inputs":
                        saved_at[j] = len(to_save)
                        to_save.extend(xs[k] for k in o["used"])
                    elif o["way"] == "mid":
                        saved_at[j] = len(to_save)
                        to_save.append(z)
                    elif o["way"] == "output":
                        saved_at[j] = len(to_save)
                        to_save.append(y)
                    else:
                        setattr(ctx, f"z{j}", z)
                ctx.save_for_backward(*to_save)
                ctx.saved_at = saved_at
                if prog.nondiff:
                    ctx.mark_non_differentiable(*(outs[j] for j in sorted(prog.nondiff)))
                if not prog.materialize:
                    ctx.set_materialize_grads(False)
                return outs[0] if prog.single else tuple(outs)

            @staticmethod
            def backward(ctx, *grads):
                saved = ctx.saved_tensors
                s = ctx.scale if prog.store_scale_on_ctx else (prog.scalar_value
                                                                if prog.scalar else 1.0)
                gx = [None] * prog.n_in
                for j, o in enumerate(prog.outs):
                    g = grads[j]
                    if g is None:
                        continue
                    fwd, deriv, _ = UNARY[o["unary"]]
                    way = o["way"]
                    if way == "inputs":
                        at = ctx.saved_at[j]
                        xs = saved[at:at + len(o["used"])]
                        z = sum(w * s * x for x, w in zip(xs, o["weights"]))
                        y = fwd(z)
                    elif way == "mid":
                        z = saved[ctx.saved_at[j]]
                        y = fwd(z)
                    elif way == "output":
                        z, y = None, saved[ctx.saved_at[j]]
                    else:
                        z = getattr(ctx, f"z{j}")
                        y = fwd(z)
                    d = g * deriv(z, y)
                    for k, w in zip(o["used"], o["weights"]):
                        part = d * (w * s)
                        gx[k] = part if gx[k] is None else gx[k] + part
                gx = [g if need else None for g, need in zip(gx, ctx.needs_input_grad)]
                return tuple(gx) + ((None,) if prog.scalar else ())

        return RandomFunction

    scalar_value = 0.7

    def inputs(self, lib: Any) -> list:
        return [lib.tensor(v, dtype=lib.float64, requires_grad=r)
                for v, r in zip(self.values, self.requires)]

    def loss_fn(self, lib: Any, fn: type):
        """``loss(*inputs)``: the program, as a function of its input tensors."""
        prog = self

        def loss(*xs):
            args = list(xs) + ([prog.scalar_value] if prog.scalar else [])
            out = fn.apply(*args)
            outs = (out,) if prog.single else out
            total = 0
            for j in prog.loss_outputs:
                o = outs[j]
                post = prog.loss_post[j]
                v = o if post == "lin" else o * o if post == "square" else o.sin()
                total = total + (v * prog.loss_weights[j]).sum()
            if prog.extra_path:
                total = total + (xs[0] * xs[0]).sum() * 0.5
            return total

        return loss


class InplaceProgram:
    """``y = x.clone()``, 1-4 in-place ops on ``y`` or views of it, a loss (plain data)."""

    VIEWS = ["whole", "row0", "row1", "col1", "cols02", "flat14", "elem", "t"]
    OPS = ["mul2", "add1", "exp", "sigmoid", "tanh", "sin", "mulc", "divc", "pow2"]

    def __init__(self, seed: int) -> None:
        rng = random.Random(seed)
        self.seed = seed
        self.steps = [("whole" if rng.random() < 0.4 else rng.choice(self.VIEWS[1:]),
                       rng.choice(self.OPS)) for _ in range(rng.randint(1, 4))]
        self.early_view = rng.choice(self.VIEWS[1:]) if rng.random() < 0.25 else None
        self.x = np.round(np.random.default_rng(seed).uniform(0.2, 1.0, (2, 3)), 3)
        self.c = np.round(np.random.default_rng(seed + 1).uniform(0.5, 1.5, (2, 3)), 3)
        self.w = np.round(np.random.default_rng(seed + 2).uniform(-1, 1, (2, 3)), 3)

    def __repr__(self) -> str:
        return f"InplaceProgram(seed={self.seed}, steps={self.steps}, early={self.early_view})"

    @property
    def uses_views(self) -> bool:
        return self.early_view is not None or any(v != "whole" for v, _ in self.steps)

    @staticmethod
    def view(t: Any, name: str) -> Any:
        if name == "whole":
            return t
        if name == "row0":
            return t[0]
        if name == "row1":
            return t[1]
        if name == "col1":
            return t[:, 1]
        if name == "cols02":
            return t[:, 0:2]
        if name == "flat14":
            return t.view(6)[1:4]
        if name == "elem":
            return t[1, 2]
        return t.t()

    @staticmethod
    def apply_op(t: Any, op: str, c: Any, functional: bool) -> Any:
        """``t.op_(...)`` (or, ``functional``, the out-of-place ``t.op(...)``)."""
        name, args = {"mul2": ("mul", (2.0,)), "add1": ("add", (1.0,)), "exp": ("exp", ()),
                      "sigmoid": ("sigmoid", ()), "tanh": ("tanh", ()), "sin": ("sin", ()),
                      "mulc": ("mul", (c,)), "divc": ("div", (c,)),
                      "pow2": ("pow", (2.0,))}[op]
        return getattr(t, name if functional else name + "_")(*args)

    def run(self, lib: Any, x: Any, c: Any, functional: bool = False) -> Any:
        """The loss; ``functional`` (for programs without views) computes the same values
        with out-of-place ops: what ``jit`` computes, as it functionalizes in-place ops."""
        y = x.clone()
        early = self.view(y, self.early_view) if self.early_view else None
        for vname, op in self.steps:
            target = self.view(y, vname)
            if functional:
                assert vname == "whole"
                y = self.apply_op(y, op, c, True)
            else:
                self.apply_op(target, op, self.view(c, vname), False)
        w = lib.tensor(self.w, dtype=x.dtype)
        loss = (y * w).sum()
        if early is not None:
            loss = loss + (early * early).sum()
        return loss
