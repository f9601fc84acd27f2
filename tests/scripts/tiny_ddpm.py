# ruff: noqa: B007, E402, E501, F401, F841, N801, S108, UP008, UP039 (tanelp's code as is)
"""tanelp/tiny-diffusion ddpm.py: a DDPM on 2-D points, with positional_embeddings.py's
sinusoidal (and learnable, linear, zero, identity) embeddings, the MLP of GELU blocks, the
NoiseScheduler (torch.linspace, torch.cumprod(..., axis=0), F.pad(..., value=1.), add_noise,
reconstruct_x0, q_posterior, step), the DataLoader over datasets.py's TensorDataset of
sklearn's moons, AdamW, nn.utils.clip_grad_norm_, the sampling loop under torch.no_grad, and
torch.save of the state_dict.

Changes: positional_embeddings.py and datasets.py (modules next to ddpm.py) are inlined (only
the moons, line and circle sets: dino reads a .tsv of the repository); tqdm is not installed
here, so a small stand-in counts its updates; matplotlib neither, so the frames' scatter plots
are recorded by a stand-in; the command line is parsed from an empty list, with smaller
defaults (the moons, not dino; 2560 points, not 8000; 4 epochs, not 200; lr 3e-3, not 1e-3;
16 timesteps, not 50; 200 samples at evaluation, not 1000; 64-wide embeddings and hidden
layers, not 128); torch.manual_seed(0) for repeatable runs; files go to a
temporary directory. Sections marked "(added)" are not tanelp's: they record fixed-weight
results to compare with torch.
"""
import argparse
import os
import tempfile

import jitgrad as torch
from jitgrad import nn
from jitgrad.nn import functional as F
from jitgrad.utils.data import DataLoader
# from tqdm.auto import tqdm

# import matplotlib.pyplot as plt
import numpy as np

# import datasets
# from positional_embeddings import PositionalEmbedding


class tqdm:  # (stand-in for tqdm.auto.tqdm: iterates, counts updates, keeps the postfix)
    bars = []

    def __init__(self, iterable=None, total=None):
        self.iterable, self.total, self.n, self.postfix, self.desc = iterable, total, 0, {}, ""
        tqdm.bars.append(self)

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.n += 1

    def set_description(self, desc):
        self.desc = desc

    def update(self, n=1):
        self.n += n

    def set_postfix(self, **kwargs):
        self.postfix = kwargs

    def close(self):
        pass


class plt:  # (stand-in for matplotlib.pyplot: records what would be drawn and saved)
    saved = []

    @staticmethod
    def figure(figsize=None):
        pass

    @staticmethod
    def scatter(x, y):
        assert len(x) == len(y)

    @staticmethod
    def xlim(lo, hi):
        pass

    @staticmethod
    def ylim(lo, hi):
        pass

    @staticmethod
    def savefig(path):
        plt.saved.append(os.path.basename(path))

    @staticmethod
    def close():
        pass


# ---------------------------------------------------------------- positional_embeddings.py
'''Different methods for positional embeddings. These are not essential for understanding DDPMs, but are relevant for the ablation study.'''


class SinusoidalEmbedding(nn.Module):
    def __init__(self, size: int, scale: float = 1.0):
        super().__init__()
        self.size = size
        self.scale = scale

    def forward(self, x: torch.Tensor):
        x = x * self.scale
        half_size = self.size // 2
        emb = torch.log(torch.Tensor([10000.0])) / (half_size - 1)
        emb = torch.exp(-emb * torch.arange(half_size))
        emb = x.unsqueeze(-1) * emb.unsqueeze(0)
        emb = torch.cat((torch.sin(emb), torch.cos(emb)), dim=-1)
        return emb

    def __len__(self):
        return self.size


class LinearEmbedding(nn.Module):
    def __init__(self, size: int, scale: float = 1.0):
        super().__init__()
        self.size = size
        self.scale = scale

    def forward(self, x: torch.Tensor):
        x = x / self.size * self.scale
        return x.unsqueeze(-1)

    def __len__(self):
        return 1


class LearnableEmbedding(nn.Module):
    def __init__(self, size: int):
        super().__init__()
        self.size = size
        self.linear = nn.Linear(1, size)

    def forward(self, x: torch.Tensor):
        return self.linear(x.unsqueeze(-1).float() / self.size)

    def __len__(self):
        return self.size


