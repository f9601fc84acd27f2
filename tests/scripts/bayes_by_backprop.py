"""Weight uncertainty in neural networks (Bayes by Backprop, Blundell et al. 2015) on a synthetic
three-class problem, written for these tests in the way common Bayes-by-Backprop blog code
commonly writes torch code (modelled on the API usage of such implementations, not a copy of
one):

- a variational Gaussian with ``mu``/``rho`` ``nn.Parameter``s made by ``torch.Tensor(...)
  .uniform_(...)``, ``sigma = torch.log1p(torch.exp(rho))``, reparameterized samples from
  ``torch.distributions.Normal(0, 1).sample(rho.size())`` and its log density written out
  (``math.log(math.sqrt(2 * math.pi))``, ``torch.log(sigma)``);
- a scale-mixture prior from two ``Normal``s, its log density once as ``torch.log`` of the
  mixture of ``torch.exp(log_prob)`` and once with ``torch.logsumexp`` of ``torch.stack``;
- a ``BayesianLinear`` layer (sampled in training or on request, the means otherwise; the log
  prior and log posterior kept as attributes) and a network of three, ``F.log_softmax`` out;
- the ELBO over several samples: ``torch.zeros(samples, batch, classes)`` filled by index
  assignment, ``F.nll_loss(outputs.mean(0), target, reduction="sum")``, the complexity cost
  weighted per minibatch as Blundell's ``pi_i = 2^(M-i) / (2^M - 1)``, trained with Adam;
- a second layer with the local reparameterization trick (``torch.randn_like``, ``torch.sqrt``
  of ``F.linear`` over squares), the closed-form KL by
  ``torch.distributions.kl_divergence(Normal, Normal)``, trained with SGD and momentum;
- predictive uncertainty from an ensemble of sampled networks: ``torch.stack``, mean/var,
  predictive entropy, ``Categorical(probs=...).entropy()``, the expected entropy and the mutual
  information; far-away inputs compared with the training data;
- fixed results (a seeded sample, so that the same random numbers make the ELBO comparable):
  ELBO terms, gradients, an Adam and an SGD step, the two mixture log densities, the closed-form
  and Monte-Carlo KL, for the torch comparison.
"""
import math

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.optim as optim
from jitgrad.distributions import (Categorical, Independent, MixtureSameFamily, Normal,
                                   kl_divergence)
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)

PI = 0.5
SIGMA_1 = torch.FloatTensor([math.exp(-0)])
SIGMA_2 = torch.FloatTensor([math.exp(-6)])
CLASSES = 3


class Gaussian:
    def __init__(self, mu, rho):
        self.mu = mu
        self.rho = rho
        self.normal = torch.distributions.Normal(0, 1)

    @property
    def sigma(self):
        return torch.log1p(torch.exp(self.rho))

    def sample(self):
        epsilon = self.normal.sample(self.rho.size())
        return self.mu + self.sigma * epsilon

    def log_prob(self, input):
        return (-math.log(math.sqrt(2 * math.pi))
                - torch.log(self.sigma)
                - ((input - self.mu) ** 2) / (2 * self.sigma ** 2)).sum()


class ScaleMixtureGaussian:
    def __init__(self, pi, sigma1, sigma2):
        self.pi = pi
        self.sigma1 = sigma1
        self.sigma2 = sigma2
        self.gaussian1 = torch.distributions.Normal(0, sigma1)
        self.gaussian2 = torch.distributions.Normal(0, sigma2)

    def log_prob(self, input):
        prob1 = torch.exp(self.gaussian1.log_prob(input))
        prob2 = torch.exp(self.gaussian2.log_prob(input))
        return (torch.log(self.pi * prob1 + (1 - self.pi) * prob2)).sum()

    def log_prob_stable(self, input):
        """The same density with logsumexp: no underflow of the narrow component's exp."""
        log_mix = torch.stack([math.log(self.pi) + self.gaussian1.log_prob(input),
                               math.log(1 - self.pi) + self.gaussian2.log_prob(input)])
        return torch.logsumexp(log_mix, dim=0).sum()


