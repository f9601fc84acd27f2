# ruff: noqa: N812 (the usual F alias)
"""A tiny GPT-2 and its text generation, written for these tests the way HuggingFace
transformers' ``modeling_gpt2.py`` / ``generation/utils.py`` and nanoGPT-derived repositories
(gpt-fast's sampler included) write torch code (not a copy of any):

- HF's ``Conv1D`` (weight ``(nx, nf)``, ``torch.addmm(bias, x.view(-1, x.size(-1)), weight)``),
  ``gelu_new`` by hand and as ``F.gelu(approximate="tanh")``, GPT-2's initialisation (the
  residual projections scaled by ``1 / sqrt(2 * n_layer)``), tied input/output embeddings;
- attention with a registered causal ``bias`` buffer (``torch.tril``, ``persistent=False``),
  ``torch.where(causal_mask, w, finfo.min)``, the padding mask ``(1 - mask) * finfo.min``, an
  ``sdpa`` path (HF's 4D masks with unmasked fully-padded rows), a ``past_key_values`` cache;
- generation: left-padded prompts, ``position_ids`` from ``attention_mask.cumsum(-1) - 1``,
  logits processors (repetition penalty by ``gather``/``scatter``, no-repeat n-grams,
  min-new-tokens, temperature, top-k, top-p, min-p, typical, epsilon and eta sampling),
  stopping criteria, ``unfinished_sequences``, greedy search, sampling with a seeded
  ``torch.Generator``, beam search with a ``BeamSearchScorer`` and cache reordering,
  ``compute_transition_scores``; nanoGPT's ``generate`` without a cache, gpt-fast's
  ``exponential_`` sampler;
- model surgery: ``resize_token_embeddings`` (new rows from a ``MultivariateNormal`` around the
  old rows' mean), nanoGPT's ``crop_block_size``; ``torch.save``/``torch.load`` of the state
  dict, ``torch.compile``, bfloat16 inference and CPU autocast;
- training on a small character corpus with ``AdamW`` (decay only on matrices), HF's cosine
  schedule with warm-up (``LambdaLR``), gradient accumulation and ``clip_grad_norm_``.

Sections marked "(recorded)" keep what the tests compare, on fixed weights, with the same
script on torch.
"""
import copy
import inspect
import io
import math
from dataclasses import dataclass

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.distributions import constraints

torch.manual_seed(0)
fixed_results = {}


# ------------------------------------------------------------------------------ config


class GPT2Config:
    model_type = "gpt2"

    def __init__(self, vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12,
                 n_inner=None, activation_function="gelu_new", resid_pdrop=0.1,
                 embd_pdrop=0.1, attn_pdrop=0.1, layer_norm_epsilon=1e-5,
                 initializer_range=0.02, scale_attn_weights=True, use_cache=True,
                 bos_token_id=50256, eos_token_id=50256, pad_token_id=None,
                 tie_word_embeddings=True, attn_implementation="eager"):
        self.vocab_size = vocab_size
        self.n_positions = n_positions
        self.n_embd = n_embd
        self.n_layer = n_layer
        self.n_head = n_head
        self.n_inner = n_inner
        self.activation_function = activation_function
        self.resid_pdrop = resid_pdrop
        self.embd_pdrop = embd_pdrop
        self.attn_pdrop = attn_pdrop
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.scale_attn_weights = scale_attn_weights
        self.use_cache = use_cache
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        self.pad_token_id = pad_token_id
        self.tie_word_embeddings = tie_word_embeddings
        self._attn_implementation = attn_implementation


# ------------------------------------------------------------------------ activations


class NewGELUActivation(nn.Module):
    """The GELU of the Google BERT repo and of GPT-2 (the tanh approximation)."""

    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(
            math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class PytorchGELUTanh(nn.Module):
    def forward(self, input):
        return F.gelu(input, approximate="tanh")


ACT2CLS = {
    "gelu": nn.GELU,
    "gelu_new": NewGELUActivation,
    "gelu_pytorch_tanh": PytorchGELUTanh,
    "relu": nn.ReLU,
}


def get_activation(name):
    if name not in ACT2CLS:
        raise KeyError(f"function {name} not found in ACT2FN mapping {list(ACT2CLS.keys())}")
    return ACT2CLS[name]()


# ----------------------------------------------------------------------------- layers


class Conv1D(nn.Module):
    """A linear layer with its weight transposed, as OpenAI's GPT had it."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.nx = nx
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))
        nn.init.normal_(self.weight, std=0.02)

    def __repr__(self):
        return "Conv1D(nf={nf}, nx={nx})".format(**self.__dict__)

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        x = x.view(size_out)
        return x


@dataclass
class BaseModelOutputWithPast:
    last_hidden_state: torch.Tensor | None = None
    past_key_values: tuple | None = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None

    def __getitem__(self, index):
        return (self.last_hidden_state, self.past_key_values)[index]


@dataclass
class CausalLMOutputWithPast:
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    past_key_values: tuple | None = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None


class GPT2Attention(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        max_positions = config.n_positions
        self.register_buffer(
            "bias",
            torch.tril(torch.ones((max_positions, max_positions), dtype=torch.bool)).view(
                1, 1, max_positions, max_positions),
            persistent=False,
        )
        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=False)

        self.embed_dim = config.n_embd
        self.num_heads = config.n_head
        self.head_dim = self.embed_dim // self.num_heads
        self.split_size = self.embed_dim
        if self.head_dim * self.num_heads != self.embed_dim:
            raise ValueError(f"`embed_dim` must be divisible by num_heads (got `embed_dim`: "
                             f"{self.embed_dim} and `num_heads`: {self.num_heads}).")
        self.scale_attn_weights = config.scale_attn_weights
        self.layer_idx = layer_idx
        self.config = config

        self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
        self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
        self.attn_dropout = nn.Dropout(config.attn_pdrop)
        self.resid_dropout = nn.Dropout(config.resid_pdrop)

    def _attn(self, query, key, value, attention_mask=None, head_mask=None):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        if self.scale_attn_weights:
            attn_weights = attn_weights / torch.full(
                [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)

        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length: key_length, :key_length]
        mask_value = torch.finfo(attn_weights.dtype).min
        # a tensor, not a python float: otherwise `RuntimeError: expected scalar type float but
        # found double` (and on the same device as attn_weights)
        mask_value = torch.full([], mask_value, dtype=attn_weights.dtype,
                                device=attn_weights.device)
        attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)

        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask

        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights = attn_weights.type(value.dtype)
        attn_weights = self.attn_dropout(attn_weights)
        if head_mask is not None:
            attn_weights = attn_weights * head_mask

        attn_output = torch.matmul(attn_weights, value)
        return attn_output, attn_weights

    def _sdpa_attn(self, query, key, value, attention_mask=None):
        # the mask is already 4D (causal and padding) from the model; without one, a single new
        # token attends to the whole cache, so the kernel is causal only when q_len > 1
        is_causal = attention_mask is None and query.size(-2) > 1
        return F.scaled_dot_product_attention(
            query, key, value, attn_mask=attention_mask,
            dropout_p=self.attn_dropout.p if self.training else 0.0, is_causal=is_causal)

    def _split_heads(self, tensor, num_heads, attn_head_size):
        new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
        tensor = tensor.view(new_shape)
        return tensor.permute(0, 2, 1, 3)  # (batch, head, seq_length, head_features)

    def _merge_heads(self, tensor, num_heads, attn_head_size):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
        return tensor.view(new_shape)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, head_mask=None,
                use_cache=False, output_attentions=False):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query = self._split_heads(query, self.num_heads, self.head_dim)
        key = self._split_heads(key, self.num_heads, self.head_dim)
        value = self._split_heads(value, self.num_heads, self.head_dim)

        if layer_past is not None:
            past_key, past_value = layer_past
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)

        present = (key, value) if use_cache is True else None

        if self.config._attn_implementation == "sdpa" and not output_attentions:
            attn_output, attn_weights = self._sdpa_attn(query, key, value, attention_mask), None
        else:
            attn_output, attn_weights = self._attn(query, key, value, attention_mask, head_mask)

        attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
        attn_output = self.c_proj(attn_output)
        attn_output = self.resid_dropout(attn_output)

        outputs = (attn_output, present)
        if output_attentions:
            outputs += (attn_weights,)
        return outputs  # a, present, (attentions)


class GPT2MLP(nn.Module):
    def __init__(self, intermediate_size, config):
        super().__init__()
        embed_dim = config.n_embd
        self.c_fc = Conv1D(intermediate_size, embed_dim)
        self.c_proj = Conv1D(embed_dim, intermediate_size)
        self.act = get_activation(config.activation_function)
        self.dropout = nn.Dropout(config.resid_pdrop)

    def forward(self, hidden_states):
        hidden_states = self.c_fc(hidden_states)
        hidden_states = self.act(hidden_states)
        hidden_states = self.c_proj(hidden_states)
        hidden_states = self.dropout(hidden_states)
        return hidden_states


class GPT2Block(nn.Module):
    def __init__(self, config, layer_idx=None):
        super().__init__()
        hidden_size = config.n_embd
        inner_dim = config.n_inner if config.n_inner is not None else 4 * hidden_size
        self.ln_1 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
        self.attn = GPT2Attention(config, layer_idx=layer_idx)
        self.ln_2 = nn.LayerNorm(hidden_size, eps=config.layer_norm_epsilon)
        self.mlp = GPT2MLP(inner_dim, config)

    def forward(self, hidden_states, layer_past=None, attention_mask=None, head_mask=None,
                use_cache=False, output_attentions=False):
        residual = hidden_states
        hidden_states = self.ln_1(hidden_states)
        attn_outputs = self.attn(hidden_states, layer_past=layer_past,
                                 attention_mask=attention_mask, head_mask=head_mask,
                                 use_cache=use_cache, output_attentions=output_attentions)
        attn_output = attn_outputs[0]
        outputs = attn_outputs[1:]
        hidden_states = attn_output + residual

        residual = hidden_states
        hidden_states = self.ln_2(hidden_states)
        feed_forward_hidden_states = self.mlp(hidden_states)
        hidden_states = residual + feed_forward_hidden_states

        if use_cache:
            outputs = (hidden_states,) + outputs
        else:
            outputs = (hidden_states,) + outputs[1:]
        return outputs  # hidden_states, present, (attentions)


# ---------------------------------------------------------------------- 4D attention masks


def _make_causal_mask(input_ids_shape, dtype, device, past_key_values_length=0):
    """(bsz, 1, tgt_len, tgt_len + past) with 0 where attended and the dtype's min elsewhere."""
    bsz, tgt_len = input_ids_shape
    mask = torch.full((tgt_len, tgt_len), torch.finfo(dtype).min, device=device)
    mask_cond = torch.arange(mask.size(-1), device=device)
    mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
    mask = mask.to(dtype)
    if past_key_values_length > 0:
        mask = torch.cat([torch.zeros(tgt_len, past_key_values_length, dtype=dtype,
                                      device=device), mask], dim=-1)
    return mask[None, None, :, :].expand(bsz, 1, tgt_len, tgt_len + past_key_values_length)


def _expand_mask(mask, dtype, tgt_len=None):
    """[bsz, seq_len] -> [bsz, 1, tgt_seq_len, src_seq_len]"""
    bsz, src_len = mask.size()
    tgt_len = tgt_len if tgt_len is not None else src_len
    expanded_mask = mask[:, None, None, :].expand(bsz, 1, tgt_len, src_len).to(dtype)
    inverted_mask = 1.0 - expanded_mask
    return inverted_mask.masked_fill(inverted_mask.to(torch.bool), torch.finfo(dtype).min)


def _prepare_4d_causal_attention_mask_for_sdpa(attention_mask, input_shape, inputs_embeds,
                                               past_key_values_length):
    query_length = input_shape[-1]
    key_value_length = query_length + past_key_values_length
    if attention_mask is None or (torch.all(attention_mask == 1) and (
            query_length == 1 or key_value_length == query_length)):
        return None  # the kernel's is_causal does it
    dtype, device = inputs_embeds.dtype, inputs_embeds.device
    expanded = _expand_mask(attention_mask, dtype, tgt_len=query_length)
    if query_length > 1:
        causal_4d_mask = _make_causal_mask(input_shape, dtype, device, past_key_values_length)
        expanded = causal_4d_mask.masked_fill(expanded.bool(), torch.finfo(dtype).min)
    # rows that attend to nothing (the left padding's queries) attend to everything instead:
    # the memory-efficient kernel gives NaN on them otherwise
    min_dtype = torch.finfo(dtype).min
    return expanded.mul(~torch.all(expanded == min_dtype, dim=-1, keepdim=True))


# ------------------------------------------------------------------------------ models


class GPT2PreTrainedModel(nn.Module):
    config_class = GPT2Config
    base_model_prefix = "transformer"
    _no_split_modules = ["GPT2Block"]

    def __init__(self, config):
        super().__init__()
        self.config = config

    @property
    def dtype(self):
        return next(self.parameters()).dtype

    @property
    def device(self):
        return next(self.parameters()).device

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, Conv1D)):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

        # "Scale the weights of residual layers at initialization by 1/sqrt(N)" (GPT-2 paper)
        for name, p in module.named_parameters():
            if name == "c_proj.weight":
                std = self.config.initializer_range / math.sqrt(2 * self.config.n_layer)
                p.data.normal_(mean=0.0, std=std)

    def post_init(self):
        self.apply(self._init_weights)
        self.tie_weights()

    def tie_weights(self):
        output_embeddings = self.get_output_embeddings()
        if output_embeddings is not None and self.config.tie_word_embeddings:
            output_embeddings.weight = self.get_input_embeddings().weight

    def get_output_embeddings(self):
        return None

    def num_parameters(self, exclude_embeddings=False):
        params = [p for n, p in self.named_parameters()
                  if not (exclude_embeddings and ("wte" in n or "wpe" in n))]
        return sum(p.numel() for p in params)

    def resize_token_embeddings(self, new_num_tokens, mean_resizing=True):
        old_embeddings = self.get_input_embeddings()
        new_embeddings = self._get_resized_embeddings(old_embeddings, new_num_tokens,
                                                      mean_resizing)
        self.set_input_embeddings(new_embeddings)
        self.config.vocab_size = new_num_tokens
        if self.get_output_embeddings() is not None and self.config.tie_word_embeddings:
            self.get_output_embeddings().out_features = new_num_tokens
        self.tie_weights()
        return self.get_input_embeddings()

    def _get_resized_embeddings(self, old_embeddings, new_num_tokens, mean_resizing=True):
        old_num_tokens, old_embedding_dim = old_embeddings.weight.size()
        if old_num_tokens == new_num_tokens:
            return old_embeddings
        new_embeddings = nn.Embedding(new_num_tokens, old_embedding_dim,
                                      device=old_embeddings.weight.device,
                                      dtype=old_embeddings.weight.dtype)
        if new_num_tokens > old_num_tokens and not mean_resizing:
            self._init_weights(new_embeddings)
        elif new_num_tokens > old_num_tokens and mean_resizing:
            # new rows drawn around the old rows' mean with a tiny copy of their covariance, so
            # that the new tokens do not take over the softmax
            added_num_tokens = new_num_tokens - old_num_tokens
            old_embeddings_weight = old_embeddings.weight.data.to(torch.float32)
            mean_embeddings = torch.mean(old_embeddings_weight, axis=0)
            old_centered_embeddings = old_embeddings_weight - mean_embeddings
            covariance = old_centered_embeddings.T @ old_centered_embeddings / old_num_tokens
            epsilon = 1e-9
            is_covariance_psd = constraints.positive_definite.check(epsilon * covariance).all()
            if is_covariance_psd:
                distribution = torch.distributions.multivariate_normal.MultivariateNormal(
                    mean_embeddings, covariance_matrix=epsilon * covariance)
                new_embeddings.weight.data[-1 * added_num_tokens:, :] = distribution.sample(
                    sample_shape=(added_num_tokens,)).to(old_embeddings.weight.dtype)
            else:
                new_embeddings.weight.data[-1 * added_num_tokens:, :] = mean_embeddings[
                    None, :].repeat(added_num_tokens, 1).to(old_embeddings.weight.dtype)
        n = min(old_num_tokens, new_num_tokens)
        new_embeddings.weight.data[:n, :] = old_embeddings.weight.data[:n, :]
        return new_embeddings

    def crop_block_size(self, block_size):
        """nanoGPT's model surgery: a smaller context than the checkpoint was trained for."""
        assert block_size <= self.config.n_positions
        self.config.n_positions = block_size
        wpe = self.transformer.wpe
        wpe.weight = nn.Parameter(wpe.weight[:block_size])
        for block in self.transformer.h:
            if hasattr(block.attn, "bias"):
                block.attn.bias = block.attn.bias[:, :, :block_size, :block_size]