class IdentityEmbedding(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        return x.unsqueeze(-1)

    def __len__(self):
        return 1


class ZeroEmbedding(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor):
        return x.unsqueeze(-1) * 0

    def __len__(self):
        return 1


class PositionalEmbedding(nn.Module):
    def __init__(self, size: int, type: str, **kwargs):
        super().__init__()

        if type == "sinusoidal":
            self.layer = SinusoidalEmbedding(size, **kwargs)
        elif type == "linear":
            self.layer = LinearEmbedding(size, **kwargs)
        elif type == "learnable":
            self.layer = LearnableEmbedding(size)
        elif type == "zero":
            self.layer = ZeroEmbedding()
        elif type == "identity":
            self.layer = IdentityEmbedding()
        else:
            raise ValueError(f"Unknown positional embedding type: {type}")

    def forward(self, x: torch.Tensor):
        return self.layer(x)


# ------------------------------------------------------------------------------ datasets.py
from sklearn.datasets import make_moons
from jitgrad.utils.data import TensorDataset


def moons_dataset(n=8000):
    X, _ = make_moons(n_samples=n, random_state=42, noise=0.03)
    X[:, 0] = (X[:, 0] + 0.3) * 2 - 1
    X[:, 1] = (X[:, 1] + 0.3) * 3 - 1
    return TensorDataset(torch.from_numpy(X.astype(np.float32)))


def line_dataset(n=8000):
    rng = np.random.default_rng(42)
    x = rng.uniform(-0.5, 0.5, n)
    y = rng.uniform(-1, 1, n)
    X = np.stack((x, y), axis=1)
    X *= 4
    return TensorDataset(torch.from_numpy(X.astype(np.float32)))


def circle_dataset(n=8000):
    rng = np.random.default_rng(42)
    x = np.round(rng.uniform(-0.5, 0.5, n)/2, 1)*2
    y = np.round(rng.uniform(-0.5, 0.5, n)/2, 1)*2
    norm = np.sqrt(x**2 + y**2) + 1e-10
    x /= norm
    y /= norm
    theta = 2 * np.pi * rng.uniform(0, 1, n)
    r = rng.uniform(0, 0.03, n)
    x += r * np.cos(theta)
    y += r * np.sin(theta)
    X = np.stack((x, y), axis=1)
    X *= 3
    return TensorDataset(torch.from_numpy(X.astype(np.float32)))


def get_dataset(name, n=8000):
    if name == "moons":
        return moons_dataset(n)
    elif name == "line":
        return line_dataset(n)
    elif name == "circle":
        return circle_dataset(n)
    else:
        raise ValueError(f"Unknown dataset: {name}")


class datasets:  # (the module's namespace, as ddpm.py calls it)
    get_dataset = staticmethod(get_dataset)


# ---------------------------------------------------------------------------------- ddpm.py


class Block(nn.Module):
    def __init__(self, size: int):
        super().__init__()

        self.ff = nn.Linear(size, size)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor):
        return x + self.act(self.ff(x))


class MLP(nn.Module):
    def __init__(self, hidden_size: int = 128, hidden_layers: int = 3, emb_size: int = 128,
                 time_emb: str = "sinusoidal", input_emb: str = "sinusoidal"):
        super().__init__()

        self.time_mlp = PositionalEmbedding(emb_size, time_emb)
        self.input_mlp1 = PositionalEmbedding(emb_size, input_emb, scale=25.0)
        self.input_mlp2 = PositionalEmbedding(emb_size, input_emb, scale=25.0)

        concat_size = len(self.time_mlp.layer) + \
            len(self.input_mlp1.layer) + len(self.input_mlp2.layer)
        layers = [nn.Linear(concat_size, hidden_size), nn.GELU()]
        for _ in range(hidden_layers):
            layers.append(Block(hidden_size))
        layers.append(nn.Linear(hidden_size, 2))
        self.joint_mlp = nn.Sequential(*layers)

    def forward(self, x, t):
        x1_emb = self.input_mlp1(x[:, 0])
        x2_emb = self.input_mlp2(x[:, 1])
        t_emb = self.time_mlp(t)
        x = torch.cat((x1_emb, x2_emb, t_emb), dim=-1)
        x = self.joint_mlp(x)
        return x


