"""A tiny BERT pre-trained with masked-language-model and next-sentence objectives on a synthetic
corpus, written for these tests in the way HuggingFace's ``modeling_bert`` and minimal BERT
re-implementations (codertimo/BERT-pytorch style) commonly write torch code (modelled on their API
usage, not a copy):

- embeddings: word + position + token-type ``nn.Embedding`` (``padding_idx``), buffers registered
  with ``register_buffer("position_ids", torch.arange(...).expand((1, -1)), persistent=False)`` and
  ``torch.zeros(..., dtype=torch.long)``, sliced and ``expand``'ed, ``nn.LayerNorm(eps=1e-12)``,
  ``nn.Dropout``;
- ``get_extended_attention_mask``: ``mask[:, None, None, :]``, ``.to(dtype=...)``,
  ``(1.0 - mask) * torch.finfo(dtype).min``; the minimal-BERT ``masked_fill(mask == 0, -1e9)``
  form beside it;
- multi-head self-attention with ``transpose_for_scores`` (``x.size()[:-1] + (heads, size)``,
  ``view`` + ``permute``), ``torch.matmul`` with ``transpose(-1, -2)``, ``nn.functional.softmax``,
  ``permute(...).contiguous().view``; ``output_attentions`` returning the probabilities;
- GELU three ways: ``F.gelu``, ``F.gelu(approximate="tanh")`` and the written-out tanh formula
  (``torch.tanh``, ``torch.pow``, ``math.sqrt(2.0 / math.pi)``) in an ``ACT2FN`` dict;
- a pooler (first token, ``nn.Linear``, ``nn.Tanh``), a next-sentence head, an MLM head whose
  decoder weight is tied to the word embeddings with a separate ``nn.Parameter`` bias;
- ``_init_weights`` through ``self.apply`` (``normal_(mean=0.0, std=...)``, ``zero_()``,
  ``fill_(1.0)``, zeroed padding row);
- the 80/10/10 masking of ``DataCollatorForLanguageModeling``: ``torch.full(shape, 0.15)``,
  ``masked_fill_``, ``torch.bernoulli(...).bool()``, ``labels[~masked] = -100``,
  ``torch.randint(vocab, shape, dtype=torch.long)``; ``F.cross_entropy(ignore_index=-100)``;
- AdamW with weight-decay groups (no decay for ``bias`` and ``LayerNorm.weight``), a linear warm-up
  schedule through ``LambdaLR``, ``clip_grad_norm_``, ``model.train()`` / ``model.eval()``;
- fixed-weight results (masking drawn with torch's random numbers, embeddings, masks, attention
  probabilities, logits, losses, gradients, AdamW steps, the schedule) for the torch comparison.
"""
import math

import jitgrad as torch
import jitgrad.nn.functional as F
from jitgrad import nn
from jitgrad.optim.lr_scheduler import LambdaLR

torch.manual_seed(0)

PAD, CLS, SEP, MASK, UNK = 0, 1, 2, 3, 4
NUM_SPECIAL = 5
NUM_WORDS = 16
VOCAB_SIZE = NUM_SPECIAL + NUM_WORDS
MAX_LEN = 20


class BertConfig:
    def __init__(self, vocab_size=VOCAB_SIZE, hidden_size=32, num_hidden_layers=2,
                 num_attention_heads=4, intermediate_size=64, hidden_act="gelu",
                 hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                 max_position_embeddings=32, type_vocab_size=2, initializer_range=0.02,
                 layer_norm_eps=1e-12, pad_token_id=PAD):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.pad_token_id = pad_token_id


class NewGELUActivation(nn.Module):
    def forward(self, input):
        return 0.5 * input * (1.0 + torch.tanh(
            math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))


class PytorchGELUTanh(nn.Module):
    def forward(self, input):
        return F.gelu(input, approximate="tanh")


ACT2FN = {"gelu": F.gelu, "gelu_new": NewGELUActivation(), "gelu_pytorch_tanh": PytorchGELUTanh(),
          "relu": F.relu}


class BertEmbeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size,
                                            padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.register_buffer("position_ids",
                             torch.arange(config.max_position_embeddings).expand((1, -1)),
                             persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(),
                                                           dtype=torch.long), persistent=False)

    def forward(self, input_ids, token_type_ids=None, position_ids=None):
        input_shape = input_ids.size()
        seq_length = input_shape[1]
        if position_ids is None:
            position_ids = self.position_ids[:, :seq_length]
        if token_type_ids is None:
            buffered_token_type_ids = self.token_type_ids[:, :seq_length]
            token_type_ids = buffered_token_type_ids.expand(input_shape[0], seq_length)
        embeddings = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        embeddings = embeddings + self.position_embeddings(position_ids)
        embeddings = self.LayerNorm(embeddings)
        return self.dropout(embeddings)


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = config.hidden_size // config.num_attention_heads
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))
        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)
        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(new_context_layer_shape)
        return (context_layer, attention_probs) if output_attentions else (context_layer,)


class BertSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dropout(self.dense(hidden_states))
        return self.LayerNorm(hidden_states + input_tensor)


class BertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        self_outputs = self.self(hidden_states, attention_mask, output_attentions)
        attention_output = self.output(self_outputs[0], hidden_states)
        return (attention_output,) + self_outputs[1:]


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = ACT2FN[config.hidden_act]

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dropout(self.dense(hidden_states))
        return self.LayerNorm(hidden_states + input_tensor)


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        self_attention_outputs = self.attention(hidden_states, attention_mask, output_attentions)
        attention_output = self_attention_outputs[0]
        layer_output = self.output(self.intermediate(attention_output), attention_output)
        return (layer_output,) + self_attention_outputs[1:]


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask=None, output_attentions=False,
                output_hidden_states=False):
        all_hidden_states = () if output_hidden_states else None
        all_attentions = () if output_attentions else None
        for layer_module in self.layer:
            if output_hidden_states:
                all_hidden_states = all_hidden_states + (hidden_states,)
            layer_outputs = layer_module(hidden_states, attention_mask, output_attentions)
            hidden_states = layer_outputs[0]
            if output_attentions:
                all_attentions = all_attentions + (layer_outputs[1],)
        if output_hidden_states:
            all_hidden_states = all_hidden_states + (hidden_states,)
        return hidden_states, all_hidden_states, all_attentions


class BertPooler(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.activation = nn.Tanh()

    def forward(self, hidden_states):
        first_token_tensor = hidden_states[:, 0]
        return self.activation(self.dense(first_token_tensor))


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.transform_act_fn = ACT2FN[config.hidden_act]
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states):
        return self.LayerNorm(self.transform_act_fn(self.dense(hidden_states)))


class BertLMPredictionHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        # the output weights are the input embeddings, there is an output-only bias per token
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.decoder.bias = self.bias

    def forward(self, hidden_states):
        return self.decoder(self.transform(hidden_states))


class BertPreTrainingHeads(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)
        self.seq_relationship = nn.Linear(config.hidden_size, 2)

    def forward(self, sequence_output, pooled_output):
        return self.predictions(sequence_output), self.seq_relationship(pooled_output)