class BayesianLinear(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        # weight parameters
        self.weight_mu = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-0.2, 0.2))
        self.weight_rho = nn.Parameter(torch.Tensor(out_features, in_features).uniform_(-5, -4))
        self.weight = Gaussian(self.weight_mu, self.weight_rho)
        # bias parameters
        self.bias_mu = nn.Parameter(torch.Tensor(out_features).uniform_(-0.2, 0.2))
        self.bias_rho = nn.Parameter(torch.Tensor(out_features).uniform_(-5, -4))
        self.bias = Gaussian(self.bias_mu, self.bias_rho)
        # prior distributions
        self.weight_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
        self.bias_prior = ScaleMixtureGaussian(PI, SIGMA_1, SIGMA_2)
        self.log_prior = 0
        self.log_variational_posterior = 0

    def forward(self, input, sample=False, calculate_log_probs=False):
        if self.training or sample:
            weight = self.weight.sample()
            bias = self.bias.sample()
        else:
            weight = self.weight.mu
            bias = self.bias.mu
        if self.training or calculate_log_probs:
            self.log_prior = self.weight_prior.log_prob(weight) + self.bias_prior.log_prob(bias)
            self.log_variational_posterior = (self.weight.log_prob(weight)
                                              + self.bias.log_prob(bias))
        else:
            self.log_prior, self.log_variational_posterior = 0, 0
        return F.linear(input, weight, bias)


class BayesianNetwork(nn.Module):
    def __init__(self, hidden=32):
        super().__init__()
        self.l1 = BayesianLinear(2, hidden)
        self.l2 = BayesianLinear(hidden, hidden)
        self.l3 = BayesianLinear(hidden, CLASSES)

    def forward(self, x, sample=False):
        x = F.relu(self.l1(x, sample))
        x = F.relu(self.l2(x, sample))
        x = F.log_softmax(self.l3(x, sample), dim=1)
        return x

    def log_prior(self):
        return self.l1.log_prior + self.l2.log_prior + self.l3.log_prior

    def log_variational_posterior(self):
        return (self.l1.log_variational_posterior + self.l2.log_variational_posterior
                + self.l3.log_variational_posterior)

    def sample_elbo(self, input, target, samples=2, kl_weight=1.0):
        batch_size = input.size(0)
        outputs = torch.zeros(samples, batch_size, CLASSES)
        log_priors = torch.zeros(samples)
        log_variational_posteriors = torch.zeros(samples)
        for i in range(samples):
            outputs[i] = self(input, sample=True)
            log_priors[i] = self.log_prior()
            log_variational_posteriors[i] = self.log_variational_posterior()
        log_prior = log_priors.mean()
        log_variational_posterior = log_variational_posteriors.mean()
        negative_log_likelihood = F.nll_loss(outputs.mean(0), target, reduction="sum")
        loss = kl_weight * (log_variational_posterior - log_prior) + negative_log_likelihood
        return loss, log_prior, log_variational_posterior, negative_log_likelihood


