"""Compiling an optimizer step, alone and with an LR scheduler, written for these tests in
the way the PyTorch compiled-optimizer recipes are commonly written (modelled on the API
usage of those recipes, not a copy of them):

- ``torch.cuda.is_available`` / ``get_device_capability`` to choose the device;
- ``nn.Linear(in, out, False, device=...)`` layers in ``nn.Sequential``, a backward;
- ``opt.step()`` inside ``@torch.compile()``, checked against an eager twin, and timed with
  ``torch.utils.benchmark.Timer(stmt=..., globals=...).blocked_autorange``;
- Adam with a tensor ``lr`` plus ``lr_scheduler.LinearLR`` stepping in one
  ``@torch.compile(fullgraph=False)`` function, then a float ``lr`` with
  ``torch._logging.set_logs(recompiles=True)`` (one recompile per new lr).
"""
import jitgrad as torch
import jitgrad.utils.benchmark as benchmark

torch.manual_seed(0)
dev = "cuda" if torch.cuda.is_available() else "cpu"
if dev == "cuda" and torch.cuda.get_device_capability() < (7, 0):
    raise SystemExit("torch.compile needs a newer GPU")


def stack(**kw):
    return torch.nn.Sequential(*(torch.nn.Linear(64, 64, False, **kw) for _ in range(4)))


net = stack(device=dev)
twin = stack()
twin.load_state_dict(net.state_dict())
sample = torch.rand(64, device=dev)
for m in (net, twin):
    m(sample).sum().backward()

adam = torch.optim.Adam(net.parameters(), lr=0.01)
twin_adam = torch.optim.Adam(twin.parameters(), lr=0.01)


@torch.compile()
def compiled_step():
    adam.step()


for _ in range(5):  # the first call compiles
    compiled_step()
    twin_adam.step()
compiled_equals_eager = all(torch.allclose(a, b, rtol=1e-5, atol=1e-6)
                            for a, b in zip(net.parameters(), twin.parameters()))


def mean_us(func):
    timer = benchmark.Timer(stmt="func()", globals={"func": func})
    return timer.blocked_autorange(min_run_time=0.05).mean * 1e6


eager_runtime = mean_us(adam.step)
compiled_runtime = mean_us(compiled_step)
print(f"Adam.step eager {eager_runtime:.1f} us, compiled {compiled_runtime:.1f} us")


def scheduled(lr):
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    warmup = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)

    @torch.compile(fullgraph=False)
    def both():
        opt.step()
        warmup.step()

    return opt, both


# a tensor lr: the scheduler writes into it, so the compiled function is reused
opt, fn = scheduled(torch.tensor(0.01))
tensor_lrs = []
for _ in range(5):
    fn()
    lr = opt.param_groups[0]["lr"]
    tensor_lrs.append((type(lr).__name__, float(lr)))
print(tensor_lrs)

# a float lr is a constant to the compiler: each new value retraces
opt, fn = scheduled(0.01)
float_lrs = []
torch._logging.set_logs(recompiles=True)  # show each retrace
for _ in range(5):
    fn()
    float_lrs.append(opt.param_groups[0]["lr"])
torch._logging.set_logs()  # back to the defaults
print(float_lrs)
