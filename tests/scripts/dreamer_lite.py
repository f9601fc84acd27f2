# ruff: noqa: N812 (the usual F alias)
"""A tiny Dreamer-style agent, written for these tests the way PlaNet/Dreamer(V1-V3) ports to
torch write their recurrent state-space model and actor-critic (not a copy of any):

- a grid world written in torch (batched positions, ``clamp``, the coordinates relative to
  the goal as observations, rewards from the Manhattan distance to it), episodes of a random
  policy as the data;
- the RSSM: an ``nn.GRUCell`` deterministic state, a categorical stochastic latent of groups x
  classes with 1% uniform mixing, sampled by
  ``torch.distributions.OneHotCategoricalStraightThrough(logits=...).rsample()`` (a hard
  one-hot whose gradient is the softmax's), posterior from the state and an encoder embedding,
  prior from the state alone; ``Independent(OneHotCategorical(logits=...), 1)`` over the groups;
- KL balancing: ``kl_divergence`` with ``.detach()`` on the posterior's logits (the dynamics
  term) and on the prior's (the representation term), each ``torch.clamp(min=free_nats)``;
- symlog/symexp (``torch.sign * torch.log1p(torch.abs(x))`` and ``torch.expm1``) for the
  observation and reward targets; observation and reward heads, ``F.mse_loss``;
- imagination rollouts from the posterior states carrying ``(h, z)``, ``torch.stack`` over
  time, a lambda-return by a reversed loop (checked against the n-step returns written out),
  an actor trained by backpropagating the return through the learned dynamics (straight-
  through actions; the world model and the critic frozen with ``requires_grad_(False)``), an
  entropy bonus, a critic regressed on the detached returns;
- three ``Adam`` optimizers (world model, actor, critic), ``clip_grad_norm_``,
  ``torch.autograd.gradcheck`` of the lambda-return, symlog/symexp and the categorical KL
  (float64).

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.distributions import (
    Independent,
    OneHotCategorical,
    OneHotCategoricalStraightThrough,
    kl_divergence,
)

torch.manual_seed(0)
fixed_results = {}


# ----------------------------------------------------------------------- environment


class GridWorld:
    """A size x size grid; five moves (stay, up, down, left, right); the goal in the middle."""

    MOVES = torch.tensor([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]])

    def __init__(self, size=5):
        self.size = size
        self.goal = torch.tensor([size // 2, size // 2])
        self.pos = None

    @property
    def num_actions(self):
        return self.MOVES.shape[0]

    def observe(self):
        """The agent's coordinates relative to the goal."""
        return (self.pos - self.goal).float()

    def reset(self, n):
        self.pos = torch.randint(0, self.size, (n, 2))
        return self.observe()

    def step(self, action):
        """action: (n,) indices; the reward is 10 on the goal, minus the distance elsewhere."""
        self.pos = (self.pos + self.MOVES[action]).clamp(0, self.size - 1)
        distance = (self.pos - self.goal).abs().sum(-1).float()
        reward = torch.where(distance == 0, torch.full_like(distance, 10.0), -distance)
        return self.observe(), reward


def collect(env, n_episodes, length):
    """Random-policy episodes: obs (T+1, N, O), actions (T, N, A) one-hot, rewards (T, N)."""
    obs = [env.reset(n_episodes)]
    actions, rewards = [], []
    for _ in range(length):
        a = torch.randint(0, env.num_actions, (n_episodes,))
        o, r = env.step(a)
        obs.append(o)
        actions.append(F.one_hot(a, env.num_actions).float())
        rewards.append(r)
    return torch.stack(obs), torch.stack(actions), torch.stack(rewards)


# --------------------------------------------------------------------------- helpers


def symlog(x):
    return torch.sign(x) * torch.log1p(torch.abs(x))


def symexp(x):
    return torch.sign(x) * torch.expm1(torch.abs(x))


def unimix(logits, mix=0.01):
    """DreamerV3's 1% uniform mixture, back to logits."""
    probs = torch.softmax(logits, dim=-1)
    probs = (1 - mix) * probs + mix / logits.shape[-1]
    return torch.log(probs)


def lambda_return(reward, value, discount, bootstrap, lambda_):
    """Dreamer's TD(lambda) targets, (H, N) each: the recursion run backwards."""
    next_values = torch.cat([value[1:], bootstrap[None]], dim=0)
    inputs = reward + discount * next_values * (1 - lambda_)
    last = bootstrap
    outputs = []
    for t in reversed(range(reward.shape[0])):
        last = inputs[t] + discount[t] * lambda_ * last
        outputs.append(last)
    return torch.stack(outputs[::-1], dim=0)