class LocalReparamLinear(nn.Module):
    """A Gaussian mean-field layer sampling its pre-activations (local reparameterization), with
    a Gaussian prior and the closed-form KL."""

    def __init__(self, in_features, out_features, prior_sigma=1.0):
        super().__init__()
        self.weight_mu = nn.Parameter(torch.empty(out_features, in_features))
        self.weight_rho = nn.Parameter(torch.empty(out_features, in_features))
        self.bias_mu = nn.Parameter(torch.zeros(out_features))
        self.bias_rho = nn.Parameter(torch.full((out_features,), -5.0))
        nn.init.kaiming_uniform_(self.weight_mu, a=math.sqrt(5))
        nn.init.normal_(self.weight_rho, mean=-5.0, std=0.1)
        self.prior_sigma = prior_sigma

    def forward(self, x):
        weight_sigma = F.softplus(self.weight_rho)
        bias_sigma = F.softplus(self.bias_rho)
        act_mu = F.linear(x, self.weight_mu, self.bias_mu)
        act_var = F.linear(x ** 2, weight_sigma ** 2, bias_sigma ** 2)
        return act_mu + torch.sqrt(act_var + 1e-16) * torch.randn_like(act_mu)

    def kl(self):
        prior = Normal(torch.zeros(()), torch.tensor(self.prior_sigma))
        kl_w = kl_divergence(Normal(self.weight_mu, F.softplus(self.weight_rho)), prior)
        kl_b = kl_divergence(Normal(self.bias_mu, F.softplus(self.bias_rho)), prior)
        return kl_w.sum() + kl_b.sum()


def make_blobs(n, generator):
    """Three overlapping Gaussian classes around the vertices of a triangle."""
    angles = torch.tensor([0.0, 2 * math.pi / 3, 4 * math.pi / 3])
    centres = 1.5 * torch.stack([torch.cos(angles), torch.sin(angles)], dim=1)
    labels = torch.randint(0, CLASSES, (n,), generator=generator)
    points = centres[labels] + 0.7 * torch.randn(n, 2, generator=generator)
    return points, labels


def minibatch_kl_weights(num_batches):
    """Blundell et al.'s pi_i = 2^(M-i) / (2^M - 1), i = 1..M: they sum to one."""
    m = num_batches
    return [2 ** (m - i) / (2 ** m - 1) for i in range(1, m + 1)]


# ------------------------------------------------------------------------------ training
data_gen = torch.Generator().manual_seed(42)
train_x, train_y = make_blobs(480, data_gen)
test_x, test_y = make_blobs(300, data_gen)
BATCH_SIZE, TRAIN_SAMPLES, EPOCHS = 80, 2, 25
train_loader = DataLoader(TensorDataset(train_x, train_y), batch_size=BATCH_SIZE, shuffle=True)
NUM_BATCHES = len(train_loader)
kl_weights = minibatch_kl_weights(NUM_BATCHES)

net = BayesianNetwork()
optimizer = optim.Adam(net.parameters(), lr=1e-2)
losses, nlls, complexities = [], [], []
for epoch in range(EPOCHS):
    net.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        net.zero_grad()
        loss, log_prior, log_variational_posterior, nll = net.sample_elbo(
            data, target, samples=TRAIN_SAMPLES, kl_weight=kl_weights[batch_idx])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        nlls.append(nll.item())
        complexities.append((log_variational_posterior - log_prior).item())
    if epoch % 5 == 0 or epoch == EPOCHS - 1:
        print(f"epoch {epoch:2d}  loss {loss.item():9.2f}  nll {nll.item():7.2f}  "
              f"complexity {complexities[-1]:9.2f}")


def predictive(model, x, samples=20):
    """An ensemble of sampled networks: mean and variance of the class probabilities, the
    predictive entropy and its split into expected entropy and mutual information."""
    model.eval()
    with torch.no_grad():
        probs = torch.stack([model(x, sample=True).exp() for _ in range(samples)])
    mean = probs.mean(0)
    var = probs.var(0)
    entropy = -(mean * torch.log(mean + 1e-12)).sum(dim=1)
    expected_entropy = -(probs * torch.log(probs + 1e-12)).sum(dim=2).mean(0)
    return mean, var, entropy, expected_entropy, entropy - expected_entropy


