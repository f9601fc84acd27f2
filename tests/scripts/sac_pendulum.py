# ruff: noqa: N812 (the usual F alias)
"""Soft actor-critic on a batched pendulum, written for these tests the way CleanRL's
single-file ``sac_continuous_action.py`` and Spinning Up's ``sac`` write torch code (not a copy
of either):

- a pendulum (gym's dynamics) stepped as a batch of envs in plain torch tensors: ``torch.sin``,
  ``torch.cos``, ``%`` for the angle, ``torch.clamp``, time-limit truncation with auto-reset
  through ``torch.where`` and CleanRL's ``real_next_obs`` (the final observation, not the reset
  one, goes into the buffer);
- a replay buffer of preallocated ``torch.zeros`` tensors written at a circular index
  (``(ptr + torch.arange(n)) % max_size`` as an index for setitem), sampled with
  ``torch.randint``;
- Spinning Up's ``MLPActorCritic``: ``nn.Sequential`` MLPs, twin Q networks on
  ``torch.cat([obs, act], dim=-1)`` with ``torch.squeeze(q, -1)``, target networks made by
  ``copy.deepcopy`` with ``requires_grad = False``;
- the squashed Gaussian actor: ``torch.clamp`` of ``log_std``, ``Normal.rsample``,
  ``log_prob(...).sum(axis=-1)``, the tanh correction ``2 * (log 2 - a - softplus(-2 a))``,
  ``torch.tanh``; the same policy as ``TransformedDistribution(Normal, [TanhTransform(
  cache_size=1)])``, and CleanRL's ``log(1 - tanh^2 + 1e-6)`` form;
- the soft Bellman backup under ``torch.no_grad()`` with ``torch.min`` of the twin target Qs,
  ``F.mse_loss``, automatic entropy tuning with a ``log_alpha`` tensor (``requires_grad=True``)
  and ``target_entropy = -torch.prod(torch.Tensor(shape)).item()``, three ``optim.Adam``
  optimizers (actor, both Qs, alpha), gradient steps on the actor while the Q parameters are
  frozen (``requires_grad = False`` and back);
- polyak averaging of the targets three ways: Spinning Up's ``p_targ.data.mul_(polyak)`` +
  ``add_((1 - polyak) * p.data)``, CleanRL's ``copy_(tau * p + (1 - tau) * p_targ)``, and
  ``torch._foreach_lerp_`` over the two parameter lists, and ``lerp_`` per parameter;
- deterministic evaluation (the tanh of the mean action) before and after training.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn, optim
from jitgrad.distributions import Normal, TransformedDistribution
from jitgrad.distributions.transforms import TanhTransform

torch.manual_seed(0)
fixed_results = {}

LOG_STD_MAX = 2
LOG_STD_MIN = -20


# ------------------------------------------------------------------------- environment


def angle_normalize(x):
    return ((x + math.pi) % (2 * math.pi)) - math.pi


class BatchedPendulum:
    """``num_envs`` pendulums at once: observation (cos, sin, angular velocity), one torque in
    [-2, 2], reward -(angle^2 + 0.1 speed^2 + 0.001 torque^2); episodes are truncated after
    ``max_steps`` steps and the envs that finished start again."""

    max_speed, max_torque, g, m, length, dt = 8.0, 2.0, 10.0, 1.0, 1.0, 0.05

    def __init__(self, num_envs, max_steps=100):
        self.num_envs, self.max_steps = num_envs, max_steps
        self.obs_dim, self.act_dim = 3, 1
        self.action_low = torch.full((1,), -self.max_torque)
        self.action_high = torch.full((1,), self.max_torque)

    def _sample_state(self, n):
        high = torch.tensor([math.pi, 1.0])
        s = (torch.rand(n, 2) * 2 - 1) * high
        return s[:, 0], s[:, 1]

    def _obs(self):
        return torch.stack([torch.cos(self.th), torch.sin(self.th), self.thdot], dim=1)

    def reset(self):
        self.th, self.thdot = self._sample_state(self.num_envs)
        self.t = torch.zeros(self.num_envs, dtype=torch.long)
        self.episode_return = torch.zeros(self.num_envs)
        return self._obs()

    def step(self, action):
        u = torch.clamp(action[:, 0], -self.max_torque, self.max_torque)
        th, thdot = self.th, self.thdot
        costs = angle_normalize(th) ** 2 + 0.1 * thdot ** 2 + 0.001 * (u ** 2)
        newthdot = thdot + (3 * self.g / (2 * self.length) * torch.sin(th)
                            + 3.0 / (self.m * self.length ** 2) * u) * self.dt
        newthdot = torch.clamp(newthdot, -self.max_speed, self.max_speed)
        self.th = th + newthdot * self.dt
        self.thdot = newthdot
        self.t += 1
        self.episode_return += -costs
        final_obs = self._obs()
        truncated = self.t >= self.max_steps
        terminated = torch.zeros_like(truncated)
        finished = self.episode_return[truncated].tolist()
        th0, thdot0 = self._sample_state(self.num_envs)
        self.th = torch.where(truncated, th0, self.th)
        self.thdot = torch.where(truncated, thdot0, self.thdot)
        self.t = self.t.masked_fill(truncated, 0)
        self.episode_return = self.episode_return.masked_fill(truncated, 0.0)
        return self._obs(), -costs, terminated, truncated, final_obs, finished


# ------------------------------------------------------------------------ replay buffer


class ReplayBuffer:
    """Spinning Up's FIFO buffer, as tensors, storing a batch of transitions per call."""

    def __init__(self, obs_dim, act_dim, size):
        self.obs_buf = torch.zeros((size, obs_dim), dtype=torch.float32)
        self.obs2_buf = torch.zeros((size, obs_dim), dtype=torch.float32)
        self.act_buf = torch.zeros((size, act_dim), dtype=torch.float32)
        self.rew_buf = torch.zeros(size, dtype=torch.float32)
        self.done_buf = torch.zeros(size, dtype=torch.float32)
        self.ptr, self.size, self.max_size = 0, 0, size

    def store(self, obs, act, rew, next_obs, done):
        n = obs.shape[0]
        idx = (self.ptr + torch.arange(n)) % self.max_size
        self.obs_buf[idx] = obs
        self.obs2_buf[idx] = next_obs
        self.act_buf[idx] = act
        self.rew_buf[idx] = rew
        self.done_buf[idx] = done.float()
        self.ptr = (self.ptr + n) % self.max_size
        self.size = min(self.size + n, self.max_size)

    def sample_batch(self, batch_size=32):
        idxs = torch.randint(0, self.size, size=(batch_size,))
        return dict(obs=self.obs_buf[idxs], obs2=self.obs2_buf[idxs], act=self.act_buf[idxs],
                    rew=self.rew_buf[idxs], done=self.done_buf[idxs])