class NoiseScheduler():
    def __init__(self,
                 num_timesteps=1000,
                 beta_start=0.0001,
                 beta_end=0.02,
                 beta_schedule="linear"):

        self.num_timesteps = num_timesteps
        if beta_schedule == "linear":
            self.betas = torch.linspace(
                beta_start, beta_end, num_timesteps, dtype=torch.float32)
        elif beta_schedule == "quadratic":
            self.betas = torch.linspace(
                beta_start ** 0.5, beta_end ** 0.5, num_timesteps, dtype=torch.float32) ** 2

        self.alphas = 1.0 - self.betas
        self.alphas_cumprod = torch.cumprod(self.alphas, axis=0)
        self.alphas_cumprod_prev = F.pad(
            self.alphas_cumprod[:-1], (1, 0), value=1.)

        # required for self.add_noise
        self.sqrt_alphas_cumprod = self.alphas_cumprod ** 0.5
        self.sqrt_one_minus_alphas_cumprod = (1 - self.alphas_cumprod) ** 0.5

        # required for reconstruct_x0
        self.sqrt_inv_alphas_cumprod = torch.sqrt(1 / self.alphas_cumprod)
        self.sqrt_inv_alphas_cumprod_minus_one = torch.sqrt(
            1 / self.alphas_cumprod - 1)

        # required for q_posterior
        self.posterior_mean_coef1 = self.betas * torch.sqrt(self.alphas_cumprod_prev) / (1. - self.alphas_cumprod)
        self.posterior_mean_coef2 = (1. - self.alphas_cumprod_prev) * torch.sqrt(self.alphas) / (1. - self.alphas_cumprod)

    def reconstruct_x0(self, x_t, t, noise):
        s1 = self.sqrt_inv_alphas_cumprod[t]
        s2 = self.sqrt_inv_alphas_cumprod_minus_one[t]
        s1 = s1.reshape(-1, 1)
        s2 = s2.reshape(-1, 1)
        return s1 * x_t - s2 * noise

    def q_posterior(self, x_0, x_t, t):
        s1 = self.posterior_mean_coef1[t]
        s2 = self.posterior_mean_coef2[t]
        s1 = s1.reshape(-1, 1)
        s2 = s2.reshape(-1, 1)
        mu = s1 * x_0 + s2 * x_t
        return mu

    def get_variance(self, t):
        if t == 0:
            return 0

        variance = self.betas[t] * (1. - self.alphas_cumprod_prev[t]) / (1. - self.alphas_cumprod[t])
        variance = variance.clip(1e-20)
        return variance

    def step(self, model_output, timestep, sample):
        t = timestep
        pred_original_sample = self.reconstruct_x0(sample, t, model_output)
        pred_prev_sample = self.q_posterior(pred_original_sample, sample, t)

        variance = 0
        if t > 0:
            noise = torch.randn_like(model_output)
            variance = (self.get_variance(t) ** 0.5) * noise

        pred_prev_sample = pred_prev_sample + variance

        return pred_prev_sample

    def add_noise(self, x_start, x_noise, timesteps):
        s1 = self.sqrt_alphas_cumprod[timesteps]
        s2 = self.sqrt_one_minus_alphas_cumprod[timesteps]

        s1 = s1.reshape(-1, 1)
        s2 = s2.reshape(-1, 1)

        return s1 * x_start + s2 * x_noise

    def __len__(self):
        return self.num_timesteps