def test_ensemble(model, loader, test_samples=10):
    """Blundell's test: each sampled network's accuracy, and the ensemble's over the samples
    and the mean weights together."""
    model.eval()
    correct = 0
    corrects = torch.zeros(test_samples + 1, dtype=torch.long)
    with torch.no_grad():
        for data, target in loader:
            outputs = torch.zeros(test_samples + 1, data.size(0), CLASSES)
            for i in range(test_samples):
                outputs[i] = model(data, sample=True)
            outputs[test_samples] = model(data, sample=False)
            output = outputs.mean(0)
            preds = outputs.max(2, keepdim=True)[1]
            pred = output.max(1, keepdim=True)[1]  # index of max log-probability
            corrects += preds.eq(target.view_as(pred)).sum(dim=1).squeeze()
            correct += pred.eq(target.view_as(pred)).sum().item()
    n = len(loader.dataset)
    return (corrects.float() / n).tolist(), correct / n


test_loader = DataLoader(TensorDataset(test_x, test_y), batch_size=100, shuffle=False)
per_sample_accuracy, ensemble_test_accuracy = test_ensemble(net, test_loader)
print(f"sampled networks' accuracies {[round(a, 3) for a in per_sample_accuracy]}, "
      f"ensemble {ensemble_test_accuracy:.3f}")

mean_probs, var_probs, entropy, expected_entropy, mutual_info = predictive(net, test_x)
ensemble_accuracy = (mean_probs.argmax(1) == test_y).float().mean().item()
net.eval()
with torch.no_grad():
    mean_weight_accuracy = (net(test_x).argmax(1) == test_y).float().mean().item()
categorical_entropy = Categorical(probs=mean_probs).entropy()
with torch.no_grad():
    logits_entropy = Categorical(logits=net(test_x)).entropy()
correct = mean_probs.argmax(1) == test_y
entropy_correct = entropy[correct].mean().item()
entropy_wrong = entropy[~correct].mean().item()


def expected_calibration_error(probs, labels, n_bins=10):
    confidences, predictions = torch.max(probs, 1)
    accuracies = predictions.eq(labels)
    bin_boundaries = torch.linspace(0, 1, n_bins + 1)
    ece = torch.zeros(1)
    for bin_lower, bin_upper in zip(bin_boundaries[:-1], bin_boundaries[1:]):
        in_bin = confidences.gt(bin_lower.item()) * confidences.le(bin_upper.item())
        prop_in_bin = in_bin.float().mean()
        if prop_in_bin.item() > 0:
            accuracy_in_bin = accuracies[in_bin].float().mean()
            avg_confidence_in_bin = confidences[in_bin].mean()
            ece += torch.abs(avg_confidence_in_bin - accuracy_in_bin) * prop_in_bin
    return ece.item(), torch.histc(confidences, bins=n_bins, min=0, max=1)


ece, confidence_histogram = expected_calibration_error(mean_probs, test_y)
far_x = 8.0 * torch.randn(200, 2, generator=data_gen)
_, _, far_entropy, _, far_mutual_info = predictive(net, far_x)
print(f"ensemble accuracy {ensemble_accuracy:.3f}, mean weights {mean_weight_accuracy:.3f}; "
      f"entropy right {entropy_correct:.3f} wrong {entropy_wrong:.3f}; mutual information "
      f"test {mutual_info.mean().item():.4f} far {far_mutual_info.mean().item():.4f}; "
      f"ECE {ece:.3f}")
sigmas = torch.cat([layer.weight.sigma.detach().flatten() for layer in (net.l1, net.l2, net.l3)])

# -------------------------------------------- the local-reparameterization variant, with SGD
lr_net = nn.Sequential(LocalReparamLinear(2, 32), nn.ReLU(), LocalReparamLinear(32, CLASSES))
sgd = optim.SGD(lr_net.parameters(), lr=1e-3, momentum=0.9)
lr_losses = []
for _epoch in range(15):
    for data, target in train_loader:
        kl = sum(m.kl() for m in lr_net.modules() if isinstance(m, LocalReparamLinear))
        nll = F.cross_entropy(lr_net(data), target, reduction="sum")
        loss = nll + kl / NUM_BATCHES
        sgd.zero_grad()
        loss.backward()
        sgd.step()
        lr_losses.append(loss.item())
