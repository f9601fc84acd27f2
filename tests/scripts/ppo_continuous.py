# ruff: noqa: N812 (the usual F alias)
"""Proximal policy optimisation on small vectorised environments, written for these tests the
way CleanRL's single-file ``ppo_continuous_action.py`` / ``ppo.py`` and Spinning Up's PPO write
torch code (not a copy of either):

- environments in plain torch tensors, a batch of envs stepped at once: a 2-D point mass
  (continuous forces, or five discrete pushes looked up from a table) and a torque-limited
  pendulum; auto-reset through ``torch.where`` on a ``done`` mask, episodic returns recorded;
- CleanRL's ``layer_init`` (``nn.init.orthogonal_`` with a gain, ``nn.init.constant_``),
  ``nn.Sequential`` of ``nn.Linear``/``nn.Tanh``, a state-independent ``actor_logstd``
  ``nn.Parameter`` expanded with ``expand_as``; ``distributions.Normal`` (``log_prob(...).sum(1)``,
  ``entropy().sum(1)``) and the same policy as ``Independent(Normal, 1)``; a discrete agent
  with ``distributions.Categorical(logits=...)``;
- rollout storage preallocated with ``torch.zeros((num_steps, num_envs) + shape)``, rollout
  under ``torch.no_grad``, GAE(lambda) in a reversed Python loop with ``nextnonterminal``,
  returns = advantages + values, flattening with ``reshape``;
- update epochs over minibatches drawn from ``torch.randperm``: ratio ``exp(logratio)``,
  ``approx_kl`` and ``old_approx_kl``, clip fractions, per-minibatch advantage normalisation,
  the clipped surrogate (``torch.max`` of negated terms, and Spinning Up's ``torch.min`` with
  ``torch.clamp``), value clipping, an entropy bonus, ``nn.utils.clip_grad_norm_``, Adam with
  ``eps=1e-5``, learning-rate annealing through ``optimizer.param_groups[0]["lr"]``, an early
  stop on ``target_kl``, explained variance;
- deterministic evaluation with the mean action.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.distributions import Categorical, Independent, Normal, kl_divergence

torch.manual_seed(0)
fixed_results = {}


# ------------------------------------------------------------------------ environments


class PointMassEnv:
    """N point masses in the plane pushed towards the origin; reward is minus the distance
    and a small force cost; episodes last ``max_steps`` steps, then the env resets itself."""

    PUSHES = [[0.0, 0.0], [1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]]

    def __init__(self, num_envs, max_steps=32, discrete=False, dt=0.1):
        self.num_envs, self.max_steps, self.discrete, self.dt = num_envs, max_steps, discrete, dt
        self.observation_shape = (5,)
        self.action_shape = () if discrete else (2,)
        self.n_actions = len(self.PUSHES)
        self.push_table = torch.tensor(self.PUSHES)

    def _initial(self, n):
        pos = torch.rand(n, 2) * 2 - 1
        return torch.cat([pos, torch.zeros(n, 2)], dim=1)

    def _obs(self):
        """Position, velocity and the fraction of the episode left (time-aware observations:
        the episode's end is a termination the value function can see coming)."""
        left = 1.0 - self.t.float() / self.max_steps
        return torch.cat([self.state, left[:, None]], dim=1)

    def reset(self):
        self.state = self._initial(self.num_envs)
        self.t = torch.zeros(self.num_envs, dtype=torch.long)
        self.episode_return = torch.zeros(self.num_envs)
        return self._obs()

    def step(self, action):
        if self.discrete:
            force = self.push_table[action]
        else:
            force = torch.clamp(action, -1.0, 1.0)
        pos, vel = self.state[:, :2], self.state[:, 2:]
        vel = 0.8 * vel + self.dt * 4.0 * force
        pos = torch.clamp(pos + self.dt * vel, -2.0, 2.0)
        reward = -torch.linalg.vector_norm(pos, dim=1) - 0.01 * (force ** 2).sum(1)
        self.state = torch.cat([pos, vel], dim=1)
        self.t += 1
        self.episode_return += reward
        done = self.t >= self.max_steps
        finished = self.episode_return[done].tolist()
        self.state = torch.where(done[:, None], self._initial(self.num_envs), self.state)
        self.t = torch.where(done, torch.zeros_like(self.t), self.t)
        self.episode_return = self.episode_return.masked_fill(done, 0.0)
        return self._obs(), reward, done.float(), finished


class RunningMeanStd:
    """Running mean and variance of a stream of batches (the parallel-variance update)."""

    def __init__(self, epsilon=1e-4, shape=()):
        self.mean = torch.zeros(shape, dtype=torch.float64)
        self.var = torch.ones(shape, dtype=torch.float64)
        self.count = epsilon

    def update(self, x):
        x = x.double()
        batch_mean, batch_var, batch_count = x.mean(0), x.var(0, unbiased=False), x.shape[0]
        delta = batch_mean - self.mean
        total = self.count + batch_count
        new_mean = self.mean + delta * batch_count / total
        m2 = self.var * self.count + batch_var * batch_count + delta ** 2 * (
            self.count * batch_count / total)
        self.mean, self.var, self.count = new_mean, m2 / total, total


class NormalizeReward:
    """gym's ``NormalizeReward`` and ``TransformReward(clip)`` wrappers on a batched env:
    rewards divided by the running standard deviation of the discounted return."""

    def __init__(self, env, gamma=0.99, epsilon=1e-8, clip=10.0):
        self.env, self.gamma, self.epsilon, self.clip = env, gamma, epsilon, clip
        self.return_rms = RunningMeanStd()
        self.returns = torch.zeros(env.num_envs, dtype=torch.float64)

    def __getattr__(self, name):
        return getattr(self.env, name)

    def reset(self):
        self.returns.zero_()
        return self.env.reset()

    def step(self, action):
        obs, reward, done, finished = self.env.step(action)
        self.returns = self.returns * self.gamma + reward.double()
        self.return_rms.update(self.returns)
        self.returns = self.returns * (1 - done.double())
        scaled = reward / torch.sqrt(self.return_rms.var + self.epsilon).float()
        return obs, torch.clamp(scaled, -self.clip, self.clip), done, finished


def angle_normalize(x):
    return ((x + math.pi) % (2 * math.pi)) - math.pi


class PendulumEnv:
    """Gym's pendulum dynamics on a batch: observations (cos, sin, angular velocity), a torque
    in [-2, 2], reward -(angle^2 + 0.1 speed^2 + 0.001 torque^2)."""

    max_speed, max_torque, g, m, length, dt = 8.0, 2.0, 10.0, 1.0, 1.0, 0.05

    def __init__(self, num_envs, max_steps=50):
        self.num_envs, self.max_steps = num_envs, max_steps
        self.observation_shape, self.action_shape = (3,), (1,)

    def _obs(self):
        th, thdot = self.th, self.thdot
        return torch.stack([torch.cos(th), torch.sin(th), thdot], dim=1)

    def reset(self):
        high = torch.tensor([math.pi, 1.0])
        s = (torch.rand(self.num_envs, 2) * 2 - 1) * high
        self.th, self.thdot = s[:, 0], s[:, 1]
        self.t = torch.zeros(self.num_envs, dtype=torch.long)
        return self._obs()

    def step(self, action):
        u = torch.clamp(action[:, 0], -self.max_torque, self.max_torque)
        th, thdot = self.th, self.thdot
        cost = angle_normalize(th) ** 2 + 0.1 * thdot ** 2 + 0.001 * u ** 2
        newthdot = thdot + (3 * self.g / (2 * self.length) * torch.sin(th)
                            + 3.0 / (self.m * self.length ** 2) * u) * self.dt
        newthdot = torch.clamp(newthdot, -self.max_speed, self.max_speed)
        self.th, self.thdot = th + newthdot * self.dt, newthdot
        self.t += 1
        done = self.t >= self.max_steps
        return self._obs(), -cost, done.float(), []


# ----------------------------------------------------------------------------- agents


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    """CleanRL's continuous-action agent: separate critic and actor-mean MLPs and a learned,
    state-independent log standard deviation."""

    def __init__(self, obs_dim, act_dim, hidden=64, independent=False):
        super().__init__()
        self.independent = independent
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0),
        )
        self.actor_mean = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, act_dim), std=0.01),
        )
        self.actor_logstd = nn.Parameter(torch.zeros(1, act_dim))

    def get_value(self, x):
        return self.critic(x)

    def distribution(self, x):
        action_mean = self.actor_mean(x)
        action_logstd = self.actor_logstd.expand_as(action_mean)
        action_std = torch.exp(action_logstd)
        if self.independent:
            return Independent(Normal(action_mean, action_std), 1)
        return Normal(action_mean, action_std)

    def get_action_and_value(self, x, action=None):
        probs = self.distribution(x)
        if action is None:
            action = probs.sample()
        if self.independent:
            return action, probs.log_prob(action), probs.entropy(), self.critic(x)
        return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)


