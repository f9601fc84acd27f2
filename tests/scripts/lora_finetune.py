"""LoRA fine-tuning (Hu et al. 2021) of a small pretrained transformer, written for these tests in
the way peft, loralib and minLoRA write torch code (modelled on their API usage, not a copy):

- a tiny transformer classifier (``nn.Embedding``, ``q_proj``/``k_proj``/``v_proj``/``out_proj``
  ``nn.Linear``s, nanoGPT-style attention with ``masked_fill``/``F.softmax``, ``nn.LayerNorm``,
  ``F.gelu``) pretrained on a synthetic counting task with ``optim.Adam``;
- a ``LoRALinear`` wrapping ``nn.Linear`` (peft's ``base_layer``): ``lora_A``/``lora_B``
  ``nn.Parameter``s from ``weight.new_zeros``, ``nn.init.kaiming_uniform_(a=math.sqrt(5))`` and
  ``nn.init.zeros_``, ``scaling = alpha / r``, ``nn.Dropout`` on the LoRA path,
  ``x @ A.transpose(0, 1) @ B.transpose(0, 1)``; merging (``weight.data += (B @ A) *
  scaling``) and unmerging, loralib's merge-on-``eval()`` by overriding ``train(mode)``, and
  peft's ``merge_and_unload``; injected by name over ``named_modules()`` with ``get_submodule``
  / ``setattr``;
- freezing by ``requires_grad_(False)`` over ``named_parameters()`` filtered by name (loralib's
  ``mark_only_lora_as_trainable`` with ``bias="lora_only"``, peft's ``modules_to_save``), peft's
  ``print_trainable_parameters`` count, ``optim.AdamW`` over the trainable parameters only,
  ``model.train()``/``model.eval()``;
- a ``state_dict`` of LoRA keys only (``{k: v for k, v in sd.items() if "lora_" in k}``),
  ``torch.save``/``torch.load`` through ``io.BytesIO``, ``load_state_dict(strict=False)`` and its
  ``missing_keys``/``unexpected_keys``;
- minLoRA's version: a ``LoRAParametrization`` registered by
  ``torch.nn.utils.parametrize.register_parametrization`` on each ``weight`` (``model.apply``
  with ``functools.partial``), its dropout on a ``register_buffer`` mask, names under
  ``parametrizations.weight.0.lora_A``, ``disable_lora``/``enable_lora``, merging by
  ``parametrize.remove_parametrizations(leave_parametrized=True)``;
- checks: merged and unmerged outputs agree, frozen weights are unchanged by training, the
  fine-tuned model beats the pretrained one on the new task, the parametrized and wrapping
  versions agree (outputs, gradients, a few training steps), and fixed-weight results.
"""
import copy
import io
import math
from functools import partial

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
import jitgrad.nn.utils.parametrize as parametrize
from jitgrad import optim

torch.manual_seed(0)

VOCAB, SEQ_LEN, N_CLASSES = 12, 12, 4


# ============================================================================ data and model
def make_task(n, grouping, generator):
    """Sequences of tokens; the label is the group of tokens that occurs most often."""
    x = torch.randint(0, VOCAB, (n, SEQ_LEN), generator=generator)
    groups = x // 3 if grouping == "block" else x % 4
    counts = F.one_hot(groups, N_CLASSES).sum(1)
    # (ties go to the lowest group, as argmax of counts plus a small tie-break does)
    y = (counts.float() - 0.01 * torch.arange(N_CLASSES)).argmax(1)
    return x, y


