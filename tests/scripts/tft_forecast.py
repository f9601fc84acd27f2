# ruff: noqa: N812 (the usual F alias)
"""A small Temporal Fusion Transformer on synthetic seasonal series, written for these tests the
way TFT code (pytorch-forecasting's ``TemporalFusionTransformer`` and its sub-modules, the
paper's reference code and the many "TFT from scratch" ports) writes torch code (not a copy of
any):

- windows of a level + trend + 12-step season series cut by ``Tensor.unfold``, an encoder
  normaliser (divide by the encoder mean), month-of-year ``torch.sin``/``torch.cos`` known
  covariates, a relative time index, a series-id category and a log-scale static real;
  ``TensorDataset``/``DataLoader`` batches of dicts;
- gated linear units (``nn.Linear`` to twice the width, ``F.glu``), ``AddNorm`` with a
  trainable ``sigmoid`` skip gate and ``nn.LayerNorm``, gated residual networks (``nn.ELU``,
  an optional bias-free context projection, a linear skip projection when the widths differ),
  initialised with ``kaiming_normal_``/``xavier_uniform_``/``zeros_`` by parameter name;
- variable selection networks: per-variable prescalers ``nn.Linear(1, d)`` in an
  ``nn.ModuleDict``, per-variable GRNs ``torch.stack``-ed on the last axis, softmax weights from
  a GRN of the flattened inputs with a static context, combined by broadcasting and (checked
  equal) ``torch.einsum('...dv,...v->...d')``;
- a static covariate encoder (an ``nn.Embedding`` and a static real through a VSN, four context
  GRNs); ``nn.LSTM`` encoder and decoder started from the static context
  (``expand(num_layers, -1, -1)`` states), ``orthogonal_``/``xavier_normal_`` LSTM weights, a
  post-LSTM gate shared between encoder and decoder (one module under two names: two
  ``state_dict`` entries, one parameter);
- static enrichment, interpretable multi-head attention (per-head query/key projections, one
  shared value projection, ``torch.bmm`` scores, a causal mask from ``torch.triu``,
  ``masked_fill``, heads averaged), checked against an all-heads-at-once form through
  ``torch.einsum`` and ``F.scaled_dot_product_attention`` with a boolean mask; SDPA's
  ``is_causal`` (top-left aligned when queries are fewer than keys) against boolean masks and
  the additive ``torch.triu`` of ``-inf``; attention over time averaged with ``torch.nanmean``
  over NaN-filled future positions; a two-layer ``nn.LSTM`` with inter-layer dropout;
- the quantile (pinball) loss as a loop with ``torch.max`` and vectorised with
  ``torch.maximum``; ``Adam``, ``clip_grad_norm_``, ``ReduceLROnPlateau`` on the validation loss
  (and on a made-up curve: ``threshold_mode='abs'``, ``cooldown``, ``min_lr``, ``mode='max'``,
  ``eps``, tensor metrics), ``torch.autograd.gradcheck`` of a GRN with context and of the
  attention (float64).

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
fixed_results = {}

# ---------------------------------------------------------------------------------- data

PERIOD = 12
ENCODER_LENGTH = 12
DECODER_LENGTH = 6
WINDOW = ENCODER_LENGTH + DECODER_LENGTH
N_SERIES = 6
LENGTH = 48
QUANTILES = [0.1, 0.5, 0.9]

t = torch.arange(LENGTH, dtype=torch.float32)
level = 2.0 + 3.0 * torch.rand(N_SERIES, 1)
slope = 0.02 * torch.randn(N_SERIES, 1)
amplitude = 0.4 + 0.6 * torch.rand(N_SERIES, 1)
phase = 2 * math.pi * torch.rand(N_SERIES, 1)
series = level + slope * t + amplitude * torch.sin(2 * math.pi * t / PERIOD + phase) \
    + 0.05 * torch.randn(N_SERIES, LENGTH)
month = t % PERIOD

windows = series.unfold(1, WINDOW, 1)  # (series, start, window)
months = month.unfold(0, WINDOW, 1)  # (start, window)
n_starts = windows.size(1)
series_ids = torch.arange(N_SERIES)[:, None].expand(-1, n_starts)


def make_tensors(starts):
    """Flatten (series, start) pairs into the model's inputs."""
    target = windows[:, starts].reshape(-1, WINDOW)
    month_window = months[starts].repeat(N_SERIES, 1)
    ids = series_ids[:, starts].reshape(-1)
    scale = target[:, :ENCODER_LENGTH].mean(dim=1, keepdim=True)  # the encoder normaliser
    return (target / scale, torch.sin(2 * math.pi * month_window / PERIOD),
            torch.cos(2 * math.pi * month_window / PERIOD), ids, scale)