class DiscreteAgent(nn.Module):
    """CleanRL's ``ppo.py`` agent: the actor's last layer gives ``Categorical`` logits."""

    def __init__(self, obs_dim, n_actions, hidden=64):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, 1), std=1.0),
        )
        self.actor = nn.Sequential(
            layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
            layer_init(nn.Linear(hidden, n_actions), std=0.01),
        )

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        logits = self.actor(x)
        probs = Categorical(logits=logits)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action), probs.entropy(), self.critic(x)


# ------------------------------------------------------------------------------ PPO parts


def compute_gae(rewards, values, dones, next_value, next_done, gamma=0.99, gae_lambda=0.95):
    """CleanRL's reversed loop; ``dones[t]`` says the observation at t began a new episode."""
    num_steps = rewards.shape[0]
    advantages = torch.zeros_like(rewards)
    lastgaelam = 0
    for t in reversed(range(num_steps)):
        if t == num_steps - 1:
            nextnonterminal = 1.0 - next_done
            nextvalues = next_value
        else:
            nextnonterminal = 1.0 - dones[t + 1]
            nextvalues = values[t + 1]
        delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
        advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
    return advantages, advantages + values


def ppo_loss(agent, mb_obs, mb_actions, mb_logprobs, mb_advantages, mb_returns, mb_values,
             clip_coef=0.2, ent_coef=0.0, vf_coef=0.5, norm_adv=True, clip_vloss=True):
    _, newlogprob, entropy, newvalue = agent.get_action_and_value(mb_obs, mb_actions)
    logratio = newlogprob - mb_logprobs
    ratio = logratio.exp()
    with torch.no_grad():
        old_approx_kl = (-logratio).mean()
        approx_kl = ((ratio - 1) - logratio).mean()
        clipfrac = ((ratio - 1.0).abs() > clip_coef).float().mean().item()
    if norm_adv:
        mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
    pg_loss1 = -mb_advantages * ratio
    pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
    pg_loss = torch.max(pg_loss1, pg_loss2).mean()
    newvalue = newvalue.view(-1)
    if clip_vloss:
        v_loss_unclipped = (newvalue - mb_returns) ** 2
        v_clipped = mb_values + torch.clamp(newvalue - mb_values, -clip_coef, clip_coef)
        v_loss_clipped = (v_clipped - mb_returns) ** 2
        v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
    else:
        v_loss = 0.5 * ((newvalue - mb_returns) ** 2).mean()
    entropy_loss = entropy.mean()
    loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef
    stats = {"pg_loss": pg_loss.item(), "v_loss": v_loss.item(), "entropy": entropy_loss.item(),
             "old_approx_kl": old_approx_kl.item(), "approx_kl": approx_kl.item(),
             "clipfrac": clipfrac}
    return loss, stats