class SelfAttention(nn.Module):
    def __init__(self, d_model, n_head, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)

    def forward(self, x, padding_mask=None):
        B, T, C = x.size()
        q = self.q_proj(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if padding_mask is not None:
            att = att.masked_fill(padding_mask[:, None, None, :], float("-inf"))
        att = self.attn_dropout(F.softmax(att, dim=-1))
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.out_proj(y)


class Block(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = SelfAttention(d_model, n_head)
        self.ln_2 = nn.LayerNorm(d_model)
        self.fc1 = nn.Linear(d_model, 2 * d_model)
        self.fc2 = nn.Linear(2 * d_model, d_model)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.fc2(F.gelu(self.fc1(self.ln_2(x))))


class TinyTransformer(nn.Module):
    def __init__(self, vocab=VOCAB, d_model=32, n_head=2, n_layer=1, n_classes=N_CLASSES):
        super().__init__()
        self.wte = nn.Embedding(vocab, d_model)
        self.wpe = nn.Parameter(torch.zeros(1, SEQ_LEN, d_model))
        self.blocks = nn.ModuleList([Block(d_model, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.classifier = nn.Linear(d_model, n_classes)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe[:, :idx.size(1)]
        for block in self.blocks:
            x = block(x)
        return self.classifier(self.ln_f(x).mean(1))


# ================================================================== LoRA by wrapping (peft)
class LoRALinear(nn.Module):
    def __init__(self, base_layer, r=4, lora_alpha=8, lora_dropout=0.0, merge_weights=True):
        super().__init__()
        self.base_layer = base_layer
        self.in_features, self.out_features = base_layer.in_features, base_layer.out_features
        self.r, self.lora_alpha = r, lora_alpha
        self.lora_A = nn.Parameter(base_layer.weight.new_zeros((r, self.in_features)))
        self.lora_B = nn.Parameter(base_layer.weight.new_zeros((self.out_features, r)))
        self.scaling = self.lora_alpha / self.r
        self.lora_dropout = nn.Dropout(p=lora_dropout) if lora_dropout > 0. else nn.Identity()
        self.merge_weights, self.merged = merge_weights, False
        self.base_layer.weight.requires_grad = False
        self.reset_parameters()

    def reset_parameters(self):
        # initialize A the same way as the default for nn.Linear and B to zero
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B)

    def get_delta_weight(self):
        return (self.lora_B @ self.lora_A) * self.scaling

    def merge(self):
        if not self.merged:
            self.base_layer.weight.data += self.get_delta_weight()
            self.merged = True

    def unmerge(self):
        if self.merged:
            self.base_layer.weight.data -= self.get_delta_weight()
            self.merged = False

    def train(self, mode: bool = True):
        super().train(mode)
        if self.merge_weights:  # loralib: merged for inference, separate for training
            self.unmerge() if mode else self.merge()
        return self

    def forward(self, x):
        result = self.base_layer(x)
        if self.r > 0 and not self.merged:
            lora_out = self.lora_dropout(x) @ self.lora_A.transpose(0, 1) \
                @ self.lora_B.transpose(0, 1)
            result = result + lora_out * self.scaling
        return result


def inject_lora(model, target_modules, **lora_kwargs):
    for name, module in list(model.named_modules()):
        if isinstance(module, nn.Linear) and any(name.endswith(t) for t in target_modules):
            parent_name, _, child_name = name.rpartition(".")
            parent = model.get_submodule(parent_name)
            setattr(parent, child_name, LoRALinear(module, **lora_kwargs))
    return model


def mark_only_lora_as_trainable(model, bias="none", modules_to_save=()):
    for n, p in model.named_parameters():
        if "lora_" not in n and not any(m in n for m in modules_to_save):
            p.requires_grad_(False)
    if bias == "lora_only":
        for m in model.modules():
            if isinstance(m, LoRALinear) and m.base_layer.bias is not None:
                m.base_layer.bias.requires_grad_(True)


def print_trainable_parameters(model):
    trainable_params, all_param = 0, 0
    for _, param in model.named_parameters():
        all_param += param.numel()
        if param.requires_grad:
            trainable_params += param.numel()
    print(f"trainable params: {trainable_params:,d} || all params: {all_param:,d} || "
          f"trainable%: {100 * trainable_params / all_param:.4f}")
    return trainable_params, all_param


def lora_state_dict(model):
    sd = model.state_dict()
    return {k: v for k, v in sd.items() if "lora_" in k}


def merge_and_unload(model):
    for name, module in list(model.named_modules()):
        if isinstance(module, LoRALinear):
            module.merge()
            parent_name, _, child_name = name.rpartition(".")
            setattr(model.get_submodule(parent_name), child_name, module.base_layer)
    return model


# ========================================================= LoRA by parametrization (minLoRA)
class LoRAParametrization(nn.Module):
    def __init__(self, fan_in, fan_out, fan_in_fan_out=False, rank=4, lora_dropout_p=0.0,
                 lora_alpha=1):
        super().__init__()
        # if weight is stored as (fan_out, fan_in), the memory layout of A & B follows (W + BA)x
        self.swap = (lambda x: (x[1], x[0])) if fan_in_fan_out else (lambda x: x)
        self.lora_A = nn.Parameter(torch.zeros(self.swap((rank, fan_in))))
        self.lora_B = nn.Parameter(torch.zeros(self.swap((fan_out, rank))))
        nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
        self.lora_alpha, self.rank = lora_alpha, rank
        self.scaling = lora_alpha / rank
        self.lora_dropout = nn.Dropout(p=lora_dropout_p) if lora_dropout_p > 0 else lambda x: x
        self.dropout_fn = self._dropout if lora_dropout_p > 0 else lambda x: x
        self.register_buffer("lora_dropout_mask",
                             torch.ones(self.swap((1, fan_in)), dtype=self.lora_A.dtype))
        self.forward_fn = self.lora_forward

    def _dropout(self, A):
        # to mimic the original implementation: A @ dropout(x), we do (A * dropout(ones)) @ x
        return A * self.lora_dropout(self.lora_dropout_mask)

    def lora_forward(self, X):
        return X + torch.matmul(*self.swap((self.lora_B, self.dropout_fn(self.lora_A)))) \
            .view(X.shape) * self.scaling

    def forward(self, X):
        return self.forward_fn(X)

    def disable_lora(self):
        self.forward_fn = lambda x: x

    def enable_lora(self):
        self.forward_fn = self.lora_forward

    @classmethod
    def from_linear(cls, layer, rank=4, lora_dropout_p=0.0, lora_alpha=1):
        fan_out, fan_in = layer.weight.shape
        return cls(fan_in, fan_out, fan_in_fan_out=False, rank=rank,
                   lora_dropout_p=lora_dropout_p, lora_alpha=lora_alpha)


def apply_lora(layer, register=True, merge=False, lora_config=None):
    if register:
        if type(layer) in lora_config:
            for attr_name, parametrization in lora_config[type(layer)].items():
                parametrize.register_parametrization(layer, attr_name, parametrization(layer))
    else:  # this will remove all parametrizations, use with caution
        if hasattr(layer, "parametrizations"):
            for attr_name in list(layer.parametrizations.keys()):
                parametrize.remove_parametrizations(layer, attr_name, leave_parametrized=merge)


def add_lora_by_name(model, target_module_names, lora_config):
    for name, layer in model.named_modules():
        if any(name.endswith(t) for t in target_module_names):
            apply_lora(layer, lora_config=lora_config)


def merge_lora(model):
    model.apply(partial(apply_lora, register=False, merge=True))


def apply_to_lora(model, fn):
    def _fn(layer):
        if isinstance(layer, LoRAParametrization):
            fn(layer)
    model.apply(_fn)


def name_is_lora(name):
    return (len(name.split(".")) >= 4 and (name.split(".")[-4]) == "parametrizations"
            and name.split(".")[-1] in ["lora_A", "lora_B"])


def get_lora_state_dict(model):
    return {k: v for k, v in model.state_dict().items() if name_is_lora(k)}


TARGETS = ("q_proj", "v_proj", "fc1")
R, ALPHA = 4, 8
fixed_results = {}

# ========================================= fixed weights: the two LoRA forms at a seeded init
data_gen = torch.Generator().manual_seed(1)
x_fixed, y_fixed = make_task(16, "mod", data_gen)
base = TinyTransformer()
fixed_results["base_logits"] = base(x_fixed).detach()

wrapped = inject_lora(copy.deepcopy(base), TARGETS, r=R, lora_alpha=ALPHA)
# (B starts at zero: give it values, as after some training, to make the checks bite)
with torch.no_grad():
    for m in wrapped.modules():
        if isinstance(m, LoRALinear):
            m.lora_B.normal_(0, 0.1)
wrapped.eval()  # merges (loralib's train(False))
merged_logits = wrapped(x_fixed).detach()
wrapped.train()  # unmerges
unmerged_logits = wrapped(x_fixed)
loss = F.cross_entropy(unmerged_logits, y_fixed)
mark_only_lora_as_trainable(wrapped, bias="lora_only", modules_to_save=("classifier",))
loss.backward()
fixed_results["wrapped_logits"] = unmerged_logits.detach()
fixed_results["wrapped_loss"] = loss.item()
fixed_results["wrapped_grads"] = {n: p.grad.clone() for n, p in wrapped.named_parameters()
                                  if "lora_" in n}
merge_error = (merged_logits - unmerged_logits).abs().max().item()
# unmerging restores the pretrained weights
unmerge_error = max((wrapped.get_submodule(f"blocks.0.attn.{t}").base_layer.weight
                     - base.get_submodule(f"blocks.0.attn.{t}").weight).abs().max().item()
                    for t in ("q_proj", "v_proj"))

# minLoRA on the same base, with the same A and B
lora_config = {nn.Linear: {"weight": partial(LoRAParametrization.from_linear, rank=R,
                                              lora_alpha=ALPHA)}}
param_model = copy.deepcopy(base)
add_lora_by_name(param_model, TARGETS, lora_config)
with torch.no_grad():
    for name, m in wrapped.named_modules():
        if isinstance(m, LoRALinear):
            p = param_model.get_submodule(name).parametrizations.weight[0]
            p.lora_A.copy_(m.lora_A)
            p.lora_B.copy_(m.lora_B)
param_logits = param_model(x_fixed)
F.cross_entropy(param_logits, y_fixed).backward()
param_agreement = (param_logits - unmerged_logits).abs().max().item()
param_grads = {n: p.grad.clone() for n, p in param_model.named_parameters() if name_is_lora(n)}
fixed_results["param_grads"] = param_grads
param_grad_agreement = max(
    (param_grads[f"{n.replace('.lora_', '.parametrizations.weight.0.lora_')}"] - g)
    .abs().max().item() for n, g in fixed_results["wrapped_grads"].items())
parametrized_names = [n for n, _ in param_model.named_parameters()]
lora_param_names = sorted(get_lora_state_dict(param_model))
with parametrize.cached():
    cached_logits = param_model(x_fixed).detach()
apply_to_lora(param_model, lambda x: x.disable_lora())
disabled_logits = param_model(x_fixed).detach()
apply_to_lora(param_model, lambda x: x.enable_lora())
merge_lora(param_model)  # leave_parametrized=True: the weights keep W + BA
merged_param_logits = param_model(x_fixed).detach()
merged_param_names = [n for n, _ in param_model.named_parameters()]
fixed_results["param_logits"] = param_logits.detach()
fixed_results["disabled_logits"] = disabled_logits
fixed_results["merged_param_logits"] = merged_param_logits

# ========================================================= pretraining on the "block" task
x_pre, y_pre = make_task(768, "block", data_gen)
x_new, y_new = make_task(512, "mod", data_gen)
x_new_test, y_new_test = make_task(512, "mod", data_gen)
x_pre_test, y_pre_test = make_task(512, "block", data_gen)


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(-1) == y).float().mean().item()
    model.train()
    return acc


model = TinyTransformer()
optimizer = optim.Adam(model.parameters(), lr=3e-3)
pretrain_losses = []
batch_size = 64
for _epoch in range(12):
    perm = torch.randperm(len(x_pre))
    for i in range(0, len(x_pre), batch_size):
        idx = perm[i:i + batch_size]
        loss = F.cross_entropy(model(x_pre[idx]), y_pre[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        pretrain_losses.append(loss.item())
pretrained_acc = accuracy(model, x_pre_test, y_pre_test)
zero_shot_acc = accuracy(model, x_new_test, y_new_test)
pretrained_sd = copy.deepcopy(model.state_dict())

# ======================================================== LoRA fine-tuning on the new task
lora_model = inject_lora(copy.deepcopy(model), TARGETS, r=R, lora_alpha=ALPHA,
                         lora_dropout=0.1)
# the new task's head is trained in full (peft's modules_to_save), the rest frozen
nn.init.zeros_(lora_model.classifier.weight)
nn.init.zeros_(lora_model.classifier.bias)
mark_only_lora_as_trainable(lora_model, bias="none", modules_to_save=("classifier",))
trainable_params, all_params = print_trainable_parameters(lora_model)
trainable_names = [n for n, p in lora_model.named_parameters() if p.requires_grad]
frozen_before = {n: p.detach().clone() for n, p in lora_model.named_parameters()
                 if not p.requires_grad}
optimizer = optim.AdamW([p for p in lora_model.parameters() if p.requires_grad], lr=1e-2,
                        weight_decay=0.01)
lora_losses = []
lora_model.train()
for _epoch in range(8):
    perm = torch.randperm(len(x_new))
    for i in range(0, len(x_new), batch_size):
        idx = perm[i:i + batch_size]
        loss = F.cross_entropy(lora_model(x_new[idx]), y_new[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        lora_losses.append(loss.item())
frozen_max_change = max((p - frozen_before[n]).abs().max().item()
                        for n, p in lora_model.named_parameters() if n in frozen_before)
finetuned_acc = accuracy(lora_model, x_new_test, y_new_test)

# merged for inference (eval() merges), and merge_and_unload
lora_model.eval()
with torch.no_grad():
    eval_merged_logits = lora_model(x_new_test)
merged_flags = [m.merged for m in lora_model.modules() if isinstance(m, LoRALinear)]
lora_model.train()  # unmerges; the LoRA dropout off to compare
for m in lora_model.modules():
    if isinstance(m, LoRALinear):
        m.lora_dropout.eval()
with torch.no_grad():
    train_unmerged_logits = lora_model(x_new_test)
eval_merge_error = (eval_merged_logits - train_unmerged_logits).abs().max().item()

# ============================================ saving only the LoRA weights, loading them back
adapter = {k: v for k, v in lora_model.state_dict().items() if "lora_" in k}
head = {k: v for k, v in lora_model.state_dict().items() if k.startswith("classifier.")}
buffer = io.BytesIO()
torch.save({"adapter": adapter, "head": head}, buffer)
buffer.seek(0)
checkpoint = torch.load(buffer)

restored = TinyTransformer()
restored.load_state_dict(pretrained_sd)
inject_lora(restored, TARGETS, r=R, lora_alpha=ALPHA, lora_dropout=0.1)
load_result = restored.load_state_dict({**checkpoint["adapter"], **checkpoint["head"]},
                                       strict=False)
missing_keys, unexpected_keys = load_result.missing_keys, load_result.unexpected_keys
restored.eval()
with torch.no_grad():
    restored_logits = restored(x_new_test)
restored_error = (restored_logits - eval_merged_logits).abs().max().item()
bad_result = restored.load_state_dict({"blocks.0.attn.q_proj.lora_C": torch.zeros(1)},
                                      strict=False)
bad_unexpected = bad_result.unexpected_keys
adapter_keys = sorted(adapter)

merged_plain = merge_and_unload(restored)
with torch.no_grad():
    unloaded_logits = merged_plain(x_new_test)
unloaded_error = (unloaded_logits - eval_merged_logits).abs().max().item()
unloaded_types = sorted({type(m).__name__ for m in merged_plain.modules()})

# ============================ the parametrized form trains the same as the wrapping form
torch.manual_seed(2)
wrap_ft = inject_lora(copy.deepcopy(model), TARGETS, r=R, lora_alpha=ALPHA)
param_ft = copy.deepcopy(model)
add_lora_by_name(param_ft, TARGETS, lora_config)
with torch.no_grad():
    for name, m in wrap_ft.named_modules():
        if isinstance(m, LoRALinear):
            p = param_ft.get_submodule(name).parametrizations.weight[0]
            p.lora_A.copy_(m.lora_A)
            p.lora_B.copy_(m.lora_B)
mark_only_lora_as_trainable(wrap_ft)
for n, p in param_ft.named_parameters():
    p.requires_grad_(name_is_lora(n))
wrap_opt = optim.AdamW([p for p in wrap_ft.parameters() if p.requires_grad], lr=1e-2)
param_opt = optim.AdamW([p for n, p in param_ft.named_parameters() if name_is_lora(n)], lr=1e-2)
wrap_losses, param_losses = [], []
for step in range(15):
    idx = torch.arange(step * 32, step * 32 + 32) % len(x_new)
    for net, opt, record in ((wrap_ft, wrap_opt, wrap_losses),
                             (param_ft, param_opt, param_losses)):
        loss = F.cross_entropy(net(x_new[idx]), y_new[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        record.append(loss.item())
with torch.no_grad():
    wrap_ft.eval()
    ft_agreement = (wrap_ft(x_new_test) - param_ft(x_new_test)).abs().max().item()
# minLoRA's adapter checkpoint: the LoRA keys of the state_dict, into a fresh parametrized model
param_adapter = get_lora_state_dict(param_ft)
param_restored = copy.deepcopy(model)
add_lora_by_name(param_restored, TARGETS, lora_config)
param_load = param_restored.load_state_dict(param_adapter, strict=False)
param_missing = [k for k in param_load.missing_keys if "parametrizations" in k]
with torch.no_grad():
    param_restored_error = (param_restored(x_new_test) - param_ft(x_new_test)).abs().max().item()
try:  # a parametrized module is saved by its state_dict, not pickled
    torch.save(param_restored, io.BytesIO())
    save_error = None
except Exception as e:
    save_error = (type(e).__name__, str(e).splitlines()[0])
param_types = (type(param_restored.blocks[0].fc1).__name__,
               parametrize.type_before_parametrizations(param_restored.blocks[0].fc1).__name__,
               parametrize.is_parametrized(param_restored.blocks[0].fc1, "weight"),
               parametrize.is_parametrized(param_restored.blocks[0].fc1, "bias"))
frozen_param_original = param_ft.blocks[0].attn.q_proj.parametrizations.weight.original
original_unchanged = torch.equal(frozen_param_original,
                                 model.blocks[0].attn.q_proj.weight)

print(f"pretrain {pretrain_losses[0]:.3f} -> {pretrain_losses[-1]:.3f}, acc {pretrained_acc:.3f}")
print(f"zero-shot {zero_shot_acc:.3f}, LoRA {lora_losses[0]:.3f} -> {lora_losses[-1]:.3f}, "
      f"acc {finetuned_acc:.3f}")
print(f"merge {merge_error:.2e} param {param_agreement:.2e} {param_grad_agreement:.2e} "
      f"ft {ft_agreement:.2e} restored {restored_error:.2e} unloaded {unloaded_error:.2e}")