n_val_starts = 8
train_data = TensorDataset(*make_tensors(torch.arange(0, n_starts - n_val_starts - DECODER_LENGTH)))
val_tensors = make_tensors(torch.arange(n_starts - n_val_starts, n_starts))
relative_time = (torch.arange(WINDOW, dtype=torch.float32) - ENCODER_LENGTH) / WINDOW


def to_inputs(target, sin, cos, ids, scale):
    batch = target.size(0)
    time_index = relative_time.expand(batch, -1)
    return {
        "series_id": ids,
        "log_scale": torch.log(scale),
        "encoder_target": target[:, :ENCODER_LENGTH],
        "encoder_sin": sin[:, :ENCODER_LENGTH],
        "encoder_cos": cos[:, :ENCODER_LENGTH],
        "encoder_time": time_index[:, :ENCODER_LENGTH],
        "decoder_sin": sin[:, ENCODER_LENGTH:],
        "decoder_cos": cos[:, ENCODER_LENGTH:],
        "decoder_time": time_index[:, ENCODER_LENGTH:],
    }, target[:, ENCODER_LENGTH:]


# ---------------------------------------------------------------------------------- modules


class GatedLinearUnit(nn.Module):
    def __init__(self, input_size, hidden_size=None, dropout=None):
        super().__init__()
        self.dropout = nn.Dropout(dropout) if dropout is not None else None
        self.hidden_size = hidden_size or input_size
        self.fc = nn.Linear(input_size, self.hidden_size * 2)
        for name, p in self.named_parameters():
            if "bias" in name:
                torch.nn.init.zeros_(p)
            elif "fc" in name:
                torch.nn.init.xavier_uniform_(p)

    def forward(self, x):
        if self.dropout is not None:
            x = self.dropout(x)
        x = self.fc(x)
        return F.glu(x, dim=-1)


class AddNorm(nn.Module):
    def __init__(self, input_size, skip_size=None, trainable_add=True):
        super().__init__()
        self.input_size = input_size
        self.skip_size = skip_size or input_size
        self.trainable_add = trainable_add
        if self.input_size != self.skip_size:
            self.resample = nn.Linear(self.skip_size, self.input_size)
        if self.trainable_add:
            self.mask = nn.Parameter(torch.zeros(self.input_size))
            self.gate = nn.Sigmoid()
        self.norm = nn.LayerNorm(self.input_size)

    def forward(self, x, skip):
        if self.input_size != self.skip_size:
            skip = self.resample(skip)
        if self.trainable_add:
            skip = skip * self.gate(self.mask) * 2.0
        return self.norm(x + skip)


class GateAddNorm(nn.Module):
    def __init__(self, input_size, hidden_size=None, skip_size=None, trainable_add=False,
                 dropout=None):
        super().__init__()
        self.hidden_size = hidden_size or input_size
        self.glu = GatedLinearUnit(input_size, self.hidden_size, dropout=dropout)
        self.add_norm = AddNorm(self.hidden_size, skip_size=skip_size or self.hidden_size,
                                trainable_add=trainable_add)

    def forward(self, x, skip):
        return self.add_norm(self.glu(x), skip)


