# ruff: noqa: A001, E402 (tutorial code as is)
"""pytorch/tutorials recipes_source/{compiling_optimizer,compiling_optimizer_lr_scheduler}.py:
``opt.step()`` wrapped in ``@torch.compile()`` and timed against the eager step with
utils.benchmark; Adam with a tensor ``lr`` paired with a LinearLR scheduler inside one compiled
function, then with a float ``lr`` and ``torch._logging.set_logs(recompiles=True)``.

Changes: the model is 4 layers of 64 x 64 on the CPU (the recipes use 10 of 1024 x 1024 on
CUDA, and exit where the GPU's compute capability is below 7.0: that check runs only where
CUDA is); the recipe's ``assert eager_runtime > compiled_runtime`` is recorded, not asserted
(timings on a shared test machine); an eager copy of each optimizer takes the same steps so
that the compiled steps can be compared with it; the logging is turned off again at the end."""
import jitgrad as torch

torch.manual_seed(0)
device = "cuda" if torch.cuda.is_available() else "cpu"

model = torch.nn.Sequential(
    *[torch.nn.Linear(64, 64, False, device=device) for _ in range(4)]
)
input = torch.rand(64, device=device)
output = model(input)
output.sum().backward()
reference = torch.nn.Sequential(*[torch.nn.Linear(64, 64, False) for _ in range(4)])
reference.load_state_dict(model.state_dict())
reference(input).sum().backward()

# exit cleanly if we are on a device that doesn't support torch.compile
if torch.cuda.is_available() and torch.cuda.get_device_capability() < (7, 0):
    print("Exiting because torch.compile is not supported on this device.")
    import sys
    sys.exit(0)


opt = torch.optim.Adam(model.parameters(), lr=0.01)


@torch.compile()
def fn():
    opt.step()


# Let's define a helpful benchmarking function:
import jitgrad.utils.benchmark as benchmark


def benchmark_torch_function_in_microseconds(f, *args, **kwargs):
    t0 = benchmark.Timer(
        stmt="f(*args, **kwargs)", globals={"args": args, "kwargs": kwargs, "f": f}
    )
    return t0.blocked_autorange(min_run_time=0.05).mean * 1e6


# Warmup runs to compile the function
ref_opt = torch.optim.Adam(reference.parameters(), lr=0.01)
for _ in range(5):
    fn()
    ref_opt.step()
compiled_equals_eager = all(torch.allclose(p, q, rtol=1e-5, atol=1e-6)
                            for p, q in zip(model.parameters(), reference.parameters()))

eager_runtime = benchmark_torch_function_in_microseconds(opt.step)
compiled_runtime = benchmark_torch_function_in_microseconds(fn)

compiled_faster = eager_runtime > compiled_runtime

print(f"eager runtime: {eager_runtime}us")
print(f"compiled runtime: {compiled_runtime}us")

# ------------------------------------------------------------- with an LR scheduler
# !!! IMPORTANT !!! Wrap the lr in a Tensor if we are pairing the
# the optimizer with an LR Scheduler.
# Without this, torch.compile will recompile as the value of the LR
# changes.
opt = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))
sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)

@torch.compile(fullgraph=False)
def fn():
    opt.step()
    sched.step()


tensor_lrs = []
# Warmup runs to compile the function
for _ in range(5):
    fn()
    print(opt.param_groups[0]["lr"])
    tensor_lrs.append((type(opt.param_groups[0]["lr"]).__name__,
                       float(opt.param_groups[0]["lr"])))

# No longer wrap the LR in a tensor here
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)

@torch.compile(fullgraph=False)
def fn():
    opt.step()
    sched.step()

# Setup logging to view recompiles
torch._logging.set_logs(recompiles=True)

float_lrs = []
# Warmup runs to compile the function
# We will now recompile on each iteration
# as the value of the lr is mutated.
for _ in range(5):
    fn()
    float_lrs.append(opt.param_groups[0]["lr"])
torch._logging.set_logs()