def spinup_pi_loss(agent, obs, act, adv, logp_old, clip_ratio=0.2):
    """Spinning Up's form: the minimum of the unclipped and the clipped advantage terms."""
    _, logp, ent, _ = agent.get_action_and_value(obs, act)
    ratio = torch.exp(logp - logp_old)
    clip_adv = torch.clamp(ratio, 1 - clip_ratio, 1 + clip_ratio) * adv
    loss_pi = -(torch.min(ratio * adv, clip_adv)).mean()
    approx_kl = (logp_old - logp).mean().item()
    clipped = ratio.gt(1 + clip_ratio) | ratio.lt(1 - clip_ratio)
    clipfrac = torch.as_tensor(clipped, dtype=torch.float32).mean().item()
    return loss_pi, dict(kl=approx_kl, ent=ent.mean().item(), cf=clipfrac)


def train_ppo(env, agent, num_updates, num_steps=32, learning_rate=3e-3, anneal_lr=True,
              update_epochs=4, num_minibatches=4, gamma=0.99, gae_lambda=0.95, clip_coef=0.2,
              ent_coef=0.0, vf_coef=0.5, max_grad_norm=0.5, target_kl=None):
    num_envs = env.num_envs
    batch_size = num_envs * num_steps
    minibatch_size = batch_size // num_minibatches
    optimizer = torch.optim.Adam(agent.parameters(), lr=learning_rate, eps=1e-5)

    obs = torch.zeros((num_steps, num_envs) + env.observation_shape)
    actions_dtype = torch.long if env.action_shape == () else torch.float32
    actions = torch.zeros((num_steps, num_envs) + env.action_shape, dtype=actions_dtype)
    logprobs = torch.zeros((num_steps, num_envs))
    rewards = torch.zeros((num_steps, num_envs))
    dones = torch.zeros((num_steps, num_envs))
    values = torch.zeros((num_steps, num_envs))

    next_obs = env.reset()
    next_done = torch.zeros(num_envs)
    history = {"episodic_returns": [], "mean_rewards": [], "losses": [], "lrs": [],
               "approx_kls": [], "clipfracs": [], "explained_variance": [], "epochs_run": []}
    for update in range(1, num_updates + 1):
        if anneal_lr:
            frac = 1.0 - (update - 1.0) / num_updates
            optimizer.param_groups[0]["lr"] = frac * learning_rate
        history["lrs"].append(optimizer.param_groups[0]["lr"])

        finished_returns = []
        for step in range(num_steps):
            obs[step] = next_obs
            dones[step] = next_done
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob
            next_obs, reward, next_done, finished = env.step(action)
            rewards[step] = reward.view(-1)
            finished_returns += finished
        history["episodic_returns"].append(
            float(np.mean(finished_returns)) if finished_returns else None)
        history["mean_rewards"].append(rewards.mean().item())

        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages, returns = compute_gae(rewards, values, dones, next_value, next_done,
                                              gamma, gae_lambda)

        b_obs = obs.reshape((-1,) + env.observation_shape)
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape((-1,) + env.action_shape)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        clipfracs = []
        epochs_run = 0
        for _epoch in range(update_epochs):
            epochs_run += 1
            b_inds = torch.randperm(batch_size)
            for start in range(0, batch_size, minibatch_size):
                mb_inds = b_inds[start:start + minibatch_size]
                loss, stats = ppo_loss(agent, b_obs[mb_inds], b_actions[mb_inds],
                                       b_logprobs[mb_inds], b_advantages[mb_inds],
                                       b_returns[mb_inds], b_values[mb_inds],
                                       clip_coef=clip_coef, ent_coef=ent_coef, vf_coef=vf_coef)
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                optimizer.step()
                history["losses"].append(loss.item())
                clipfracs.append(stats["clipfrac"])
            if target_kl is not None and stats["approx_kl"] > target_kl:
                break
        history["approx_kls"].append(stats["approx_kl"])
        history["clipfracs"].append(float(np.mean(clipfracs)))
        history["epochs_run"].append(epochs_run)
        y_pred, y_true = b_values.numpy(), b_returns.numpy()
        var_y = np.var(y_true)
        history["explained_variance"].append(
            float("nan") if var_y == 0 else float(1 - np.var(y_true - y_pred) / var_y))
    return history