class GatedResidualNetwork(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, dropout=0.1, context_size=None):
        super().__init__()
        self.input_size = input_size
        self.output_size = output_size
        if self.input_size != self.output_size:
            self.skip = nn.Linear(self.input_size, self.output_size)  # skip projection
        self.fc1 = nn.Linear(self.input_size, hidden_size)
        self.elu = nn.ELU()
        if context_size is not None:
            self.context = nn.Linear(context_size, hidden_size, bias=False)
        self.fc2 = nn.Linear(hidden_size, hidden_size)
        self.init_weights()
        self.gate_norm = GateAddNorm(hidden_size, output_size, skip_size=output_size,
                                     trainable_add=False, dropout=dropout)

    def init_weights(self):
        for name, p in self.named_parameters():
            if "bias" in name:
                torch.nn.init.zeros_(p)
            elif "fc1" in name or "fc2" in name:
                torch.nn.init.kaiming_normal_(p, a=0, mode="fan_in", nonlinearity="leaky_relu")
            elif "context" in name:
                torch.nn.init.xavier_uniform_(p)

    def forward(self, x, context=None, residual=None):
        if residual is None:
            residual = x
        if self.input_size != self.output_size:
            residual = self.skip(residual)
        x = self.fc1(x)
        if context is not None:
            x = x + self.context(context)
        x = self.elu(x)
        x = self.fc2(x)
        return self.gate_norm(x, residual)


class VariableSelectionNetwork(nn.Module):
    def __init__(self, input_sizes, hidden_size, prescalers=None, dropout=0.1, context_size=None):
        super().__init__()
        self.input_sizes = input_sizes
        self.num_inputs = len(input_sizes)
        self.flattened_grn = GatedResidualNetwork(sum(input_sizes.values()),
                                                  min(hidden_size, self.num_inputs),
                                                  self.num_inputs, dropout, context_size)
        self.single_variable_grns = nn.ModuleDict({
            name: GatedResidualNetwork(size, min(size, hidden_size), hidden_size, dropout)
            for name, size in input_sizes.items()})
        self.prescalers = prescalers if prescalers is not None else nn.ModuleDict()
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x, context=None, use_einsum=False):
        var_outputs, weight_inputs = [], []
        for name in self.input_sizes:
            variable_embedding = x[name]
            if name in self.prescalers:
                variable_embedding = self.prescalers[name](variable_embedding)
            weight_inputs.append(variable_embedding)
            var_outputs.append(self.single_variable_grns[name](variable_embedding))
        var_outputs = torch.stack(var_outputs, dim=-1)  # (..., hidden, variables)
        flat_embedding = torch.cat(weight_inputs, dim=-1)
        sparse_weights = self.softmax(self.flattened_grn(flat_embedding, context))
        if use_einsum:
            outputs = torch.einsum("...dv,...v->...d", var_outputs, sparse_weights)
        else:
            outputs = (var_outputs * sparse_weights.unsqueeze(-2)).sum(dim=-1)
        return outputs, sparse_weights


class ScaledDotProductAttention(nn.Module):
    def __init__(self, dropout=None, scale=True):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout) if dropout is not None else None
        self.softmax = nn.Softmax(dim=2)
        self.scale = scale

    def forward(self, q, k, v, mask=None):
        attn = torch.bmm(q, k.permute(0, 2, 1))
        if self.scale:
            dimension = torch.as_tensor(k.size(-1), dtype=attn.dtype).sqrt()
            attn = attn / dimension
        if mask is not None:
            attn = attn.masked_fill(mask, -1e9)
        attn = self.softmax(attn)
        if self.dropout is not None:
            attn = self.dropout(attn)
        return torch.bmm(attn, v), attn


