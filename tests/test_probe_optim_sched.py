"""Probes of torch.optim (optimizers, param groups, state_dict, hooks), torch.optim.lr_scheduler
and torch.optim.swa_utils: each case runs the same code on torch and jitgrad and compares the
results (parameter values, learning rates, state structure), the warnings and the error type and
text. Only cases where jitgrad agrees with torch are kept."""

import copy
import importlib
import io
import math
import pickle
import re
import warnings

import pytest

import jitgrad

torch = pytest.importorskip("torch")

_PROBES = []


def P(fn):  # noqa: N802 (registers one probe)
    _PROBES.append(fn)
    return fn


def _norm(x):
    if isinstance(x, (torch.Tensor, jitgrad.Tensor)):
        d = str(x.dtype).split(".")[-1]
        return ("T", tuple(x.shape), d, x.detach().tolist(), x.requires_grad)
    if isinstance(x, dict):
        return ("dict", [(_norm(k), _norm(v)) for k, v in x.items()])
    if isinstance(x, (tuple, list)):
        return (type(x).__name__, [_norm(i) for i in x])
    if isinstance(x, (torch.dtype, jitgrad.dtype)):
        return ("dtype", str(x).split(".")[-1])
    if isinstance(x, (bool, int, float, str, type(None))):
        return x
    return ("other", type(x).__name__)


def _eq(a, b, rtol):
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= 1e-8 + rtol * abs(b)
    if isinstance(a, tuple) and len(a) == 5 and a[0] == "T":
        r = 1e-6 if a[2] == "float64" else 1e-5
        return a[:3] == b[:3] and a[4] == b[4] and _eq(a[3], b[3], r)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_eq(x, y, rtol) for x, y in zip(a, b))
    return a == b


def _msg(m):
    return re.sub(r" \(Triggered internally at .*\)$", "", str(m)).replace("jitgrad", "torch")


def E(f):
    try:
        return ("ok", f())
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return (type(e).__name__, str(e).replace("jitgrad", "torch"))


def _run(fn, T):
    log = []
    try:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = fn(T, log)
        ws = [(x.category.__name__, _msg(x.message)) for x in w]
        return ("ok", _norm(r), _norm(log), ws)
    except Exception as e:  # noqa: BLE001 (the error is compared with torch's)
        return ("err", type(e).__name__, str(e).replace("jitgrad", "torch"), _norm(log))


# ---------------------------------------------------------------- helpers


def _params(T, dtype=None):
    dt = dtype or T.float64
    w = T.tensor([1.0, -2.0, 0.5, 3.0], dtype=dt, requires_grad=True)
    b = T.tensor([[0.1, -0.3], [0.2, 0.4]], dtype=dt, requires_grad=True)
    return w, b


def _loss(T, w, b):
    c = T.tensor([1.0, 2.0, -1.0, 0.5], dtype=w.dtype)
    return ((w - c) ** 2 * T.arange(1, 5, dtype=w.dtype)).sum() + (b.sin() * b.exp()).sum()


def _train(T, name, steps=5, dtype=None, groups=False, **kw):
    w, b = _params(T, dtype)
    ps = [{"params": [w]}, {"params": [b], "lr": 0.05}] if groups else [w, b]
    opt = getattr(T.optim, name)(ps, **kw)
    for _ in range(steps):
        opt.zero_grad()
        _loss(T, w, b).backward()
        opt.step()
    st = [sorted(opt.state[p].items()) for p in (w, b)]
    return w, b, st


def _lbfgs(T, steps=2, **kw):
    w, b = _params(T)
    opt = T.optim.LBFGS([w, b], **kw)
    calls = []

    def closure():
        opt.zero_grad()
        loss = _loss(T, w, b)
        loss.backward()
        calls.append(1)
        return loss

    losses = [opt.step(closure) for _ in range(steps)]
    st = opt.state[w]
    return w, b, losses, len(calls), st["func_evals"], st["n_iter"], sorted(st)


def _opt(T, lr=0.1, **kw):
    w, b = _params(T)
    return T.optim.SGD([w, b], lr=lr, **kw)


def _sched(T, make, steps=30, opt_kw=None, opt="SGD"):
    w, b = _params(T)
    o = getattr(T.optim, opt)([w, b], **(opt_kw or {"lr": 0.1}))
    s = make(T, o)
    out = [s.get_last_lr()]
    for _ in range(steps):
        o.step()
        s.step()
        out.append(s.get_last_lr())
    return out, [g["lr"] for g in o.param_groups]


def _sd_round(T, make, steps=7, more=8):
    # a scheduler's state_dict, loaded into a fresh one, continues the same sequence
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    s = make(T, o)
    for _ in range(steps):
        o.step()
        s.step()
    sd = s.state_dict()
    keys = sorted(sd)
    w2, b2 = _params(T)
    o2 = T.optim.SGD([w2, b2], lr=0.1)
    s2 = make(T, o2)
    s2.load_state_dict(sd)
    o2.load_state_dict(o.state_dict())
    out = []
    for _ in range(more):
        o.step()
        o2.step()
        s.step()
        s2.step()
        out.append((s.get_last_lr(), s2.get_last_lr()))
    return keys, out


# ---------------------------------------------------------------- optimizers: values


@P
def sgd_plain(T, log):
    return _train(T, "SGD", lr=0.1)


@P
def sgd_momentum(T, log):
    return _train(T, "SGD", lr=0.05, momentum=0.9)


@P
def sgd_nesterov(T, log):
    return _train(T, "SGD", lr=0.05, momentum=0.9, nesterov=True)


@P
def sgd_dampening(T, log):
    return _train(T, "SGD", lr=0.05, momentum=0.9, dampening=0.5)


@P
def sgd_weight_decay(T, log):
    return _train(T, "SGD", lr=0.05, momentum=0.5, weight_decay=0.1)


@P
def sgd_maximize(T, log):
    return _train(T, "SGD", steps=3, lr=0.01, momentum=0.9, maximize=True)


@P
def sgd_foreach(T, log):
    return _train(T, "SGD", lr=0.05, momentum=0.9, nesterov=True, foreach=True)


@P
def sgd_no_foreach(T, log):
    return _train(T, "SGD", lr=0.05, momentum=0.9, foreach=False)


@P
def sgd_float32(T, log):
    return _train(T, "SGD", dtype=T.float32, lr=0.05, momentum=0.9)


@P
def sgd_groups(T, log):
    return _train(T, "SGD", groups=True, lr=0.1, momentum=0.5)


@P
def sgd_default_lr(T, log):
    return _train(T, "SGD", steps=2)


@P
def adam_default(T, log):
    return _train(T, "Adam", lr=0.1)


@P
def adam_amsgrad(T, log):
    return _train(T, "Adam", steps=8, lr=0.1, amsgrad=True)


@P
def adam_maximize(T, log):
    return _train(T, "Adam", lr=0.01, maximize=True)


@P
def adam_foreach(T, log):
    return _train(T, "Adam", lr=0.1, foreach=True, amsgrad=True)


@P
def adam_weight_decay_betas(T, log):
    return _train(T, "Adam", lr=0.1, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)


@P
def adam_float32(T, log):
    return _train(T, "Adam", dtype=T.float32, lr=0.1)


@P
def adam_groups(T, log):
    return _train(T, "Adam", groups=True, lr=0.1)


@P
def adam_tensor_lr(T, log):
    return _train(T, "Adam", lr=T.tensor(0.1), foreach=False)


@P
def adamw_default(T, log):
    return _train(T, "AdamW", lr=0.1)


@P
def adamw_amsgrad_wd(T, log):
    return _train(T, "AdamW", steps=8, lr=0.1, amsgrad=True, weight_decay=0.5)


@P
def adamw_maximize_foreach(T, log):
    return _train(T, "AdamW", lr=0.01, maximize=True, foreach=True)


@P
def adamax_default(T, log):
    return _train(T, "Adamax", lr=0.1)


@P
def adamax_wd_maximize(T, log):
    return _train(T, "Adamax", lr=0.01, weight_decay=0.1, maximize=True)


@P
def nadam_default(T, log):
    return _train(T, "NAdam", lr=0.1)


@P
def nadam_decoupled(T, log):
    return _train(T, "NAdam", lr=0.1, weight_decay=0.1, decoupled_weight_decay=True)


@P
def nadam_wd_momentum_decay(T, log):
    return _train(T, "NAdam", lr=0.1, weight_decay=0.1, momentum_decay=0.01)


@P
def radam_default(T, log):
    return _train(T, "RAdam", steps=8, lr=0.1)


@P
def radam_decoupled(T, log):
    return _train(T, "RAdam", steps=8, lr=0.1, weight_decay=0.1, decoupled_weight_decay=True)


@P
def radam_wd_foreach(T, log):
    return _train(T, "RAdam", steps=8, lr=0.1, weight_decay=0.1, foreach=True)


@P
def adagrad_default(T, log):
    return _train(T, "Adagrad", lr=0.1)


@P
def adagrad_lr_decay(T, log):
    return _train(T, "Adagrad", lr=0.1, lr_decay=0.1, initial_accumulator_value=0.5)


@P
def adagrad_wd_maximize(T, log):
    return _train(T, "Adagrad", lr=0.1, weight_decay=0.1, maximize=True, foreach=True)


@P
def adadelta_default(T, log):
    return _train(T, "Adadelta")


@P
def adadelta_rho_wd(T, log):
    return _train(T, "Adadelta", lr=0.5, rho=0.5, weight_decay=0.1, maximize=True)


@P
def rmsprop_default(T, log):
    return _train(T, "RMSprop", lr=0.01)


@P
def rmsprop_centered(T, log):
    return _train(T, "RMSprop", lr=0.01, centered=True)


@P
def rmsprop_momentum(T, log):
    return _train(T, "RMSprop", lr=0.01, momentum=0.9, alpha=0.9)


@P
def rmsprop_centered_momentum_wd(T, log):
    return _train(T, "RMSprop", lr=0.01, momentum=0.5, centered=True, weight_decay=0.1)