class BertForPreTraining(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.pooler = BertPooler(config)
        self.cls = BertPreTrainingHeads(config)
        self.apply(self._init_weights)
        self.tie_weights()

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
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
        elif isinstance(module, BertLMPredictionHead):
            module.bias.data.zero_()

    def tie_weights(self):
        self.cls.predictions.decoder.weight = self.embeddings.word_embeddings.weight

    def get_extended_attention_mask(self, attention_mask, dtype=torch.float32):
        extended_attention_mask = attention_mask[:, None, None, :]
        extended_attention_mask = extended_attention_mask.to(dtype=dtype)
        return (1.0 - extended_attention_mask) * torch.finfo(dtype).min

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None,
                next_sentence_label=None, output_attentions=False, output_hidden_states=False):
        if attention_mask is None:
            attention_mask = torch.ones(input_ids.shape)
        extended_attention_mask = self.get_extended_attention_mask(attention_mask)
        embedding_output = self.embeddings(input_ids, token_type_ids=token_type_ids)
        sequence_output, hidden_states, attentions = self.encoder(
            embedding_output, extended_attention_mask, output_attentions, output_hidden_states)
        pooled_output = self.pooler(sequence_output)
        prediction_scores, seq_relationship_score = self.cls(sequence_output, pooled_output)
        total_loss = None
        if labels is not None and next_sentence_label is not None:
            masked_lm_loss = F.cross_entropy(prediction_scores.view(-1, self.config.vocab_size),
                                             labels.view(-1), ignore_index=-100)
            next_sentence_loss = F.cross_entropy(seq_relationship_score.view(-1, 2),
                                                 next_sentence_label.view(-1))
            total_loss = masked_lm_loss + next_sentence_loss
        return {"loss": total_loss, "prediction_logits": prediction_scores,
                "seq_relationship_logits": seq_relationship_score,
                "hidden_states": hidden_states, "attentions": attentions}


# ------------------------------------------------------------------ the synthetic corpus


NUM_TEMPLATES = 12


def make_templates(generator):
    """Twelve sentences of 3-8 distinct words; sentences 2k and 2k + 1 follow each other."""
    lengths = torch.randint(3, 9, (NUM_TEMPLATES,), generator=generator).tolist()
    return [(torch.randperm(NUM_WORDS, generator=generator)[:n] + NUM_SPECIAL).tolist()
            for n in lengths]


def make_corpus(n, templates, generator):
    input_ids = torch.full((n, MAX_LEN), PAD, dtype=torch.long)
    token_type_ids = torch.zeros(n, MAX_LEN, dtype=torch.long)
    next_sentence_label = torch.zeros(n, dtype=torch.long)
    first = torch.randint(0, NUM_TEMPLATES, (n,), generator=generator)
    is_random = torch.rand(n, generator=generator) < 0.5
    offset = torch.randint(1, NUM_TEMPLATES - 1, (n,), generator=generator)
    second = torch.where(is_random, ((first ^ 1) + offset) % NUM_TEMPLATES, first ^ 1)
    next_sentence_label[is_random] = 1  # label 1: sentence B is a random sentence (NotNext)
    for i, (a, b) in enumerate(zip(first.tolist(), second.tolist())):
        sent_a, sent_b = templates[a], templates[b]
        tokens = [CLS] + sent_a + [SEP] + sent_b + [SEP]
        input_ids[i, :len(tokens)] = torch.tensor(tokens)
        token_type_ids[i, len(sent_a) + 2:len(tokens)] = 1
    attention_mask = (input_ids != PAD).long()
    return input_ids, token_type_ids, attention_mask, next_sentence_label


def mask_tokens(inputs, mlm_probability=0.15, vocab_size=VOCAB_SIZE):
    """DataCollatorForLanguageModeling.torch_mask_tokens: 80% [MASK], 10% random, 10% kept."""
    inputs = inputs.clone()
    labels = inputs.clone()
    probability_matrix = torch.full(labels.shape, mlm_probability)
    special_tokens_mask = inputs < NUM_SPECIAL
    probability_matrix.masked_fill_(special_tokens_mask, value=0.0)
    masked_indices = torch.bernoulli(probability_matrix).bool()
    labels[~masked_indices] = -100
    indices_replaced = torch.bernoulli(torch.full(labels.shape, 0.8)).bool() & masked_indices
    inputs[indices_replaced] = MASK
    indices_random = (torch.bernoulli(torch.full(labels.shape, 0.5)).bool() & masked_indices
                      & ~indices_replaced)
    random_words = torch.randint(vocab_size, labels.shape, dtype=torch.long)
    inputs[indices_random] = random_words[indices_random]
    return inputs, labels


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps):
    def lr_lambda(current_step):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step)
                   / float(max(1, num_training_steps - num_warmup_steps)))
    return LambdaLR(optimizer, lr_lambda)


def grouped_parameters(model, weight_decay):
    no_decay = ["bias", "LayerNorm.weight"]
    return [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": weight_decay},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
         "weight_decay": 0.0},
    ]