class InterpretableMultiHeadAttention(nn.Module):
    def __init__(self, n_head, d_model, dropout=0.0):
        super().__init__()
        self.n_head = n_head
        self.d_k = self.d_q = self.d_v = d_model // n_head
        self.dropout = nn.Dropout(p=dropout)
        self.v_layer = nn.Linear(d_model, self.d_v)  # one value projection for every head
        self.q_layers = nn.ModuleList([nn.Linear(d_model, self.d_q) for _ in range(n_head)])
        self.k_layers = nn.ModuleList([nn.Linear(d_model, self.d_k) for _ in range(n_head)])
        self.attention = ScaledDotProductAttention()
        self.w_h = nn.Linear(self.d_v, d_model, bias=False)
        for name, p in self.named_parameters():
            if "bias" not in name:
                torch.nn.init.xavier_uniform_(p)
            else:
                torch.nn.init.zeros_(p)

    def forward(self, q, k, v, mask=None):
        heads, attns = [], []
        vs = self.v_layer(v)
        for i in range(self.n_head):
            qs = self.q_layers[i](q)
            ks = self.k_layers[i](k)
            head, attn = self.attention(qs, ks, vs, mask)
            heads.append(self.dropout(head))
            attns.append(attn)
        head = torch.stack(heads, dim=2) if self.n_head > 1 else heads[0]
        attn = torch.stack(attns, dim=2)
        outputs = torch.mean(head, dim=2) if self.n_head > 1 else head
        outputs = self.dropout(self.w_h(outputs))
        return outputs, attn

    def forward_fused(self, q, k, v, mask=None):
        """All heads at once: stacked query/key weights, SDPA with a keep-mask, heads averaged."""
        wq = torch.stack([layer.weight for layer in self.q_layers])  # (H, d_q, d_model)
        bq = torch.stack([layer.bias for layer in self.q_layers])
        wk = torch.stack([layer.weight for layer in self.k_layers])
        bk = torch.stack([layer.bias for layer in self.k_layers])
        qs = torch.einsum("btd,hed->bhte", q, wq) + bq[None, :, None, :]
        ks = torch.einsum("btd,hed->bhte", k, wk) + bk[None, :, None, :]
        vs = self.v_layer(v).unsqueeze(1).expand(-1, self.n_head, -1, -1)
        keep = None if mask is None else ~mask[:, None]
        heads = F.scaled_dot_product_attention(qs, ks, vs, attn_mask=keep)
        return self.w_h(heads.mean(dim=1))


def causal_mask(encoder_length, decoder_length, batch_size):
    """Decoder steps see the encoder and the decoder steps up to themselves."""
    total = encoder_length + decoder_length
    future = torch.triu(torch.ones(total, total, dtype=torch.bool), diagonal=1)
    return future[encoder_length:].unsqueeze(0).expand(batch_size, -1, -1)