class GPT2Model(GPT2PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.embed_dim = config.n_embd
        self.wte = nn.Embedding(config.vocab_size, self.embed_dim)
        self.wpe = nn.Embedding(config.n_positions, self.embed_dim)
        self.drop = nn.Dropout(config.embd_pdrop)
        self.h = nn.ModuleList([GPT2Block(config, layer_idx=i) for i in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(self.embed_dim, eps=config.layer_norm_epsilon)
        self.post_init()

    def get_input_embeddings(self):
        return self.wte

    def set_input_embeddings(self, new_embeddings):
        self.wte = new_embeddings

    def forward(self, input_ids=None, past_key_values=None, attention_mask=None,
                position_ids=None, use_cache=None, output_attentions=False,
                output_hidden_states=False):
        input_shape = input_ids.size()
        input_ids = input_ids.view(-1, input_shape[-1])
        batch_size = input_ids.shape[0]
        device = input_ids.device

        if past_key_values is None:
            past_length = 0
            past_key_values = tuple([None] * len(self.h))
        else:
            past_length = past_key_values[0][0].size(-2)
        if position_ids is None:
            position_ids = torch.arange(past_length, input_shape[-1] + past_length,
                                        dtype=torch.long, device=device)
            position_ids = position_ids.unsqueeze(0)

        # GPT2Attention mask: (batch, 1, 1, to_seq_length), broadcast over heads and queries;
        # 0.0 where attended, the dtype's smallest value where masked
        inputs_embeds = self.wte(input_ids)
        if self.config._attn_implementation == "sdpa" and not output_attentions:
            attention_mask = _prepare_4d_causal_attention_mask_for_sdpa(
                attention_mask, (batch_size, input_shape[-1]), inputs_embeds, past_length)
        elif attention_mask is not None:
            if batch_size <= 0:
                raise ValueError("batch_size has to be defined and > 0")
            attention_mask = attention_mask.view(batch_size, -1)
            attention_mask = attention_mask[:, None, None, :]
            attention_mask = attention_mask.to(dtype=self.dtype)
            attention_mask = (1.0 - attention_mask) * torch.finfo(self.dtype).min

        position_embeds = self.wpe(position_ids)
        hidden_states = inputs_embeds + position_embeds
        hidden_states = self.drop(hidden_states)

        output_shape = (-1,) + input_shape[1:] + (hidden_states.size(-1),)
        presents = () if use_cache else None
        all_self_attentions = () if output_attentions else None
        all_hidden_states = () if output_hidden_states else None
        for block, layer_past in zip(self.h, past_key_values):
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
            outputs = block(hidden_states, layer_past=layer_past, attention_mask=attention_mask,
                            use_cache=use_cache, output_attentions=output_attentions)
            hidden_states = outputs[0]
            if use_cache is True:
                presents = presents + (outputs[1],)
            if output_attentions:
                all_self_attentions = all_self_attentions + (outputs[2 if use_cache else 1],)

        hidden_states = self.ln_f(hidden_states)
        hidden_states = hidden_states.view(output_shape)
        if output_hidden_states:
            all_hidden_states = all_hidden_states + (hidden_states,)
        return BaseModelOutputWithPast(last_hidden_state=hidden_states,
                                       past_key_values=presents,
                                       hidden_states=all_hidden_states,
                                       attentions=all_self_attentions)


# ----------------------------------------------------------------- logits processors


class LogitsProcessor:
    def __call__(self, input_ids, scores):
        raise NotImplementedError


class LogitsProcessorList(list):
    def __call__(self, input_ids, scores, **kwargs):
        for processor in self:
            scores = processor(input_ids, scores)
        return scores


class RepetitionPenaltyLogitsProcessor(LogitsProcessor):
    """CTRL's penalty: divide positive logits of seen tokens, multiply negative ones."""

    def __init__(self, penalty):
        if not isinstance(penalty, float) or not (penalty > 0):
            raise ValueError(f"`penalty` has to be a strictly positive float, but is {penalty}")
        self.penalty = penalty

    def __call__(self, input_ids, scores):
        score = torch.gather(scores, 1, input_ids)
        # if score < 0 then repetition penalty has to be multiplied to reduce the token
        # probabilities
        score = torch.where(score < 0, score * self.penalty, score / self.penalty)
        scores_processed = scores.scatter(1, input_ids, score)
        return scores_processed


class MinNewTokensLengthLogitsProcessor(LogitsProcessor):
    def __init__(self, prompt_length_to_skip, min_new_tokens, eos_token_id):
        if not isinstance(eos_token_id, torch.Tensor):
            if isinstance(eos_token_id, int):
                eos_token_id = [eos_token_id]
            eos_token_id = torch.tensor(eos_token_id)
        self.prompt_length_to_skip = prompt_length_to_skip
        self.min_new_tokens = min_new_tokens
        self.eos_token_id = eos_token_id

    def __call__(self, input_ids, scores):
        new_tokens_length = input_ids.shape[-1] - self.prompt_length_to_skip
        scores_processed = scores.clone()
        vocab_tensor = torch.arange(scores.shape[-1], device=scores.device)
        eos_token_mask = torch.isin(vocab_tensor, self.eos_token_id)
        if new_tokens_length < self.min_new_tokens:
            scores_processed = torch.where(eos_token_mask, -math.inf, scores)
        return scores_processed


class TemperatureLogitsWarper(LogitsProcessor):
    def __init__(self, temperature):
        if not isinstance(temperature, float) or not (temperature > 0):
            raise ValueError(f"`temperature` (={temperature}) has to be a strictly positive "
                             "float, otherwise your next token scores will be invalid.")
        self.temperature = temperature

    def __call__(self, input_ids, scores):
        return scores / self.temperature


class TopKLogitsWarper(LogitsProcessor):
    def __init__(self, top_k, filter_value=-float("Inf"), min_tokens_to_keep=1):
        if not isinstance(top_k, int) or top_k <= 0:
            raise ValueError(f"`top_k` has to be a strictly positive integer, but is {top_k}")
        self.top_k = max(top_k, min_tokens_to_keep)
        self.filter_value = filter_value

    def __call__(self, input_ids, scores):
        top_k = min(self.top_k, scores.size(-1))  # safety check
        # remove all tokens with a probability less than the last token of the top-k
        indices_to_remove = scores < torch.topk(scores, top_k)[0][..., -1, None]
        scores_processed = scores.masked_fill(indices_to_remove, self.filter_value)
        return scores_processed


class TopPLogitsWarper(LogitsProcessor):
    def __init__(self, top_p, filter_value=-float("Inf"), min_tokens_to_keep=1):
        top_p = float(top_p)
        if top_p < 0 or top_p > 1.0:
            raise ValueError(f"`top_p` has to be a float > 0 and < 1, but is {top_p}")
        self.top_p = top_p
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores):
        sorted_logits, sorted_indices = torch.sort(scores, descending=False)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)

        # remove tokens with cumulative top_p above the threshold (tokens with 0 are kept)
        sorted_indices_to_remove = cumulative_probs <= (1 - self.top_p)
        # keep at least min_tokens_to_keep
        sorted_indices_to_remove[..., -self.min_tokens_to_keep:] = 0

        # scatter sorted tensors to original indexing
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices,
                                                             sorted_indices_to_remove)
        scores_processed = scores.masked_fill(indices_to_remove, self.filter_value)
        return scores_processed