# ------------------------------------------------------------------------ actor, critic


def mlp(sizes, activation, output_activation=nn.Identity):
    layers = []
    for j in range(len(sizes) - 1):
        act = activation if j < len(sizes) - 2 else output_activation
        layers += [nn.Linear(sizes[j], sizes[j + 1]), act()]
    return nn.Sequential(*layers)


class SquashedGaussianMLPActor(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_sizes, activation, act_limit):
        super().__init__()
        self.net = mlp([obs_dim] + list(hidden_sizes), activation, activation)
        self.mu_layer = nn.Linear(hidden_sizes[-1], act_dim)
        self.log_std_layer = nn.Linear(hidden_sizes[-1], act_dim)
        self.act_limit = act_limit

    def distribution(self, obs):
        net_out = self.net(obs)
        mu = self.mu_layer(net_out)
        log_std = self.log_std_layer(net_out)
        log_std = torch.clamp(log_std, LOG_STD_MIN, LOG_STD_MAX)
        std = torch.exp(log_std)
        return mu, std

    def forward(self, obs, deterministic=False, with_logprob=True):
        mu, std = self.distribution(obs)
        pi_distribution = Normal(mu, std)
        if deterministic:
            pi_action = mu
        else:
            pi_action = pi_distribution.rsample()
        if with_logprob:
            # the tanh correction, in the numerically stable form of the SAC paper's eq. 21
            logp_pi = pi_distribution.log_prob(pi_action).sum(axis=-1)
            logp_pi -= (2 * (np.log(2) - pi_action - F.softplus(-2 * pi_action))).sum(axis=1)
        else:
            logp_pi = None
        pi_action = torch.tanh(pi_action)
        pi_action = self.act_limit * pi_action
        return pi_action, logp_pi

    def transformed(self, obs):
        """The same policy (before scaling by act_limit) as a transformed distribution."""
        mu, std = self.distribution(obs)
        return TransformedDistribution(Normal(mu, std), [TanhTransform(cache_size=1)])