def mlm_accuracy(logits, labels):
    mask = labels != -100
    predictions = logits.argmax(dim=-1)
    return (predictions[mask] == labels[mask]).float().mean().item()


def minimal_attention(query, key, value, mask):
    """codertimo/BERT-pytorch's attention: masked_fill(mask == 0, -1e9) before the softmax."""
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(query.size(-1))
    scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = F.softmax(scores, dim=-1)
    return torch.matmul(p_attn, value), p_attn


# ------------------------------------------------------------------ fixed-weight results

config = BertConfig()
corpus_gen = torch.Generator().manual_seed(0)
templates = make_templates(corpus_gen)
input_ids, token_type_ids, attention_mask, next_sentence_label = make_corpus(512, templates,
                                                                             corpus_gen)
val_ids, val_types, val_mask, val_nsp = make_corpus(128, templates,
                                                    torch.Generator().manual_seed(1))

torch.manual_seed(42)
fixed_model = BertForPreTraining(config)
fixed_model.eval()
batch = slice(0, 4)
torch.manual_seed(7)
fixed_inputs, fixed_labels = mask_tokens(input_ids[batch])
fixed_results = {
    "inputs": fixed_inputs,
    "labels": fixed_labels,
    "extended_mask": fixed_model.get_extended_attention_mask(attention_mask[batch]),
}
with torch.no_grad():
    fixed_results["embeddings"] = fixed_model.embeddings(fixed_inputs, token_type_ids[batch])
    fixed_results["default_embeddings"] = fixed_model.embeddings(fixed_inputs)
x = torch.linspace(-4, 4, 17)
fixed_results["gelu"] = F.gelu(x)
fixed_results["gelu_tanh"] = F.gelu(x, approximate="tanh")
fixed_results["gelu_new"] = ACT2FN["gelu_new"](x)
out = fixed_model(fixed_inputs, attention_mask[batch], token_type_ids[batch], labels=fixed_labels,
                  next_sentence_label=next_sentence_label[batch], output_attentions=True,
                  output_hidden_states=True)
out["loss"].backward()
fixed_results["loss"] = out["loss"].item()
fixed_results["prediction_logits"] = out["prediction_logits"].detach()
fixed_results["seq_relationship_logits"] = out["seq_relationship_logits"].detach()
fixed_results["attentions"] = [a.detach() for a in out["attentions"]]
fixed_results["hidden_states"] = [h.detach() for h in out["hidden_states"]]
fixed_results["grads"] = {n: p.grad.clone() for n, p in fixed_model.named_parameters()}

# the minimal-BERT attention of the first layer gives the same context and probabilities
first = fixed_model.encoder.layer[0].attention.self
hidden = out["hidden_states"][0].detach()
q, k, v = (first.transpose_for_scores(lin(hidden)) for lin in (first.query, first.key, first.value))
minimal_mask = attention_mask[batch].unsqueeze(1).repeat(1, MAX_LEN, 1).unsqueeze(1)
with torch.no_grad():
    minimal_context, minimal_probs = minimal_attention(q, k, v, minimal_mask)
    hf_context, hf_probs = first(hidden, fixed_results["extended_mask"], output_attentions=True)
# HF's sdpa attention: the additive float mask, or a boolean mask, as ``attn_mask``
with torch.no_grad():
    fixed_results["sdpa_context"] = F.scaled_dot_product_attention(
        q, k, v, attn_mask=fixed_results["extended_mask"])
    fixed_results["sdpa_bool_context"] = F.scaled_dot_product_attention(
        q, k, v, attn_mask=attention_mask[batch][:, None, None, :].bool())
fixed_results["half_extended_mask"] = fixed_model.get_extended_attention_mask(
    attention_mask[batch], dtype=torch.float16)
fixed_results["minimal_context"] = minimal_context.permute(0, 2, 1, 3).reshape(4, MAX_LEN, -1)
fixed_results["minimal_probs"] = minimal_probs
fixed_results["hf_context"] = hf_context
fixed_results["hf_probs"] = hf_probs