def top_k_top_p_filtering(logits, top_k=0, top_p=1.0, filter_value=-float("Inf"),
                          min_tokens_to_keep=1):
    """The older in-place helper (transformers 2.x, and many repositories since)."""
    if top_k > 0:
        top_k = min(max(top_k, min_tokens_to_keep), logits.size(-1))
        indices_to_remove = logits < torch.topk(logits, top_k)[0][..., -1, None]
        logits[indices_to_remove] = filter_value
    if top_p < 1.0:
        sorted_logits, sorted_indices = torch.sort(logits, descending=True)
        cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
        sorted_indices_to_remove = cumulative_probs > top_p
        if min_tokens_to_keep > 1:
            sorted_indices_to_remove[..., :min_tokens_to_keep] = 0
        # shift the indices to the right to keep also the first token above the threshold
        sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
        sorted_indices_to_remove[..., 0] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices,
                                                             sorted_indices_to_remove)
        logits[indices_to_remove] = filter_value
    return logits


class TypicalLogitsWarper(LogitsProcessor):
    """Locally typical sampling: keep the tokens whose surprisal is closest to the entropy."""

    def __init__(self, mass=0.9, filter_value=-float("Inf"), min_tokens_to_keep=1):
        self.filter_value = filter_value
        self.mass = mass
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores):
        normalized = torch.nn.functional.log_softmax(scores, dim=-1)
        p = torch.exp(normalized)
        ent = -(normalized * p).nansum(-1, keepdim=True)

        shifted_scores = torch.abs((-normalized) - ent)
        sorted_scores, sorted_indices = torch.sort(shifted_scores, descending=False)
        sorted_logits = scores.gather(-1, sorted_indices)
        cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)

        last_ind = (cumulative_probs < self.mass).sum(dim=1)
        last_ind.clamp_(max=sorted_scores.shape[-1] - 1)
        sorted_indices_to_remove = sorted_scores > sorted_scores.gather(1, last_ind.view(-1, 1))
        sorted_indices_to_remove[..., : self.min_tokens_to_keep] = 0
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices,
                                                             sorted_indices_to_remove)
        return scores.masked_fill(indices_to_remove, self.filter_value)


class EpsilonLogitsWarper(LogitsProcessor):
    def __init__(self, epsilon, filter_value=-float("Inf"), min_tokens_to_keep=1):
        self.epsilon = epsilon
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores):
        probabilities = scores.softmax(dim=-1)
        indices_to_remove = probabilities < self.epsilon
        top_k = min(self.min_tokens_to_keep, scores.size(-1))
        indices_to_remove = indices_to_remove & (
            scores < torch.topk(scores, top_k)[0][..., -1, None])
        return scores.masked_fill(indices_to_remove, self.filter_value)


class EtaLogitsWarper(LogitsProcessor):
    """eta-sampling: the cut-off adapts to the entropy of the distribution."""

    def __init__(self, epsilon, filter_value=-float("Inf"), min_tokens_to_keep=1, device="cpu"):
        self.epsilon = torch.tensor(epsilon, device=device)
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores):
        probabilities = scores.softmax(dim=-1)
        entropy = torch.distributions.Categorical(logits=scores).entropy()
        eta = torch.min(self.epsilon, torch.sqrt(self.epsilon) * torch.exp(-entropy))[..., None]
        indices_to_remove = probabilities < eta
        top_k = min(self.min_tokens_to_keep, scores.size(-1))
        indices_to_remove = indices_to_remove & (
            scores < torch.topk(scores, top_k)[0][..., -1, None])
        return scores.masked_fill(indices_to_remove, self.filter_value)


class MinPLogitsWarper(LogitsProcessor):
    def __init__(self, min_p, filter_value=-float("Inf"), min_tokens_to_keep=1):
        self.min_p = min_p
        self.filter_value = filter_value
        self.min_tokens_to_keep = min_tokens_to_keep

    def __call__(self, input_ids, scores):
        probs = torch.softmax(scores, dim=-1)
        top_probs, _ = probs.max(dim=-1, keepdim=True)
        scaled_min_p = self.min_p * top_probs
        tokens_to_remove = probs < scaled_min_p
        sorted_indices = torch.argsort(scores, descending=True, dim=-1)
        sorted_indices_to_remove = torch.gather(tokens_to_remove, dim=-1, index=sorted_indices)
        sorted_indices_to_remove[..., : self.min_tokens_to_keep] = False
        indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices,
                                                             sorted_indices_to_remove)
        return scores.masked_fill(indices_to_remove, self.filter_value)


def _get_ngrams(ngram_size, prev_input_ids, num_hypos):
    generated_ngrams = [{} for _ in range(num_hypos)]
    for idx in range(num_hypos):
        gen_tokens = prev_input_ids[idx].tolist()
        generated_ngram = generated_ngrams[idx]
        for ngram in zip(*[gen_tokens[i:] for i in range(ngram_size)]):
            prev_ngram_tuple = tuple(ngram[:-1])
            generated_ngram[prev_ngram_tuple] = generated_ngram.get(prev_ngram_tuple, []) + [
                ngram[-1]]
    return generated_ngrams


def _calc_banned_ngram_tokens(ngram_size, prev_input_ids, num_hypos, cur_len):
    if cur_len + 1 < ngram_size:
        return [[] for _ in range(num_hypos)]
    generated_ngrams = _get_ngrams(ngram_size, prev_input_ids, num_hypos)
    start_idx = cur_len + 1 - ngram_size
    return [generated_ngrams[h].get(tuple(prev_input_ids[h, start_idx:cur_len].tolist()), [])
            for h in range(num_hypos)]


class NoRepeatNGramLogitsProcessor(LogitsProcessor):
    def __init__(self, ngram_size):
        if not isinstance(ngram_size, int) or ngram_size <= 0:
            raise ValueError(f"`ngram_size` has to be a strictly positive integer, but is "
                             f"{ngram_size}")
        self.ngram_size = ngram_size

    def __call__(self, input_ids, scores):
        num_batch_hypotheses = scores.shape[0]
        cur_len = input_ids.shape[-1]
        scores_processed = scores.clone()
        banned_batch_tokens = _calc_banned_ngram_tokens(self.ngram_size, input_ids,
                                                        num_batch_hypotheses, cur_len)
        for i, banned_tokens in enumerate(banned_batch_tokens):
            scores_processed[i, banned_tokens] = -float("inf")
        return scores_processed


def enforce_repetition_penalty_(lprobs, batch_size, num_beams, prev_output_tokens,
                                repetition_penalty):
    """The loop the gather/scatter processor replaced."""
    for i in range(batch_size * num_beams):
        for previous_token in set(prev_output_tokens[i].tolist()):
            if lprobs[i, previous_token] < 0:
                lprobs[i, previous_token] *= repetition_penalty
            else:
                lprobs[i, previous_token] /= repetition_penalty


# ----------------------------------------------------------------- stopping criteria


class StoppingCriteria:
    def __call__(self, input_ids, scores, **kwargs):
        raise NotImplementedError


class MaxLengthCriteria(StoppingCriteria):
    def __init__(self, max_length):
        self.max_length = max_length

    def __call__(self, input_ids, scores, **kwargs):
        cur_len = input_ids.shape[-1]
        is_done = cur_len >= self.max_length
        return torch.full((input_ids.shape[0],), is_done, device=input_ids.device,
                          dtype=torch.bool)


class EosTokenCriteria(StoppingCriteria):
    def __init__(self, eos_token_id):
        if not isinstance(eos_token_id, torch.Tensor):
            if isinstance(eos_token_id, int):
                eos_token_id = [eos_token_id]
            eos_token_id = torch.tensor(eos_token_id)
        self.eos_token_id = eos_token_id

    def __call__(self, input_ids, scores, **kwargs):
        return torch.isin(input_ids[:, -1], self.eos_token_id.to(input_ids.device))


class StoppingCriteriaList(list):
    def __call__(self, input_ids, scores, **kwargs):
        is_done = torch.full((input_ids.shape[0],), False, device=input_ids.device,
                             dtype=torch.bool)
        for criteria in self:
            is_done = is_done | criteria(input_ids, scores, **kwargs)
        return is_done