class MLPQFunction(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden_sizes, activation):
        super().__init__()
        self.q = mlp([obs_dim + act_dim] + list(hidden_sizes) + [1], activation)

    def forward(self, obs, act):
        q = self.q(torch.cat([obs, act], dim=-1))
        return torch.squeeze(q, -1)  # critical to ensure q has the right shape


class MLPActorCritic(nn.Module):
    def __init__(self, obs_dim, act_dim, act_limit, hidden_sizes=(64, 64), activation=nn.ReLU):
        super().__init__()
        self.pi = SquashedGaussianMLPActor(obs_dim, act_dim, hidden_sizes, activation,
                                           act_limit)
        self.q1 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)
        self.q2 = MLPQFunction(obs_dim, act_dim, hidden_sizes, activation)

    def act(self, obs, deterministic=False):
        with torch.no_grad():
            a, _ = self.pi(obs, deterministic, False)
            return a


def cleanrl_log_prob(actor, obs, action_scale):
    """CleanRL's ``get_action``: the correction written as log(scale (1 - tanh^2) + 1e-6)."""
    mean, std = actor.distribution(obs)
    normal = Normal(mean, std)
    x_t = normal.rsample()
    y_t = torch.tanh(x_t)
    action = y_t * action_scale
    log_prob = normal.log_prob(x_t)
    log_prob -= torch.log(action_scale * (1 - y_t.pow(2)) + 1e-6)
    log_prob = log_prob.sum(1, keepdim=True)
    return action, log_prob


# ------------------------------------------------------------------------- SAC losses


class SAC:
    def __init__(self, ac, gamma=0.99, polyak=0.995, lr=1e-3, alpha_lr=1e-3, act_dim=1,
                 polyak_mode="spinup"):
        self.ac, self.gamma, self.polyak, self.polyak_mode = ac, gamma, polyak, polyak_mode
        self.ac_targ = copy.deepcopy(ac)
        for p in self.ac_targ.parameters():
            p.requires_grad = False
        self.q_params = list(ac.q1.parameters()) + list(ac.q2.parameters())
        self.pi_optimizer = optim.Adam(ac.pi.parameters(), lr=lr)
        self.q_optimizer = optim.Adam(self.q_params, lr=lr)
        self.target_entropy = -torch.prod(torch.Tensor((act_dim,))).item()
        self.log_alpha = torch.zeros(1, requires_grad=True)
        self.alpha = self.log_alpha.exp().item()
        self.a_optimizer = optim.Adam([self.log_alpha], lr=alpha_lr)

    def compute_loss_q(self, data):
        o, a, r, o2, d = data["obs"], data["act"], data["rew"], data["obs2"], data["done"]
        q1 = self.ac.q1(o, a)
        q2 = self.ac.q2(o, a)
        with torch.no_grad():
            a2, logp_a2 = self.ac.pi(o2)
            q1_pi_targ = self.ac_targ.q1(o2, a2)
            q2_pi_targ = self.ac_targ.q2(o2, a2)
            q_pi_targ = torch.min(q1_pi_targ, q2_pi_targ)
            backup = r + self.gamma * (1 - d) * (q_pi_targ - self.alpha * logp_a2)
        loss_q1 = F.mse_loss(q1, backup)
        loss_q2 = F.mse_loss(q2, backup)
        loss_q = loss_q1 + loss_q2
        return loss_q, dict(q1=q1.detach(), q2=q2.detach(), backup=backup)

    def compute_loss_pi(self, data):
        o = data["obs"]
        pi, logp_pi = self.ac.pi(o)
        q1_pi = self.ac.q1(o, pi)
        q2_pi = self.ac.q2(o, pi)
        q_pi = torch.min(q1_pi, q2_pi)
        loss_pi = (self.alpha * logp_pi - q_pi).mean()
        return loss_pi, logp_pi.detach()

    def update(self, data):
        self.q_optimizer.zero_grad()
        loss_q, _ = self.compute_loss_q(data)
        loss_q.backward()
        self.q_optimizer.step()

        for p in self.q_params:  # no gradient into the Qs during the policy step
            p.requires_grad = False
        self.pi_optimizer.zero_grad()
        loss_pi, logp_pi = self.compute_loss_pi(data)
        loss_pi.backward()
        self.pi_optimizer.step()
        for p in self.q_params:
            p.requires_grad = True

        alpha_loss = (-self.log_alpha.exp() * (logp_pi + self.target_entropy)).mean()
        self.a_optimizer.zero_grad()
        alpha_loss.backward()
        self.a_optimizer.step()
        self.alpha = self.log_alpha.exp().item()

        self.update_targets()
        return loss_q.item(), loss_pi.item(), alpha_loss.item()

    def update_targets(self):
        polyak = self.polyak
        with torch.no_grad():
            params = list(self.ac.parameters())
            targ = list(self.ac_targ.parameters())
            if self.polyak_mode == "spinup":
                for p, p_targ in zip(params, targ):
                    p_targ.data.mul_(polyak)
                    p_targ.data.add_((1 - polyak) * p.data)
            elif self.polyak_mode == "cleanrl":
                tau = 1 - polyak
                for p, p_targ in zip(params, targ):
                    p_targ.data.copy_(tau * p.data + (1 - tau) * p_targ.data)
            elif self.polyak_mode == "foreach":
                torch._foreach_lerp_(targ, params, 1 - polyak)
            else:
                for p, p_targ in zip(params, targ):
                    p_targ.lerp_(p, 1 - polyak)