def lambda_return_brute_force(reward, value, discount, bootstrap, lambda_):
    """The same as the lambda-weighted mixture of the n-step returns, summed term by term."""
    H = reward.shape[0]
    values = torch.cat([value, bootstrap[None]], dim=0)  # values[t] for t = 0 .. H
    out = torch.zeros_like(reward)
    for t in range(H):
        n_steps = H - t
        for n in range(1, n_steps + 1):
            ret, factor = torch.zeros_like(bootstrap), torch.ones_like(bootstrap)
            for k in range(n):
                ret = ret + factor * reward[t + k]
                factor = factor * discount[t + k]
            ret = ret + factor * values[t + n]
            weight = (1 - lambda_) * lambda_ ** (n - 1) if n < n_steps else lambda_ ** (n - 1)
            out[t] = out[t] + weight * ret
    return out


class FreezeParameters:
    """Turns off requires_grad of some modules' parameters in a ``with`` block."""

    def __init__(self, modules):
        self.params = [p for m in modules for p in m.parameters()]

    def __enter__(self):
        self.prior = [p.requires_grad for p in self.params]
        for p in self.params:
            p.requires_grad_(False)

    def __exit__(self, *exc):
        for p, flag in zip(self.params, self.prior):
            p.requires_grad_(flag)


# --------------------------------------------------------------------------- models


def mlp(inp, hidden, out, layers=2):
    modules = []
    for i in range(layers):
        modules += [nn.Linear(inp if i == 0 else hidden, hidden), nn.LayerNorm(hidden), nn.ELU()]
    modules.append(nn.Linear(hidden, out))
    return nn.Sequential(*modules)


class RSSM(nn.Module):
    def __init__(self, action_dim, embed_dim, deter=32, groups=4, classes=4, hidden=32):
        super().__init__()
        self.deter, self.groups, self.classes = deter, groups, classes
        self.stoch = groups * classes
        self.img_in = nn.Sequential(nn.Linear(self.stoch + action_dim, hidden), nn.ELU())
        self.cell = nn.GRUCell(hidden, deter)
        self.prior_net = nn.Sequential(nn.Linear(deter, hidden), nn.ELU(),
                                       nn.Linear(hidden, self.stoch))
        self.post_net = nn.Sequential(nn.Linear(deter + embed_dim, hidden), nn.ELU(),
                                      nn.Linear(hidden, self.stoch))

    def initial(self, batch):
        return torch.zeros(batch, self.deter), torch.zeros(batch, self.stoch)

    def logits(self, net, x):
        return unimix(net(x).view(*x.shape[:-1], self.groups, self.classes))

    def sample(self, logits):
        return OneHotCategoricalStraightThrough(logits=logits).rsample().flatten(-2)

    def img_step(self, h, z, action):
        h = self.cell(self.img_in(torch.cat([z, action], dim=-1)), h)
        prior_logits = self.logits(self.prior_net, h)
        return h, self.sample(prior_logits), prior_logits

    def obs_step(self, h, z, action, embed):
        h = self.cell(self.img_in(torch.cat([z, action], dim=-1)), h)
        prior_logits = self.logits(self.prior_net, h)
        post_logits = self.logits(self.post_net, torch.cat([h, embed], dim=-1))
        return h, self.sample(post_logits), post_logits, prior_logits

    def observe(self, embeds, actions):
        """embeds (T, B, E), actions (T, B, A) (the action before each observation)."""
        h, z = self.initial(embeds.shape[1])
        hs, zs, posts, priors = [], [], [], []
        for t in range(embeds.shape[0]):
            h, z, post, prior = self.obs_step(h, z, actions[t], embeds[t])
            hs.append(h)
            zs.append(z)
            posts.append(post)
            priors.append(prior)
        return (torch.stack(hs), torch.stack(zs), torch.stack(posts), torch.stack(priors))


def latent_dist(logits):
    return Independent(OneHotCategorical(logits=logits), 1)


def kl_balance(post_logits, prior_logits, free_nats=0.1, dyn_scale=0.5, rep_scale=0.1):
    """DreamerV3's split KL: the prior learns toward a frozen posterior (dyn) and the posterior
    is held near a frozen prior (rep), each at least free_nats."""
    dyn = kl_divergence(latent_dist(post_logits.detach()), latent_dist(prior_logits)).mean()
    rep = kl_divergence(latent_dist(post_logits), latent_dist(prior_logits.detach())).mean()
    loss = dyn_scale * torch.clamp(dyn, min=free_nats) + rep_scale * torch.clamp(rep,
                                                                                 min=free_nats)
    return loss, dyn