# ----------------------------------------------------------------------- beam search


class BeamHypotheses:
    def __init__(self, num_beams, length_penalty, early_stopping):
        self.length_penalty = length_penalty
        self.early_stopping = early_stopping
        self.num_beams = num_beams
        self.beams = []
        self.worst_score = 1e9

    def __len__(self):
        return len(self.beams)

    def add(self, hyp, sum_logprobs, generated_len):
        score = sum_logprobs / (generated_len ** self.length_penalty)
        if len(self) < self.num_beams or score > self.worst_score:
            self.beams.append((score, hyp))
            if len(self) > self.num_beams:
                sorted_next_scores = sorted([(s, idx) for idx, (s, _) in enumerate(self.beams)])
                del self.beams[sorted_next_scores[0][1]]
                self.worst_score = sorted_next_scores[1][0]
            else:
                self.worst_score = min(score, self.worst_score)

    def is_done(self, best_sum_logprobs, cur_len, decoder_prompt_len=0):
        if len(self) < self.num_beams:
            return False
        if self.early_stopping is True:
            return True
        highest_attainable_score = best_sum_logprobs / (cur_len - decoder_prompt_len) ** \
            self.length_penalty
        return self.worst_score >= highest_attainable_score


class BeamSearchScorer:
    def __init__(self, batch_size, num_beams, length_penalty=1.0, early_stopping=False,
                 num_beam_hyps_to_keep=1):
        self.num_beams = num_beams
        self.group_size = num_beams
        self.num_beam_hyps_to_keep = num_beam_hyps_to_keep
        self._beam_hyps = [BeamHypotheses(num_beams, length_penalty, early_stopping)
                           for _ in range(batch_size)]
        self._done = torch.tensor([False for _ in range(batch_size)], dtype=torch.bool)

    @property
    def is_done(self):
        return self._done.all()

    def process(self, input_ids, next_scores, next_tokens, next_indices, pad_token_id=None,
                eos_token_id=None, decoder_prompt_len=0):
        cur_len = input_ids.shape[-1] + 1  # add up to the length the next tokens will make
        batch_size = len(self._beam_hyps)
        next_beam_scores = torch.zeros((batch_size, self.group_size), dtype=next_scores.dtype)
        next_beam_tokens = torch.zeros((batch_size, self.group_size), dtype=next_tokens.dtype)
        next_beam_indices = torch.zeros((batch_size, self.group_size),
                                        dtype=next_indices.dtype)
        if eos_token_id is not None and not isinstance(eos_token_id, torch.Tensor):
            if isinstance(eos_token_id, int):
                eos_token_id = [eos_token_id]
            eos_token_id = torch.tensor(eos_token_id)

        for batch_idx in range(batch_size):
            if self._done[batch_idx]:
                # pad the batch
                next_beam_scores[batch_idx, :] = 0
                next_beam_tokens[batch_idx, :] = pad_token_id
                next_beam_indices[batch_idx, :] = 0
                continue

            # next tokens for this sentence
            beam_idx = 0
            for beam_token_rank, (next_token, next_score, next_index) in enumerate(
                    zip(next_tokens[batch_idx], next_scores[batch_idx],
                        next_indices[batch_idx])):
                batch_beam_idx = batch_idx * self.group_size + next_index
                # add to generated hypotheses if end of sentence
                if (eos_token_id is not None) and (next_token.item() in eos_token_id):
                    # if beam_token does not belong to top num_beams tokens, skip it
                    if beam_token_rank >= self.group_size:
                        continue
                    self._beam_hyps[batch_idx].add(input_ids[batch_beam_idx].clone(),
                                                   next_score.item(),
                                                   generated_len=cur_len - decoder_prompt_len)
                else:
                    # add next predicted token since it is not eos_token
                    next_beam_scores[batch_idx, beam_idx] = next_score
                    next_beam_tokens[batch_idx, beam_idx] = next_token
                    next_beam_indices[batch_idx, beam_idx] = batch_beam_idx
                    beam_idx += 1
                # once the beam for next step is full, don't add more tokens to it.
                if beam_idx == self.group_size:
                    break

            # Check if we are done so that we can save a pad step if all(done)
            self._done[batch_idx] = self._done[batch_idx] or self._beam_hyps[batch_idx].is_done(
                next_scores[batch_idx].max().item(), cur_len, decoder_prompt_len)

        return {
            "next_beam_scores": next_beam_scores.view(-1),
            "next_beam_tokens": next_beam_tokens.view(-1),
            "next_beam_indices": next_beam_indices.view(-1),
        }

    def finalize(self, input_ids, final_beam_scores, max_length, pad_token_id=None,
                 eos_token_id=None, decoder_prompt_len=0):
        batch_size = len(self._beam_hyps)
        if eos_token_id is not None and not isinstance(eos_token_id, torch.Tensor):
            if isinstance(eos_token_id, int):
                eos_token_id = [eos_token_id]
            eos_token_id = torch.tensor(eos_token_id)

        # finalize all open beam hypotheses and add to generated hypotheses
        for batch_idx, beam_hyp in enumerate(self._beam_hyps):
            if self._done[batch_idx]:
                continue
            for beam_id in range(self.num_beams):
                batch_beam_idx = batch_idx * self.num_beams + beam_id
                final_score = final_beam_scores[batch_beam_idx].item()
                final_tokens = input_ids[batch_beam_idx]
                generated_len = final_tokens.shape[-1] - decoder_prompt_len
                beam_hyp.add(final_tokens, final_score, generated_len=generated_len)

        # select the best hypotheses
        sent_lengths = input_ids.new(batch_size * self.num_beam_hyps_to_keep)
        best = []
        best_scores = torch.zeros(batch_size * self.num_beam_hyps_to_keep, dtype=torch.float32)
        for i, beam_hyp in enumerate(self._beam_hyps):
            sorted_hyps = sorted(beam_hyp.beams, key=lambda x: x[0])
            for j in range(self.num_beam_hyps_to_keep):
                best_score, best_hyp = sorted_hyps.pop()
                sent_lengths[self.num_beam_hyps_to_keep * i + j] = len(best_hyp)
                best.append(best_hyp)
                best_scores[i * self.num_beam_hyps_to_keep + j] = best_score

        # prepare for adding eos
        sent_lengths_max = sent_lengths.max().item() + 1
        sent_max_len = min(sent_lengths_max, max_length) if max_length is not None \
            else sent_lengths_max
        decoded = input_ids.new(batch_size * self.num_beam_hyps_to_keep, sent_max_len)
        # shorter batches are padded if needed
        if sent_lengths.min().item() != sent_lengths.max().item():
            decoded.fill_(pad_token_id)
        # fill with hypotheses and eos_token_id if the latter fits in
        for i, hypo in enumerate(best):
            decoded[i, : sent_lengths[i]] = hypo
            if sent_lengths[i] < sent_max_len:
                decoded[i, sent_lengths[i]] = eos_token_id[0]
        return {"sequences": decoded, "sequence_scores": best_scores}


# ------------------------------------------------------------------------- generation


@dataclass
class GenerationConfig:
    max_new_tokens: int = 20
    min_new_tokens: int | None = None
    do_sample: bool = False
    num_beams: int = 1
    temperature: float = 1.0
    top_k: int | None = 50
    top_p: float = 1.0
    min_p: float | None = None
    typical_p: float = 1.0
    epsilon_cutoff: float = 0.0
    eta_cutoff: float = 0.0
    repetition_penalty: float = 1.0
    no_repeat_ngram_size: int = 0
    length_penalty: float = 1.0
    early_stopping: bool = False
    num_return_sequences: int = 1
    use_cache: bool = True
    output_scores: bool = False
    pad_token_id: int | None = None
    eos_token_id: int | None = None


@dataclass
class GenerateOutput:
    sequences: torch.Tensor = None
    scores: tuple | None = None
    sequences_scores: torch.Tensor | None = None


