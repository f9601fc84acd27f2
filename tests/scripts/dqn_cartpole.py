"""Deep Q-learning on a cart-pole, written for these tests in the way the PyTorch DQN tutorial
(reinforcement_q_learning.py) is commonly written (modelled on the API usage of that tutorial,
not a copy of it):

- ``torch.device`` chosen from ``torch.cuda.is_available()`` / ``torch.backends.mps``;
- a replay buffer of namedtuples in a ``deque``, a three-layer ``nn.Linear``/``F.relu`` Q-network,
  a target copy synchronised with ``load_state_dict(state_dict())``;
- epsilon-greedy actions with ``q.max(1).indices.view(1, 1)`` under ``torch.no_grad()``;
- the update: ``torch.cat`` of the sampled fields, a boolean non-terminal mask from a tuple,
  ``gather(1, actions)``, masked assignment of ``max(1).values``, ``nn.SmoothL1Loss``,
  ``nn.utils.clip_grad_value_`` and ``optim.AdamW(amsgrad=True)``;
- a Polyak (soft) update of the target through state_dict arithmetic after every step;
- a fixed-weight section (three updates on a fixed buffer) whose losses, weights and AMSGrad
  ``max_exp_avg_sq`` states are compared with torch's.

No gym here: a small NumPy cart-pole with the usual equations of motion and a 200-step limit
stands in for ``CartPole-v1``.
"""
import math
import random
from collections import deque, namedtuple

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim


class PoleCart:
    """A pole hinged on a cart; push left (0) or right (1); +1 reward per step upright."""

    n_actions = 2
    limit_x = 2.4
    limit_angle = 12 * math.pi / 180
    dt = 0.02
    horizon = 200

    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)

    def reset(self, seed=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.s = self.rng.uniform(-0.05, 0.05, size=4)
        self.t = 0
        return self.s.astype(np.float32)

    def step(self, action):
        pos, vel, ang, ang_vel = self.s
        g, m_cart, m_pole, half_len = 9.8, 1.0, 0.1, 0.5
        push = 10.0 if action == 1 else -10.0
        m = m_cart + m_pole
        c, s = math.cos(ang), math.sin(ang)
        k = (push + m_pole * half_len * ang_vel * ang_vel * s) / m
        ang_acc = (g * s - c * k) / (half_len * (4 / 3 - m_pole * c * c / m))
        acc = k - m_pole * half_len * ang_acc * c / m
        self.s = np.array([pos + self.dt * vel, vel + self.dt * acc,
                           ang + self.dt * ang_vel, ang_vel + self.dt * ang_acc])
        self.t += 1
        fell = abs(self.s[0]) > self.limit_x or abs(self.s[2]) > self.limit_angle
        return self.s.astype(np.float32), 1.0, bool(fell), self.t >= self.horizon


if torch.cuda.is_available():
    device = torch.device("cuda")
elif torch.backends.mps.is_available():
    device = torch.device("mps")
else:
    device = torch.device("cpu")

SEED = 1
random.seed(SEED)
torch.manual_seed(SEED)
explore_rng = random.Random(SEED)
env = PoleCart()
env.reset(seed=SEED)

Experience = namedtuple("Experience", "obs act nxt rew")


class Buffer:
    def __init__(self, size):
        self.items = deque(maxlen=size)

    def add(self, *fields):
        self.items.append(Experience(*fields))

    def draw(self, n):
        return random.sample(self.items, n)

    def __len__(self):
        return len(self.items)


class QNet(nn.Module):
    def __init__(self, n_in, n_out, hidden=128):
        super().__init__()
        self.inp = nn.Linear(n_in, hidden)
        self.mid = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.out(F.relu(self.mid(F.relu(self.inp(x)))))


BATCH, DISCOUNT, LR, POLYAK = 128, 0.99, 3e-4, 0.005
EPS_HI, EPS_LO, EPS_SCALE = 0.9, 0.01, 2500
EPISODES = 80

n_obs = len(env.reset())
online = QNet(n_obs, PoleCart.n_actions).to(device)
target = QNet(n_obs, PoleCart.n_actions).to(device)
target.load_state_dict(online.state_dict())
opt = optim.AdamW(online.parameters(), lr=LR, amsgrad=True)
buffer = Buffer(10_000)
huber = nn.SmoothL1Loss()
losses = []
total_steps = 0


def choose(obs):
    global total_steps
    eps = EPS_LO + (EPS_HI - EPS_LO) * math.exp(-total_steps / EPS_SCALE)
    total_steps += 1
    if random.random() <= eps:
        return torch.tensor([[explore_rng.randrange(PoleCart.n_actions)]], device=device,
                            dtype=torch.long)
    with torch.no_grad():
        return online(obs).max(1).indices.view(1, 1)


def learn():
    if len(buffer) < BATCH:
        return
    cols = Experience(*zip(*buffer.draw(BATCH)))
    alive = torch.tensor(tuple(n is not None for n in cols.nxt), device=device, dtype=torch.bool)
    alive_next = torch.cat([n for n in cols.nxt if n is not None])
    obs, act, rew = torch.cat(cols.obs), torch.cat(cols.act), torch.cat(cols.rew)

    q_taken = online(obs).gather(1, act)
    bootstrap = torch.zeros(BATCH, device=device)
    with torch.no_grad():
        bootstrap[alive] = target(alive_next).max(1).values
    goal = rew + DISCOUNT * bootstrap

    loss = huber(q_taken, goal.unsqueeze(1))
    losses.append(loss.item())
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_value_(online.parameters(), 100)
    opt.step()


def track_online():
    """target <- POLYAK * online + (1 - POLYAK) * target, entry by entry of the state dicts."""
    mine, theirs = online.state_dict(), target.state_dict()
    for name in mine:
        theirs[name] = mine[name] * POLYAK + theirs[name] * (1 - POLYAK)
    target.load_state_dict(theirs)


def as_row(array):
    return torch.tensor(array, dtype=torch.float32, device=device).unsqueeze(0)


episode_durations = []
for _ in range(EPISODES):
    obs = as_row(env.reset())
    steps = 0
    while True:
        act = choose(obs)
        raw, reward, fell, out_of_time = env.step(act.item())
        nxt = None if fell else as_row(raw)
        buffer.add(obs, act, nxt, torch.tensor([reward], device=device))
        obs = nxt
        learn()
        track_online()
        steps += 1
        if fell or out_of_time:
            episode_durations.append(steps)
            break
print("durations:", episode_durations)

# Deterministic check against torch: both networks get fixed weights, a fresh optimizer and a
# fixed buffer (random.sample is Python's, seeded alike), then three updates with soft syncs.
random.seed(5)
with torch.no_grad():
    for shift, net in ((0.0, online), (0.5, target)):
        for j, p in enumerate(net.parameters()):
            wave = torch.cos(torch.arange(p.numel(), dtype=torch.float32) * (0.3 * j + 1) + shift)
            p.copy_(wave.view_as(p) / 4)
opt = optim.AdamW(online.parameters(), lr=LR, amsgrad=True)
buffer = Buffer(10_000)
for i in range(160):
    o = torch.cos(0.5 * torch.arange(4, dtype=torch.float32) - i).unsqueeze(0)
    buffer.add(o, torch.tensor([[(i // 3) % 2]]), None if i % 5 == 2 else torch.sin(o),
               torch.tensor([1.0]))
losses.clear()
for _ in range(3):
    learn()
    track_online()
fixed_result = {"losses": list(losses)}
for prefix, net in (("online.", online), ("target.", target)):
    fixed_result.update({prefix + n: p.tolist() for n, p in net.named_parameters()})
for j, p in enumerate(online.parameters()):
    fixed_result[f"amsgrad_max.{j}"] = opt.state[p]["max_exp_avg_sq"].tolist()