# three AdamW steps (with dropout off) under the warm-up schedule: the first at lr 0
fixed_opt = torch.optim.AdamW(grouped_parameters(fixed_model, 0.01), lr=1e-3, eps=1e-6)
fixed_sched = get_linear_schedule_with_warmup(fixed_opt, num_warmup_steps=2, num_training_steps=10)
for _ in range(3):
    step_out = fixed_model(fixed_inputs, attention_mask[batch], token_type_ids[batch],
                           labels=fixed_labels, next_sentence_label=next_sentence_label[batch])
    fixed_opt.zero_grad()
    step_out["loss"].backward()
    fixed_results.setdefault("grad_norms", []).append(
        nn.utils.clip_grad_norm_(fixed_model.parameters(), 1.0).item())
    fixed_opt.step()
    fixed_sched.step()
fixed_results["after_steps"] = {n: p.detach().clone() for n, p in fixed_model.named_parameters()}
fixed_results["lrs"] = [g["lr"] for g in fixed_opt.param_groups]
fixed_results["exp_avg_sq"] = fixed_opt.state[fixed_model.cls.predictions.bias]["exp_avg_sq"]
state_dict_keys = list(fixed_model.state_dict().keys())
buffer_names = [n for n, _ in fixed_model.named_buffers()]
decay_names = [n for n, p in fixed_model.named_parameters()
               if any(p is q for q in fixed_opt.param_groups[0]["params"])]

# ------------------------------------------------------------------ pre-training

torch.manual_seed(0)
model = BertForPreTraining(config)
num_epochs, batch_size = 12, 32
num_training_steps = num_epochs * (len(input_ids) // batch_size)
optimizer = torch.optim.AdamW(grouped_parameters(model, 0.01), lr=5e-3, eps=1e-6)
scheduler = get_linear_schedule_with_warmup(optimizer, num_warmup_steps=10,
                                            num_training_steps=num_training_steps)


@torch.no_grad()
def evaluate(model):
    model.eval()
    torch.manual_seed(123)  # the same masks for every evaluation
    inputs, labels = mask_tokens(val_ids)
    output = model(inputs, val_mask, val_types, output_attentions=True)
    nsp_accuracy = (output["seq_relationship_logits"].argmax(-1) == val_nsp).float().mean().item()
    model.train()
    return mlm_accuracy(output["prediction_logits"], labels), nsp_accuracy, output["attentions"]


initial_mlm_accuracy, initial_nsp_accuracy, _ = evaluate(model)
losses, mlm_accuracies, lrs = [], [], []
model.train()
for _epoch in range(num_epochs):
    permutation = torch.randperm(len(input_ids))
    for start in range(0, len(input_ids), batch_size):
        idx = permutation[start:start + batch_size]
        inputs, labels = mask_tokens(input_ids[idx])
        output = model(inputs, attention_mask[idx], token_type_ids[idx], labels=labels,
                       next_sentence_label=next_sentence_label[idx])
        loss = output["loss"]
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        lrs.append(scheduler.get_last_lr()[0])
        mlm_accuracies.append(mlm_accuracy(output["prediction_logits"].detach(), labels))

final_mlm_accuracy, final_nsp_accuracy, val_attentions = evaluate(model)
# attention probabilities on padded keys are exactly zero, each row sums to one
pad_keys = (val_mask == 0)[:, None, None, :]
max_pad_attention = max(a.masked_select(pad_keys.expand_as(a)).abs().max().item()
                        for a in val_attentions)
row_sums = torch.stack([a.sum(-1) for a in val_attentions])

if __name__ == "__main__":
    print(f"loss {losses[0]:.4f} -> {sum(losses[-16:]) / 16:.4f}")
    print(f"MLM accuracy {initial_mlm_accuracy:.3f} -> {final_mlm_accuracy:.3f}, "
          f"NSP {initial_nsp_accuracy:.3f} -> {final_nsp_accuracy:.3f}")
    print("max attention on padding", max_pad_attention)