class GenerationMixin:
    def _get_logits_processor(self, gc, input_ids_seq_length):
        processors = LogitsProcessorList()
        if gc.repetition_penalty is not None and gc.repetition_penalty != 1.0:
            processors.append(RepetitionPenaltyLogitsProcessor(penalty=gc.repetition_penalty))
        if gc.no_repeat_ngram_size is not None and gc.no_repeat_ngram_size > 0:
            processors.append(NoRepeatNGramLogitsProcessor(gc.no_repeat_ngram_size))
        if gc.min_new_tokens is not None and gc.eos_token_id is not None \
                and gc.min_new_tokens > 0:
            processors.append(MinNewTokensLengthLogitsProcessor(
                input_ids_seq_length, gc.min_new_tokens, gc.eos_token_id))
        if gc.do_sample:
            # the warpers, in HF's order; beam search with do_sample=False skips them
            min_tokens_to_keep = 2 if gc.num_beams > 1 else 1
            if gc.temperature is not None and gc.temperature != 1.0:
                processors.append(TemperatureLogitsWarper(gc.temperature))
            if gc.top_k is not None and gc.top_k != 0:
                processors.append(TopKLogitsWarper(top_k=gc.top_k,
                                                   min_tokens_to_keep=min_tokens_to_keep))
            if gc.top_p is not None and gc.top_p < 1.0:
                processors.append(TopPLogitsWarper(top_p=gc.top_p,
                                                   min_tokens_to_keep=min_tokens_to_keep))
            if gc.min_p is not None:
                processors.append(MinPLogitsWarper(min_p=gc.min_p,
                                                   min_tokens_to_keep=min_tokens_to_keep))
            if gc.typical_p is not None and gc.typical_p < 1.0:
                processors.append(TypicalLogitsWarper(mass=gc.typical_p,
                                                      min_tokens_to_keep=min_tokens_to_keep))
            if gc.epsilon_cutoff is not None and 0.0 < gc.epsilon_cutoff < 1.0:
                processors.append(EpsilonLogitsWarper(epsilon=gc.epsilon_cutoff,
                                                      min_tokens_to_keep=min_tokens_to_keep))
            if gc.eta_cutoff is not None and 0.0 < gc.eta_cutoff < 1.0:
                processors.append(EtaLogitsWarper(epsilon=gc.eta_cutoff,
                                                  min_tokens_to_keep=min_tokens_to_keep))
        return processors

    def _get_stopping_criteria(self, gc, input_ids_seq_length):
        criteria = StoppingCriteriaList()
        criteria.append(MaxLengthCriteria(input_ids_seq_length + gc.max_new_tokens))
        if gc.eos_token_id is not None:
            criteria.append(EosTokenCriteria(eos_token_id=gc.eos_token_id))
        return criteria

    def _update_model_kwargs_for_generation(self, outputs, model_kwargs):
        model_kwargs["past_key_values"] = outputs.past_key_values
        if "attention_mask" in model_kwargs:
            attention_mask = model_kwargs["attention_mask"]
            model_kwargs["attention_mask"] = torch.cat(
                [attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))], dim=-1)
        return model_kwargs

    @staticmethod
    def _expand_inputs_for_generation(expand_size=1, input_ids=None, **model_kwargs):
        for key, value in model_kwargs.items():
            if value is not None and isinstance(value, torch.Tensor):
                model_kwargs[key] = value.repeat_interleave(expand_size, dim=0)
        input_ids = input_ids.repeat_interleave(expand_size, dim=0)
        return input_ids, model_kwargs

    @torch.no_grad()
    def generate(self, input_ids, attention_mask=None, generation_config=None, generator=None,
                 **kwargs):
        gc = generation_config if generation_config is not None else GenerationConfig()
        for key, value in kwargs.items():
            setattr(gc, key, value)
        if gc.pad_token_id is None and gc.eos_token_id is not None:
            # "Setting `pad_token_id` to `eos_token_id` for open-end generation."
            gc.pad_token_id = gc.eos_token_id
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        model_kwargs = {"attention_mask": attention_mask, "use_cache": gc.use_cache}

        input_ids_seq_length = input_ids.shape[-1]
        logits_processor = self._get_logits_processor(gc, input_ids_seq_length)
        stopping_criteria = self._get_stopping_criteria(gc, input_ids_seq_length)

        if gc.num_beams > 1:
            batch_size = input_ids.shape[0]
            beam_scorer = BeamSearchScorer(batch_size, gc.num_beams,
                                           length_penalty=gc.length_penalty,
                                           early_stopping=gc.early_stopping,
                                           num_beam_hyps_to_keep=gc.num_return_sequences)
            input_ids, model_kwargs = self._expand_inputs_for_generation(
                gc.num_beams, input_ids, **model_kwargs)
            return self._beam_search(input_ids, beam_scorer, logits_processor,
                                     stopping_criteria, gc, **model_kwargs)
        if gc.num_return_sequences > 1:
            input_ids, model_kwargs = self._expand_inputs_for_generation(
                gc.num_return_sequences, input_ids, **model_kwargs)
        return self._sample(input_ids, logits_processor, stopping_criteria, gc, generator,
                            **model_kwargs)

    def _sample(self, input_ids, logits_processor, stopping_criteria, gc, generator,
                **model_kwargs):
        pad_token_id = gc.pad_token_id
        has_eos_stopping_criteria = any(isinstance(c, EosTokenCriteria)
                                        for c in stopping_criteria)
        scores = () if gc.output_scores else None
        batch_size = input_ids.shape[0]
        this_peer_finished = False
        unfinished_sequences = torch.ones(batch_size, dtype=torch.long,
                                          device=input_ids.device)
        while not this_peer_finished:
            model_inputs = self.prepare_inputs_for_generation(input_ids, **model_kwargs)
            outputs = self(**model_inputs)

            # clone: the logits keep a reference to the whole batch's outputs otherwise
            next_token_logits = outputs.logits[:, -1, :].clone().float()
            next_token_scores = logits_processor(input_ids, next_token_logits)
            if gc.output_scores:
                scores += (next_token_scores,)

            if gc.do_sample:
                probs = nn.functional.softmax(next_token_scores, dim=-1)
                next_tokens = torch.multinomial(probs, num_samples=1,
                                                generator=generator).squeeze(1)
            else:
                next_tokens = torch.argmax(next_token_scores, dim=-1)

            # finished sentences get a padding token
            if has_eos_stopping_criteria:
                next_tokens = next_tokens * unfinished_sequences + pad_token_id * (
                    1 - unfinished_sequences)

            input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
            model_kwargs = self._update_model_kwargs_for_generation(outputs, model_kwargs)
            if not gc.use_cache:
                model_kwargs["past_key_values"] = None

            unfinished_sequences = unfinished_sequences & ~stopping_criteria(input_ids, scores)
            this_peer_finished = unfinished_sequences.max() == 0
            del outputs
        return GenerateOutput(sequences=input_ids, scores=scores)

    def _beam_search(self, input_ids, beam_scorer, logits_processor, stopping_criteria, gc,
                     **model_kwargs):
        batch_size = len(beam_scorer._beam_hyps)
        num_beams = beam_scorer.num_beams
        batch_beam_size, cur_len = input_ids.shape
        decoder_prompt_len = cur_len
        if num_beams * batch_size != batch_beam_size:
            raise ValueError(f"Batch dimension of `input_ids` should be {num_beams * batch_size},"
                             f" but is {batch_beam_size}.")
        eos_token_id = None if gc.eos_token_id is None else torch.tensor([gc.eos_token_id])

        # the first step's beams are identical: only the first may be expanded
        beam_scores = torch.zeros((batch_size, num_beams), dtype=torch.float,
                                  device=input_ids.device)
        beam_scores[:, 1:] = -1e9
        beam_scores = beam_scores.view((batch_size * num_beams,))

        while True:
            model_inputs = self.prepare_inputs_for_generation(input_ids, **model_kwargs)
            outputs = self(**model_inputs)
            next_token_logits = outputs.logits[:, -1, :].clone().float()
            next_token_scores = nn.functional.log_softmax(next_token_logits, dim=-1)
            next_token_scores_processed = logits_processor(input_ids, next_token_scores)
            next_token_scores = next_token_scores_processed + beam_scores[:, None].expand_as(
                next_token_scores_processed)

            # reshape for beam search
            vocab_size = next_token_scores.shape[-1]
            next_token_scores = next_token_scores.view(batch_size, num_beams * vocab_size)

            # keep 1 + #eos beams per beam so that at least one is not an eos
            n_eos_tokens = eos_token_id.shape[0] if eos_token_id is not None else 0
            n_tokens_to_keep = max(2, 1 + n_eos_tokens) * num_beams
            next_token_scores, next_tokens = torch.topk(next_token_scores, n_tokens_to_keep,
                                                        dim=1, largest=True, sorted=True)
            next_indices = torch.div(next_tokens, vocab_size, rounding_mode="floor")
            next_tokens = next_tokens % vocab_size

            beam_outputs = beam_scorer.process(input_ids, next_token_scores, next_tokens,
                                               next_indices, pad_token_id=gc.pad_token_id,
                                               eos_token_id=eos_token_id,
                                               decoder_prompt_len=decoder_prompt_len)
            beam_scores = beam_outputs["next_beam_scores"]
            beam_next_tokens = beam_outputs["next_beam_tokens"]
            beam_idx = beam_outputs["next_beam_indices"]

            input_ids = torch.cat([input_ids[beam_idx, :], beam_next_tokens.unsqueeze(-1)],
                                  dim=-1)
            model_kwargs = self._update_model_kwargs_for_generation(outputs, model_kwargs)
            del outputs
            if model_kwargs.get("past_key_values", None) is not None:
                model_kwargs["past_key_values"] = self._reorder_cache(
                    model_kwargs["past_key_values"], beam_idx)
            # (HF keeps the attention mask unreordered: the beams of one prompt share it)

            if beam_scorer.is_done or all(stopping_criteria(input_ids, None)):
                break

        sequence_outputs = beam_scorer.finalize(
            input_ids, beam_scores, max_length=stopping_criteria[0].max_length,
            pad_token_id=gc.pad_token_id, eos_token_id=eos_token_id,
            decoder_prompt_len=decoder_prompt_len)
        return GenerateOutput(sequences=sequence_outputs["sequences"],
                              sequences_scores=sequence_outputs["sequence_scores"])

    def compute_transition_scores(self, sequences, scores, beam_indices=None,
                                  normalize_logits=False):
        # without beam indices (greedy search, sampling) every step comes from beam "0"
        if beam_indices is None:
            beam_indices = torch.arange(scores[0].shape[0]).view(-1, 1).to(sequences.device)
            beam_indices = beam_indices.expand(-1, len(scores))

        # scores as [batch_size * vocab_size, generation steps]
        scores = torch.stack(scores).reshape(len(scores), -1).transpose(0, 1)
        if normalize_logits:
            scores = scores.reshape(-1, self.config.vocab_size, scores.shape[-1])
            scores = torch.nn.functional.log_softmax(scores, dim=1)
            scores = scores.reshape(-1, scores.shape[-1])

        # cut beam_indices to the longest beam, beams that finished early point at 0
        beam_indices_mask = beam_indices < 0
        max_beam_length = (1 - beam_indices_mask.long()).sum(-1).max()
        beam_indices = beam_indices.clone()[:, :max_beam_length]
        beam_indices_mask = beam_indices_mask[:, :max_beam_length]
        beam_indices[beam_indices_mask] = 0
        beam_sequence_indices = beam_indices * self.config.vocab_size

        cut_idx = sequences.shape[-1] - max_beam_length
        indices = sequences[:, cut_idx:] + beam_sequence_indices
        transition_scores = scores.gather(0, indices)
        transition_scores[beam_indices_mask] = 0
        return transition_scores


class GPT2LMHeadModel(GPT2PreTrainedModel, GenerationMixin):
    _tied_weights_keys = ["lm_head.weight"]

    def __init__(self, config):
        super().__init__(config)
        self.transformer = GPT2Model(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.post_init()

    def get_input_embeddings(self):
        return self.transformer.wte

    def set_input_embeddings(self, new_embeddings):
        self.transformer.wte = new_embeddings

    def get_output_embeddings(self):
        return self.lm_head

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        # only the last token for input_ids if past is defined in kwargs
        if past_key_values:
            past_length = past_key_values[0][0].shape[2]
            # some generation methods already pass only the last input ID
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = input_ids.shape[1] - 1
            input_ids = input_ids[:, remove_prefix_length:]

        attention_mask = kwargs.get("attention_mask", None)
        position_ids = kwargs.get("position_ids", None)
        if attention_mask is not None and position_ids is None:
            # create position_ids on the fly for batch generation
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1]:]
        return {
            "input_ids": input_ids,
            "past_key_values": past_key_values,
            "use_cache": kwargs.get("use_cache"),
            "position_ids": position_ids,
            "attention_mask": attention_mask,
        }

    def forward(self, input_ids=None, past_key_values=None, attention_mask=None,
                position_ids=None, labels=None, use_cache=None, output_attentions=False,
                output_hidden_states=False):
        transformer_outputs = self.transformer(
            input_ids, past_key_values=past_key_values, attention_mask=attention_mask,
            position_ids=position_ids, use_cache=use_cache, output_attentions=output_attentions,
            output_hidden_states=output_hidden_states)
        hidden_states = transformer_outputs[0]
        lm_logits = self.lm_head(hidden_states)

        loss = None
        if labels is not None:
            # shift so that tokens < n predict n
            shift_logits = lm_logits[..., :-1, :].contiguous()
            shift_labels = labels[..., 1:].contiguous()
            loss_fct = nn.CrossEntropyLoss()
            loss = loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
        return CausalLMOutputWithPast(loss=loss, logits=lm_logits,
                                      past_key_values=transformer_outputs.past_key_values,
                                      hidden_states=transformer_outputs.hidden_states,
                                      attentions=transformer_outputs.attentions)

    @staticmethod
    def _reorder_cache(past_key_values, beam_idx):
        return tuple(
            tuple(past_state.index_select(0, beam_idx.to(past_state.device))
                  for past_state in layer_past)
            for layer_past in past_key_values)

    # nanoGPT's sampler: no cache, the whole (cropped) context every step
    @torch.no_grad()
    def nanogpt_generate(self, idx, max_new_tokens, temperature=1.0, top_k=None,
                         generator=None):
        block_size = self.config.n_positions
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
            logits = self(idx_cond).logits
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1, generator=generator)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