with torch.no_grad():
    lr_accuracy = (lr_net(test_x).argmax(1) == test_y).float().mean().item()
print(f"local reparameterization: loss {lr_losses[0]:.1f} -> {lr_losses[-1]:.1f}, "
      f"accuracy {lr_accuracy:.3f}")

# ------------------------------------------------------------- (recorded) at fixed weights
torch.manual_seed(3)
fixed_net = BayesianNetwork(hidden=8)
fixed_x, fixed_y = train_x[:16], train_y[:16]
torch.manual_seed(11)  # the same epsilons on both libraries
fixed_net.train()
loss, log_prior, log_variational_posterior, nll = fixed_net.sample_elbo(
    fixed_x, fixed_y, samples=3, kl_weight=kl_weights[0])
loss.backward()
fixed_results = {
    "loss": loss.item(),
    "log_prior": log_prior.item(),
    "log_variational_posterior": log_variational_posterior.item(),
    "nll": nll.item(),
    "grads": {n: p.grad.clone() for n, p in fixed_net.named_parameters()},
    "kl_weights": kl_weights,
}
fixed_adam = optim.Adam(fixed_net.parameters(), lr=1e-2)
fixed_adam.step()
fixed_results["after_adam"] = {n: p.detach().clone() for n, p in fixed_net.named_parameters()}

layer = fixed_net.l2
with torch.no_grad():
    torch.manual_seed(5)
    w = layer.weight.sample()
    fixed_results["sampled_weight"] = w.clone()
    fixed_results["mixture_log_prob"] = layer.weight_prior.log_prob(w).item()
    fixed_results["mixture_log_prob_stable"] = layer.weight_prior.log_prob_stable(w).item()
    mixture = MixtureSameFamily(Categorical(probs=torch.tensor([PI, 1 - PI])),
                                Normal(torch.zeros(2), torch.cat([SIGMA_1, SIGMA_2])))
    fixed_results["mixture_same_family_log_prob"] = mixture.log_prob(w).sum().item()
    fixed_results["posterior_log_prob"] = layer.weight.log_prob(w).item()
    q = Normal(layer.weight_mu, layer.weight.sigma)
    torch.manual_seed(5)
    fixed_results["rsample"] = q.rsample()
    fixed_results["normal_log_prob"] = q.log_prob(w).sum().item()
    fixed_results["independent_log_prob"] = Independent(q, 2).log_prob(w).item()
    fixed_results["posterior_entropy"] = Independent(q, 2).entropy().item()
    gauss_prior = Normal(0.0, 0.5)
    fixed_results["kl_closed"] = kl_divergence(q, gauss_prior).sum().item()
    eps = torch.randn((2000,) + tuple(w.shape))
    draws = layer.weight_mu + layer.weight.sigma * eps
    fixed_results["kl_monte_carlo"] = (q.log_prob(draws) - gauss_prior.log_prob(draws)).sum(
        dim=(1, 2)).mean().item()

torch.manual_seed(9)
fixed_lr = LocalReparamLinear(4, 3, prior_sigma=0.5)
fixed_lr.weight_rho.data.fill_(-1.0)
inputs = torch.randn(6, 4)
out = fixed_lr(inputs)
lr_loss = F.cross_entropy(out, torch.tensor([0, 1, 2, 0, 1, 2]), reduction="sum") + fixed_lr.kl()
lr_loss.backward()
fixed_results["lr_out"] = out.detach().clone()
fixed_results["lr_kl"] = fixed_lr.kl().item()
fixed_results["lr_grads"] = {n: p.grad.clone() for n, p in fixed_lr.named_parameters()}
fixed_sgd = optim.SGD(fixed_lr.parameters(), lr=0.1, momentum=0.9)
fixed_sgd.step()
fixed_sgd.step()
fixed_results["lr_after_sgd"] = {n: p.detach().clone() for n, p in fixed_lr.named_parameters()}