@torch.no_grad()
def evaluate(env, agent, episodes_of_envs=1, discrete=False):
    """Mean return of ``num_envs`` deterministic episodes (mean action / argmax logits)."""
    obs = env.reset()
    total = torch.zeros(env.num_envs)
    for _ in range(env.max_steps * episodes_of_envs):
        if discrete:
            action = agent.actor(obs).argmax(dim=-1)
        else:
            action = agent.actor_mean(obs)
        obs, reward, _, _ = env.step(action)
        total += reward
    return (total / episodes_of_envs).mean().item()


# ----------------------------------------------------- fixed-weight checks (recorded)

obs_batch = torch.randn(12, 4)
agent_fixed = Agent(4, 2)
with torch.no_grad():
    agent_fixed.actor_logstd.copy_(torch.tensor([[-0.3, 0.2]]))
    # a visible mean: the last layer was initialised with std 0.01
    agent_fixed.actor_mean[-1].weight.mul_(50.0)
agent_independent = Agent(4, 2, independent=True)
agent_independent.load_state_dict(agent_fixed.state_dict())
act_batch = torch.randn(12, 2)
with torch.no_grad():
    _, lp, ent, val = agent_fixed.get_action_and_value(obs_batch, act_batch)
    _, lp_ind, ent_ind, _ = agent_independent.get_action_and_value(obs_batch, act_batch)
    dist_ind = agent_independent.distribution(obs_batch)
fixed_results["normal_log_prob"] = lp
fixed_results["normal_entropy"] = ent
fixed_results["value"] = val
independent_shapes = (tuple(dist_ind.batch_shape), tuple(dist_ind.event_shape))
independent_agrees = {"log_prob": (lp_ind - lp).abs().max().item(),
                      "entropy": (ent_ind - ent).abs().max().item()}