# gpt-fast's sampler: Gumbel-style "multinomial" without a host sync, int32 tokens


def multinomial_sample_one_no_sync(probs_sort, generator=None):
    q = torch.empty_like(probs_sort).exponential_(1, generator=generator)
    return torch.argmax(probs_sort / q, dim=-1, keepdim=True).to(dtype=torch.int)


def logits_to_probs(logits, temperature=1.0, top_k=None):
    logits = logits / max(temperature, 1e-5)
    if top_k is not None:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        pivot = v.select(-1, -1).unsqueeze(-1)
        logits = torch.where(logits < pivot, -float("Inf"), logits)
    probs = torch.nn.functional.softmax(logits, dim=-1)
    return probs


def sample(logits, temperature=1.0, top_k=None, generator=None):
    probs = logits_to_probs(logits[:, -1], temperature, top_k)
    idx_next = multinomial_sample_one_no_sync(probs, generator)
    return idx_next, probs


@torch.no_grad()
def gpt_fast_generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None,
                      generator=None):
    """Prefill, then decode one token at a time on the cache."""
    out = model(prompt, use_cache=True)
    next_token, _ = sample(out.logits, temperature, top_k, generator)
    new_tokens, past = [next_token.clone()], out.past_key_values
    for _ in range(max_new_tokens - 1):
        out = model(next_token, past_key_values=past, use_cache=True)
        past = out.past_key_values
        next_token, _ = sample(out.logits, temperature, top_k, generator)
        new_tokens.append(next_token.clone())
    return torch.cat([prompt, *new_tokens], dim=-1)


def beam_search_no_cache(model, input_ids, num_beams, max_new_tokens):
    """A plain beam search (no eos, no cache): the full forward every step, `//` and `%`."""
    batch_size = input_ids.shape[0]
    input_ids = input_ids.repeat_interleave(num_beams, dim=0)
    beam_scores = torch.zeros(batch_size, num_beams)
    beam_scores[:, 1:] = -1e9
    beam_scores = beam_scores.view(-1)
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(input_ids).logits[:, -1, :]
            vocab_size = logits.shape[-1]
            scores = F.log_softmax(logits, dim=-1) + beam_scores[:, None]
            scores = scores.view(batch_size, num_beams * vocab_size)
            top_scores, top_ids = torch.topk(scores, num_beams, dim=1)
            beam_index = top_ids // vocab_size
            token = top_ids % vocab_size
            offset = (torch.arange(batch_size) * num_beams)[:, None]
            rows = (beam_index + offset).view(-1)
            input_ids = torch.cat([input_ids[rows], token.view(-1, 1)], dim=1)
            beam_scores = top_scores.view(-1)
    best = beam_scores.view(batch_size, num_beams).argmax(dim=1)
    return input_ids.view(batch_size, num_beams, -1)[torch.arange(batch_size), best]


# ------------------------------------------------------------------------- tokenizer

EOS = "<|endoftext|>"


class CharTokenizer:
    """Characters plus GPT-2's single special token (eos = bos = pad)."""

    def __init__(self, text):
        chars = sorted(set(text))
        self.itos = chars + [EOS]
        self.stoi = {ch: i for i, ch in enumerate(self.itos)}
        self.eos_token_id = self.stoi[EOS]
        self.pad_token_id = self.eos_token_id
        self.padding_side = "left"

    @property
    def vocab_size(self):
        return len(self.itos)

    def encode(self, text):
        return [self.stoi[c] for c in text]

    def decode(self, ids, skip_special_tokens=False):
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        return "".join(self.itos[i] for i in ids
                       if not (skip_special_tokens and i == self.eos_token_id))

    def __call__(self, texts, return_tensors="pt"):
        encoded = [self.encode(t) for t in texts]
        longest = max(len(e) for e in encoded)
        input_ids = torch.full((len(texts), longest), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros(len(texts), longest, dtype=torch.long)
        for i, e in enumerate(encoded):
            if self.padding_side == "left":
                input_ids[i, longest - len(e):] = torch.tensor(e)
                attention_mask[i, longest - len(e):] = 1
            else:
                input_ids[i, :len(e)] = torch.tensor(e)
                attention_mask[i, :len(e)] = 1
        return {"input_ids": input_ids, "attention_mask": attention_mask}

    def batch_decode(self, sequences, skip_special_tokens=False):
        return [self.decode(s, skip_special_tokens) for s in sequences]


LINES = [
    "the cat sat on the mat.",
    "the dog sat on the log.",
    "a bird sang in the tree.",
    "the fox ran to the den.",
    "a frog sat by the pond.",
    "the owl saw the moon.",
]
tokenizer = CharTokenizer("".join(LINES))
V = tokenizer.vocab_size
EOS_ID = tokenizer.eos_token_id


# ----------------------------------------------------- fixed-weight checks (recorded)

# Conv1D is a transposed Linear
conv = Conv1D(6, 4)
nn.init.normal_(conv.bias)
x = torch.randn(2, 3, 4)
fixed_results["conv1d"] = conv(x).detach()
conv1d_is_linear = torch.allclose(conv(x), F.linear(x, conv.weight.t(), conv.bias), atol=1e-6)

# gelu_new by hand and through F.gelu(approximate="tanh"), values and gradients
z = torch.linspace(-5, 5, 41, requires_grad=True)
gelu_by_hand = NewGELUActivation()(z)
gelu_tanh = PytorchGELUTanh()(z)
(gelu_grad_by_hand,) = torch.autograd.grad(gelu_by_hand.sum(), z)
(gelu_grad_tanh,) = torch.autograd.grad(gelu_tanh.sum(), z)
fixed_results["gelu_new"] = gelu_by_hand.detach()
fixed_results["gelu_new_grad"] = gelu_grad_by_hand
gelu_forms_difference = (gelu_by_hand - gelu_tanh).abs().max().item()
gelu_grad_forms_difference = (gelu_grad_by_hand - gelu_grad_tanh).abs().max().item()
bf16_results = {}
with torch.no_grad():
    z16 = (2 * torch.randn(256, generator=torch.Generator().manual_seed(16))).to(torch.bfloat16)
    bf16_results["gelu_new"] = NewGELUActivation()(z16).float()
    bf16_results["gelu_pytorch_tanh"] = PytorchGELUTanh()(z16).float()


def config_with(config, **changes):
    """A copy of a config with some fields changed (``GPT2Config.from_dict(...)``)."""
    new = copy.deepcopy(config)
    for key, value in changes.items():
        setattr(new, key, value)
    return new


# a peaked (wider-initialised) checkpoint stand-in for the generation checks
config = GPT2Config(vocab_size=V, n_positions=64, n_embd=16, n_layer=2, n_head=4,
                    initializer_range=0.15, bos_token_id=EOS_ID, eos_token_id=EOS_ID,
                    pad_token_id=EOS_ID)
torch.manual_seed(1234)
model = GPT2LMHeadModel(config)
model.eval()
tied = model.lm_head.weight is model.transformer.wte.weight
state_dict = model.state_dict()
state_dict_shares_storage = (state_dict["lm_head.weight"].data_ptr()
                             == state_dict["transformer.wte.weight"].data_ptr())
state_keys = sorted(state_dict.keys())
n_params = model.num_parameters()
n_params_no_embeddings = model.num_parameters(exclude_embeddings=True)

# a copy through the state dict (the causal buffers are not in it)
sdpa_model = GPT2LMHeadModel(config_with(config, _attn_implementation="sdpa"))
load_result = sdpa_model.load_state_dict(state_dict, strict=True)
sdpa_model.eval()
sdpa_tied_after_load = sdpa_model.lm_head.weight is sdpa_model.transformer.wte.weight

prompts = ["the cat", "a bird sang", "the f", "owl"]
batch = tokenizer(prompts)
input_ids, attention_mask = batch["input_ids"], batch["attention_mask"]
position_ids = attention_mask.long().cumsum(-1) - 1
position_ids.masked_fill_(attention_mask == 0, 1)

with torch.no_grad():
    out = model(input_ids, attention_mask=attention_mask, position_ids=position_ids,
                use_cache=True, output_attentions=True, output_hidden_states=True)
    sdpa_out = sdpa_model(input_ids, attention_mask=attention_mask, position_ids=position_ids)
    no_mask_out = sdpa_model(input_ids[:1], use_cache=True)
    eager_no_mask_out = model(input_ids[:1])
real = attention_mask.bool()
fixed_results["logits"] = out.logits[real]
fixed_results["attentions_row"] = out.attentions[-1][1, :, -1]
fixed_results["hidden_states"] = torch.stack(out.hidden_states)[:, real]
sdpa_difference = (sdpa_out.logits[real] - out.logits[real]).abs().max().item()
sdpa_is_causal_difference = (no_mask_out.logits - eager_no_mask_out.logits).abs().max().item()
attention_rows_sum_to_one = torch.allclose(out.attentions[0].sum(-1),
                                           torch.ones(()), atol=1e-5)
# left padding: no real query attends to a padded key
attention_on_pads = out.attentions[0][:, :, :, :].masked_select(
    (~real)[:, None, None, :] & real[:, None, :, None]).abs().max().item()
present_shapes = [tuple(t.shape) for t in out.past_key_values[0]]

# the padded prompt's logits equal the prompt's alone
with torch.no_grad():
    alone = model(tokenizer([prompts[2]])["input_ids"]).logits[0]
padding_difference = (alone - out.logits[2][real[2]]).abs().max().item()

# the cache: a prefix, then one token at a time, equals the full forward
with torch.no_grad():
    split = 4
    prefix = model(input_ids[:, :split], attention_mask=attention_mask[:, :split],
                   position_ids=position_ids[:, :split], use_cache=True)
    past = prefix.past_key_values
    step_logits = [prefix.logits]
    for t in range(split, input_ids.shape[1]):
        step = model(input_ids[:, t:t + 1], past_key_values=past,
                     attention_mask=attention_mask[:, :t + 1],
                     position_ids=position_ids[:, t:t + 1], use_cache=True)
        past = step.past_key_values
        step_logits.append(step.logits)
    cached_logits = torch.cat(step_logits, dim=1)
cache_difference = (cached_logits[real] - out.logits[real]).abs().max().item()
cache_shapes = [tuple(t.shape) for t in past[1]]

# gradients of the language-model loss (pads ignored with -100), the tied matrix included
model.zero_grad()
labels = input_ids.masked_fill(attention_mask == 0, -100)
loss_out = model(input_ids, attention_mask=attention_mask, position_ids=position_ids,
                 labels=labels)
loss_out.loss.backward()
fixed_results["loss"] = loss_out.loss.detach()
fixed_results["grads"] = {name: p.grad.clone() for name, p in model.named_parameters()}
grad_names = list(fixed_results["grads"])
manual_loss = F.cross_entropy(loss_out.logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1),
                              ignore_index=-100)