class TemporalFusionTransformer(nn.Module):
    def __init__(self, hidden_size=8, n_heads=2, n_series=N_SERIES, embedding_size=3,
                 hidden_continuous_size=3, dropout=0.1, lstm_layers=1,
                 output_size=len(QUANTILES)):
        super().__init__()
        self.lstm_layers = lstm_layers
        self.static_embedding = nn.Embedding(n_series, embedding_size)
        reals = ["log_scale", "target", "sin", "cos", "time"]
        self.prescalers = nn.ModuleDict({name: nn.Linear(1, hidden_continuous_size)
                                         for name in reals})
        h = hidden_continuous_size
        self.static_variable_selection = VariableSelectionNetwork(
            {"series_id": embedding_size, "log_scale": h}, hidden_size, self.prescalers, dropout)
        self.encoder_variable_selection = VariableSelectionNetwork(
            {"target": h, "sin": h, "cos": h, "time": h}, hidden_size, self.prescalers, dropout,
            context_size=hidden_size)
        self.decoder_variable_selection = VariableSelectionNetwork(
            {"sin": h, "cos": h, "time": h}, hidden_size, self.prescalers, dropout,
            context_size=hidden_size)
        self.static_context_variable_selection = GatedResidualNetwork(
            hidden_size, hidden_size, hidden_size, dropout)
        self.static_context_initial_hidden_lstm = GatedResidualNetwork(
            hidden_size, hidden_size, hidden_size, dropout)
        self.static_context_initial_cell_lstm = GatedResidualNetwork(
            hidden_size, hidden_size, hidden_size, dropout)
        self.static_context_enrichment = GatedResidualNetwork(
            hidden_size, hidden_size, hidden_size, dropout)
        self.lstm_encoder = nn.LSTM(hidden_size, hidden_size, num_layers=lstm_layers,
                                    batch_first=True)
        self.lstm_decoder = nn.LSTM(hidden_size, hidden_size, num_layers=lstm_layers,
                                    batch_first=True)
        for lstm in (self.lstm_encoder, self.lstm_decoder):
            for name, p in lstm.named_parameters():
                if "weight_hh" in name:
                    torch.nn.init.orthogonal_(p)
                elif "weight_ih" in name:
                    torch.nn.init.xavier_normal_(p)
                else:
                    torch.nn.init.zeros_(p)
                    if "bias_ih" in name:
                        p.data[hidden_size: 2 * hidden_size].fill_(1.0)  # forget gate
        self.post_lstm_gate_encoder = GateAddNorm(hidden_size, dropout=dropout,
                                                  trainable_add=True)
        self.post_lstm_gate_decoder = self.post_lstm_gate_encoder
        self.static_enrichment = GatedResidualNetwork(hidden_size, hidden_size, hidden_size,
                                                      dropout, context_size=hidden_size)
        self.multihead_attn = InterpretableMultiHeadAttention(n_heads, hidden_size, dropout)
        self.post_attn_gate_norm = GateAddNorm(hidden_size, dropout=dropout)
        self.pos_wise_ff = GatedResidualNetwork(hidden_size, hidden_size, hidden_size, dropout)
        self.pre_output_gate_norm = GateAddNorm(hidden_size, dropout=None)
        self.output_layer = nn.Linear(hidden_size, output_size)

    @staticmethod
    def expand_static_context(context, timesteps):
        return context[:, None].expand(-1, timesteps, -1)

    def forward(self, x, use_einsum=False, fused_attention=False):
        encoder_length = x["encoder_target"].size(1)
        decoder_length = x["decoder_sin"].size(1)
        timesteps = encoder_length + decoder_length
        batch_size = x["encoder_target"].size(0)

        static_inputs = {"series_id": self.static_embedding(x["series_id"]),
                         "log_scale": x["log_scale"]}
        static_embedding, static_weights = self.static_variable_selection(
            static_inputs, use_einsum=use_einsum)
        static_context = self.expand_static_context(
            self.static_context_variable_selection(static_embedding), timesteps)

        encoder_inputs = {name: x["encoder_" + name].unsqueeze(-1)
                          for name in ("target", "sin", "cos", "time")}
        decoder_inputs = {name: x["decoder_" + name].unsqueeze(-1)
                          for name in ("sin", "cos", "time")}
        embeddings_varying_encoder, encoder_weights = self.encoder_variable_selection(
            encoder_inputs, static_context[:, :encoder_length], use_einsum=use_einsum)
        embeddings_varying_decoder, decoder_weights = self.decoder_variable_selection(
            decoder_inputs, static_context[:, encoder_length:], use_einsum=use_einsum)

        input_hidden = self.static_context_initial_hidden_lstm(static_embedding).expand(
            self.lstm_layers, -1, -1)
        input_cell = self.static_context_initial_cell_lstm(static_embedding).expand(
            self.lstm_layers, -1, -1)
        encoder_output, (hidden, cell) = self.lstm_encoder(embeddings_varying_encoder,
                                                           (input_hidden, input_cell))
        decoder_output, _ = self.lstm_decoder(embeddings_varying_decoder, (hidden, cell))

        lstm_output_encoder = self.post_lstm_gate_encoder(encoder_output,
                                                          embeddings_varying_encoder)
        lstm_output_decoder = self.post_lstm_gate_decoder(decoder_output,
                                                          embeddings_varying_decoder)
        lstm_output = torch.cat([lstm_output_encoder, lstm_output_decoder], dim=1)

        static_context_enrichment = self.static_context_enrichment(static_embedding)
        attn_input = self.static_enrichment(
            lstm_output, self.expand_static_context(static_context_enrichment, timesteps))
        mask = causal_mask(encoder_length, decoder_length, batch_size)
        query = attn_input[:, encoder_length:]
        if fused_attention:
            attn_output = self.multihead_attn.forward_fused(query, attn_input, attn_input, mask)
            attn_weights = None
        else:
            attn_output, attn_weights = self.multihead_attn(query, attn_input, attn_input, mask)
        attn_output = self.post_attn_gate_norm(attn_output, query)
        output = self.pos_wise_ff(attn_output)
        output = self.pre_output_gate_norm(output, lstm_output[:, encoder_length:])
        return {
            "prediction": self.output_layer(output),
            "attention": attn_weights,
            "static_weights": static_weights,
            "encoder_weights": encoder_weights,
            "decoder_weights": decoder_weights,
        }