# the log-density written out by hand, as Spinning Up's older code did
mean = agent_fixed.actor_mean(obs_batch).detach()
log_std = agent_fixed.actor_logstd.detach()
by_hand = (-0.5 * (((act_batch - mean) / torch.exp(log_std)) ** 2 + 2 * log_std
                   + math.log(2 * math.pi))).sum(1)
by_hand_difference = (by_hand - lp).abs().max().item()
with torch.no_grad():
    fixed_results["orthogonal_gram"] = agent_fixed.critic[2].weight @ agent_fixed.critic[2].weight.T

discrete_fixed = DiscreteAgent(4, 5)
with torch.no_grad():
    discrete_fixed.actor[-1].weight.mul_(100.0)
    logits = discrete_fixed.actor(obs_batch)
    act_idx = torch.arange(12) % 5
    _, lp_d, ent_d, _ = discrete_fixed.get_action_and_value(obs_batch, act_idx)
fixed_results["categorical_log_prob"] = lp_d
fixed_results["categorical_entropy"] = ent_d

# invalid-action masking: -inf logits where a push would leave the arena
masked_logits_leaf = logits.clone().requires_grad_(True)
action_mask = torch.ones(12, 5, dtype=torch.bool)
action_mask[:6, 1] = False
action_mask[3:9, 4] = False
masked = Categorical(logits=torch.where(action_mask, masked_logits_leaf,
                                        torch.tensor(float("-inf"))))
masked_entropy = masked.entropy()
masked_entropy.sum().backward()
fixed_results["masked_entropy"] = masked_entropy.detach()
fixed_results["masked_entropy_grad"] = masked_logits_leaf.grad
fixed_results["masked_log_prob"] = masked.log_prob(act_idx.masked_fill(~action_mask[
    torch.arange(12), act_idx], 0)).detach()
masked_samples = masked.sample((50,))
masked_actions_taken = bool(action_mask[torch.arange(12).expand(50, 12), masked_samples].all())

# the exact KL between an old and a new policy (what approx_kl estimates from samples)
with torch.no_grad():
    old_normal = Normal(mean, torch.exp(log_std).expand_as(mean))
    new_normal = Normal(mean + 0.1 * torch.randn(12, 2), torch.exp(log_std - 0.05).expand(12, 2))
    fixed_results["kl_normal"] = kl_divergence(old_normal, new_normal).sum(1)
    fixed_results["kl_independent"] = kl_divergence(Independent(old_normal, 1),
                                                    Independent(new_normal, 1))
    old_cat = Categorical(logits=logits)
    new_cat = Categorical(logits=logits + 0.5 * torch.randn(12, 5))
    fixed_results["kl_categorical"] = kl_divergence(old_cat, new_cat)
    fixed_results["categorical_probs"] = new_cat.probs
log_softmax_difference = (F.log_softmax(logits, -1).gather(1, act_idx[:, None]).squeeze(1)
                          - lp_d).abs().max().item()

# GAE on fixed rewards/values with episode boundaries, against the discounted-sum definition
T, N = 7, 3
gae_rewards = torch.randn(T, N)
gae_values = torch.randn(T, N)
gae_dones = torch.zeros(T, N)
gae_dones[3, 0] = 1.0
gae_dones[5, 2] = 1.0
gae_next_value = torch.randn(1, N)
gae_next_done = torch.tensor([0.0, 1.0, 0.0])
gae_adv, gae_ret = compute_gae(gae_rewards, gae_values, gae_dones, gae_next_value,
                               gae_next_done, 0.9, 0.8)
fixed_results["gae_advantages"] = gae_adv
fixed_results["gae_returns"] = gae_ret


def gae_reference(rewards, values, dones, next_value, next_done, gamma, lam):
    """sum_l (gamma lam)^l delta_{t+l}, truncated at episode ends, entry by entry."""
    T, N = rewards.shape
    values_ext = torch.cat([values, next_value], 0).double()
    starts = torch.cat([dones, next_done[None]], 0).double()
    out = torch.zeros(T, N, dtype=torch.float64)
    for n in range(N):
        for t in range(T):
            total, coeff = 0.0, 1.0
            for s in range(t, T):
                alive = 1.0 - starts[s + 1, n].item()
                delta = (rewards[s, n].item() + gamma * values_ext[s + 1, n].item() * alive
                         - values_ext[s, n].item())
                total += coeff * delta
                if alive == 0.0:
                    break
                coeff *= gamma * lam
            out[t, n] = total
    return out