manual_loss_difference = (manual_loss - loss_out.loss).abs().item()
model.zero_grad(set_to_none=True)

# logits processors on fixed scores
scores = torch.randn(3, V) * 2
seen = torch.randint(0, V, (3, 6))
fixed_results["repetition_penalty"] = RepetitionPenaltyLogitsProcessor(1.3)(seen, scores)
looped = scores.clone()
enforce_repetition_penalty_(looped, 3, 1, seen, 1.3)
scattered_in_place = scores.clone()
penalised = torch.gather(scattered_in_place, 1, seen)
penalised = torch.where(penalised < 0, penalised * 1.3, penalised / 1.3)
scattered_in_place.scatter_(1, seen, penalised)
repetition_forms_agree = (torch.equal(looped, fixed_results["repetition_penalty"])
                          and torch.equal(scattered_in_place, looped))
fixed_results["top_k"] = TopKLogitsWarper(5)(None, scores)
fixed_results["top_p"] = TopPLogitsWarper(0.8)(None, scores)
fixed_results["top_k_top_p"] = TopPLogitsWarper(0.8)(None, TopKLogitsWarper(5)(None, scores))
fixed_results["temperature"] = TemperatureLogitsWarper(0.7)(None, scores)
fixed_results["min_new_tokens"] = MinNewTokensLengthLogitsProcessor(4, 3, [EOS_ID, 0])(
    seen, scores)
old_filtered = top_k_top_p_filtering(scores.clone(), top_k=5, top_p=0.8)
v, _ = torch.topk(scores, 5)
nanogpt_top_k = scores.clone()
nanogpt_top_k[nanogpt_top_k < v[:, [-1]]] = -float("Inf")
where_top_k = torch.where(scores < v[:, [-1]], torch.full_like(scores, float("-inf")), scores)
filtering_forms_agree = (torch.equal(old_filtered, fixed_results["top_k_top_p"])
                         and torch.equal(nanogpt_top_k, fixed_results["top_k"])
                         and torch.equal(where_top_k, fixed_results["top_k"]))
kept_by_top_p = torch.isfinite(fixed_results["top_p"]).sum(-1)

# stopping criteria
criteria = StoppingCriteriaList([MaxLengthCriteria(max_length=8), EosTokenCriteria(EOS_ID)])
probe = torch.tensor([[1, 2, EOS_ID], [3, 4, 5]])
stopping_probe = criteria(probe, None).tolist()
stopping_probe_long = criteria(torch.zeros(2, 8, dtype=torch.long), None).tolist()

# greedy search, with and without the cache, and the same prompts one by one
generated = {}
greedy = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=12,
                        output_scores=True, pad_token_id=EOS_ID)
generated["greedy"] = greedy.sequences
greedy_no_cache = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=12,
                                 use_cache=False, pad_token_id=EOS_ID)
greedy_cache_agrees = torch.equal(greedy_no_cache.sequences, greedy.sequences)
prompt_len = input_ids.shape[1]
greedy_alone = []
for text in prompts:
    single = tokenizer([text])
    gen = model.generate(single["input_ids"], max_new_tokens=12, pad_token_id=EOS_ID)
    greedy_alone.append(gen.sequences[0, -12:].tolist())
greedy_padding_agrees = greedy_alone == greedy.sequences[:, -12:].tolist()
transition_scores = model.compute_transition_scores(greedy.sequences, greedy.scores,
                                                    normalize_logits=True)
fixed_results["transition_scores"] = transition_scores
with torch.no_grad():
    full_mask = torch.cat([attention_mask, torch.ones(4, 12, dtype=torch.long)], dim=1)
    full_positions = (full_mask.cumsum(-1) - 1).masked_fill(full_mask == 0, 1)
    full = model(greedy.sequences, attention_mask=full_mask, position_ids=full_positions)
    log_probs = F.log_softmax(full.logits[:, prompt_len - 1:-1], dim=-1)
    rescored = log_probs.gather(-1, greedy.sequences[:, prompt_len:, None]).squeeze(-1)
rescoring_difference = (rescored - transition_scores).abs().max().item()

# eos handling: a token greedy emits early in row 0 becomes the eos token
eos_token = int(greedy.sequences[0, prompt_len + 2])
with_eos = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=12,
                          eos_token_id=eos_token, pad_token_id=EOS_ID)
generated["greedy_eos"] = with_eos.sequences
eos_positions = []
for row in with_eos.sequences[:, prompt_len:].tolist():
    eos_positions.append(row.index(eos_token) if eos_token in row else None)
with_min_new = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=12,
                              eos_token_id=eos_token, pad_token_id=EOS_ID, min_new_tokens=6)
generated["greedy_min_new_tokens"] = with_min_new.sequences

# sampling with a seeded generator: temperature, top-k, top-p, repetition penalty
gen = torch.Generator().manual_seed(2024)
sampled = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=16,
                         do_sample=True, temperature=0.8, top_k=10, top_p=0.9,
                         repetition_penalty=1.3, generator=gen, pad_token_id=EOS_ID)
generated["sampled"] = sampled.sequences
gen = torch.Generator().manual_seed(2024)
resampled = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=16,
                           do_sample=True, temperature=0.8, top_k=10, top_p=0.9,
                           repetition_penalty=1.3, generator=gen, pad_token_id=EOS_ID)
sampling_reproducible = torch.equal(resampled.sequences, sampled.sequences)
gen = torch.Generator().manual_seed(7)
sampled_multi = model.generate(input_ids[:2], attention_mask=attention_mask[:2],
                               max_new_tokens=10, do_sample=True, top_k=0,
                               num_return_sequences=3, generator=gen, pad_token_id=EOS_ID)
generated["sampled_multi"] = sampled_multi.sequences

# nanoGPT's sampler (no cache, no padding) against generate's (cache) on one prompt
single = tokenizer(["the do"])["input_ids"].repeat(3, 1)
gen = torch.Generator().manual_seed(99)
nano = model.nanogpt_generate(single, 15, temperature=0.9, top_k=8, generator=gen)
gen = torch.Generator().manual_seed(99)
hf = model.generate(single, max_new_tokens=15, do_sample=True, temperature=0.9, top_k=8,
                    generator=gen, pad_token_id=EOS_ID)
generated["nanogpt_sampled"] = nano
nanogpt_agrees = torch.equal(nano, hf.sequences)

# beam search: the scorer with the cache against a plain beam search without it
beam = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=8,
                      num_beams=3, pad_token_id=EOS_ID)
generated["beam"] = beam.sequences
fixed_results["beam_scores"] = beam.sequences_scores
unpadded_beams = []
for text in prompts:
    ids = tokenizer([text])["input_ids"]
    plain = beam_search_no_cache(model, ids, num_beams=3, max_new_tokens=8)
    scored = model.generate(ids, max_new_tokens=8, num_beams=3, pad_token_id=EOS_ID)
    unpadded_beams.append((plain[0, -8:].tolist(), scored.sequences[0, -8:].tolist()))
beam_forms_agree = all(a == b for a, b in unpadded_beams)
beam_padding_agrees = [b for _, b in unpadded_beams] == beam.sequences[:, -8:].tolist()
one_beam = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=8,
                          num_beams=1, pad_token_id=EOS_ID)
beam_eos_token = int(beam.sequences[1, prompt_len + 3])
beam_eos = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=8,
                          num_beams=3, eos_token_id=beam_eos_token, pad_token_id=EOS_ID,
                          num_return_sequences=2, length_penalty=0.5)
generated["beam_eos"] = beam_eos.sequences
fixed_results["beam_eos_scores"] = beam_eos.sequences_scores
greedy_logprob_sum = transition_scores[:, :8].sum(-1)

# no repeated bigrams (greedy and beam), as summarisation pipelines ask
ngram_greedy = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=12,
                              no_repeat_ngram_size=2, pad_token_id=EOS_ID)
generated["greedy_no_repeat_ngram"] = ngram_greedy.sequences
ngram_beam = model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=8,
                            num_beams=3, no_repeat_ngram_size=2, pad_token_id=EOS_ID)
generated["beam_no_repeat_ngram"] = ngram_beam.sequences
repeated_bigrams = []
for row in ngram_greedy.sequences.tolist():
    seen_bigrams, repeats = set(), 0
    for t in range(1, len(row)):
        if t >= prompt_len and (row[t - 1], row[t]) in seen_bigrams:
            repeats += 1
        seen_bigrams.add((row[t - 1], row[t]))
    repeated_bigrams.append(repeats)

# the other sampling warpers: min-p, typical, epsilon and eta sampling
for name, kwargs in (("min_p", {"min_p": 0.1}), ("typical", {"typical_p": 0.8}),
                     ("epsilon", {"epsilon_cutoff": 0.02}), ("eta", {"eta_cutoff": 0.05})):
    gen = torch.Generator().manual_seed(31)
    generated[f"sampled_{name}"] = model.generate(
        input_ids, attention_mask=attention_mask, max_new_tokens=10, do_sample=True, top_k=0,
        generator=gen, pad_token_id=EOS_ID, **kwargs).sequences

# gpt-fast's sampler on the cache (exponential_ draws, int32 tokens)
gen = torch.Generator().manual_seed(11)
fast = gpt_fast_generate(model, single, 15, temperature=0.9, top_k=8, generator=gen)
generated["gpt_fast"] = fast
fast_is_long = fast.dtype == torch.long  # int64 prompt and int32 samples: cat promotes

# the sdpa model generates what the eager one does
sdpa_greedy = sdpa_model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=12,
                                  pad_token_id=EOS_ID)
sdpa_greedy_agrees = torch.equal(sdpa_greedy.sequences, greedy.sequences)
sdpa_beam = sdpa_model.generate(input_ids, attention_mask=attention_mask, max_new_tokens=8,
                                num_beams=3, pad_token_id=EOS_ID)