class WorldModel(nn.Module):
    def __init__(self, obs_dim, action_dim, embed_dim=32, hidden=32, free_nats=0.1):
        super().__init__()
        self.free_nats = free_nats
        self.encoder = mlp(obs_dim, hidden, embed_dim, layers=1)
        self.rssm = RSSM(action_dim, embed_dim, hidden=hidden)
        feat = self.rssm.deter + self.rssm.stoch
        self.decoder = mlp(feat, hidden, obs_dim)
        self.reward_head = mlp(feat, hidden, 1)

    def loss(self, obs, actions, rewards):
        """obs (T+1, B, O), actions (T, B, A), rewards (T, B). The first step gets a zero
        action and no reward."""
        prev_actions = torch.cat([torch.zeros_like(actions[:1]), actions], dim=0)
        embeds = self.encoder(symlog(obs))
        hs, zs, posts, priors = self.rssm.observe(embeds, prev_actions)
        feats = torch.cat([hs, zs], dim=-1)
        recon = F.mse_loss(self.decoder(feats), symlog(obs), reduction="none").sum(-1).mean()
        reward_loss = F.mse_loss(self.reward_head(feats[1:]).squeeze(-1), symlog(rewards))
        kl_loss, kl_value = kl_balance(posts, priors, free_nats=self.free_nats)
        total = recon + reward_loss + kl_loss
        return total, (recon, reward_loss, kl_value), (hs, zs)


class Actor(nn.Module):
    def __init__(self, feat, action_dim, hidden=32):
        super().__init__()
        self.net = mlp(feat, hidden, action_dim)

    def forward(self, feat):
        return OneHotCategoricalStraightThrough(logits=unimix(self.net(feat)))


def imagine(world_model, actor, h, z, horizon):
    """Rollouts of the prior from (h, z) with the actor's straight-through actions."""
    feats, entropies = [torch.cat([h, z], dim=-1)], []
    for _ in range(horizon):
        policy = actor(feats[-1].detach())
        action = policy.rsample()
        h, z, _ = world_model.rssm.img_step(h, z, action)
        feats.append(torch.cat([h, z], dim=-1))
        entropies.append(policy.entropy())
    return torch.stack(feats), torch.stack(entropies)


def actor_critic_losses(world_model, actor, critic, h, z, horizon=8, gamma=0.9, lambda_=0.95,
                        entropy_scale=3e-3):
    with FreezeParameters([world_model, critic]):
        feats, entropies = imagine(world_model, actor, h.detach(), z.detach(), horizon)
        rewards = symexp(world_model.reward_head(feats[1:]).squeeze(-1))
        values = critic(feats).squeeze(-1)
        discount = torch.full_like(rewards, gamma)
        returns = lambda_return(rewards, values[:-1], discount, values[-1], lambda_)
    actor_loss = -returns.mean() - entropy_scale * entropies.mean()
    value_pred = critic(feats[:-1].detach()).squeeze(-1)
    critic_loss = 0.5 * (value_pred - returns.detach()).pow(2).mean()
    return actor_loss, critic_loss, returns


# ----------------------------------------------------- fixed-weight checks (recorded)

# the straight-through sample: a hard one-hot whose gradient is the softmax's
logits = torch.randn(6, 5, requires_grad=True)
weights = torch.randn(6, 5)
torch.manual_seed(11)
st_sample = OneHotCategoricalStraightThrough(logits=logits).rsample()
torch.manual_seed(11)
hard_sample = OneHotCategorical(logits=logits.detach()).sample()
(st_grad,) = torch.autograd.grad((st_sample * weights).sum(), logits)
(softmax_grad,) = torch.autograd.grad((torch.softmax(logits, -1) * weights).sum(), logits)
st_is_hard = bool(torch.equal(st_sample.detach(), hard_sample))
st_is_one_hot = bool(((st_sample == 0) | (st_sample == 1)).all() and (st_sample.sum(-1) == 1).all())
fixed_results["st_sample"] = st_sample.detach()
fixed_results["st_grad"] = st_grad

# symlog/symexp, the KL of the grouped categoricals, the lambda-return
x = torch.tensor([-100.0, -3.0, -0.5, 0.0, 0.25, 2.0, 50.0])
fixed_results["symlog"] = symlog(x)
symlog_roundtrip = (symexp(symlog(x)) - x).abs().max().item()
post_logits = torch.randn(3, 4, 4, requires_grad=True)
prior_logits = torch.randn(3, 4, 4, requires_grad=True)
kl_loss, kl_value = kl_balance(unimix(post_logits), unimix(prior_logits), free_nats=0.5)
fixed_results["kl_value"] = kl_value.item()
fixed_results["kl_loss"] = kl_loss.item()
fixed_results["kl_grads"] = torch.autograd.grad(kl_loss, (post_logits, prior_logits))
kl_manual = (torch.softmax(unimix(post_logits), -1)
             * (torch.log_softmax(unimix(post_logits), -1)
                - torch.log_softmax(unimix(prior_logits), -1))).sum((-2, -1)).mean()