# (added) fixed-weight results to compare with torch: the scheduler's tables, the embeddings,
# a forward, the loss and its gradients, clipping and two AdamW steps, and the deterministic
# last sampling step (t = 0 adds no noise)
def fixed_run():
    scheduler = NoiseScheduler(num_timesteps=16, beta_schedule="quadratic")
    results = {name: getattr(scheduler, name).clone() for name in (
        "betas", "alphas_cumprod", "alphas_cumprod_prev", "sqrt_inv_alphas_cumprod_minus_one",
        "posterior_mean_coef1", "posterior_mean_coef2")}
    results["variances"] = [float(scheduler.get_variance(t)) for t in range(16)]
    model = MLP(hidden_size=16, hidden_layers=2, emb_size=8)
    learnable = MLP(hidden_size=8, hidden_layers=1, emb_size=4, time_emb="learnable", input_emb="linear")
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for p in list(model.parameters()) + list(learnable.parameters()):
            p.copy_(torch.tensor(rng.normal(0.0, 0.3, tuple(p.shape)), dtype=torch.float32))
    x = torch.from_numpy(moons_dataset(8).tensors[0].numpy())
    noise = torch.tensor(rng.normal(size=(8, 2)), dtype=torch.float32)
    timesteps = torch.tensor([0, 3, 5, 15, 7, 1, 9, 12]).long()
    results["embedding"] = model.input_mlp1(x[:, 0])
    noisy = scheduler.add_noise(x, noise, timesteps)
    results["noisy"] = noisy
    optimizer = torch.optim.AdamW(list(model.parameters()) + list(learnable.parameters()), lr=1e-2)
    results["steps"] = []
    for step in range(2):
        loss = F.mse_loss(model(noisy, timesteps), noise) + F.mse_loss(learnable(noisy, timesteps), noise)
        loss.backward()
        if step == 0:
            results["grads"] = {n: p.grad.clone() for n, p in model.named_parameters()}
            results["learnable_grads"] = {n: p.grad.clone() for n, p in learnable.named_parameters()}
        norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        results["steps"].append((loss.item(), norm.item()))
    results["after"] = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        t = torch.from_numpy(np.repeat(0, 8)).long()
        results["last_step"] = scheduler.step(model(noisy, t), t[0], noisy)
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--experiment_name", type=str, default="base")
    parser.add_argument("--dataset", type=str, default="moons", choices=["circle", "dino", "line", "moons"])
    parser.add_argument("--train_batch_size", type=int, default=32)
    parser.add_argument("--eval_batch_size", type=int, default=200)
    parser.add_argument("--num_epochs", type=int, default=4)
    parser.add_argument("--learning_rate", type=float, default=3e-3)
    parser.add_argument("--num_timesteps", type=int, default=16)
    parser.add_argument("--beta_schedule", type=str, default="linear", choices=["linear", "quadratic"])
    parser.add_argument("--embedding_size", type=int, default=64)
    parser.add_argument("--hidden_size", type=int, default=64)
    parser.add_argument("--hidden_layers", type=int, default=3)
    parser.add_argument("--time_embedding", type=str, default="sinusoidal", choices=["sinusoidal", "learnable", "linear", "zero"])
    parser.add_argument("--input_embedding", type=str, default="sinusoidal", choices=["sinusoidal", "learnable", "linear", "identity"])
    parser.add_argument("--save_images_step", type=int, default=1)
    parser.add_argument("--n", type=int, default=2560)  # (added: the data set's size)
    config = parser.parse_args([])

    torch.manual_seed(0)  # (added)
    fixed_results = fixed_run()  # (added)

    dataset = datasets.get_dataset(config.dataset, n=config.n)
    dataloader = DataLoader(
        dataset, batch_size=config.train_batch_size, shuffle=True, drop_last=True)

    model = MLP(
        hidden_size=config.hidden_size,
        hidden_layers=config.hidden_layers,
        emb_size=config.embedding_size,
        time_emb=config.time_embedding,
        input_emb=config.input_embedding)

    noise_scheduler = NoiseScheduler(
        num_timesteps=config.num_timesteps,
        beta_schedule=config.beta_schedule)

    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=config.learning_rate,
    )

    global_step = 0
    frames = []
    losses = []
    print("Training model...")
    for epoch in range(config.num_epochs):
        model.train()
        progress_bar = tqdm(total=len(dataloader))
        progress_bar.set_description(f"Epoch {epoch}")
        for step, batch in enumerate(dataloader):
            batch = batch[0]
            noise = torch.randn(batch.shape)
            timesteps = torch.randint(
                0, noise_scheduler.num_timesteps, (batch.shape[0],)
            ).long()

            noisy = noise_scheduler.add_noise(batch, noise, timesteps)
            noise_pred = model(noisy, timesteps)
            loss = F.mse_loss(noise_pred, noise)
            loss.backward()

            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()

            progress_bar.update(1)
            logs = {"loss": loss.detach().item(), "step": global_step}
            losses.append(loss.detach().item())
            progress_bar.set_postfix(**logs)
            global_step += 1
        progress_bar.close()

        if epoch % config.save_images_step == 0 or epoch == config.num_epochs - 1:
            # generate data with the model to later visualize the learning process
            model.eval()
            sample = torch.randn(config.eval_batch_size, 2)
            timesteps = list(range(len(noise_scheduler)))[::-1]
            for i, t in enumerate(tqdm(timesteps)):
                t = torch.from_numpy(np.repeat(t, config.eval_batch_size)).long()
                with torch.no_grad():
                    residual = model(sample, t)
                sample = noise_scheduler.step(residual, t[0], sample)
            frames.append(sample.numpy())

    print("Saving model...")
    outdir = os.path.join(tempfile.mkdtemp(), f"exps/{config.experiment_name}")  # (a temporary directory)
    os.makedirs(outdir, exist_ok=True)
    torch.save(model.state_dict(), f"{outdir}/model.pth")

    print("Saving images...")
    imgdir = f"{outdir}/images"
    os.makedirs(imgdir, exist_ok=True)
    frames = np.stack(frames)
    xmin, xmax = -6, 6
    ymin, ymax = -6, 6
    for i, frame in enumerate(frames):
        plt.figure(figsize=(10, 10))
        plt.scatter(frame[:, 0], frame[:, 1])
        plt.xlim(xmin, xmax)
        plt.ylim(ymin, ymax)
        plt.savefig(f"{imgdir}/{i:04}.png")
        plt.close()

    print("Saving loss as numpy array...")
    np.save(f"{outdir}/loss.npy", np.array(losses))

    print("Saving frames...")
    np.save(f"{outdir}/frames.npy", frames)