sdpa_beam_agrees = torch.equal(sdpa_beam.sequences, beam.sequences)

# a new special token: resize the tied embeddings (new rows near the mean of the old ones)
resized = copy.deepcopy(model)
torch.manual_seed(77)
resized.resize_token_embeddings(V + 1)
resized_tied = resized.lm_head.weight is resized.transformer.wte.weight
with torch.no_grad():
    wte = model.transformer.wte.weight.float()
    centered = wte - wte.mean(0)
    covariance_is_pd = bool(constraints.positive_definite.check(
        1e-9 * (centered.T @ centered / V)).all())
    resized_logits = resized(input_ids, attention_mask=attention_mask,
                             position_ids=position_ids).logits
fixed_results["resized_new_row"] = resized.transformer.wte.weight[V].detach()
fixed_results["resized_new_logit"] = resized_logits[real][:, V]
resize_old_logits_difference = (resized_logits[real][:, :V] - out.logits[real]).abs().max().item()
resized_shape = tuple(resized.lm_head.weight.shape)

# nanoGPT's model surgery: a shorter context; the buffers shrink and stay buffers
cropped = copy.deepcopy(model)
cropped.crop_block_size(16)
with torch.no_grad():
    cropped_logits = cropped(input_ids, attention_mask=attention_mask,
                             position_ids=position_ids).logits
crop_difference = (cropped_logits - out.logits).abs().max().item()
cropped_buffer_shapes = sorted({tuple(b.shape) for _, b in cropped.named_buffers()})
cropped_state_keys = sorted(cropped.state_dict().keys())
try:
    cropped.generate(input_ids, attention_mask=attention_mask, max_new_tokens=8,
                     pad_token_id=EOS_ID)
    crop_overflow_error = None
except IndexError as err:  # the position embedding has 16 rows
    crop_overflow_error = str(err)

# the state dict through torch.save / torch.load: the tied tensors still share storage
buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
buffer.seek(0)
loaded_state = torch.load(buffer, weights_only=True)
loaded_shares_storage = (loaded_state["lm_head.weight"].data_ptr()
                         == loaded_state["transformer.wte.weight"].data_ptr())
reloaded = GPT2LMHeadModel(config)
reloaded.load_state_dict(loaded_state)
reloaded.eval()
with torch.no_grad():
    reloaded_logits = reloaded(input_ids, attention_mask=attention_mask,
                               position_ids=position_ids).logits
reload_equal = torch.equal(reloaded_logits, out.logits)

# torch.compile (as nanoGPT's train.py does) on the loss and its gradients; "aot_eager" traces
# forward and backward without generating C++ (no compiler needed, seconds instead of a minute)
# (the compiled model returns its dataclass output, CausalLMOutputWithPast, as HF's do)
compiled_model = torch.compile(model, backend="aot_eager")
model.zero_grad(set_to_none=True)
compiled_out = compiled_model(input_ids, attention_mask=attention_mask,
                              position_ids=position_ids, labels=labels)
compiled_loss, compiled_logits = compiled_out.loss, compiled_out.logits
compiled_loss.backward()
compiled_grads = {name: p.grad.clone() for name, p in model.named_parameters()}
model.zero_grad(set_to_none=True)
compiled_loss_difference = (compiled_loss - fixed_results["loss"]).abs().item()
compiled_grad_difference = max((compiled_grads[n] - g).abs().max().item()
                               for n, g in fixed_results["grads"].items())
compiled_logits_difference = (compiled_logits.detach() - out.logits).abs().max().item()

# bfloat16 inference (from_pretrained(..., torch_dtype=torch.bfloat16)) and CPU autocast
bf16_model = copy.deepcopy(model).to(torch.bfloat16)
bf16_tied = bf16_model.lm_head.weight is bf16_model.transformer.wte.weight
bf16_tanh_model = GPT2LMHeadModel(config_with(config, activation_function="gelu_pytorch_tanh"))
bf16_tanh_model.load_state_dict(model.state_dict())
bf16_tanh_model.to(torch.bfloat16).eval()
bf16_generated = {}
for name, m in (("gelu_new", bf16_model), ("gelu_pytorch_tanh", bf16_tanh_model)):
    with torch.no_grad():
        logits = m(input_ids, attention_mask=attention_mask, position_ids=position_ids).logits
    bf16_results[f"logits_{name}"] = logits[real].float()
    bf16_generated[name] = m.generate(input_ids, attention_mask=attention_mask,
                                      max_new_tokens=12, pad_token_id=EOS_ID).sequences
    f32 = bf16_tanh_model if name == "gelu_pytorch_tanh" else model
    autocast_model = copy.deepcopy(model)
    if name == "gelu_pytorch_tanh":
        for block in autocast_model.transformer.h:
            block.mlp.act = get_activation("gelu_pytorch_tanh")
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        autocast_out = autocast_model(input_ids, attention_mask=attention_mask,
                                      position_ids=position_ids, labels=labels)
    autocast_out.loss.backward()
    bf16_results[f"autocast_loss_{name}"] = autocast_out.loss.detach()
    bf16_results[f"autocast_grads_{name}"] = {
        n: p.grad.clone() for n, p in autocast_model.named_parameters()}
autocast_dtypes_ok = (autocast_out.logits.dtype == torch.bfloat16
                      and autocast_out.loss.dtype == torch.float32)
bf16_logits_vs_float32 = (bf16_results["logits_gelu_new"] - out.logits[real]).abs().max().item()

# ------------------------------------------------------------------------------ training

# a stream of the lines in a seeded order, each ended by the eos token
torch.manual_seed(0)
data_gen = torch.Generator().manual_seed(0)
order = torch.randint(0, len(LINES), (400,), generator=data_gen).tolist()
stream = []
for i in order:
    stream += tokenizer.encode(LINES[i]) + [EOS_ID]
data = torch.tensor(stream, dtype=torch.long)
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]

block_size, batch_size, grad_accum_steps = 32, 16, 2
max_steps, warmup_steps, learning_rate, weight_decay = 100, 8, 3e-3, 0.1


def get_batch(split, generator):
    source = train_data if split == "train" else val_data
    ix = torch.randint(len(source) - block_size - 1, (batch_size,), generator=generator)
    xb = torch.stack([source[i:i + block_size] for i in ix])
    yb = torch.stack([source[i + 1:i + 1 + block_size] for i in ix])
    return xb, yb


def configure_optimizers(model, weight_decay, learning_rate, betas, device_type="cpu"):
    param_dict = {pn: p for pn, p in model.named_parameters() if p.requires_grad}
    # every 2D parameter (matmuls, embeddings) decays; biases and layernorms don't
    decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
    nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
    optim_groups = [
        {"params": decay_params, "weight_decay": weight_decay},
        {"params": nodecay_params, "weight_decay": 0.0},
    ]
    num_decay_params = sum(p.numel() for p in decay_params)
    num_nodecay_params = sum(p.numel() for p in nodecay_params)
    print(f"num decayed parameter tensors: {len(decay_params)}, with {num_decay_params:,} "
          f"parameters")
    print(f"num non-decayed parameter tensors: {len(nodecay_params)}, with "
          f"{num_nodecay_params:,} parameters")
    fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
    use_fused = fused_available and device_type == "cuda"
    extra_args = dict(fused=True) if use_fused else dict()
    optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)
    print(f"using fused AdamW: {use_fused}")
    return optimizer, fused_available


def get_cosine_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps,
                                    num_cycles=0.5, last_epoch=-1):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        progress = float(current_step - num_warmup_steps) / float(
            max(1, num_training_steps - num_warmup_steps))
        return max(0.0, 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress)))

    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda, last_epoch)


@torch.no_grad()
def estimate_loss(model, generator, eval_iters=4):
    out = {}
    model.eval()
    for split in ("train", "val"):
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            xb, yb = get_batch(split, generator)
            logits = model(xb).logits
            losses[k] = F.cross_entropy(logits.view(-1, logits.size(-1)), yb.view(-1)).item()
        out[split] = losses.mean().item()
    model.train()
    return out


train_config = GPT2Config(vocab_size=V, n_positions=block_size, n_embd=48, n_layer=2,
                          n_head=4, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                          bos_token_id=EOS_ID, eos_token_id=EOS_ID, pad_token_id=EOS_ID)
torch.manual_seed(42)
lm = GPT2LMHeadModel(train_config)
optimizer, fused_available = configure_optimizers(lm, weight_decay, learning_rate,
                                                  betas=(0.9, 0.95))
scheduler = get_cosine_schedule_with_warmup(optimizer, warmup_steps, max_steps)
batch_gen = torch.Generator().manual_seed(1)
eval_gen = torch.Generator().manual_seed(2)
losses, lrs, grad_norms = [], [], []
first_step_grads = None
lm.train()
for step in range(max_steps):
    loss_accum = 0.0
    for _micro_step in range(grad_accum_steps):
        xb, yb = get_batch("train", batch_gen)
        logits = lm(xb).logits
        loss = F.cross_entropy(logits.view(-1, V), yb.view(-1))
        loss = loss / grad_accum_steps
        loss_accum += loss.detach()
        loss.backward()
    if step == 0:
        first_step_grads = {n: p.grad.clone() for n, p in lm.named_parameters()}
    norm = nn.utils.clip_grad_norm_(lm.parameters(), 1.0)
    lrs.append(optimizer.param_groups[0]["lr"])
    optimizer.step()
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    losses.append(loss_accum.item())
    grad_norms.append(norm.item())
    if step % 20 == 0 or step == max_steps - 1:
        print(f"step {step:3d} | loss {losses[-1]:.4f} | lr {lrs[-1]:.2e} | norm {norm:.3f}")

fixed_results["first_step_grads"] = first_step_grads
final_estimate = estimate_loss(lm, eval_gen)
lm.eval()
still_tied = lm.lm_head.weight is lm.transformer.wte.weight
sample_prompt = tokenizer(["the ", "a b"])
trained_greedy = lm.generate(sample_prompt["input_ids"],
                             attention_mask=sample_prompt["attention_mask"], max_new_tokens=24,
                             eos_token_id=EOS_ID)
trained_text = tokenizer.batch_decode(trained_greedy.sequences, skip_special_tokens=True)
gen = torch.Generator().manual_seed(5)
trained_sampled = lm.generate(sample_prompt["input_ids"],
                              attention_mask=sample_prompt["attention_mask"],
                              max_new_tokens=24, do_sample=True, top_k=5, temperature=0.7,
                              eos_token_id=EOS_ID, generator=gen)
sampled_text = tokenizer.batch_decode(trained_sampled.sequences, skip_special_tokens=True)
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}, estimate {final_estimate}")
print("greedy:", trained_text)
print("sampled:", sampled_text)
