# ruff: noqa: N812, N806 (the usual F alias, nerf-pytorch's H, W, K names)
"""A tiny NeRF, written for these tests the way nerf-pytorch (``run_nerf.py`` /
``run_nerf_helpers.py``) and "NeRF in 100 lines" write torch code (not a copy of either):

- positional encoding: ``2.**torch.linspace(0, max_freq, N_freqs)`` frequency bands, a list
  of ``torch.sin`` / ``torch.cos`` lambdas joined by ``torch.cat``, ``include_input``;
- camera poses from ``pose_spherical`` (``torch.Tensor`` of nested lists, matrix products
  ``@``, ``torch.Tensor`` of a numpy array); rays from a pinhole camera: ``torch.meshgrid``
  with ``indexing='xy'``, ``torch.stack``, ``torch.ones_like``, broadcasting against the
  camera-to-world rotation, ``torch.sum(..., -1)``, ``Tensor.expand``; ``ndc``-free rays with
  near/far bounds and unit view directions by ``torch.norm(..., dim=-1, keepdim=True)``;
- stratified sampling: ``torch.linspace`` + ``torch.rand`` jitter between the midpoints
  (``torch.cat`` of ``z_vals[..., :1]`` / ``[..., -1:]``);
- the NeRF MLP: ``nn.ModuleList`` of ``nn.Linear`` with a skip connection (``torch.cat``
  of the input), ``alpha_linear`` / ``feature_linear`` / ``views_linears`` / ``rgb_linear``,
  ``F.relu``, ``torch.split``; ``batchify`` by chunks and ``torch.reshape``;
- volume rendering (``raw2outputs``): ``dists`` with a ``1e10`` tail, scaled by the ray
  norm, ``alpha = 1 - exp(-relu(sigma) * delta)``, transmittance by ``torch.cumprod`` of
  ``1 - alpha + 1e-10`` shifted by a column of ones, ``weights``, ``rgb_map``,
  ``depth_map``, ``disp_map`` (``torch.max`` with ``1e-10 * torch.ones_like``), ``acc_map``,
  the white-background composite (raw noise off, as for the synthetic scenes);
- hierarchical sampling (``sample_pdf``): ``torch.cumsum`` of the pdf, ``torch.zeros_like``
  column, ``torch.searchsorted(cdf, u, right=True)``, ``torch.max`` / ``torch.min`` of the
  indices, ``torch.gather`` of expanded ``cdf`` / ``bins``, ``torch.where`` on tiny
  denominators, ``torch.sort`` of the merged samples, ``.detach()``; its gradients with
  respect to the bins and weights (``det=True``), by ``torch.autograd.grad`` and
  ``torch.autograd.gradcheck`` in float64;
- the "NeRF in 100 lines" renderer: ``compute_accumulated_transmittance`` (``torch.cumprod``
  then ``torch.cat`` of ones), ``nn.Sequential`` blocks with a skip, ``torch.relu`` density,
  ``Tensor.expand(...).transpose(0, 1)``;
- training on renders of a coloured sphere computed analytically (ray-sphere intersection,
  normals as colours): all rays of all views concatenated and shuffled by ``torch.randperm``,
  ``torch.optim.Adam`` over coarse + fine parameters, nerf-pytorch's exponential learning
  rate decay written into ``param_groups``, ``img2mse`` / ``mse2psnr`` (``torch.log`` of
  ``torch.Tensor([10.])``), rendering a held-out view under ``torch.no_grad``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import numpy as np

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn

torch.manual_seed(0)
np.random.seed(0)
fixed_results = {}


# ---------------------------------------------------------------- positional encoding


class Embedder:
    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.create_embedding_fn()

    def create_embedding_fn(self):
        embed_fns = []
        d = self.kwargs["input_dims"]
        out_dim = 0
        if self.kwargs["include_input"]:
            embed_fns.append(lambda x: x)
            out_dim += d

        max_freq = self.kwargs["max_freq_log2"]
        N_freqs = self.kwargs["num_freqs"]

        if self.kwargs["log_sampling"]:
            freq_bands = 2.0 ** torch.linspace(0.0, max_freq, steps=N_freqs)
        else:
            freq_bands = torch.linspace(2.0 ** 0.0, 2.0 ** max_freq, steps=N_freqs)

        for freq in freq_bands:
            for p_fn in self.kwargs["periodic_fns"]:
                embed_fns.append(lambda x, p_fn=p_fn, freq=freq: p_fn(x * freq))
                out_dim += d

        self.embed_fns = embed_fns
        self.out_dim = out_dim

    def embed(self, inputs):
        return torch.cat([fn(inputs) for fn in self.embed_fns], -1)


def get_embedder(multires, i=0):
    if i == -1:
        return nn.Identity(), 3

    embed_kwargs = {
        "include_input": True,
        "input_dims": 3,
        "max_freq_log2": multires - 1,
        "num_freqs": multires,
        "log_sampling": True,
        "periodic_fns": [torch.sin, torch.cos],
    }
    embedder_obj = Embedder(**embed_kwargs)

    def embed(x, eo=embedder_obj):
        return eo.embed(x)

    return embed, embedder_obj.out_dim


def positional_encoding(x, L):
    """The "NeRF in 100 lines" encoding: no log-sampling object, one loop."""
    out = [x]
    for j in range(L):
        out.append(torch.sin(2 ** j * x))
        out.append(torch.cos(2 ** j * x))
    return torch.cat(out, dim=1)


# ---------------------------------------------------------------- cameras and rays


def trans_t(t):
    return torch.Tensor([
        [1, 0, 0, 0],
        [0, 1, 0, 0],
        [0, 0, 1, t],
        [0, 0, 0, 1]]).float()


def rot_phi(phi):
    return torch.Tensor([
        [1, 0, 0, 0],
        [0, np.cos(phi), -np.sin(phi), 0],
        [0, np.sin(phi), np.cos(phi), 0],
        [0, 0, 0, 1]]).float()


def rot_theta(th):
    return torch.Tensor([
        [np.cos(th), 0, -np.sin(th), 0],
        [0, 1, 0, 0],
        [np.sin(th), 0, np.cos(th), 0],
        [0, 0, 0, 1]]).float()


def pose_spherical(theta, phi, radius):
    c2w = trans_t(radius)
    c2w = rot_phi(phi / 180.0 * np.pi) @ c2w
    c2w = rot_theta(theta / 180.0 * np.pi) @ c2w
    c2w = torch.Tensor(np.array([[-1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 1]])) @ c2w
    return c2w


def get_rays(H, W, K, c2w):
    i, j = torch.meshgrid(torch.linspace(0, W - 1, W), torch.linspace(0, H - 1, H),
                          indexing="xy")
    dirs = torch.stack([(i - K[0][2]) / K[0][0], -(j - K[1][2]) / K[1][1],
                        -torch.ones_like(i)], -1)
    # Rotate ray directions from camera frame to the world frame
    rays_d = torch.sum(dirs[..., np.newaxis, :] * c2w[:3, :3], -1)
    # Translate camera frame's origin to the world frame. It is the origin of all rays.
    rays_o = c2w[:3, -1].expand(rays_d.shape)
    return rays_o, rays_d


def get_rays_np(H, W, K, c2w):
    i, j = np.meshgrid(np.arange(W, dtype=np.float32), np.arange(H, dtype=np.float32),
                       indexing="xy")
    dirs = np.stack([(i - K[0][2]) / K[0][0], -(j - K[1][2]) / K[1][1], -np.ones_like(i)], -1)
    rays_d = np.sum(dirs[..., np.newaxis, :] * c2w[:3, :3], -1)
    rays_o = np.broadcast_to(c2w[:3, -1], np.shape(rays_d))
    return rays_o, rays_d


# ---------------------------------------------------------------- the analytic scene

SPHERE_CENTER = torch.tensor([0.0, 0.0, 0.0])
SPHERE_RADIUS = 1.0


def render_sphere(rays_o, rays_d, white_bkgd=True):
    """Ground truth: a sphere coloured by its normal (0.5 * (n + 1)), on white."""
    d = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
    oc = rays_o - SPHERE_CENTER
    b = torch.sum(oc * d, -1)
    c = torch.sum(oc * oc, -1) - SPHERE_RADIUS ** 2
    disc = b * b - c
    hit = disc > 0
    t = -b - torch.sqrt(torch.clamp(disc, min=0.0))
    points = rays_o + t[..., None] * d
    normal = (points - SPHERE_CENTER) / SPHERE_RADIUS
    color = 0.5 * (normal + 1.0)
    bkgd = torch.ones_like(color) if white_bkgd else torch.zeros_like(color)
    rgb = torch.where(hit[..., None], color, bkgd)
    depth = torch.where(hit, t * torch.norm(rays_d, dim=-1), torch.zeros_like(t))
    return rgb, depth, hit


H, W = 10, 10
focal = 12.0
K = np.array([[focal, 0, 0.5 * W], [0, focal, 0.5 * H], [0, 0, 1]])
near, far = 2.0, 6.0

poses = torch.stack([pose_spherical(angle, -30.0, 4.0)
                     for angle in np.linspace(-180, 180, 8 + 1)[:-1]], 0)
test_pose = pose_spherical(22.5, -30.0, 4.0)

images = []
depths = []
for p in poses:
    ro, rd = get_rays(H, W, K, p[:3, :4])
    rgb, depth, _ = render_sphere(ro, rd)
    images.append(rgb)
    depths.append(depth)
images = torch.stack(images, 0)  # (N, H, W, 3)

# torch rays equal the numpy rays (recorded)
ro_t, rd_t = get_rays(H, W, K, poses[0][:3, :4])
ro_n, rd_n = get_rays_np(H, W, K, poses[0][:3, :4].numpy())
rays_np_difference = float(np.abs(rd_t.numpy() - rd_n).max()
                           + np.abs(ro_t.numpy() - ro_n).max())
fixed_results["rays_d"] = rd_t
fixed_results["poses"] = poses
fixed_results["images"] = images
center_hit = bool(render_sphere(ro_t, rd_t)[2][H // 2, W // 2])
corner_hit = bool(render_sphere(ro_t, rd_t)[2][0, 0])


# ---------------------------------------------------------------- the NeRF MLP


class NeRF(nn.Module):
    def __init__(self, D=8, W=256, input_ch=3, input_ch_views=3, output_ch=4, skips=(4,),
                 use_viewdirs=False):
        super().__init__()
        self.D = D
        self.W = W
        self.input_ch = input_ch
        self.input_ch_views = input_ch_views
        self.skips = list(skips)
        self.use_viewdirs = use_viewdirs

        self.pts_linears = nn.ModuleList(
            [nn.Linear(input_ch, W)]
            + [nn.Linear(W, W) if i not in self.skips else nn.Linear(W + input_ch, W)
               for i in range(D - 1)])

        self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])

        if use_viewdirs:
            self.feature_linear = nn.Linear(W, W)
            self.alpha_linear = nn.Linear(W, 1)
            self.rgb_linear = nn.Linear(W // 2, 3)
        else:
            self.output_linear = nn.Linear(W, output_ch)

    def forward(self, x):
        input_pts, input_views = torch.split(x, [self.input_ch, self.input_ch_views], dim=-1)
        h = input_pts
        for i, _ in enumerate(self.pts_linears):
            h = self.pts_linears[i](h)
            h = F.relu(h)
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)

        if self.use_viewdirs:
            alpha = self.alpha_linear(h)
            feature = self.feature_linear(h)
            h = torch.cat([feature, input_views], -1)

            for i, _ in enumerate(self.views_linears):
                h = self.views_linears[i](h)
                h = F.relu(h)

            rgb = self.rgb_linear(h)
            outputs = torch.cat([rgb, alpha], -1)
        else:
            outputs = self.output_linear(h)

        return outputs


def batchify(fn, chunk):
    if chunk is None:
        return fn

    def ret(inputs):
        return torch.cat([fn(inputs[i:i + chunk]) for i in range(0, inputs.shape[0], chunk)], 0)

    return ret


def run_network(inputs, viewdirs, fn, embed_fn, embeddirs_fn, netchunk=1024 * 64):
    inputs_flat = torch.reshape(inputs, [-1, inputs.shape[-1]])
    embedded = embed_fn(inputs_flat)

    if viewdirs is not None:
        input_dirs = viewdirs[:, None].expand(inputs.shape)
        input_dirs_flat = torch.reshape(input_dirs, [-1, input_dirs.shape[-1]])
        embedded_dirs = embeddirs_fn(input_dirs_flat)
        embedded = torch.cat([embedded, embedded_dirs], -1)

    outputs_flat = batchify(fn, netchunk)(embedded)
    outputs = torch.reshape(outputs_flat, list(inputs.shape[:-1]) + [outputs_flat.shape[-1]])
    return outputs


# ---------------------------------------------------------------- volume rendering


def raw2outputs(raw, z_vals, rays_d, raw_noise_std=0.0, white_bkgd=False):
    def raw2alpha(raw, dists, act_fn=F.relu):
        return 1.0 - torch.exp(-act_fn(raw) * dists)

    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = torch.cat([dists, torch.Tensor([1e10]).expand(dists[..., :1].shape)], -1)

    dists = dists * torch.norm(rays_d[..., None, :], dim=-1)

    rgb = torch.sigmoid(raw[..., :3])  # [N_rays, N_samples, 3]
    noise = 0.0
    if raw_noise_std > 0.0:
        noise = torch.randn(raw[..., 3].shape) * raw_noise_std

    alpha = raw2alpha(raw[..., 3] + noise, dists)  # [N_rays, N_samples]
    weights = alpha * torch.cumprod(
        torch.cat([torch.ones((alpha.shape[0], 1)), 1.0 - alpha + 1e-10], -1), -1)[:, :-1]
    rgb_map = torch.sum(weights[..., None] * rgb, -2)  # [N_rays, 3]

    depth_map = torch.sum(weights * z_vals, -1)
    disp_map = 1.0 / torch.max(1e-10 * torch.ones_like(depth_map),
                               depth_map / torch.sum(weights, -1))
    acc_map = torch.sum(weights, -1)

    if white_bkgd:
        rgb_map = rgb_map + (1.0 - acc_map[..., None])

    return rgb_map, disp_map, acc_map, weights, depth_map


# ---------------------------------------------------------------- hierarchical sampling


def sample_pdf(bins, weights, N_samples, det=False):
    # Get pdf
    weights = weights + 1e-5  # prevent nans
    pdf = weights / torch.sum(weights, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)  # (batch, len(bins))

    # Take uniform samples
    if det:
        u = torch.linspace(0.0, 1.0, steps=N_samples, dtype=bins.dtype)
        u = u.expand(list(cdf.shape[:-1]) + [N_samples])
    else:
        u = torch.rand(list(cdf.shape[:-1]) + [N_samples], dtype=bins.dtype)

    # Invert CDF
    u = u.contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.max(torch.zeros_like(inds - 1), inds - 1)
    above = torch.min((cdf.shape[-1] - 1) * torch.ones_like(inds), inds)
    inds_g = torch.stack([below, above], -1)  # (batch, N_samples, 2)

    matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = torch.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
    bins_g = torch.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)

    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    t = (u - cdf_g[..., 0]) / denom
    samples = bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])

    return samples


def render_rays(ray_batch, network_fn, network_query_fn, N_samples, lindisp=False,
                perturb=0.0, N_importance=0, network_fine=None, white_bkgd=False,
                raw_noise_std=0.0):
    N_rays = ray_batch.shape[0]
    rays_o, rays_d = ray_batch[:, 0:3], ray_batch[:, 3:6]  # [N_rays, 3] each
    viewdirs = ray_batch[:, -3:] if ray_batch.shape[-1] > 8 else None
    bounds = torch.reshape(ray_batch[..., 6:8], [-1, 1, 2])
    near, far = bounds[..., 0], bounds[..., 1]  # [-1,1]

    t_vals = torch.linspace(0.0, 1.0, steps=N_samples)
    if not lindisp:
        z_vals = near * (1.0 - t_vals) + far * (t_vals)
    else:
        z_vals = 1.0 / (1.0 / near * (1.0 - t_vals) + 1.0 / far * (t_vals))

    z_vals = z_vals.expand([N_rays, N_samples])

    if perturb > 0.0:
        # get intervals between samples
        mids = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
        upper = torch.cat([mids, z_vals[..., -1:]], -1)
        lower = torch.cat([z_vals[..., :1], mids], -1)
        # stratified samples in those intervals
        t_rand = torch.rand(z_vals.shape)
        z_vals = lower + (upper - lower) * t_rand

    pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]

    raw = network_query_fn(pts, viewdirs, network_fn)
    rgb_map, disp_map, acc_map, weights, depth_map = raw2outputs(
        raw, z_vals, rays_d, raw_noise_std, white_bkgd)

    if N_importance > 0:
        rgb_map_0, disp_map_0, acc_map_0 = rgb_map, disp_map, acc_map

        z_vals_mid = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
        z_samples = sample_pdf(z_vals_mid, weights[..., 1:-1], N_importance,
                               det=(perturb == 0.0))
        z_samples = z_samples.detach()

        z_vals, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)
        pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]

        run_fn = network_fn if network_fine is None else network_fine
        raw = network_query_fn(pts, viewdirs, run_fn)

        rgb_map, disp_map, acc_map, weights, depth_map = raw2outputs(
            raw, z_vals, rays_d, raw_noise_std, white_bkgd)

    ret = {"rgb_map": rgb_map, "disp_map": disp_map, "acc_map": acc_map,
           "depth_map": depth_map, "weights": weights, "z_vals": z_vals}
    if N_importance > 0:
        ret["rgb0"] = rgb_map_0
        ret["disp0"] = disp_map_0
        ret["acc0"] = acc_map_0
        ret["z_std"] = torch.std(z_samples, dim=-1, unbiased=False)  # [N_rays]

    return ret


def batchify_rays(rays_flat, chunk=1024 * 32, **kwargs):
    all_ret = {}
    for i in range(0, rays_flat.shape[0], chunk):
        ret = render_rays(rays_flat[i:i + chunk], **kwargs)
        for k in ret:
            if k not in all_ret:
                all_ret[k] = []
            all_ret[k].append(ret[k])

    all_ret = {k: torch.cat(all_ret[k], 0) for k in all_ret}
    return all_ret


def render(H, W, K, chunk=1024 * 32, rays=None, c2w=None, near=0.0, far=1.0, **kwargs):
    if c2w is not None:
        rays_o, rays_d = get_rays(H, W, K, c2w)
    else:
        rays_o, rays_d = rays

    viewdirs = rays_d
    viewdirs = viewdirs / torch.norm(viewdirs, dim=-1, keepdim=True)
    viewdirs = torch.reshape(viewdirs, [-1, 3]).float()

    sh = rays_d.shape  # [..., 3]
    rays_o = torch.reshape(rays_o, [-1, 3]).float()
    rays_d = torch.reshape(rays_d, [-1, 3]).float()

    near, far = near * torch.ones_like(rays_d[..., :1]), far * torch.ones_like(rays_d[..., :1])
    rays = torch.cat([rays_o, rays_d, near, far], -1)
    rays = torch.cat([rays, viewdirs], -1)

    all_ret = batchify_rays(rays, chunk, **kwargs)
    for k in all_ret:
        k_sh = list(sh[:-1]) + list(all_ret[k].shape[1:])
        all_ret[k] = torch.reshape(all_ret[k], k_sh)

    k_extract = ["rgb_map", "disp_map", "acc_map"]
    ret_list = [all_ret[k] for k in k_extract]
    ret_dict = {k: all_ret[k] for k in all_ret if k not in k_extract}
    return ret_list + [ret_dict]


def img2mse(x, y):
    return torch.mean((x - y) ** 2)


def mse2psnr(x):
    return -10.0 * torch.log(x) / torch.log(torch.Tensor([10.0]))


# ---------------------------------------------------------------- rendering checks

# (recorded) a hand-made density: weights sum to acc, a solid slab stops the ray
z_fixed = torch.linspace(2.0, 6.0, 8).expand(3, 8)
rays_d_fixed = torch.tensor([[0.0, 0.0, -1.0], [0.0, 0.6, -0.8], [0.3, 0.0, -2.0]])
raw_fixed = torch.zeros(3, 8, 4)
raw_fixed[..., :3] = torch.linspace(-2.0, 2.0, 3 * 8 * 3).reshape(3, 8, 3)
raw_fixed[0, 3:, 3] = 50.0  # an opaque wall from the 4th sample on
raw_fixed[1, :, 3] = 0.3  # a thin fog
raw_fixed[2, :, 3] = -1.0  # negative density: relu makes it empty
outs_fixed = raw2outputs(raw_fixed, z_fixed, rays_d_fixed)
fixed_results["raw2outputs"] = {name: value for name, value in
                                zip(("rgb", "disp", "acc", "weights", "depth"), outs_fixed)}
weights_fixed = outs_fixed[3]
acc_fixed = outs_fixed[2]

# "NeRF in 100 lines": transmittance as cumprod then a shifted column of ones


def compute_accumulated_transmittance(alphas):
    accumulated_transmittance = torch.cumprod(alphas, 1)
    return torch.cat((torch.ones((accumulated_transmittance.shape[0], 1),
                                 device=alphas.device),
                      accumulated_transmittance[:, :-1]), dim=-1)


sigma_fixed = F.relu(raw_fixed[..., 3])
delta_fixed = torch.cat((z_fixed[:, 1:] - z_fixed[:, :-1],
                         torch.tensor([1e10]).expand(3, 1)), -1)
delta_fixed = delta_fixed * torch.norm(rays_d_fixed[..., None, :], dim=-1)
alpha_100 = 1 - torch.exp(-sigma_fixed * delta_fixed)
weights_100 = compute_accumulated_transmittance(1 - alpha_100) * alpha_100
transmittance_difference = float((weights_100 - weights_fixed).abs().max())
fixed_results["weights_100_lines"] = weights_100


# ---------------------------------------------------------------- sample_pdf and its gradients

# (recorded) inverse-CDF sampling on fixed bins/weights, deterministic and jittered
bins_fixed = torch.linspace(2.0, 6.0, 9).expand(4, 9).contiguous()
w_fixed = torch.tensor([[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
                        [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
                        [0.0, 0.1, 0.5, 2.0, 0.5, 0.1, 0.0, 0.0],
                        [3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0]])
samples_det = sample_pdf(bins_fixed, w_fixed, 16, det=True)
torch.manual_seed(1)
samples_rand = sample_pdf(bins_fixed, w_fixed, 16, det=False)
fixed_results["sample_pdf_det"] = samples_det
fixed_results["sample_pdf_rand"] = samples_rand
# a peaked pdf puts most samples in its bin; uniform weights give evenly spaced samples
peak_fraction = float(((samples_det[0] >= 3.5) & (samples_det[0] <= 4.0)).float().mean())
uniform_spacing = torch.diff(samples_det[1])
samples_sorted = bool((torch.diff(samples_det, dim=-1) >= 0).all())
samples_in_range = bool(((samples_rand >= 2.0) & (samples_rand <= 6.0)).all())

# gradients to the sample positions through the inverse CDF (det=True)
bins_g64 = torch.linspace(2.0, 6.0, 7, dtype=torch.float64).expand(3, 7).clone()
bins_g64 = bins_g64 + 0.05 * torch.randn(3, 7, dtype=torch.float64).cumsum(-1).abs()
bins_g64, _ = torch.sort(bins_g64, -1)
bins_g64.requires_grad_(True)
w_g64 = (torch.rand(3, 6, dtype=torch.float64) + 0.2).requires_grad_(True)
samples_g64 = sample_pdf(bins_g64, w_g64, 10, det=True)
grad_target = torch.linspace(-1.0, 1.0, 30, dtype=torch.float64).reshape(3, 10)
grad_bins, grad_weights = torch.autograd.grad((samples_g64 * grad_target).sum(),
                                              [bins_g64, w_g64])
fixed_results["sample_pdf_grads"] = {"bins": grad_bins, "weights": grad_weights,
                                     "samples": samples_g64.detach()}
# a sample that stays inside its interval moves with the interval's ends: the bin
# gradients of one ray sum to that ray's weighted sum of upstream gradients (translation)
translation_residual = float((grad_bins.sum(-1) - grad_target.sum(-1)).abs().max())
# scaling all weights of a ray leaves the pdf, so the samples, unchanged
scale_residual = float((grad_weights * w_g64.detach()).sum(-1).abs().max())
gradcheck_sample_pdf = torch.autograd.gradcheck(
    lambda b, w: sample_pdf(b, w, 10, det=True), (bins_g64, w_g64), eps=1e-6, atol=1e-5)

# the rendered depth's gradient flows back to the fine sample positions
z_pos = torch.linspace(2.0, 6.0, 12).expand(2, 12).clone().requires_grad_(True)
raw_pos = torch.zeros(2, 12, 4)
raw_pos[..., 3] = torch.linspace(0.0, 2.0, 12)
rd_pos = torch.tensor([[0.0, 0.0, -1.0], [0.0, 0.6, -0.8]])
depth_pos = raw2outputs(raw_pos, z_pos, rd_pos)[4]
depth_pos.sum().backward()
fixed_results["depth_grad_z"] = z_pos.grad


# ---------------------------------------------------------------- models (recorded forwards)

multires, multires_views = 4, 2
embed_fn, input_ch = get_embedder(multires)
embeddirs_fn, input_ch_views = get_embedder(multires_views)
embed_dims = (input_ch, input_ch_views)
pe_x = torch.linspace(-1.0, 1.0, 12).reshape(4, 3)
pe_difference = float((embed_fn(pe_x) - positional_encoding(pe_x, multires)).abs().max())
fixed_results["embedding"] = embed_fn(pe_x)

torch.manual_seed(0)
model = NeRF(D=4, W=32, input_ch=input_ch, input_ch_views=input_ch_views, skips=[2],
             use_viewdirs=True)
model_fine = NeRF(D=4, W=32, input_ch=input_ch, input_ch_views=input_ch_views, skips=[2],
                  use_viewdirs=True)


def network_query_fn(inputs, viewdirs, network_fn):
    return run_network(inputs, viewdirs, network_fn, embed_fn=embed_fn,
                       embeddirs_fn=embeddirs_fn, netchunk=256)


render_kwargs_train = {
    "network_query_fn": network_query_fn,
    "perturb": 1.0,
    "N_importance": 8,
    "network_fine": model_fine,
    "N_samples": 16,
    "network_fn": model,
    "white_bkgd": True,
    "raw_noise_std": 0.0,
}
render_kwargs_test = {k: render_kwargs_train[k] for k in render_kwargs_train}
render_kwargs_test["perturb"] = 0.0
render_kwargs_test["raw_noise_std"] = 0.0

with torch.no_grad():
    rgb0, disp0, acc0, extras0 = render(H, W, K, chunk=64, c2w=test_pose[:3, :4], near=near,
                                        far=far, **render_kwargs_test)
fixed_results["untrained_render"] = {"rgb": rgb0, "disp": disp0, "acc": acc0,
                                     "rgb0": extras0["rgb0"], "z_vals": extras0["z_vals"]}
untrained_shapes = (tuple(rgb0.shape), tuple(extras0["z_vals"].shape))

# the fine pass on the fixed weights: gradients of both networks (recorded)
torch.manual_seed(3)
rays_o_g, rays_d_g = get_rays(H, W, K, poses[1][:3, :4])
sel = torch.randperm(H * W)[:16]
rays_o_g = rays_o_g.reshape(-1, 3)[sel]
rays_d_g = rays_d_g.reshape(-1, 3)[sel]
target_g = images[1].reshape(-1, 3)[sel]
rgb_g, _, _, extras_g = render(H, W, K, chunk=64, rays=(rays_o_g, rays_d_g), near=near,
                               far=far, **render_kwargs_test)
loss_g = img2mse(rgb_g, target_g) + img2mse(extras_g["rgb0"], target_g)
loss_g.backward()
fixed_results["fixed_loss"] = loss_g.detach()
fixed_results["grads"] = {
    "coarse." + name: p.grad.clone() for name, p in model.named_parameters()}
fixed_results["grads"].update({
    "fine." + name: p.grad.clone() for name, p in model_fine.named_parameters()})
model.zero_grad()
model_fine.zero_grad()


# ---------------------------------------------------------------- training

# all rays of all training views, shuffled once (nerf-pytorch's use_batching)
rays = torch.stack([torch.stack(get_rays(H, W, K, p[:3, :4]), 0) for p in poses], 0)
rays_rgb = torch.cat([rays, images[:, None]], 1)  # [N, ro+rd+rgb, H, W, 3]
rays_rgb = torch.permute(rays_rgb, [0, 2, 3, 1, 4])  # [N, H, W, ro+rd+rgb, 3]
rays_rgb = torch.reshape(rays_rgb, [-1, 3, 3])
torch.manual_seed(0)
rand_idx = torch.randperm(rays_rgb.shape[0])
rays_rgb = rays_rgb[rand_idx]

grad_vars = list(model.parameters()) + list(model_fine.parameters())
lrate = 1e-2
lrate_decay = 0.25  # in units of N_iters, like nerf-pytorch's 250 (x1000 steps)
optimizer = torch.optim.Adam(params=grad_vars, lr=lrate, betas=(0.9, 0.999))

N_rand = 128
N_iters = 60
i_batch = 0
losses, psnrs, lrs = [], [], []
for global_step in range(N_iters):
    batch = rays_rgb[i_batch:i_batch + N_rand]  # [B, 2+1, 3*?]
    batch = torch.transpose(batch, 0, 1)
    batch_rays, target_s = batch[:2], batch[2]

    i_batch += N_rand
    if i_batch >= rays_rgb.shape[0]:
        rand_idx = torch.randperm(rays_rgb.shape[0])
        rays_rgb = rays_rgb[rand_idx]
        i_batch = 0

    rgb, disp, acc, extras = render(H, W, K, chunk=1024, rays=batch_rays, near=near, far=far,
                                    **render_kwargs_train)

    optimizer.zero_grad()
    img_loss = img2mse(rgb, target_s)
    loss = img_loss
    psnr = mse2psnr(img_loss)

    if "rgb0" in extras:
        img_loss0 = img2mse(extras["rgb0"], target_s)
        loss = loss + img_loss0

    loss.backward()
    optimizer.step()

    decay_rate = 0.1
    decay_steps = lrate_decay * N_iters
    new_lrate = lrate * (decay_rate ** (global_step / decay_steps))
    for param_group in optimizer.param_groups:
        param_group["lr"] = new_lrate

    losses.append(loss.item())
    psnrs.append(psnr.item())
    lrs.append(new_lrate)

# render the held-out view
with torch.no_grad():
    rgb_test, disp_test, acc_test, extras_test = render(
        H, W, K, chunk=128, c2w=test_pose[:3, :4], near=near, far=far, **render_kwargs_test)
ro_test, rd_test = get_rays(H, W, K, test_pose[:3, :4])
gt_test, depth_test, hit_test = render_sphere(ro_test, rd_test)
test_mse = img2mse(rgb_test, gt_test).item()
test_psnr = mse2psnr(torch.tensor(test_mse)).item()
baseline_mse = img2mse(rgb0, gt_test).item()


# ---------------------------------------------------------------- "NeRF in 100 lines"


class NerfModel(nn.Module):
    def __init__(self, embedding_dim_pos=4, embedding_dim_direction=2, hidden_dim=32):
        super().__init__()
        self.block1 = nn.Sequential(nn.Linear(embedding_dim_pos * 6 + 3, hidden_dim),
                                    nn.ReLU(), nn.Linear(hidden_dim, hidden_dim), nn.ReLU())
        self.block2 = nn.Sequential(
            nn.Linear(embedding_dim_pos * 6 + hidden_dim + 3, hidden_dim), nn.ReLU(),
            nn.Linear(hidden_dim, hidden_dim + 1))
        self.block3 = nn.Sequential(
            nn.Linear(embedding_dim_direction * 6 + hidden_dim + 3, hidden_dim // 2), nn.ReLU())
        self.block4 = nn.Sequential(nn.Linear(hidden_dim // 2, 3), nn.Sigmoid())
        self.embedding_dim_pos = embedding_dim_pos
        self.embedding_dim_direction = embedding_dim_direction
        self.relu = nn.ReLU()

    def forward(self, o, d):
        emb_x = positional_encoding(o, self.embedding_dim_pos)
        emb_d = positional_encoding(d, self.embedding_dim_direction)
        h = self.block1(emb_x)
        tmp = self.block2(torch.cat((h, emb_x), dim=1))
        h, sigma = tmp[:, :-1], self.relu(tmp[:, -1])
        h = self.block3(torch.cat((h, emb_d), dim=1))
        c = self.block4(h)
        return c, sigma


def render_rays_100(nerf_model, ray_origins, ray_directions, hn=0, hf=0.5, nb_bins=192):
    device = ray_origins.device
    t = torch.linspace(hn, hf, nb_bins, device=device).expand(ray_origins.shape[0], nb_bins)
    # Perturb sampling along each ray.
    mid = (t[:, :-1] + t[:, 1:]) / 2.0
    lower = torch.cat((t[:, :1], mid), -1)
    upper = torch.cat((mid, t[:, -1:]), -1)
    u = torch.rand(t.shape, device=device)
    t = lower + (upper - lower) * u  # [batch_size, nb_bins]
    delta = torch.cat((t[:, 1:] - t[:, :-1],
                       torch.tensor([1e10], device=device).expand(ray_origins.shape[0], 1)), -1)

    # Compute the 3D points along each ray
    x = ray_origins.unsqueeze(1) + t.unsqueeze(2) * ray_directions.unsqueeze(1)
    # Expand the ray_directions tensor to match the shape of x
    ray_directions = ray_directions.expand(nb_bins, ray_directions.shape[0], 3).transpose(0, 1)

    colors, sigma = nerf_model(x.reshape(-1, 3), ray_directions.reshape(-1, 3))
    colors = colors.reshape(x.shape)
    sigma = sigma.reshape(x.shape[:-1])

    alpha = 1 - torch.exp(-sigma * delta)  # [batch_size, nb_bins]
    weights = compute_accumulated_transmittance(1 - alpha).unsqueeze(2) * alpha.unsqueeze(2)
    # Compute the pixel values as a weighted sum of colors along each ray
    c = (weights * colors).sum(dim=1)
    weight_sum = weights.sum(-1).sum(-1)  # Regularization for white background
    return c + 1 - weight_sum.unsqueeze(-1)


# the dataset as (o, d, rgb) rows, unit directions, shuffled by a DataLoader-like randperm
rays_o_all = rays[:, 0].reshape(-1, 3)
rays_d_all = rays[:, 1].reshape(-1, 3)
rays_d_all = rays_d_all / torch.norm(rays_d_all, dim=-1, keepdim=True)
training_dataset = torch.cat([rays_o_all, rays_d_all, images.reshape(-1, 3)], 1)

torch.manual_seed(6)  # (seed 0 starts with no density on these rays: relu of negatives)
model_100 = NerfModel(embedding_dim_pos=4, embedding_dim_direction=2, hidden_dim=32)
# (recorded) a fixed-weight render: colours lie in [0, 1] and add the white background
torch.manual_seed(5)
with torch.no_grad():
    render_100_fixed = render_rays_100(model_100, training_dataset[:6, :3],
                                       training_dataset[:6, 3:6], hn=2, hf=6, nb_bins=16)
fixed_results["render_100_lines"] = render_100_fixed
model_optimizer = torch.optim.Adam(model_100.parameters(), lr=5e-3)
scheduler = torch.optim.lr_scheduler.MultiStepLR(model_optimizer, milestones=[45, 65],
                                                 gamma=0.5)
losses_100 = []
torch.manual_seed(1)
for _epoch in range(3):
    order = torch.randperm(training_dataset.shape[0])
    for start in range(0, training_dataset.shape[0], 32):
        batch = training_dataset[order[start:start + 32]]
        ray_origins = batch[:, :3]
        ray_directions = batch[:, 3:6]
        ground_truth_px_values = batch[:, 6:]

        regenerated_px_values = render_rays_100(model_100, ray_origins, ray_directions,
                                                hn=2, hf=6, nb_bins=16)
        loss = ((ground_truth_px_values - regenerated_px_values) ** 2).sum()

        model_optimizer.zero_grad()
        loss.backward()
        model_optimizer.step()
        scheduler.step()
        losses_100.append(loss.item())
lr_100 = scheduler.get_last_lr()[0]

# the held-out view, rendered in chunks of rays as the 100-line test() does
test_rays_d = rd_test.reshape(-1, 3) / torch.norm(rd_test.reshape(-1, 3), dim=-1, keepdim=True)
test_rays_o = ro_test.reshape(-1, 3)
torch.manual_seed(0)
with torch.no_grad():
    data = []
    for start in range(0, H * W, 50):
        data.append(render_rays_100(model_100, test_rays_o[start:start + 50],
                                    test_rays_d[start:start + 50], hn=2, hf=6, nb_bins=16))
    img_100 = torch.cat(data).reshape(H, W, 3)
test_mse_100 = img2mse(img_100, gt_test).item()
torch.manual_seed(0)
with torch.no_grad():
    untrained_100 = render_rays_100(NerfModel(4, 2, 32), test_rays_o, test_rays_d, hn=2, hf=6,
                                    nb_bins=16).reshape(H, W, 3)
untrained_mse_100 = img2mse(untrained_100, gt_test).item()

if __name__ == "__main__":
    print(f"rays vs numpy: {rays_np_difference:.2e}, transmittance forms: "
          f"{transmittance_difference:.2e}, gradcheck sample_pdf: {gradcheck_sample_pdf}")
    print(f"nerf loss {losses[0]:.4f} -> {losses[-1]:.4f}, psnr {psnrs[0]:.2f} -> "
          f"{psnrs[-1]:.2f}, test psnr {test_psnr:.2f} (untrained mse {baseline_mse:.4f})")
    print(f"nerf-100 loss {np.mean(losses_100[:5]):.3f} -> {np.mean(losses_100[-5:]):.3f}, "
          f"lr {lr_100:.2e}, {len(losses_100)} steps, test mse {test_mse_100:.4f} (untrained "
          f"{untrained_mse_100:.4f}), depths finite {math.isfinite(float(depth_test.sum()))}")