kl_matches_manual = abs(kl_manual.item() - kl_value.item())
fixed_results["latent_entropy"] = latent_dist(post_logits).entropy().detach()
fixed_results["latent_log_prob"] = latent_dist(post_logits).log_prob(
    F.one_hot(torch.tensor([[0, 1, 2, 3], [3, 3, 0, 1], [2, 0, 1, 1]]), 4).float()).detach()

H, N = 6, 3
lr_reward = torch.randn(H, N, dtype=torch.float64, requires_grad=True)
lr_value = torch.randn(H, N, dtype=torch.float64, requires_grad=True)
lr_discount = 0.9 * (torch.rand(H, N, dtype=torch.float64) > 0.2).double()
lr_bootstrap = torch.randn(N, dtype=torch.float64, requires_grad=True)
lambda_returns = lambda_return(lr_reward, lr_value, lr_discount, lr_bootstrap, 0.95)
brute_returns = lambda_return_brute_force(lr_reward, lr_value, lr_discount, lr_bootstrap, 0.95)
lambda_return_grads = torch.autograd.grad(lambda_returns.sum(), (lr_reward, lr_value,
                                                                  lr_bootstrap))
brute_return_grads = torch.autograd.grad(brute_returns.sum(), (lr_reward, lr_value,
                                                                lr_bootstrap))
fixed_results["lambda_returns"] = lambda_returns.detach()
# lambda = 1 is the discounted Monte-Carlo return; lambda = 0 the one-step TD target
mc_error = (lambda_return(lr_reward, lr_value, lr_discount, lr_bootstrap, 1.0)
            - lambda_return_brute_force(lr_reward, lr_value, lr_discount, lr_bootstrap, 1.0)
            ).abs().max().item()
td_target = lr_reward + lr_discount * torch.cat([lr_value[1:], lr_bootstrap[None]])
td_error = (lambda_return(lr_reward, lr_value, lr_discount, lr_bootstrap, 0.0)
            - td_target).abs().max().item()

gradcheck_results = {
    "lambda_return": torch.autograd.gradcheck(
        lambda r, v, b: lambda_return(r, v, lr_discount[:4, :2], b, 0.8),
        (lr_reward[:4, :2].detach().requires_grad_(), lr_value[:4, :2].detach().requires_grad_(),
         lr_bootstrap[:2].detach().requires_grad_())),
    "symlog_symexp": torch.autograd.gradcheck(
        lambda v: (symlog(v), symexp(v)),
        (torch.tensor([-2.5, -0.3, 0.4, 3.0], dtype=torch.float64, requires_grad=True),)),
    "categorical_kl": torch.autograd.gradcheck(
        lambda p, q: kl_divergence(latent_dist(unimix(p)), latent_dist(unimix(q))),
        (torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True),
         torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True))),
}

# a world model, actor and critic on fixed weights: losses, gradients, an imagined rollout
torch.manual_seed(1)
env = GridWorld()
obs_dim, action_dim = 2, env.num_actions
fixed_obs, fixed_actions, fixed_rewards = collect(env, 3, 5)
fixed_wm = WorldModel(obs_dim, action_dim)
fixed_actor = Actor(fixed_wm.rssm.deter + fixed_wm.rssm.stoch, action_dim)
fixed_critic = mlp(fixed_wm.rssm.deter + fixed_wm.rssm.stoch, 32, 1)
# with the default free nats the KL at initialisation (~0.03) is clamped: no gradient reaches
# the prior; without them it does
torch.manual_seed(2)
total, _, _ = fixed_wm.loss(fixed_obs, fixed_actions, fixed_rewards)
prior_params = list(fixed_wm.rssm.prior_net.parameters())
clamped_prior_grads = torch.autograd.grad(total, prior_params, allow_unused=True)
clamped_prior_grad_is_zero = all(g is None or bool((g == 0).all()) for g in clamped_prior_grads)
fixed_wm.free_nats = 0.0
torch.manual_seed(2)
total, (recon, reward_loss, kl), (hs, zs) = fixed_wm.loss(fixed_obs, fixed_actions,
                                                          fixed_rewards)