gae_reference_difference = (gae_reference(gae_rewards, gae_values, gae_dones, gae_next_value,
                                          gae_next_done, 0.9, 0.8)
                            - gae_adv.double()).abs().max().item()

# one PPO minibatch loss on fixed data, its gradients and the clipped norm
old_logprobs = lp + 0.3 * torch.randn(12)
advantages_fixed = torch.randn(12)
returns_fixed = torch.randn(12)
values_fixed = val.view(-1) + 0.5 * torch.randn(12)
loss_fixed, stats_fixed = ppo_loss(agent_fixed, obs_batch, act_batch, old_logprobs,
                                   advantages_fixed, returns_fixed, values_fixed, ent_coef=0.01)
agent_fixed.zero_grad()
loss_fixed.backward()
fixed_results["ppo_loss"] = loss_fixed.item()
fixed_results["ppo_stats"] = stats_fixed
fixed_results["ppo_grads"] = {n: p.grad.clone() for n, p in agent_fixed.named_parameters()}
fixed_results["grad_norm"] = nn.utils.clip_grad_norm_(agent_fixed.parameters(), 0.5).item()
fixed_results["clipped_grad_norm"] = torch.linalg.vector_norm(
    torch.stack([torch.linalg.vector_norm(p.grad) for p in agent_fixed.parameters()])).item()
pi_loss_fixed, pi_info = spinup_pi_loss(discrete_fixed, obs_batch, act_idx, advantages_fixed,
                                        lp_d + 0.3 * torch.randn(12))
fixed_results["spinup_pi_loss"] = pi_loss_fixed.item()
fixed_results["spinup_info"] = pi_info
# without advantage normalisation the max-of-negatives equals Spinning Up's min form
loss_no_norm, _ = ppo_loss(agent_fixed, obs_batch, act_batch, old_logprobs, advantages_fixed,
                           returns_fixed, values_fixed, vf_coef=0.0, norm_adv=False)
spin_same, _ = spinup_pi_loss(agent_fixed, obs_batch, act_batch, advantages_fixed, old_logprobs)
surrogate_forms_difference = abs(loss_no_norm.item() - spin_same.item())

# a pendulum rollout on fixed weights: GAE and first loss (the sampled actions follow the seed)
torch.manual_seed(1)
pendulum = PendulumEnv(num_envs=4, max_steps=20)
pendulum_agent = Agent(3, 1, hidden=16)
pendulum_history = train_ppo(pendulum, pendulum_agent, num_updates=1, num_steps=20,
                             update_epochs=1, num_minibatches=2, learning_rate=1e-3)
fixed_results["pendulum_losses"] = pendulum_history["losses"]
fixed_results["pendulum_mean_reward"] = pendulum_history["mean_rewards"][0]

# ------------------------------------------------------------------------------ training

torch.manual_seed(2)
env = NormalizeReward(PointMassEnv(num_envs=8, max_steps=32))
agent = Agent(5, 2, hidden=32)
before = evaluate(PointMassEnv(num_envs=16), agent)
history = train_ppo(env, agent, num_updates=20, num_steps=32, learning_rate=3e-3,
                    ent_coef=0.0)
after = evaluate(PointMassEnv(num_envs=16), agent)
log_std_after = agent.actor_logstd.detach().clone()

torch.manual_seed(3)
denv = NormalizeReward(PointMassEnv(num_envs=8, max_steps=32, discrete=True))
dagent = DiscreteAgent(5, 5, hidden=32)
dbefore = evaluate(PointMassEnv(num_envs=16, discrete=True), dagent, discrete=True)
dhistory = train_ppo(denv, dagent, num_updates=20, num_steps=32, learning_rate=3e-3,
                     ent_coef=0.01, target_kl=0.01)
dafter = evaluate(PointMassEnv(num_envs=16, discrete=True), dagent, discrete=True)

print(f"continuous: eval {before:.2f} -> {after:.2f}, episodic "
      f"{history['episodic_returns'][0]:.2f} -> {history['episodic_returns'][-1]:.2f}; "
      f"discrete: eval {dbefore:.2f} -> {dafter:.2f}, episodic "
      f"{dhistory['episodic_returns'][0]:.2f} -> {dhistory['episodic_returns'][-1]:.2f}")