@torch.no_grad()
def evaluate(ac, seed, num_envs=8, max_steps=100):
    """Return of one episode per env with the deterministic (mean) action."""
    torch.manual_seed(seed)
    env = BatchedPendulum(num_envs, max_steps)
    obs = env.reset()
    total = torch.zeros(num_envs)
    for _ in range(max_steps):
        obs, reward, _, _, _, _ = env.step(ac.act(obs, deterministic=True))
        total += reward
    return total.mean().item()


# ----------------------------------------------------------- fixed weights (recorded)

env = BatchedPendulum(num_envs=4)
obs = env.reset()
fixed_results["obs"] = obs
ac = MLPActorCritic(env.obs_dim, env.act_dim, act_limit=env.max_torque)
action, logp = ac.pi(obs)
fixed_results["action"] = action.detach()
fixed_results["logp"] = logp.detach()
det_action, _ = ac.pi(obs, deterministic=True)
fixed_results["det_action"] = det_action.detach()
fixed_results["q1"] = ac.q1(obs, action).detach()
fixed_results["q2"] = ac.q2(obs, action).detach()

# the stable correction, the transformed distribution and CleanRL's epsilon form
log_prob_obs = torch.randn(64, 3) * 3
for lin in (ac.pi.mu_layer, ac.pi.log_std_layer):  # a wide policy: tanh saturates for some
    lin.weight.data.mul_(8.0)
torch.manual_seed(5)
formula_action, formula_logp = ac.pi(log_prob_obs)
formula_grads = torch.autograd.grad(formula_logp.sum(), list(ac.pi.parameters()))
torch.manual_seed(5)
dist = ac.pi.transformed(log_prob_obs)
td_action = dist.rsample()
td_logp = dist.log_prob(td_action).sum(-1)  # the cached pre-tanh sample: no atanh
td_grads = torch.autograd.grad(td_logp.sum(), list(ac.pi.parameters()))
torch.manual_seed(5)
cleanrl_action, cleanrl_logp = cleanrl_log_prob(ac.pi, log_prob_obs, env.max_torque)
torch.manual_seed(5)
with torch.no_grad():
    pre_tanh = Normal(*ac.pi.distribution(log_prob_obs)).rsample()[:, 0]
unsaturated = pre_tanh.abs() < 3.0
log_prob_forms = {
    "action_difference": (formula_action - ac.pi.act_limit * td_action).abs().max().item(),
    "logp_difference": (formula_logp - td_logp).abs().max().item(),
    "grad_difference": max(((a - b).abs().max() / b.abs().max()).item()
                           for a, b in zip(formula_grads, td_grads)),
    "cleanrl_action_difference": (formula_action - cleanrl_action).abs().max().item(),
    # CleanRL's log-prob is of the scaled action: log(act_limit) lower where tanh is not flat
    "cleanrl_logp_difference": (formula_logp - math.log(env.max_torque) - cleanrl_logp[:, 0])
    [unsaturated].abs().max().item(),
    "cleanrl_saturated_difference": (formula_logp - math.log(env.max_torque)
                                     - cleanrl_logp[:, 0])[~unsaturated].abs().max().item(),
}
fixed_results["formula_logp"] = formula_logp.detach()
fixed_results["td_logp"] = td_logp.detach()
fixed_results["cleanrl_logp"] = cleanrl_logp.detach()[unsaturated]  # 1 - tanh^2 rounds to 0
fixed_results["formula_grad_mu_weight"] = formula_grads[-4]
pre_tanh_range = (pre_tanh.abs().max().item(), unsaturated.float().mean().item())
for lin in (ac.pi.mu_layer, ac.pi.log_std_layer):
    lin.weight.data.div_(8.0)