@P
def rprop_default(T, log):
    return _train(T, "Rprop", steps=8)


@P
def rprop_etas_sizes(T, log):
    return _train(T, "Rprop", steps=8, lr=0.1, etas=(0.3, 1.5), step_sizes=(0.01, 0.2))


@P
def rprop_maximize(T, log):
    return _train(T, "Rprop", steps=4, lr=0.01, maximize=True, foreach=True)


@P
def asgd_default(T, log):
    return _train(T, "ASGD", lr=0.05)


@P
def asgd_t0(T, log):
    return _train(T, "ASGD", steps=8, lr=0.05, t0=3, lambd=0.01, alpha=0.5, weight_decay=0.1)


@P
def lbfgs_default(T, log):
    return _lbfgs(T, lr=0.5, max_iter=5)


@P
def lbfgs_strong_wolfe(T, log):
    return _lbfgs(T, line_search_fn="strong_wolfe", max_iter=10)


@P
def lbfgs_history(T, log):
    return _lbfgs(T, steps=3, lr=0.3, max_iter=4, history_size=2)


@P
def lbfgs_bad_line_search(T, log):
    return _lbfgs(T, line_search_fn="armijo")


@P
def lbfgs_two_groups_err(T, log):
    w, b = _params(T)
    return T.optim.LBFGS([{"params": [w]}, {"params": [b]}])


@P
def sparse_adam(T, log):
    T.manual_seed(0)
    emb = T.nn.Embedding(5, 3, sparse=True)
    with T.no_grad():
        emb.weight.copy_(T.arange(15.0).reshape(5, 3) / 10)
    opt = T.optim.SparseAdam(emb.parameters(), lr=0.1)
    for idx in ([0, 2], [2, 3], [0, 4]):
        opt.zero_grad()
        (emb(T.tensor(idx)) ** 2).sum().backward()
        opt.step()
    return emb.weight, sorted(opt.state[emb.weight])


@P
def sparse_adam_dense_grad_err(T, log):
    w, b = _params(T)
    opt = T.optim.SparseAdam([w], lr=0.1)
    _loss(T, w, b).backward()
    opt.step()


@P
def step_closure_return(T, log):
    w, b = _params(T)
    opt = T.optim.Adam([w, b], lr=0.1)

    def closure():
        opt.zero_grad()
        loss = _loss(T, w, b)
        loss.backward()
        return loss

    return opt.step(closure), w


@P
def step_no_grad_skips(T, log):
    w, b = _params(T)
    opt = T.optim.Adam([w, b], lr=0.1)
    (w**2).sum().backward()
    opt.step()
    return w, b, len(opt.state), b in opt.state


# ---------------------------------------------------------------- optimizers: construction errors


@P
def err_empty_params(T, log):
    return T.optim.SGD([], lr=0.1)


@P
def err_tensor_params(T, log):
    w, b = _params(T)
    return T.optim.SGD(w, lr=0.1)


@P
def err_non_leaf(T, log):
    w, b = _params(T)
    return T.optim.SGD([w * 2], lr=0.1)


@P
def err_overlap_groups(T, log):
    w, b = _params(T)
    return T.optim.SGD([{"params": [w]}, {"params": [w, b]}], lr=0.1)


@P
def warn_duplicate_params(T, log):
    w, b = _params(T)
    opt = T.optim.SGD([w, w, b], lr=0.1)
    return len(opt.param_groups[0]["params"])


@P
def err_params_set(T, log):
    w, b = _params(T)
    return T.optim.SGD({w, b}, lr=0.1)


# ---------------------------------------------------------------- param_groups / add_param_group


@P
def param_group_keys_sgd(T, log):
    o = _opt(T)
    return sorted(o.param_groups[0]), sorted(o.defaults)


@P
def param_group_keys_adam(T, log):
    w, b = _params(T)
    o = T.optim.Adam([w, b])
    g = o.param_groups[0]
    return sorted(g), g["lr"], g["betas"], g["eps"], g["weight_decay"], g["amsgrad"]


@P
def param_group_keys_all(T, log):
    w, b = _params(T)
    out = []
    for n in ["AdamW", "Adamax", "NAdam", "RAdam", "Adagrad", "Adadelta", "RMSprop", "Rprop",
              "ASGD", "LBFGS"]:
        g = getattr(T.optim, n)([w]).param_groups[0]
        out.append((n, sorted(g), [g[k] for k in sorted(g) if k != "params"]))
    return out


@P
def param_group_defaults_fill(T, log):
    w, b = _params(T)
    o = T.optim.SGD([{"params": [w], "lr": 0.5}, {"params": b, "momentum": 0.3}], lr=0.1)
    return [(g["lr"], g["momentum"], len(g["params"])) for g in o.param_groups]


@P
def add_param_group_ok(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w], lr=0.1, momentum=0.9)
    o.add_param_group({"params": b, "lr": 0.01})
    g = o.param_groups[1]
    return len(o.param_groups), g["lr"], g["momentum"], sorted(g) == sorted(o.param_groups[0])


@P
def add_param_group_overlap(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    o.add_param_group({"params": [w]})


@P
def add_param_group_not_dict(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w], lr=0.1)
    o.add_param_group([b])


@P
def add_param_group_set(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w], lr=0.1)
    o.add_param_group({"params": {b}})


@P
def add_param_group_non_tensor(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w], lr=0.1)
    o.add_param_group({"params": [1.0]})