# ---------------------------------------------------------------------------------- losses


def quantile_loss(y_pred, target, quantiles=QUANTILES):
    losses = []
    for i, q in enumerate(quantiles):
        errors = target - y_pred[..., i]
        losses.append(torch.max((q - 1) * errors, q * errors).unsqueeze(-1))
    return torch.cat(losses, dim=-1).sum(dim=-1).mean()


def quantile_loss_vectorised(y_pred, target, quantiles=QUANTILES):
    q = torch.tensor(quantiles, dtype=y_pred.dtype)
    errors = target.unsqueeze(-1) - y_pred
    return torch.maximum(q * errors, (q - 1) * errors).sum(dim=-1).mean()


# ---------------------------------------------------------------------- fixed weights (recorded)

torch.manual_seed(1)
fixed_model = TemporalFusionTransformer()
fixed_model.eval()
fixed_inputs, fixed_target = to_inputs(*train_data[:8])
out = fixed_model(fixed_inputs)
loss = quantile_loss(out["prediction"], fixed_target)
loss.backward()
fixed_results["prediction"] = out["prediction"].detach().clone()
fixed_results["attention"] = out["attention"].detach().clone()
for key in ("static_weights", "encoder_weights", "decoder_weights"):
    fixed_results[key] = out[key].detach().clone()
fixed_results["loss"] = loss.detach().clone()
fixed_results["loss_vectorised"] = quantile_loss_vectorised(out["prediction"],
                                                            fixed_target).detach()
fixed_results["grads"] = {name: p.grad.clone() for name, p in fixed_model.named_parameters()}
fixed_results["init"] = {name: p.detach().clone() for name, p in fixed_model.named_parameters()
                         if "lstm" in name or "static_context_enrichment" in name}

with torch.no_grad():
    fixed_results["prediction_einsum"] = fixed_model(fixed_inputs, use_einsum=True)["prediction"]
    fixed_results["prediction_fused"] = fixed_model(fixed_inputs,
                                                    fused_attention=True)["prediction"]
    # heads averaged after the shared value projection = averaged attention times the values
    attn_module = fixed_model.multihead_attn
    attention = out["attention"].detach()  # (batch, decoder, heads, time)
    probe = torch.randn(8, WINDOW, 8)
    head_mean = attn_module(probe[:, ENCODER_LENGTH:], probe, probe,
                            causal_mask(ENCODER_LENGTH, DECODER_LENGTH, 8))
    mean_attention = head_mean[1].mean(dim=2)
    by_mean = attn_module.w_h(torch.bmm(mean_attention, attn_module.v_layer(probe)))
    head_mean_error = float((head_mean[0] - by_mean).abs().max())

    # dropout on: the train-mode forward under a seed
    fixed_model.train()
    torch.manual_seed(11)
    fixed_results["prediction_train_mode"] = fixed_model(fixed_inputs)["prediction"]
    fixed_model.eval()