# the first SAC losses on a fixed batch, then one update, and the three polyak updates
torch.manual_seed(1)
batch = dict(obs=torch.randn(16, 3), act=torch.rand(16, 1) * 4 - 2, rew=-torch.rand(16) * 5,
             obs2=torch.randn(16, 3), done=(torch.rand(16) < 0.25).float())
sac = SAC(ac)
torch.manual_seed(2)
loss_q, q_info = sac.compute_loss_q(batch)
fixed_results["loss_q"] = loss_q.item()
fixed_results["backup"] = q_info["backup"]
torch.manual_seed(2)
first_update = sac.update(batch)
fixed_results["first_update"] = list(first_update)
fixed_results["log_alpha_after"] = sac.log_alpha.detach().clone()
fixed_results["target_entropy"] = sac.target_entropy
fixed_results["targ_q1_weight"] = sac.ac_targ.q1.q[0].weight.detach().clone()

params_now = [p.detach().clone() for p in ac.parameters()]
targ_before = [p.detach().clone() for p in sac.ac_targ.parameters()]
polyak_results = {}
for mode in ("spinup", "cleanrl", "foreach", "lerp"):
    with torch.no_grad():
        for p, p0 in zip(sac.ac_targ.parameters(), targ_before):
            p.copy_(p0)
    sac.polyak_mode = mode
    sac.update_targets()
    polyak_results[mode] = [p.detach().clone() for p in sac.ac_targ.parameters()]
sac.polyak_mode = "spinup"
polyak_reference = [0.995 * t + 0.005 * p for t, p in zip(targ_before, params_now)]
polyak_error = {mode: max((a - b).abs().max().item() for a, b in zip(ps, polyak_reference))
                for mode, ps in polyak_results.items()}
targets_frozen = all(not p.requires_grad for p in sac.ac_targ.parameters())
q_params_trainable = all(p.requires_grad for p in sac.q_params)

# the replay buffer wraps around
small_buffer = ReplayBuffer(3, 1, size=10)
for i in range(3):
    small_buffer.store(torch.full((4, 3), float(i)), torch.full((4, 1), float(i)),
                       torch.full((4,), float(i)), torch.full((4, 3), float(i)),
                       torch.zeros(4, dtype=torch.bool))
buffer_state = (small_buffer.ptr, small_buffer.size, small_buffer.rew_buf.tolist())

# ------------------------------------------------------------------------------ training

torch.manual_seed(0)
num_envs, total_steps, start_steps, update_after = 8, 400, 40, 40
batch_size, updates_per_step = 64, 4
env = BatchedPendulum(num_envs, max_steps=100)
ac = MLPActorCritic(env.obs_dim, env.act_dim, act_limit=env.max_torque)
sac = SAC(ac, gamma=0.98, polyak=0.98, lr=3e-3, alpha_lr=3e-3)
replay_buffer = ReplayBuffer(env.obs_dim, env.act_dim, size=20000)
before = evaluate(ac, seed=123)
torch.manual_seed(0)
o = env.reset()
history = {"loss_q": [], "loss_pi": [], "alpha_loss": [], "alpha": [], "episodic_returns": []}
for t in range(total_steps):
    if t < start_steps:
        a = torch.rand(num_envs, 1) * (env.action_high - env.action_low) + env.action_low
    else:
        a = ac.act(o)
    o2, r, terminated, truncated, final_obs, finished = env.step(a)
    history["episodic_returns"] += finished
    real_next_obs = torch.where(truncated[:, None], final_obs, o2)
    replay_buffer.store(o, a, r, real_next_obs, terminated)
    o = o2
    if t >= update_after:
        for _ in range(updates_per_step):
            lq, lpi, la = sac.update(replay_buffer.sample_batch(batch_size))
            history["loss_q"].append(lq)
            history["loss_pi"].append(lpi)
            history["alpha_loss"].append(la)
            history["alpha"].append(sac.alpha)
    if t % 100 == 0:
        print(f"step {t}: alpha {sac.alpha:.3f} returns {history['episodic_returns'][-2:]}")

after = evaluate(ac, seed=123)
print(f"deterministic return {before:.1f} -> {after:.1f}")
