"""Policy-gradient agents (REINFORCE, then a shared-trunk actor-critic) balancing a simulated
cart-pole, written for these tests in the way pytorch/examples' reinforcement_learning scripts
are commonly written (modelled on the API usage of pytorch/examples' reinforcement_learning,
not a copy of it):

- a small NumPy cart-pole with a gym-like ``reset(seed=)`` / five-value ``step`` interface and a
  ``spec.reward_threshold`` (gym itself is not installed here);
- ``distributions.Categorical`` over ``F.softmax`` outputs: ``sample``, ``log_prob``,
  ``entropy``, ``logits``, ``batch_shape``/``event_shape``;
- discounted returns collected in a ``deque`` or a list, turned into a tensor and standardised
  with ``mean``/``std``; ``torch.cat``/``torch.stack`` of per-step losses,
  ``F.smooth_l1_loss`` for the critic, ``nn.Dropout`` in the REINFORCE policy, Adam;
- a fixed-weight actor-critic loss and its gradients to compare with torch.
"""
import math
from collections import deque, namedtuple
from itertools import count

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.distributions import Categorical


class PoleOnCart:
    """Frictionless cart-pole, Euler steps of 20 ms; the episode ends when the pole leans past
    12 degrees, the cart leaves [-2.4, 2.4], or after 500 steps."""

    class spec:  # noqa: N801 (gym's attribute name)
        reward_threshold = 475.0

    G, M_CART, M_POLE, HALF_LEN, PUSH, DT = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    MAX_ANGLE, MAX_X, LIMIT = math.radians(12), 2.4, 500

    def __init__(self):
        self.rng = np.random.default_rng()
        self.s = np.zeros(4)
        self.t = 0

    def reset(self, seed=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.s = self.rng.uniform(-0.05, 0.05, size=4)
        self.t = 0
        return self.s.astype(np.float32), {}

    def step(self, action):
        pos, vel, ang, spin = self.s
        push = self.PUSH if action == 1 else -self.PUSH
        mass = self.M_CART + self.M_POLE
        arm = self.M_POLE * self.HALF_LEN
        c, s = math.cos(ang), math.sin(ang)
        tmp = (push + arm * spin * spin * s) / mass
        ang_acc = (self.G * s - c * tmp) / (self.HALF_LEN * (4 / 3 - self.M_POLE * c * c / mass))
        lin_acc = tmp - arm * ang_acc * c / mass
        self.s = np.array([pos + self.DT * vel, vel + self.DT * lin_acc,
                           ang + self.DT * spin, spin + self.DT * ang_acc])
        self.t += 1
        fell = abs(self.s[0]) > self.MAX_X or abs(self.s[2]) > self.MAX_ANGLE
        return self.s.astype(np.float32), 1.0, bool(fell), self.t >= self.LIMIT, {}


class Args:
    gamma = 0.99
    seed = 543
    log_interval = 5
    max_episodes = 50


args = Args()
eps = np.finfo(np.float32).eps.item()


def discounted(rewards, gamma=args.gamma):
    acc, out = 0.0, deque()
    for r in reversed(rewards):
        acc = r + gamma * acc
        out.appendleft(acc)
    return out


def standardise(returns):
    return (returns - returns.mean()) / (returns.std() + eps)


def run_episodes(env, act, learn, rewards_log):
    running = 10
    for episode in count(1):
        obs, _ = env.reset()
        total = 0
        for _ in range(1, 10000):
            obs, reward, fell, cut, _ = env.step(act(obs))
            memory.append(reward)
            total += reward
            if fell or cut:
                break
        running = 0.05 * total + 0.95 * running
        rewards_log.append(total)
        learn()
        if episode % args.log_interval == 0:
            print(f"episode {episode}: reward {total:.0f}, running {running:.2f}")
        if running > env.spec.reward_threshold or episode >= args.max_episodes:
            return running


# ---- REINFORCE ----
class ReinforcePolicy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc_in = nn.Linear(4, 128)
        self.drop = nn.Dropout(p=0.6)
        self.fc_out = nn.Linear(128, 2)
        self.saved_log_probs = []

    def forward(self, obs):
        return F.softmax(self.fc_out(F.relu(self.drop(self.fc_in(obs)))), dim=1)


def fresh_env(seed=args.seed):
    """A new pole with a seeded start, and torch's generator reseeded to match."""
    pole = PoleOnCart()
    pole.reset(seed=seed)
    torch.manual_seed(seed)
    return pole


env = fresh_env()
policy = ReinforcePolicy()
optimizer = optim.Adam(policy.parameters(), lr=1e-2)  # one optimiser per agent
memory = []


def reinforce_act(obs):
    dist = Categorical(policy(torch.from_numpy(obs).float().unsqueeze(0)))
    choice = dist.sample()
    policy.saved_log_probs.append(dist.log_prob(choice))
    return choice.item()


def reinforce_learn():
    weights = standardise(torch.tensor(discounted(memory)))
    terms = [-lp * w for lp, w in zip(policy.saved_log_probs, weights)]
    optimizer.zero_grad()
    torch.cat(terms).sum().backward()
    optimizer.step()
    memory.clear()
    policy.saved_log_probs.clear()


reinforce_rewards = []
reinforce_running = run_episodes(env, reinforce_act, reinforce_learn, reinforce_rewards)

# ---- actor-critic ----
Step = namedtuple("Step", ["log_prob", "value"])


class ActorCritic(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(4, 128)
        self.actor = nn.Linear(128, 2)
        self.critic = nn.Linear(128, 1)
        self.saved_actions = []

    def forward(self, obs):
        feat = F.relu(self.trunk(obs))
        return F.softmax(self.actor(feat), dim=-1), self.critic(feat)


env = fresh_env()
model = ActorCritic()
optimizer = optim.Adam(model.parameters(), lr=0.003)


def ac_act(obs):
    probs, value = model(torch.from_numpy(obs).float())
    dist = Categorical(probs)
    choice = dist.sample()
    model.saved_actions.append(Step(dist.log_prob(choice), value))
    return choice.item()


def ac_learn():
    targets = standardise(torch.tensor(list(discounted(memory))))
    actor_terms, critic_terms = [], []
    for (lp, value), target in zip(model.saved_actions, targets):
        actor_terms.append(-lp * (target - value.item()))
        critic_terms.append(F.smooth_l1_loss(value, torch.tensor([target])))
    optimizer.zero_grad()
    (torch.stack(actor_terms).sum() + torch.stack(critic_terms).sum()).backward()
    optimizer.step()
    memory.clear()
    model.saved_actions.clear()


actor_critic_rewards: list = []
actor_critic_running = run_episodes(env, ac_act, ac_learn, actor_critic_rewards)

# ---- numbers torch must reproduce ----
returns = torch.tensor(list(discounted([1.0] * 6)))
normalised = standardise(returns).tolist()
two_rows = Categorical(torch.tensor([[0.2, 0.8], [0.6, 0.4]]))
categorical_parts = (two_rows.log_prob(torch.tensor([1, 0])).tolist(),
                     two_rows.entropy().tolist(), two_rows.logits.tolist(),
                     list(two_rows.batch_shape), list(two_rows.event_shape))
fixed = ActorCritic()
with torch.no_grad():
    for j, w in enumerate(fixed.parameters()):
        w.copy_(torch.sin(torch.arange(w.numel(), dtype=torch.float32) * 0.9 + j).view_as(w)
                * 0.3)
obs_batch = torch.sin(torch.arange(24, dtype=torch.float32)).view(6, 4) * 0.05
taken = torch.tensor([0, 1, 1, 0, 1, 0])
probs_b, values_b = fixed(obs_batch)
scaled = returns / returns.max()
adv = scaled - values_b.squeeze(1).detach()
total_loss = (-Categorical(probs_b).log_prob(taken) * adv).sum() \
    + F.smooth_l1_loss(values_b.squeeze(1), scaled, reduction="sum")
total_loss.backward()
fixed_grads = [w.grad.tolist() for w in fixed.parameters()]
fixed_loss = total_loss.item()