# SDPA's own masks: is_causal aligns the (query, key) triangle at the top left, so for decoder
# queries against the whole window it is not the decoder mask; an additive float mask from
# ``torch.triu`` of -inf (nn.Transformer's square subsequent mask) is the boolean one
with torch.no_grad():
    torch.manual_seed(12)
    q4, k4, v4 = (torch.randn(2, 2, WINDOW, 4) for _ in range(3))
    future = torch.triu(torch.full((WINDOW, WINDOW), float("-inf")), diagonal=1)
    sdpa = {
        "float_mask": F.scaled_dot_product_attention(q4, k4, v4, attn_mask=future),
        "bool_mask": F.scaled_dot_product_attention(
            q4, k4, v4, attn_mask=~torch.triu(torch.ones(WINDOW, WINDOW, dtype=torch.bool), 1)),
        "is_causal": F.scaled_dot_product_attention(q4, k4, v4, is_causal=True),
        "decoder_is_causal": F.scaled_dot_product_attention(q4[:, :, ENCODER_LENGTH:], k4, v4,
                                                            is_causal=True),
        "decoder_top_left": F.scaled_dot_product_attention(
            q4[:, :, ENCODER_LENGTH:], k4, v4,
            attn_mask=torch.ones(DECODER_LENGTH, WINDOW, dtype=torch.bool).tril()),
        "decoder_mask": F.scaled_dot_product_attention(
            q4[:, :, ENCODER_LENGTH:], k4, v4,
            attn_mask=~causal_mask(ENCODER_LENGTH, DECODER_LENGTH, 1)[:, None]),
    }
fixed_results["sdpa"] = sdpa
fixed_results["square_subsequent_mask"] = future

# attention over time as pytorch-forecasting's interpretation averages it: the future
# positions of the weights as NaN, a nanmean over the batch and the heads
with torch.no_grad():
    weights = out["attention"].detach().masked_fill(
        causal_mask(ENCODER_LENGTH, DECODER_LENGTH, 8)[:, :, None, :], float("nan"))
    fixed_results["attention_by_time"] = torch.nanmean(weights, dim=(0, 2))
    fixed_results["encoder_importance"] = out["encoder_weights"].detach().mean(dim=(0, 1))

# a two-layer LSTM with dropout between layers started from expanded static states
torch.manual_seed(13)
lstm2 = nn.LSTM(4, 5, num_layers=2, batch_first=True, dropout=0.2)
state = torch.randn(3, 5, requires_grad=True)
seq = torch.randn(3, 7, 4)
for mode in ("eval", "train"):
    lstm2.train(mode == "train")
    state.grad = None
    torch.manual_seed(14)
    h0 = state.expand(2, -1, -1)
    c0 = torch.zeros_like(h0)
    lstm_out, (h_n, c_n) = lstm2(seq, (h0, c0))
    (lstm_out.sum() + h_n.pow(2).sum()).backward()
    fixed_results["lstm2_" + mode] = {"out": lstm_out.detach(), "h_n": h_n.detach(),
                                      "c_n": c_n.detach(), "state_grad": state.grad.clone()}

n_parameters = len(list(fixed_model.parameters()))
n_state = len(fixed_model.state_dict())
shared_gate = fixed_model.post_lstm_gate_encoder is fixed_model.post_lstm_gate_decoder
state_keys = list(fixed_model.state_dict().keys())