@P
def add_param_group_required_lr(T, log):
    om = importlib.import_module(T.__name__ + ".optim.optimizer")
    w, b = _params(T)

    class Opt(T.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": om.required})

    o = Opt([{"params": [w], "lr": 1.0}])
    o.add_param_group({"params": [b]})


@P
def named_params(T, log):
    w, b = _params(T)
    o = T.optim.SGD([("w", w), ("b", b)], lr=0.1)
    g = o.param_groups[0]
    return sorted(g), g["param_names"], sorted(o.state_dict()["param_groups"][0])


@P
def param_groups_lr_mutation(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    for g in o.param_groups:
        g["lr"] = 0.5
    _loss(T, w, b).backward()
    o.step()
    return w, b


# ---------------------------------------------------------------- zero_grad


@P
def zero_grad_none(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    _loss(T, w, b).backward()
    o.zero_grad()
    return w.grad, b.grad


@P
def zero_grad_zeros(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    _loss(T, w, b).backward()
    o.zero_grad(set_to_none=False)
    return w.grad, b.grad, w.grad.requires_grad


@P
def zero_grad_no_grad_yet(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    o.zero_grad(set_to_none=False)
    return w.grad, b.grad


@P
def grad_accumulates(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    _loss(T, w, b).backward()
    _loss(T, w, b).backward()
    o.step()
    return w, b.grad


# ---------------------------------------------------------------- state_dict


@P
def state_dict_structure_sgd(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1, momentum=0.9)
    sd0 = o.state_dict()
    _loss(T, w, b).backward()
    o.step()
    sd = o.state_dict()
    return sorted(sd0), sd0["state"], sd["param_groups"], list(sd["state"]), sd["state"][0]


@P
def state_dict_structure_adam(T, log):
    w, b = _params(T)
    o = T.optim.Adam([{"params": [w]}, {"params": [b], "lr": 0.01}], amsgrad=True)
    _loss(T, w, b).backward()
    o.step()
    sd = o.state_dict()
    return sd["param_groups"], list(sd["state"]), [sorted(v.items()) for v in sd["state"].values()]


@P
def state_dict_no_momentum_sgd(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    _loss(T, w, b).backward()
    o.step()
    return o.state_dict()["state"]


def _round_trip(T, name, **kw):
    w, b = _params(T)
    o = getattr(T.optim, name)([w, b], **kw)
    for _ in range(3):
        o.zero_grad()
        _loss(T, w, b).backward()
        o.step()
    w2 = w.detach().clone().requires_grad_()
    b2 = b.detach().clone().requires_grad_()
    o2 = getattr(T.optim, name)([w2, b2], **kw)
    o2.load_state_dict(o.state_dict())
    for _ in range(3):
        for p, q, oo in ((w, b, o), (w2, b2, o2)):
            oo.zero_grad()
            _loss(T, p, q).backward()
            oo.step()
    return w, w2, b2, o2.state_dict()["param_groups"]


@P
def round_trip_sgd(T, log):
    return _round_trip(T, "SGD", lr=0.05, momentum=0.9)


@P
def round_trip_adam(T, log):
    return _round_trip(T, "Adam", lr=0.1, amsgrad=True)


@P
def round_trip_rmsprop(T, log):
    return _round_trip(T, "RMSprop", lr=0.01, centered=True, momentum=0.5)


@P
def round_trip_asgd(T, log):
    return _round_trip(T, "ASGD", lr=0.05, t0=2)


@P
def round_trip_rprop(T, log):
    return _round_trip(T, "Rprop", lr=0.05)


@P
def load_state_dict_overrides_hparams(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.3, momentum=0.5)
    o2 = T.optim.SGD([w, b], lr=0.1)
    o2.load_state_dict(o.state_dict())
    return o2.param_groups[0]["lr"], o2.param_groups[0]["momentum"], len(o2.param_groups)


@P
def load_state_dict_group_count_err(T, log):
    w, b = _params(T)
    o = T.optim.SGD([{"params": [w]}, {"params": [b]}], lr=0.1)
    o2 = T.optim.SGD([w, b], lr=0.1)
    o2.load_state_dict(o.state_dict())


@P
def load_state_dict_group_size_err(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w], lr=0.1)
    o2 = T.optim.SGD([w, b], lr=0.1)
    o2.load_state_dict(o.state_dict())


@P
def load_state_dict_casts_state(T, log):
    w, b = _params(T)
    o = T.optim.Adam([w], lr=0.1)
    _loss(T, w, b).backward()
    o.step()
    sd = o.state_dict()
    w32 = T.zeros(4, requires_grad=True)
    o2 = T.optim.Adam([w32], lr=0.1)
    o2.load_state_dict(sd)
    s = o2.state[w32]
    return s["exp_avg"], s["step"]


@P
def load_state_dict_is_copy(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1, momentum=0.9)
    _loss(T, w, b).backward()
    o.step()
    sd = o.state_dict()
    o.param_groups[0]["lr"] = 7.0
    return sd["param_groups"][0]["lr"], sd["state"][0]["momentum_buffer"] is o.state[w][
        "momentum_buffer"]


@P
def optimizer_repr(T, log):
    w, b = _params(T)
    return repr(T.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9))


@P
def optimizer_repr_adam(T, log):
    w, b = _params(T)
    return repr(T.optim.Adam([w, b], lr=0.01))


# ---------------------------------------------------------------- hooks


@P
def step_hooks(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    h1 = o.register_step_pre_hook(lambda opt, a, k: log.append(("pre", len(a), sorted(k))))
    h2 = o.register_step_post_hook(lambda opt, a, k: log.append(("post", len(a), sorted(k))))
    _loss(T, w, b).backward()
    o.step()
    h1.remove()
    o.step()
    h2.remove()
    o.step()
    return log, type(h1).__name__


@P
def step_pre_hook_replaces_args(T, log):
    w, b = _params(T)
    o = T.optim.LBFGS([w, b], max_iter=1)

    def closure():
        log.append("closure")
        o.zero_grad()
        loss = _loss(T, w, b)
        loss.backward()
        return loss

    o.register_step_pre_hook(lambda opt, a, k: ((), {"closure": closure}))
    return o.step(lambda: 1 / 0), log


@P
def global_step_hooks(T, log):
    om = importlib.import_module(T.__name__ + ".optim.optimizer")
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    h1 = om.register_optimizer_step_pre_hook(lambda opt, a, k: log.append("gpre"))
    h2 = om.register_optimizer_step_post_hook(lambda opt, a, k: log.append("gpost"))
    o.register_step_pre_hook(lambda opt, a, k: log.append("pre"))
    o.register_step_post_hook(lambda opt, a, k: log.append("post"))
    try:
        o.step()
    finally:
        h1.remove()
        h2.remove()
    o.step()
    return log


@P
def state_dict_hooks(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    o.register_state_dict_pre_hook(lambda opt: log.append("sd_pre"))

    def post(opt, sd):
        log.append(("sd_post", sorted(sd)))
        sd["extra"] = 1
        return sd

    o.register_state_dict_post_hook(post)
    sd = o.state_dict()
    return sorted(sd), log


@P
def load_state_dict_hooks(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    sd = o.state_dict()

    def pre(opt, sd):
        log.append("ld_pre")
        sd = dict(sd)
        sd["param_groups"] = [dict(sd["param_groups"][0], lr=0.7)]
        return sd

    o.register_load_state_dict_pre_hook(pre)
    o.register_load_state_dict_post_hook(lambda opt: log.append("ld_post"))
    o.load_state_dict(sd)
    return o.param_groups[0]["lr"], log


@P
def hooks_prepend(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    o.register_state_dict_pre_hook(lambda opt: log.append("a"))
    o.register_state_dict_pre_hook(lambda opt: log.append("b"), prepend=True)
    o.state_dict()
    return log


# ---------------------------------------------------------------- lr_scheduler: sequences


def _S(name, *a, **k):  # noqa: N802 (a scheduler factory)
    return lambda T, o: getattr(T.optim.lr_scheduler, name)(o, *a, **k)


@P
def steplr(T, log):
    return _sched(T, _S("StepLR", step_size=3, gamma=0.5))


@P
def steplr_default_gamma(T, log):
    return _sched(T, _S("StepLR", 4), steps=12)


@P
def multisteplr(T, log):
    return _sched(T, _S("MultiStepLR", milestones=[5, 10, 10, 20], gamma=0.1))


@P
def multisteplr_unsorted(T, log):
    return _sched(T, _S("MultiStepLR", [12, 3]), steps=15)


@P
def exponentiallr(T, log):
    return _sched(T, _S("ExponentialLR", gamma=0.9))


@P
def cosine(T, log):
    return _sched(T, _S("CosineAnnealingLR", T_max=10, eta_min=0.01))


@P
def cosine_default(T, log):
    return _sched(T, _S("CosineAnnealingLR", 7), steps=16)


@P
def cosine_warm_restarts(T, log):
    return _sched(T, _S("CosineAnnealingWarmRestarts", T_0=5, T_mult=2, eta_min=0.001))


@P
def cosine_warm_restarts_t1(T, log):
    return _sched(T, _S("CosineAnnealingWarmRestarts", 4), steps=12)


@P
def cosine_warm_restarts_frac_epoch(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    s = T.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2)
    out = []
    for e in [0.5, 1.0, 2.5, 3.0, 4.25, 9.5, 10.0, 0.1]:
        s.step(e)
        out.append((s.get_last_lr(), s.T_cur, s.T_i))
    return out


@P
def cosine_warm_restarts_neg_epoch(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    T.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=3).step(-1.0)


@P
def cycliclr_triangular(T, log):
    return _sched(T, _S("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=4))


@P
def cycliclr_triangular2(T, log):
    return _sched(T, _S("CyclicLR", 0.01, 0.1, step_size_up=3, step_size_down=5,
                        mode="triangular2"))


@P
def cycliclr_exp_range(T, log):
    return _sched(T, _S("CyclicLR", 0.01, 0.1, step_size_up=4, mode="exp_range", gamma=0.9))


@P
def cycliclr_momentum(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1, momentum=0.9)
    s = T.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=3, base_momentum=0.7,
                                      max_momentum=0.95)
    out = []
    for _ in range(10):
        o.step()
        s.step()
        out.append((s.get_last_lr(), o.param_groups[0]["momentum"]))
    return out


@P
def cycliclr_adam_betas(T, log):
    w, b = _params(T)
    o = T.optim.Adam([w, b], lr=0.1)
    s = T.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, step_size_up=3)
    out = []
    for _ in range(8):
        o.step()
        s.step()
        out.append((s.get_last_lr(), o.param_groups[0]["betas"]))
    return out


@P
def cycliclr_no_momentum_err(T, log):
    w, b = _params(T)
    o = T.optim.Adagrad([w, b], lr=0.1)
    T.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1)


@P
def cycliclr_scale_fn(T, log):
    return _sched(T, _S("CyclicLR", 0.01, 0.1, step_size_up=2, cycle_momentum=False,
                        scale_fn=lambda x: 1 / x, scale_mode="cycle"), steps=14)


@P
def cycliclr_bad_mode(T, log):
    return _S("CyclicLR", 0.01, 0.1, mode="sine")(T, _opt(T, momentum=0.9))


@P
def cycliclr_list_lrs(T, log):
    w, b = _params(T)
    o = T.optim.SGD([{"params": [w]}, {"params": [b]}], lr=0.1, momentum=0.9)
    s = T.optim.lr_scheduler.CyclicLR(o, [0.01, 0.02], [0.1, 0.3], step_size_up=2)
    out = []
    for _ in range(6):
        o.step()
        s.step()
        out.append(s.get_last_lr())
    return out


@P
def cycliclr_list_len_err(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1, momentum=0.9)
    T.optim.lr_scheduler.CyclicLR(o, [0.01, 0.02], 0.1)


@P
def onecycle(T, log):
    return _sched(T, _S("OneCycleLR", max_lr=0.5, total_steps=31), opt_kw={"lr": 0.1,
                                                                            "momentum": 0.9})


@P
def onecycle_linear_three_phase(T, log):
    return _sched(T, _S("OneCycleLR", max_lr=0.5, total_steps=31, anneal_strategy="linear",
                        three_phase=True, pct_start=0.2, div_factor=10, final_div_factor=100),
                  opt_kw={"lr": 0.1, "momentum": 0.9})


@P
def onecycle_epochs(T, log):
    return _sched(T, _S("OneCycleLR", 0.3, epochs=4, steps_per_epoch=5, cycle_momentum=False),
                  steps=19)


@P
def onecycle_adam_momentum(T, log):
    w, b = _params(T)
    o = T.optim.Adam([w, b], lr=0.1)
    s = T.optim.lr_scheduler.OneCycleLR(o, max_lr=0.5, total_steps=10)
    out = [(s.get_last_lr(), o.param_groups[0]["betas"])]
    for _ in range(9):
        o.step()
        s.step()
        out.append((s.get_last_lr(), o.param_groups[0]["betas"]))
    return out


@P
def onecycle_overstep(T, log):
    return _sched(T, _S("OneCycleLR", max_lr=0.5, total_steps=5, cycle_momentum=False), steps=6)


@P
def lambdalr(T, log):
    return _sched(T, _S("LambdaLR", lambda e: 0.95**e + 0.01 * e))


@P
def lambdalr_per_group(T, log):
    w, b = _params(T)
    o = T.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.2}], lr=0.1)
    s = T.optim.lr_scheduler.LambdaLR(o, [lambda e: 1 / (e + 1), lambda e: 0.5**e])
    out = []
    for _ in range(6):
        o.step()
        s.step()
        out.append(s.get_last_lr())
    return out, [g["initial_lr"] for g in o.param_groups]


@P
def lambdalr_count_err(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    T.optim.lr_scheduler.LambdaLR(o, [lambda e: 1, lambda e: 2])


@P
def multiplicativelr(T, log):
    return _sched(T, _S("MultiplicativeLR", lambda e: 0.9 if e % 2 else 1.05))


@P
def linearlr(T, log):
    return _sched(T, _S("LinearLR", start_factor=0.25, total_iters=4), steps=8)


@P
def linearlr_default(T, log):
    return _sched(T, _S("LinearLR"), steps=8)


@P
def linearlr_decay(T, log):
    return _sched(T, _S("LinearLR", start_factor=1.0, end_factor=0.1, total_iters=10), steps=12)


@P
def constantlr(T, log):
    return _sched(T, _S("ConstantLR", factor=0.5, total_iters=3), steps=6)


@P
def constantlr_default(T, log):
    return _sched(T, _S("ConstantLR"), steps=7)


@P
def polynomiallr(T, log):
    return _sched(T, _S("PolynomialLR", total_iters=10, power=2.0), steps=14)


@P
def polynomiallr_default(T, log):
    return _sched(T, _S("PolynomialLR"), steps=7)


@P
def sequentiallr(T, log):
    def make(T, o):
        s1 = T.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=3)
        s2 = T.optim.lr_scheduler.ExponentialLR(o, gamma=0.9)
        return T.optim.lr_scheduler.SequentialLR(o, [s1, s2], milestones=[3])

    return _sched(T, make, steps=10)


@P
def sequentiallr_three(T, log):
    def make(T, o):
        LR = T.optim.lr_scheduler
        s1 = LR.ConstantLR(o, factor=0.5, total_iters=2)
        s2 = LR.StepLR(o, 2, 0.5)
        s3 = LR.CosineAnnealingLR(o, 5)
        return LR.SequentialLR(o, [s1, s2, s3], milestones=[3, 8])

    return _sched(T, make, steps=15)


@P
def sequentiallr_milestone_err(T, log):
    o = _opt(T)
    s1 = T.optim.lr_scheduler.ConstantLR(o)
    s2 = T.optim.lr_scheduler.ExponentialLR(o, 0.9)
    T.optim.lr_scheduler.SequentialLR(o, [s1, s2], milestones=[3, 5])


@P
def sequentiallr_other_opt_err(T, log):
    o, o2 = _opt(T), _opt(T)
    s1 = T.optim.lr_scheduler.ConstantLR(o)
    s2 = T.optim.lr_scheduler.ExponentialLR(o2, 0.9)
    T.optim.lr_scheduler.SequentialLR(o, [s1, s2], milestones=[3])


@P
def chained(T, log):
    def make(T, o):
        s1 = T.optim.lr_scheduler.ConstantLR(o, factor=0.1, total_iters=2)
        s2 = T.optim.lr_scheduler.ExponentialLR(o, gamma=0.9)
        return T.optim.lr_scheduler.ChainedScheduler([s1, s2])

    return _sched(T, make, steps=8)


@P
def chained_with_optimizer(T, log):
    def make(T, o):
        s1 = T.optim.lr_scheduler.StepLR(o, 2, 0.5)
        s2 = T.optim.lr_scheduler.LinearLR(o, 0.5, total_iters=4)
        return T.optim.lr_scheduler.ChainedScheduler([s1, s2], optimizer=o)

    return _sched(T, make, steps=8)


@P
def chained_other_opt_err(T, log):
    o, o2 = _opt(T), _opt(T)
    s1 = T.optim.lr_scheduler.ConstantLR(o)
    s2 = T.optim.lr_scheduler.ExponentialLR(o2, 0.9)
    T.optim.lr_scheduler.ChainedScheduler([s1, s2])


@P
def two_schedulers_compose(T, log):
    def make(T, o):
        T.optim.lr_scheduler.StepLR(o, 3, 0.5)
        return T.optim.lr_scheduler.ExponentialLR(o, 0.9)

    return _sched(T, make, steps=8)


@P
def scheduler_groups(T, log):
    w, b = _params(T)
    o = T.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.2}], lr=0.1)
    s = T.optim.lr_scheduler.StepLR(o, 2, 0.1)
    out = []
    for _ in range(5):
        o.step()
        s.step()
        out.append(s.get_last_lr())
    return out


def _plateau(T, metrics, **kw):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=1.0, momentum=0.9)
    s = T.optim.lr_scheduler.ReduceLROnPlateau(o, **kw)
    out = []
    for m in metrics:
        o.step()
        s.step(m)
        out.append((s.get_last_lr(), s.num_bad_epochs, s.cooldown_counter))
    return out, s.best


_M = [5, 4, 4.5, 4.2, 4.1, 4.0, 4.3, 3.0, 3.0, 3.0, 3.1, 3.2, 3.3, 2.9, 2.95, 3.0, 3.0, 3.0,
      2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0]


@P
def plateau_min(T, log):
    return _plateau(T, _M, patience=2, factor=0.5)


@P
def plateau_max(T, log):
    return _plateau(T, [-m for m in _M], mode="max", patience=1, factor=0.1, min_lr=1e-3)


@P
def plateau_abs_cooldown(T, log):
    return _plateau(T, _M, patience=1, threshold=0.5, threshold_mode="abs", cooldown=2)


@P
def plateau_eps(T, log):
    return _plateau(T, _M, patience=0, factor=0.5, eps=0.2)


@P
def plateau_min_lr_list(T, log):
    w, b = _params(T)
    o = T.optim.SGD([{"params": [w]}, {"params": [b]}], lr=1.0)
    s = T.optim.lr_scheduler.ReduceLROnPlateau(o, patience=0, min_lr=[0.3, 0.05])
    out = []
    for m in [1.0] * 6:
        s.step(m)
        out.append(s.get_last_lr())
    return out


@P
def plateau_tensor_metric(T, log):
    return _plateau(T, [T.tensor(3.0), T.tensor(3.0), T.tensor(3.0), T.tensor(2.0)], patience=1)


@P
def plateau_state_dict(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1)
    for m in [3.0, 3.0, 3.0]:
        s.step(m)
    sd = s.state_dict()
    s2 = T.optim.lr_scheduler.ReduceLROnPlateau(_opt(T))
    s2.load_state_dict(sd)
    return sorted(sd), s2.best, s2.num_bad_epochs, s2.patience, s2.last_epoch, sd["_last_lr"]


# ---------------------------------------------------------------- lr_scheduler: state, warnings


@P
def sd_round_steplr(T, log):
    return _sd_round(T, _S("StepLR", 3, 0.5))


@P
def sd_round_cosine(T, log):
    return _sd_round(T, _S("CosineAnnealingLR", 10, 0.01))


@P
def sd_round_warm_restarts(T, log):
    return _sd_round(T, _S("CosineAnnealingWarmRestarts", 3, 2))


@P
def sd_round_cyclic(T, log):
    return _sd_round(T, _S("CyclicLR", 0.01, 0.1, step_size_up=3, cycle_momentum=False))


@P
def sd_round_onecycle(T, log):
    return _sd_round(T, _S("OneCycleLR", 0.5, total_steps=20, cycle_momentum=False))


@P
def sd_round_multistep(T, log):
    return _sd_round(T, _S("MultiStepLR", [3, 9, 9]))


@P
def sd_round_poly(T, log):
    return _sd_round(T, _S("PolynomialLR", 10, 2.0))


@P
def sd_round_linear(T, log):
    return _sd_round(T, _S("LinearLR", 0.2, total_iters=10), steps=3)


@P
def sd_lambdalr(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.LambdaLR(o, lambda e: 0.5**e)
    s.step()
    sd = s.state_dict()
    return sorted(sd), sd["lr_lambdas"], sd["last_epoch"], sd["base_lrs"], sd["_last_lr"]


@P
def sd_steplr_values(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.StepLR(o, 3, 0.5)
    o.step()
    s.step()
    sd = s.state_dict()
    return sorted(sd), [sd[k] for k in sorted(sd)]


@P
def sd_multistep_milestones(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.MultiStepLR(o, [4, 2, 4])
    sd = s.state_dict()
    return sorted(sd), dict(sd["milestones"]), type(sd["milestones"]).__name__


@P
def sd_sequential(T, log):
    o = _opt(T)
    LR = T.optim.lr_scheduler
    s = LR.SequentialLR(o, [LR.ConstantLR(o), LR.ExponentialLR(o, 0.9)], milestones=[2])
    for _ in range(3):
        o.step()
        s.step()
    sd = s.state_dict()
    return sorted(sd), [sorted(x) for x in sd["_schedulers"]], sd["_milestones"], sd["last_epoch"]


@P
def sd_chained(T, log):
    o = _opt(T)
    LR = T.optim.lr_scheduler
    s = LR.ChainedScheduler([LR.ConstantLR(o), LR.ExponentialLR(o, 0.9)])
    o.step()
    s.step()
    sd = s.state_dict()
    return sorted(sd), [sorted(x) for x in sd["_schedulers"]]


@P
def warn_sched_before_opt(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.StepLR(o, 2)
    s.step()
    s.step()
    return s.get_last_lr()


@P
def warn_sched_no_opt_step(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    s = T.optim.lr_scheduler.ExponentialLR(o, 0.5)
    s.step()
    return s.get_last_lr()


@P
def warn_epoch_arg(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.StepLR(o, 2, 0.5)
    o.step()
    s.step(5)
    return s.get_last_lr(), s.last_epoch


@P
def warn_get_lr_outside_step(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.ExponentialLR(o, 0.5)
    o.step()
    s.step()
    return s.get_lr()


@P
def warn_plateau_before_opt(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.ReduceLROnPlateau(o)
    s.step(1.0)
    return s.get_last_lr()


@P
def resume_missing_initial_lr(T, log):
    return T.optim.lr_scheduler.StepLR(_opt(T), 3, last_epoch=5)


@P
def resume_with_initial_lr(T, log):
    o = _opt(T)
    for g in o.param_groups:
        g["initial_lr"] = 0.4
    s = T.optim.lr_scheduler.StepLR(o, 3, 0.5, last_epoch=5)
    o.step()
    s.step()
    return s.get_last_lr(), s.base_lrs, s.last_epoch


@P
def sched_not_optimizer(T, log):
    return T.optim.lr_scheduler.StepLR(object(), 3)


@P
def sched_attrs(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.ExponentialLR(o, 0.5)
    return (s.last_epoch, s.base_lrs, s.optimizer is o, o.param_groups[0]["initial_lr"],
            s._step_count)


@P
def sched_isinstance(T, log):
    LR = T.optim.lr_scheduler
    s = LR.StepLR(_opt(T), 2)
    return isinstance(s, LR.LRScheduler), isinstance(s, LR._LRScheduler)


@P
def exp_gamma_zero(T, log):
    return _sched(T, _S("ExponentialLR", 0.0), steps=3)


# ---------------------------------------------------------------- swa_utils


def _lin(T):
    m = T.nn.Linear(2, 1)
    with T.no_grad():
        m.weight.copy_(T.tensor([[1.0, -1.0]]))
        m.bias.fill_(0.5)
    return m


@P
def averaged_model(T, log):
    m = _lin(T)
    am = T.optim.swa_utils.AveragedModel(m)
    out = []
    for k in range(4):
        with T.no_grad():
            m.weight.add_(float(k + 1))
            m.bias.mul_(2.0)
        am.update_parameters(m)
        out.append((am.module.weight.tolist(), am.module.bias.tolist(), am.n_averaged.item()))
    return out, list(am.state_dict()), am.n_averaged.dtype, am(T.tensor([[1.0, 2.0]]))


@P
def averaged_model_ema(T, log):
    m = _lin(T)
    swa = T.optim.swa_utils
    am = swa.AveragedModel(m, multi_avg_fn=swa.get_ema_multi_avg_fn(0.9))
    for _ in range(3):
        with T.no_grad():
            m.weight.add_(1.0)
        am.update_parameters(m)
    return am.module.weight, am.module.bias, am.n_averaged


@P
def averaged_model_ema_avg_fn(T, log):
    m = _lin(T)
    swa = T.optim.swa_utils
    am = swa.AveragedModel(m, avg_fn=swa.get_ema_avg_fn(0.5))
    for _ in range(3):
        with T.no_grad():
            m.weight.mul_(2.0)
        am.update_parameters(m)
    return am.module.weight, am.n_averaged


@P
def averaged_model_custom_avg(T, log):
    m = _lin(T)

    def avg(avg_p, p, n):
        log.append(n.item())
        return avg_p + p

    am = T.optim.swa_utils.AveragedModel(m, avg_fn=avg)
    for _ in range(3):
        am.update_parameters(m)
    return am.module.weight, log


@P
def averaged_model_buffers(T, log):
    m = T.nn.BatchNorm1d(2)
    am = T.optim.swa_utils.AveragedModel(m, use_buffers=True)
    m.train()
    m(T.tensor([[1.0, 2.0], [3.0, 5.0]]))
    am.update_parameters(m)
    m(T.tensor([[0.0, 1.0], [2.0, 0.0]]))
    am.update_parameters(m)
    return am.module.running_mean, am.module.running_var, list(am.state_dict())


@P
def swalr_cos(T, log):
    return _sched(T, lambda T, o: T.optim.swa_utils.SWALR(o, swa_lr=0.01, anneal_epochs=5),
                  steps=8)


@P
def swalr_linear_groups(T, log):
    w, b = _params(T)
    o = T.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.3}], lr=0.1)
    s = T.optim.swa_utils.SWALR(o, swa_lr=[0.05, 0.02], anneal_epochs=3, anneal_strategy="linear")
    out = []
    for _ in range(5):
        o.step()
        s.step()
        out.append(s.get_last_lr())
    return out


@P
def update_bn(T, log):
    m = T.nn.Sequential(T.nn.Linear(2, 2), T.nn.BatchNorm1d(2))
    with T.no_grad():
        m[0].weight.copy_(T.tensor([[1.0, 0.5], [-1.0, 2.0]]))
        m[0].bias.zero_()
    loader = [T.tensor([[1.0, 2.0], [3.0, 4.0]]), T.tensor([[0.0, 1.0], [-1.0, 2.0],
                                                            [2.0, 2.0]])]
    T.optim.swa_utils.update_bn(loader, m)
    bn = m[1]
    return bn.running_mean, bn.running_var, bn.num_batches_tracked, bn.momentum, m.training


@P
def update_bn_tuple_loader(T, log):
    m = T.nn.BatchNorm1d(2)
    m.eval()
    loader = [(T.tensor([[1.0, 2.0], [3.0, 4.0]]), 0), (T.tensor([[5.0, 1.0], [1.0, 0.0]]), 1)]
    T.optim.swa_utils.update_bn(loader, m)
    return m.running_mean, m.running_var, m.training


@P
def update_bn_no_bn(T, log):
    m = T.nn.Linear(2, 2)
    T.optim.swa_utils.update_bn([T.ones(1, 2)], m)
    return m.training


# ---------------------------------------------------------------- merged error checks


@P
def err_sgd_args(T, log):
    return [E(lambda kw=kw: _opt(T, **kw)) for kw in [
        {"lr": -1.0}, {"momentum": -0.5}, {"weight_decay": -0.1}, {"nesterov": True},
        {"momentum": 0.9, "dampening": 0.1, "nesterov": True}]]


@P
def err_optimizer_args(T, log):
    w, b = _params(T)
    O = T.optim  # noqa: N806
    return [E(f) for f in [
        lambda: O.Adam([w], betas=(1.0, 0.999)), lambda: O.Adam([w], betas=(0.9, -0.1)),
        lambda: O.Adam([w], eps=-1e-8), lambda: O.RMSprop([w], alpha=-0.1),
        lambda: O.Adadelta([w], rho=1.5), lambda: O.Rprop([w], etas=(1.5, 1.2)),
        lambda: O.Adagrad([w], lr_decay=-1.0), lambda: O.Adam([w], lr=0.1, fused=True,
                                                              foreach=True),
        lambda: O.Adam([w], betas=(0.9, T.tensor(0.99)))]]


@P
def err_scheduler_args(T, log):
    LR = T.optim.lr_scheduler
    o = _opt(T)
    return [E(f) for f in [
        lambda: LR.CosineAnnealingWarmRestarts(o, T_0=0),
        lambda: LR.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0),
        lambda: LR.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=1.5),
        lambda: LR.CosineAnnealingWarmRestarts(o, T_0=2.0),
        lambda: LR.CosineAnnealingWarmRestarts(o, T_0=2, eta_min="a"),
        lambda: LR.OneCycleLR(o, max_lr=0.5), lambda: LR.OneCycleLR(o, 0.5, total_steps=0),
        lambda: LR.OneCycleLR(o, 0.5, total_steps=10, pct_start=1.5),
        lambda: LR.OneCycleLR(o, 0.5, total_steps=10, anneal_strategy="exp"),
        lambda: LR.LinearLR(o, start_factor=1.5), lambda: LR.LinearLR(o, start_factor=0.0),
        lambda: LR.LinearLR(o, end_factor=-0.5), lambda: LR.ConstantLR(o, factor=2.0),
        lambda: LR.MultiplicativeLR(o, 0.5), lambda: LR.LambdaLR(o, 0.5),
        lambda: LR.MultiplicativeLR(o, [lambda e: 0.5, lambda e: 0.9]),
        lambda: LR.StepLR(o, 2, verbose=True)]]


@P
def err_plateau_swalr_args(T, log):
    RP = T.optim.lr_scheduler.ReduceLROnPlateau
    SW = T.optim.swa_utils.SWALR
    o = _opt(T)
    return [E(f) for f in [
        lambda: RP(o, factor=1.0), lambda: RP(o, mode="unknown"),
        lambda: RP(o, threshold_mode="pct"), lambda: RP(o, min_lr=[0.1, 0.2]),
        lambda: RP(o, verbose=True), lambda: RP(o).step(),
        lambda: SW(o, swa_lr=0.01, anneal_strategy="exp"),
        lambda: SW(o, swa_lr=0.01, anneal_epochs=-1), lambda: SW(o, swa_lr=[0.01, 0.02])]]


# ---------------------------------------------------------------- more optimizer behaviour


@P
def fused_cpu(T, log):
    return [_train(T, n, steps=3, lr=0.1, fused=True, **kw) for n, kw in [
        ("Adam", {}), ("AdamW", {"amsgrad": True}), ("SGD", {"momentum": 0.9}), ("Adagrad", {})]]


@P
def float32_others(T, log):
    f = T.float32
    return [_train(T, "RAdam", steps=8, dtype=f, lr=0.1), _train(T, "NAdam", dtype=f, lr=0.1),
            _train(T, "ASGD", dtype=f, lr=0.05, t0=2), _train(T, "Rprop", dtype=f, steps=6),
            _train(T, "Adadelta", dtype=f), _train(T, "Adamax", dtype=f, lr=0.1, foreach=True)]


@P
def maximize_others(T, log):
    return [_train(T, "RAdam", steps=8, lr=0.1, maximize=True),
            _train(T, "NAdam", lr=0.1, maximize=True, foreach=True),
            _train(T, "ASGD", lr=0.05, maximize=True, foreach=True)]


@P
def sgd_all_flags(T, log):
    return _train(T, "SGD", lr=0.01, momentum=0.8, nesterov=True, weight_decay=0.2,
                  maximize=True, foreach=True)


@P
def adam_all_flags(T, log):
    return _train(T, "Adam", steps=6, lr=0.05, amsgrad=True, weight_decay=0.1, maximize=True,
                  foreach=False)


@P
def adam_decoupled_flag(T, log):
    return _train(T, "Adam", lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)


@P
def sgd_tensor_lr(T, log):
    return _train(T, "SGD", lr=T.tensor(0.1), momentum=0.9)


@P
def adam_zero_lr(T, log):
    return _train(T, "Adam", lr=0.0)


@P
def adamw_default_wd(T, log):
    w, b = _params(T)
    return T.optim.AdamW([w]).param_groups[0]["weight_decay"]


def _complex_run(T, name, **kw):
    w = T.tensor([1 + 2j, -1 + 0.5j], requires_grad=True)
    opt = getattr(T.optim, name)([w], **kw)
    for _ in range(3):
        opt.zero_grad()
        (w.abs() ** 2).sum().backward()
        opt.step()
    return T.view_as_real(w.detach())


@P
def complex_params(T, log):
    return [_complex_run(T, "Adam", lr=0.1), _complex_run(T, "SGD", lr=0.1, momentum=0.9),
            _complex_run(T, "RMSprop", lr=0.1, centered=True)]


def _emb_run(T, name, **kw):
    emb = T.nn.Embedding(4, 2, sparse=True)
    with T.no_grad():
        emb.weight.copy_(T.arange(8.0).reshape(4, 2))
    opt = getattr(T.optim, name)(emb.parameters(), **kw)
    for idx in ([0, 1], [1, 3]):
        opt.zero_grad()
        emb(T.tensor(idx)).pow(2).sum().backward()
        opt.step()
    return emb.weight


@P
def sgd_sparse(T, log):
    return _emb_run(T, "SGD", lr=0.1), _emb_run(T, "SGD", lr=0.1, momentum=0.9)


@P
def adagrad_sparse(T, log):
    return _emb_run(T, "Adagrad", lr=0.1)


@P
def adam_sparse_err(T, log):
    return _emb_run(T, "Adam", lr=0.1)


@P
def empty_and_scalar_params(T, log):
    w = T.zeros(0, requires_grad=True)
    v = T.tensor(2.0, requires_grad=True)
    opt = T.optim.Adam([w, v], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        ((w**2).sum() + v**2).backward()
        opt.step()
    return w, v, sorted(opt.state[w])


@P
def grad_untouched_by_step(T, log):
    out = []
    for n, kw in [("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.1}), ("Adam", {}),
                  ("AdamW", {"amsgrad": True}), ("RMSprop", {"centered": True}),
                  ("Adagrad", {}), ("Adadelta", {}), ("Adamax", {}), ("NAdam", {}),
                  ("RAdam", {}), ("Rprop", {}), ("ASGD", {})]:
        w, b = _params(T)
        o = getattr(T.optim, n)([w, b], maximize=True, **kw)
        _loss(T, w, b).backward()
        g, gb = w.grad.clone(), b.grad
        for _ in range(2):
            o.step()
        out.append((n, (w.grad - g).abs().max(), b.grad is gb, w.is_leaf, w.grad_fn, w))
    return out


@P
def requires_grad_false_param(T, log):
    w = T.tensor([1.0, 2.0])
    T.optim.SGD([w], lr=0.1).step()
    return w


@P
def lbfgs_float32(T, log):
    w = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
    opt = T.optim.LBFGS([w], line_search_fn="strong_wolfe")

    def cl():
        opt.zero_grad()
        loss = ((w - T.tensor([0.5, 1.0, 2.0])) ** 4).sum() + (w**2).sum()
        loss.backward()
        return loss

    return opt.step(cl), w, opt.state[w]["func_evals"], opt.state[w]["n_iter"]


def _lbfgs_quad(T, p, **kw):
    w = T.tensor([1.0, -2.0], dtype=T.float64, requires_grad=True)
    opt = T.optim.LBFGS([w], **kw)

    def cl():
        opt.zero_grad()
        loss = (w**p).sum()
        loss.backward()
        return loss

    return opt.step(cl), w, opt.state[w]["func_evals"], opt.state[w]["n_iter"]


@P
def lbfgs_tolerances(T, log):
    return (_lbfgs_quad(T, 2, tolerance_grad=1e-3, tolerance_change=1e-2, max_iter=50),
            _lbfgs_quad(T, 4, lr=0.1, max_iter=50, max_eval=7))


@P
def lbfgs_no_closure(T, log):
    w = T.tensor([1.0], requires_grad=True)
    T.optim.LBFGS([w]).step()


@P
def lbfgs_state_dict(T, log):
    w, b = _params(T)
    opt = T.optim.LBFGS([w, b], max_iter=3)

    def cl():
        opt.zero_grad()
        loss = _loss(T, w, b)
        loss.backward()
        return loss

    opt.step(cl)
    sd = opt.state_dict()
    return sorted(sd["state"][0]), sd["param_groups"]


@P
def lbfgs_strong_wolfe_history(T, log):
    w = T.tensor([3.0, -2.0, 1.0, 0.5], dtype=T.float64, requires_grad=True)
    opt = T.optim.LBFGS([w], lr=1, history_size=3, max_iter=20, line_search_fn="strong_wolfe")
    A = T.tensor([[4.0, 1, 0, 0], [1, 3, 1, 0], [0, 1, 2, 0.5], [0, 0, 0.5, 1]],  # noqa: N806
                 dtype=T.float64)

    def cl():
        opt.zero_grad()
        loss = w @ A @ w + (w**4).sum() - w.sum()
        loss.backward()
        return loss

    r = [opt.step(cl) for _ in range(2)]
    return r, w, opt.state[w]["func_evals"], opt.state[w]["n_iter"]


@P
def opt_generator_params(T, log):
    m = T.nn.Linear(2, 2)
    return len(T.optim.SGD(m.parameters(), lr=0.1).param_groups[0]["params"])


@P
def deepcopy_opt(T, log):
    w, b = _params(T)
    o = T.optim.Adam([w, b], lr=0.1)
    o.register_step_post_hook(lambda *a: log.append(1))
    _loss(T, w, b).backward()
    o.step()
    o2 = copy.deepcopy(o)
    o2.step()
    return sorted(o2.state_dict()["state"][0]), o2.param_groups[0]["lr"], type(o2.state).__name__


@P
def pickle_opt(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1, momentum=0.9)
    _loss(T, w, b).backward()
    o.step()
    o2 = pickle.loads(pickle.dumps(o))
    o2.step()
    return o2.param_groups[0]["params"][0], sorted(o2.state_dict()["state"])


@P
def save_load_state_dict(T, log):
    w, b = _params(T)
    o = T.optim.Adam([w, b], lr=0.1)
    _loss(T, w, b).backward()
    o.step()
    buf = io.BytesIO()
    T.save(o.state_dict(), buf)
    buf.seek(0)
    o2 = T.optim.Adam([w, b])
    o2.load_state_dict(T.load(buf))
    return o2.state[w]["exp_avg"], o2.state[w]["step"], o2.param_groups[0]["lr"]


@P
def state_defaultdict(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    return o.state[w], len(o.state), type(o.state).__name__


@P
def state_init_values(T, log):
    w, b = _params(T)
    o = T.optim.Adagrad([w, b], initial_accumulator_value=0.3)
    o2 = T.optim.Adam([w, b])
    _loss(T, w, b).backward()
    o2.step()
    st = o2.state[w]["step"]
    return sorted(o.state[w]), o.state[w]["sum"], o.state[w]["step"], st, st.requires_grad


@P
def named_mixed_err(T, log):
    w, b = _params(T)
    o = T.optim.SGD([("w", w)], lr=0.1)
    o.add_param_group({"params": [b]})


@P
def named_load_into_unnamed(T, log):
    w, b = _params(T)
    o = T.optim.SGD([("w", w), ("b", b)], lr=0.1, momentum=0.9)
    _loss(T, w, b).backward()
    o.step()
    o2 = T.optim.SGD([w, b], lr=0.1)
    o2.load_state_dict(o.state_dict())
    o3 = T.optim.Adam([("w", w), ("b", b)])
    o3.load_state_dict(T.optim.Adam([("w", w), ("b", b)], lr=0.3).state_dict())
    return o2.state_dict()["param_groups"], o3.param_groups[0]["param_names"], o3.param_groups[
        0]["lr"]


@P
def named_dup_names(T, log):
    w, b = _params(T)
    o = T.optim.SGD([{"params": [("w", w)]}, {"params": [("w", b)]}], lr=0.1)
    return [g["param_names"] for g in o.param_groups]


@P
def zero_grad_with_graph(T, log):
    w = T.tensor([1.0, 2.0], requires_grad=True)
    o = T.optim.SGD([w], lr=0.1)
    (w**3).sum().backward(create_graph=True)
    g = w.grad
    o.zero_grad(set_to_none=False)
    return w.grad, w.grad.grad_fn is None, g is w.grad


@P
def custom_optimizer(T, log):
    class MyOpt(T.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        @T.no_grad()
        def step(self, closure=None):
            for g in self.param_groups:
                for p in g["params"]:
                    if p.grad is not None:
                        s = self.state[p]
                        s["n"] = s.get("n", 0) + 1
                        p.add_(p.grad, alpha=-g["lr"] * s["n"])

    w, b = _params(T)
    o = MyOpt([w, b])
    o.register_step_post_hook(lambda *a: log.append("post"))
    for _ in range(3):
        o.zero_grad()
        _loss(T, w, b).backward()
        o.step()
    return w, o.state_dict(), repr(o)


@P
def base_optimizer(T, log):
    w, b = _params(T)
    o = T.optim.Optimizer([w], {"lr": 1})
    return o.defaults, E(o.step)


@P
def load_state_dict_tensor_lr(T, log):
    w, b = _params(T)
    o = T.optim.Adam([w, b], lr=T.tensor(0.3))
    sd = o.state_dict()
    o2 = T.optim.Adam([w, b], lr=0.1)
    o2.load_state_dict(sd)
    o3 = T.optim.Adam([w, b], lr=T.tensor(0.1))
    o3.load_state_dict(T.optim.Adam([w, b], lr=0.3).state_dict())
    o.param_groups[0]["lr"].fill_(0.5)
    return sd["param_groups"][0]["lr"], o2.param_groups[0]["lr"], o3.param_groups[0]["lr"]


@P
def load_state_dict_odd(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1, momentum=0.9)
    sd = o.state_dict()
    sd["state"][5] = {"momentum_buffer": T.ones(2)}
    o.load_state_dict(sd)
    return len(o.state), list(o.state_dict()["state"]), E(lambda: o.load_state_dict({"state": {}}))


@P
def sgd_closure_returns_loss(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)

    def cl():
        o.zero_grad()
        loss = _loss(T, w, b)
        loss.backward()
        return loss

    return o.step(cl), w


@P
def hook_remove_in_hook(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    o2 = T.optim.SGD([b], lr=0.1)
    hs = []

    def h(opt, a, k):
        log.append("h")
        hs[0].remove()

    hs.append(o.register_step_pre_hook(h))
    o.step()
    o.step()
    o2.step()
    return log


# ---------------------------------------------------------------- more lr_scheduler behaviour


@P
def sched_custom_subclass(T, log):
    class MyS(T.optim.lr_scheduler.LRScheduler):
        def get_lr(self):
            return [b * 0.5**self.last_epoch for b in self.base_lrs]

    return _sched(T, lambda T, o: MyS(o), steps=5)


@P
def sched_custom_subclass_chainable(T, log):
    class MyS(T.optim.lr_scheduler.LRScheduler):
        def __init__(self, o, k):
            self.k = k
            super().__init__(o)

        def get_lr(self):
            return [g["lr"] * self.k for g in self.optimizer.param_groups]

    return _sched(T, lambda T, o: MyS(o, 0.9), steps=4)


@P
def sched_external_lr_change(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w, b], lr=0.1)
    s = T.optim.lr_scheduler.CosineAnnealingLR(o, 10)
    out = []
    for i in range(8):
        o.step()
        s.step()
        if i == 3:
            o.param_groups[0]["lr"] = 0.5
        out.append(s.get_last_lr())
    return out


@P
def sched_epoch_arg(T, log):
    LR = T.optim.lr_scheduler
    out = []
    for make, epochs in [(lambda o: LR.StepLR(o, 3, 0.5), [2, 7, 3, 10]),
                         (lambda o: LR.ExponentialLR(o, 0.5), [2, 5, 1]),
                         (lambda o: LR.CosineAnnealingLR(o, 10, 0.01), [2, 5, 1, 15]),
                         (lambda o: LR.MultiStepLR(o, [2, 4, 4]), [3, 5, 1]),
                         (lambda o: LR.PolynomialLR(o, 5, 1.5), [2, 4, 7]),
                         (lambda o: LR.LinearLR(o, 0.2, total_iters=5), [2, 4, 7]),
                         (lambda o: LR.ConstantLR(o, 0.5, total_iters=3), [1, 4, 2])]:
        o = _opt(T)
        s = make(o)
        for e in epochs:
            o.step()
            s.step(e)
            out.append(s.get_last_lr())
    return out


@P
def lambdalr_callable_obj_sd(T, log):
    class F:
        def __init__(self, k):
            self.k = k

        def __call__(self, e):
            return self.k**e

    o = _opt(T)
    s = T.optim.lr_scheduler.LambdaLR(o, F(0.5))
    o.step()
    s.step()
    sd = s.state_dict()
    o2 = _opt(T)
    s2 = T.optim.lr_scheduler.LambdaLR(o2, F(0.9))
    s2.load_state_dict(sd)
    o2.step()
    s2.step()
    return sd["lr_lambdas"], s2.lr_lambdas[0].k, s2.get_last_lr()


@P
def lambdalr_raises(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (e - 1))
    o.step()
    s.step()


@P
def lambdalr_group_added_later(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w], lr=0.1)
    s = T.optim.lr_scheduler.LambdaLR(o, lambda e: 0.5)
    o.add_param_group({"params": [b], "lr": 0.2})
    o.step()
    s.step()
    return s.get_last_lr()


@P
def steplr_group_added_later(T, log):
    w, b = _params(T)
    o = T.optim.SGD([w], lr=0.1)
    s = T.optim.lr_scheduler.StepLR(o, 1, 0.5)
    o.add_param_group({"params": [b], "lr": 0.2})
    o.step()
    s.step()
    return s.get_last_lr()


@P
def plateau_more(T, log):
    return (_plateau(T, [1.0, float("nan"), float("nan")], patience=0),
            _plateau(T, [1.0, 1.05, 1.2, 1.21, 1.22, 1.5, 1.5], mode="max", patience=1,
                     threshold=0.1),
            _plateau(T, [3, 3, 3, 2, 2, 2], patience=1, factor=0.5),
            _plateau(T, [1.0, 1.3, 1.4, 1.45, 2.0, 2.1], mode="max", patience=0, threshold=0.2,
                     threshold_mode="abs"))


@P
def plateau_epoch_warn(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.ReduceLROnPlateau(o, patience=0)
    o.step()
    s.step(1.0, 5)
    s.step(2.0)
    return s.last_epoch, s.get_last_lr()


@P
def plateau_initial(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.ReduceLROnPlateau(o, patience=0, cooldown=2)
    out = [sorted(vars(s)), s.best, s.mode_worse, s.last_epoch, s.min_lrs, s.get_last_lr(),
           isinstance(s, T.optim.lr_scheduler.LRScheduler)]
    for m in [1, 2, 2, 2, 2, 2]:
        s.step(m)
        out.append((s.in_cooldown, s.get_last_lr()))
    return out


@P
def sched_get_last_lr_initial(T, log):
    w, b = _params(T)
    o = T.optim.SGD([{"params": [w], "lr": 0.3}, {"params": [b]}], lr=0.1)
    s = T.optim.lr_scheduler.LinearLR(o, 0.5)
    return s.get_last_lr(), [g["lr"] for g in o.param_groups], s.base_lrs


@P
def warn_opt_step_overridden(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.StepLR(o, 2)
    o.step = lambda *a, **k: None
    o.step()
    s.step()
    return s.get_last_lr()


@P
def sched_counters(T, log):
    o = _opt(T)
    s = T.optim.lr_scheduler.ExponentialLR(o, 0.5)
    r = [s._step_count, hasattr(s, "print_lr"), hasattr(s, "verbose")]
    o.step()
    s.step()
    s.step()
    return r, s._step_count, s.last_epoch, type(s.last_epoch).__name__


@P
def sched_zero_period_err(T, log):
    return (E(lambda: _sched(T, _S("StepLR", 0), steps=2)),
            E(lambda: _sched(T, _S("CosineAnnealingLR", 0), steps=2)))


@P
def cyclic_odd_steps(T, log):
    return (_sched(T, _S("CyclicLR", 0.01, 0.1, step_size_up=2.5, step_size_down=1.5,
                         cycle_momentum=False), steps=10),
            _sched(T, _S("CyclicLR", 0.1, 0.01, step_size_up=2, cycle_momentum=False), steps=6))


@P
def cyclic_state_scale_fn(T, log):
    o = _opt(T, momentum=0.9)
    s = T.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, scale_fn=lambda x: 1.0)
    sd = s.state_dict()
    return sorted(sd), sd["_scale_fn_custom"], E(
        lambda: T.optim.lr_scheduler.CyclicLR(_opt(T, momentum=0.9), 0.01, 0.1, last_epoch=4))


@P
def onecycle_more(T, log):
    w, b = _params(T)
    o = T.optim.SGD([{"params": [w]}, {"params": [b]}], lr=0.1, momentum=0.9)
    s = T.optim.lr_scheduler.OneCycleLR(o, [0.5, 1.0], total_steps=6, base_momentum=[0.8, 0.7],
                                        three_phase=True)
    out = [(s.get_last_lr(), [g["momentum"] for g in o.param_groups])]
    for _ in range(5):
        o.step()
        s.step()
        out.append((s.get_last_lr(), [g["momentum"] for g in o.param_groups]))
    sd = s.state_dict()
    return out, sorted(o.param_groups[0]), sorted(sd), sd["_schedule_phases"]


@P
def onecycle_sgd_no_momentum(T, log):
    return _sched(T, _S("OneCycleLR", 0.5, total_steps=5), steps=3)


@P
def exp_negative_gamma(T, log):
    return _sched(T, _S("ExponentialLR", -0.5), steps=3)


@P
def polynomial_power_half(T, log):
    return _sched(T, _S("PolynomialLR", 4, 0.5), steps=6)


@P
def multiplicative_list(T, log):
    w, b = _params(T)
    o = T.optim.SGD([{"params": [w]}, {"params": [b]}], lr=0.1)
    s = T.optim.lr_scheduler.MultiplicativeLR(o, [lambda e: 0.5, lambda e: 0.9])
    out = []
    for _ in range(3):
        o.step()
        s.step()
        out.append(s.get_last_lr())
    return out, sorted(s.state_dict())


@P
def sequential_more(T, log):
    LR = T.optim.lr_scheduler
    o = _opt(T)
    s = LR.SequentialLR(o, [LR.ExponentialLR(o, 0.5), LR.LinearLR(o, 0.5, total_iters=2)],
                        milestones=[2])
    out = [s.get_last_lr(), o.param_groups[0]["lr"]]
    for _ in range(5):
        o.step()
        s.step()
        out.append(s.get_last_lr())
    o = _opt(T)
    return out, [E(f) for f in [
        lambda: LR.SequentialLR(o, [LR.ReduceLROnPlateau(o), LR.ExponentialLR(o, 0.5)], [2]),
        lambda: LR.SequentialLR(o, [], milestones=[]),
        lambda: LR.SequentialLR(o, [5, 6], milestones=[1])]]


@P
def sequential_milestone_zero(T, log):
    def make(T, o):
        LR = T.optim.lr_scheduler
        return LR.SequentialLR(o, [LR.ExponentialLR(o, 0.5), LR.StepLR(o, 2)], milestones=[0])

    return _sched(T, make, steps=4)


@P
def chained_plateau_err(T, log):
    o = _opt(T)
    LR = T.optim.lr_scheduler
    LR.ChainedScheduler([LR.ExponentialLR(o, 0.5), LR.ReduceLROnPlateau(o)])


@P
def sd_round_composite(T, log):
    def chained(T, o):
        LR = T.optim.lr_scheduler
        return LR.ChainedScheduler([LR.StepLR(o, 2, 0.5), LR.ExponentialLR(o, 0.9)])

    def seq(T, o):
        LR = T.optim.lr_scheduler
        return LR.SequentialLR(o, [LR.LinearLR(o, 0.1, total_iters=3),
                                   LR.CosineAnnealingLR(o, 6)], milestones=[3])

    return (_sd_round(T, chained), _sd_round(T, seq, steps=2),
            _sd_round(T, lambda T, o: T.optim.swa_utils.SWALR(o, 0.01, anneal_epochs=6), steps=2))


# ---------------------------------------------------------------- more swa_utils


@P
def swalr_state_and_zero_epochs(T, log):
    o = _opt(T)
    s = T.optim.swa_utils.SWALR(o, 0.05, anneal_epochs=3)
    o.step()
    s.step()
    return sorted(s.state_dict()), _sched(
        T, lambda T, o: T.optim.swa_utils.SWALR(o, 0.05, anneal_epochs=0), steps=3)


@P
def averaged_model_load_sd(T, log):
    m = _lin(T)
    am = T.optim.swa_utils.AveragedModel(m)
    am.update_parameters(m)
    am2 = T.optim.swa_utils.AveragedModel(_lin(T))
    am2.load_state_dict(am.state_dict())
    return am2.n_averaged, am2.module.weight


@P
def averaged_model_fns(T, log):
    swa = T.optim.swa_utils
    m = _lin(T)
    am = swa.AveragedModel(m, multi_avg_fn=swa.get_swa_multi_avg_fn())
    m64 = _lin(T).double()
    am64 = swa.AveragedModel(m64, avg_fn=swa.get_swa_avg_fn())
    for k in range(3):
        with T.no_grad():
            m.weight.add_(float(k))
            m64.weight.mul_(1.5)
        am.update_parameters(m)
        am64.update_parameters(m64)
    f = swa.get_ema_avg_fn(0.8)
    a = f(T.tensor([1.0, 2.0]), T.tensor([3.0, 0.0]), T.tensor(1))
    c = swa.get_swa_avg_fn()(T.tensor([1.0, 2.0]), T.tensor([3.0, 0.0]), T.tensor(3))
    return am.module.weight, am64.module.weight, a, c


@P
def averaged_model_both_fns_err(T, log):
    swa = T.optim.swa_utils
    swa.AveragedModel(_lin(T), avg_fn=swa.get_ema_avg_fn(0.5),
                      multi_avg_fn=swa.get_ema_multi_avg_fn(0.5)).update_parameters(_lin(T))


@P
def averaged_model_attrs(T, log):
    m = T.nn.Sequential(T.nn.Linear(2, 2), T.nn.Dropout(0.5))
    am = T.optim.swa_utils.AveragedModel(m)
    lin = _lin(T)
    am2 = T.optim.swa_utils.AveragedModel(lin)
    return (am.training, am.module.training, sorted(dict(am.named_buffers())),
            len(list(am.parameters())), am2.module.weight.requires_grad,
            am2.n_averaged.requires_grad, am2.module.weight is lin.weight)


@P
def averaged_model_forward_kwargs(T, log):
    class Mm(T.nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    return T.optim.swa_utils.AveragedModel(Mm())(T.tensor([1.0]), scale=3.0)


@P
def averaged_model_mismatch(T, log):
    T.optim.swa_utils.AveragedModel(_lin(T)).update_parameters(T.nn.Linear(3, 1))


@P
def update_bn_momenta(T, log):
    m = T.nn.Sequential(T.nn.BatchNorm1d(2, momentum=0.3), T.nn.BatchNorm1d(2, momentum=None))
    m.eval()
    T.optim.swa_utils.update_bn([T.tensor([[1.0, 2.0], [3.0, 0.0]]),
                                 T.tensor([[2.0, 2.0], [0.0, 0.5]])], m)
    return (m[0].momentum, m[1].momentum, m[0].running_mean, m[1].running_var,
            m[1].num_batches_tracked, m.training)


# Several small probes run as one case each (the names inside say which part differs).
_GROUPS = {
    "sgd_basic": ["sgd_plain", "sgd_default_lr", "sgd_groups", "sgd_closure_returns_loss"],
    "sgd_momentum_variants": ["sgd_momentum", "sgd_nesterov", "sgd_dampening"],
    "sgd_wd_maximize": ["sgd_weight_decay", "sgd_maximize", "sgd_all_flags"],
    "sgd_foreach_dtype": ["sgd_foreach", "sgd_no_foreach", "sgd_float32", "sgd_tensor_lr"],
    "adam_basic": ["adam_default", "adam_groups", "adam_zero_lr"],
    "adam_amsgrad_maximize": ["adam_amsgrad", "adam_maximize", "adam_all_flags"],
    "adam_foreach_dtype": ["adam_foreach", "adam_float32", "adam_tensor_lr"],
    "adam_weight_decay": ["adam_weight_decay_betas", "adam_decoupled_flag"],
    "adamw": ["adamw_default", "adamw_amsgrad_wd", "adamw_default_wd"],
    "adamax": ["adamax_default", "adamax_wd_maximize"],
    "nadam": ["nadam_default", "nadam_wd_momentum_decay"],
    "radam": ["radam_default", "radam_wd_foreach"],
    "adagrad": ["adagrad_default", "adagrad_wd_maximize"],
    "adadelta": ["adadelta_default", "adadelta_rho_wd"],
    "rmsprop_plain": ["rmsprop_default", "rmsprop_momentum"],
    "rmsprop_centered_all": ["rmsprop_centered", "rmsprop_centered_momentum_wd"],
    "rprop": ["rprop_default", "rprop_etas_sizes"],
    "asgd": ["asgd_default", "asgd_t0"],
    "lbfgs_fixed_step": ["lbfgs_default", "lbfgs_history"],
    "lbfgs_errors": ["lbfgs_bad_line_search", "lbfgs_two_groups_err", "lbfgs_no_closure"],
    "construction_errors": ["err_empty_params", "err_tensor_params", "err_non_leaf",
                            "err_overlap_groups", "err_params_set"],
    "add_param_group_errors": ["add_param_group_overlap", "add_param_group_not_dict",
                               "add_param_group_set", "add_param_group_non_tensor"],
    "round_trip_sgd_adam": ["round_trip_sgd", "round_trip_adam"],
    "round_trip_others": ["round_trip_rmsprop", "round_trip_asgd", "round_trip_rprop"],
    "steplr_multisteplr": ["steplr", "steplr_default_gamma", "multisteplr",
                           "multisteplr_unsorted"],
    "cosine_lr": ["cosine", "cosine_default"],
    "cosine_warm_restarts_seq": ["cosine_warm_restarts", "cosine_warm_restarts_t1"],
    "cycliclr_modes": ["cycliclr_triangular", "cycliclr_triangular2", "cycliclr_exp_range"],
    "onecycle_variants": ["onecycle", "onecycle_linear_three_phase", "onecycle_epochs"],
    "linearlr_variants": ["linearlr", "linearlr_default", "linearlr_decay"],
    "constantlr_variants": ["constantlr", "constantlr_default"],
    "polynomiallr_variants": ["polynomiallr", "polynomiallr_default", "polynomial_power_half"],
    "plateau_min_max": ["plateau_min", "plateau_max"],
    "plateau_abs_eps": ["plateau_abs_cooldown", "plateau_eps"],
    "sd_round_simple": ["sd_round_steplr", "sd_round_multistep", "sd_round_linear"],
    "sd_round_cosine_both": ["sd_round_cosine", "sd_round_warm_restarts", "sd_round_poly"],
    "sd_round_cyclic_onecycle": ["sd_round_cyclic", "sd_round_onecycle"],
    "update_bn_all": ["update_bn", "update_bn_tuple_loader", "update_bn_no_bn",
                      "update_bn_momenta"],
    "averaged_model_avg_fns": ["averaged_model_ema", "averaged_model_ema_avg_fn",
                               "averaged_model_custom_avg"],
    "swalr_all": ["swalr_cos", "swalr_linear_groups", "swalr_state_and_zero_epochs"],
    "zero_grad_all": ["zero_grad_none", "zero_grad_zeros", "zero_grad_no_grad_yet",
                      "zero_grad_with_graph"],
    "warn_sched_order": ["warn_sched_before_opt", "warn_sched_no_opt_step",
                         "warn_plateau_before_opt", "warn_opt_step_overridden"],
    "sparse_grads": ["sgd_sparse", "adagrad_sparse", "adam_sparse_err",
                     "sparse_adam_dense_grad_err"],
    "hooks_state_dict": ["state_dict_hooks", "load_state_dict_hooks", "hooks_prepend"],
    "cycliclr_errors": ["cycliclr_no_momentum_err", "cycliclr_bad_mode", "cycliclr_list_len_err"],
    "sequential_chained_errors": ["sequentiallr_milestone_err", "sequentiallr_other_opt_err",
                                  "chained_other_opt_err", "chained_plateau_err"],
    "lambdalr_errors": ["lambdalr_count_err", "lambdalr_raises"],
    "sd_sched_structure": ["sd_lambdalr", "sd_steplr_values", "sd_multistep_milestones"],
    "sd_composite_structure": ["sd_sequential", "sd_chained"],
    "state_dict_structure": ["state_dict_structure_sgd", "state_dict_no_momentum_sgd"],
    "load_state_dict_errors": ["load_state_dict_group_count_err",
                               "load_state_dict_group_size_err"],
    "optimizer_reprs": ["optimizer_repr", "optimizer_repr_adam"],
    "resume": ["resume_missing_initial_lr", "resume_with_initial_lr"],
    "sched_basic_attrs": ["sched_not_optimizer", "sched_attrs", "sched_isinstance",
                          "sched_counters"],
    "exp_lr_variants": ["exponentiallr", "exp_gamma_zero", "exp_negative_gamma"],
    "named_params_all": ["named_params", "named_mixed_err", "named_dup_names"],
    "plateau_misc": ["plateau_min_lr_list", "plateau_tensor_metric"],
    "group_added_later": ["lambdalr_group_added_later", "steplr_group_added_later"],
}


def _merged(name, fns):
    def case(T, log):
        return [(f.__name__, E(lambda f=f: f(T, log))) for f in fns]

    case.__name__ = name
    return case


def _cases():
    by_name = {f.__name__: f for f in _PROBES}
    grouped = {n for ns in _GROUPS.values() for n in ns}
    assert grouped <= set(by_name), grouped - set(by_name)
    out = [f for f in _PROBES if f.__name__ not in grouped]
    return out + [_merged(g, [by_name[n] for n in ns]) for g, ns in _GROUPS.items()]


_CASES = _cases()


@pytest.mark.parametrize("fn", _CASES, ids=[f.__name__ for f in _CASES])
def test_optim_matches_torch(fn):
    expected = _run(fn, torch)
    got = _run(fn, jitgrad)
    assert _eq(got, expected, 1e-6), (got, expected)