fixed_results["wm_losses"] = [total.item(), recon.item(), reward_loss.item(), kl.item()]
fixed_results["wm_states"] = {"h": hs.detach(), "z": zs.detach()}
fixed_results["wm_grads"] = dict(zip(
    [n for n, _ in fixed_wm.named_parameters()],
    torch.autograd.grad(total, list(fixed_wm.parameters()))))
torch.manual_seed(3)
actor_loss, critic_loss, returns = actor_critic_losses(
    fixed_wm, fixed_actor, fixed_critic, hs.flatten(0, 1), zs.flatten(0, 1), horizon=4)
fixed_results["actor_critic_losses"] = [actor_loss.item(), critic_loss.item()]
fixed_results["imagined_returns"] = returns.detach()
fixed_results["actor_grads"] = dict(zip(
    [n for n, _ in fixed_actor.named_parameters()],
    torch.autograd.grad(actor_loss, list(fixed_actor.parameters()))))
frozen_flags_restored = all(p.requires_grad for p in fixed_wm.parameters())
fixed_wm.free_nats = 0.1

# ------------------------------------------------------------------------------ training

torch.manual_seed(0)
env = GridWorld()
dataset = collect(env, 64, 12)
world_model = WorldModel(obs_dim, action_dim)
feat_dim = world_model.rssm.deter + world_model.rssm.stoch
actor = Actor(feat_dim, action_dim)
critic = mlp(feat_dim, 32, 1)
model_optimizer = torch.optim.Adam(world_model.parameters(), lr=3e-3, eps=1e-6)
actor_optimizer = torch.optim.Adam(actor.parameters(), lr=1e-3, eps=1e-6)
critic_optimizer = torch.optim.Adam(critic.parameters(), lr=2e-3, eps=1e-6)

iterations, warmup, batch_size = 120, 40, 16
wm_losses, recon_losses, reward_losses, kl_values = [], [], [], []
actor_losses, critic_losses, imagined_returns = [], [], []
for it in range(iterations):
    index = torch.randint(0, dataset[0].shape[1], (batch_size,))
    obs, actions, rewards = (d[:, index] for d in dataset)
    total, (recon, reward_loss, kl), (hs, zs) = world_model.loss(obs, actions, rewards)
    model_optimizer.zero_grad()
    total.backward()
    nn.utils.clip_grad_norm_(world_model.parameters(), 100.0)
    model_optimizer.step()
    wm_losses.append(total.item())
    recon_losses.append(recon.item())
    reward_losses.append(reward_loss.item())
    kl_values.append(kl.item())

    if it >= warmup:
        start = torch.randperm(hs.shape[0] * hs.shape[1])[:64]
        actor_loss, critic_loss, returns = actor_critic_losses(
            world_model, actor, critic, hs.flatten(0, 1)[start], zs.flatten(0, 1)[start])
        actor_optimizer.zero_grad()
        actor_loss.backward()
        nn.utils.clip_grad_norm_(actor.parameters(), 100.0)
        actor_optimizer.step()
        critic_optimizer.zero_grad()
        critic_loss.backward()
        nn.utils.clip_grad_norm_(critic.parameters(), 100.0)
        critic_optimizer.step()
        actor_losses.append(actor_loss.item())
        critic_losses.append(critic_loss.item())
        imagined_returns.append(returns.mean().item())
    if it % 30 == 0 or it == iterations - 1:
        print(f"iter {it}: world model {total.item():.3f} (recon {recon.item():.3f}, reward "
              f"{reward_loss.item():.3f}, kl {kl.item():.3f})")


# the actor in the real grid, filtering its latent state with the posterior
@torch.no_grad()
def evaluate(policy, n=64, steps=10):
    torch.manual_seed(7)
    env = GridWorld()
    obs = env.reset(n)
    h, z = world_model.rssm.initial(n)
    action = torch.zeros(n, action_dim)
    total = torch.zeros(n)
    for _ in range(steps):
        h, z, _, _ = world_model.rssm.obs_step(h, z, action,
                                               world_model.encoder(symlog(obs)))
        if policy == "random":
            a = torch.randint(0, action_dim, (n,))
        else:
            a = actor(torch.cat([h, z], dim=-1)).probs.argmax(-1)
        obs, reward = env.step(a)
        total += reward
        action = F.one_hot(a, action_dim).float()
    return (total / steps).mean().item()


actor_reward = evaluate("actor")
random_reward = evaluate("random")
print(f"world model {wm_losses[0]:.3f} -> {wm_losses[-1]:.3f}; actor loss "
      f"{actor_losses[0]:.3f} -> {actor_losses[-1]:.3f}; reward per step {actor_reward:.2f} "
      f"(random {random_reward:.2f})")