# gradcheck: a GRN with context and a skip projection, the masked attention (float64)
torch.manual_seed(2)
grn64 = GatedResidualNetwork(3, 4, 5, dropout=None, context_size=2).double()
grn_x = torch.randn(1, 3, 3, dtype=torch.float64, requires_grad=True)
grn_c = torch.randn(1, 3, 2, dtype=torch.float64, requires_grad=True)
attn64 = InterpretableMultiHeadAttention(2, 4).double()
att_x = torch.randn(1, 5, 4, dtype=torch.float64, requires_grad=True)
att_mask = causal_mask(3, 2, 1)
gradcheck_results = {
    "grn": torch.autograd.gradcheck(lambda a, c: grn64(a, c), (grn_x, grn_c)),
    "attention": torch.autograd.gradcheck(
        lambda a: attn64(a[:, 3:], a, a, att_mask)[0], (att_x,)),
}


# ---------------------------------------------------------------------------------- training

torch.manual_seed(3)
model = TemporalFusionTransformer()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5,
                                                       patience=0)
train_loader = DataLoader(train_data, batch_size=32, shuffle=True)
val_inputs, val_target = to_inputs(*val_tensors)
epochs = 5
losses, val_losses, lrs, grad_norms = [], [], [], []
for _epoch in range(epochs):
    model.train()
    for batch in train_loader:
        inputs, target = to_inputs(*batch)
        prediction = model(inputs)["prediction"]
        loss = quantile_loss(prediction, target)
        optimizer.zero_grad()
        loss.backward()
        grad_norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)))
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        val_loss = quantile_loss(model(val_inputs)["prediction"], val_target).item()
    val_losses.append(val_loss)
    scheduler.step(val_loss)
    lrs.append(optimizer.param_groups[0]["lr"])

with torch.no_grad():
    val_out = model(val_inputs)
    val_prediction = val_out["prediction"]
    below = (val_target.unsqueeze(-1) < val_prediction).float().mean(dim=(0, 1))
    coverage = below.tolist()  # the share of targets under each quantile's forecast
    median_mae = (val_prediction[..., 1] - val_target).abs().mean().item()
    # the "last value" forecast on the normalised scale
    last_value_mae = (val_inputs["encoder_target"][:, -1:] - val_target).abs().mean().item()
    variable_importance = val_out["encoder_weights"].mean(dim=(0, 1))

# ReduceLROnPlateau's rule on a made-up validation curve (recorded)


def plateau_lrs(metrics, **kwargs):
    weight = nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.Adam([weight], lr=1.0)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, **kwargs)
    lrs = []
    for metric in metrics:
        optimizer.step()
        scheduler.step(metric)
        lrs.append(scheduler.get_last_lr()[0])
    return lrs


curve = [1.0, 0.9, 0.9, 0.8999, 0.95, 0.7, 0.71, 0.7, 0.69995, 0.72, 0.72, 0.5]
plateau_schedules = {
    "default": plateau_lrs(curve, patience=1),
    "abs_threshold": plateau_lrs(curve, patience=0, threshold=0.01, threshold_mode="abs"),
    "cooldown_min_lr": plateau_lrs(curve, factor=0.1, patience=0, cooldown=2, min_lr=0.005),
    "max_mode": plateau_lrs([-m for m in curve], mode="max", patience=1, factor=0.5),
    "tensor_metric": plateau_lrs([torch.tensor(m) for m in curve], patience=1),
    "eps": plateau_lrs(curve, factor=0.5, patience=0, min_lr=0.3, eps=0.2),
}

if __name__ == "__main__":
    print(f"quantile loss {losses[0]:.4f} -> {losses[-1]:.4f}, val {val_losses}")
    print(f"lrs {lrs}")
    print(f"coverage {coverage}, median mae {median_mae:.4f} (last value {last_value_mae:.4f})")
    print(f"encoder variable importance {variable_importance.tolist()}")
