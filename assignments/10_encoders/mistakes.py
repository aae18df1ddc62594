"""Realistic mistakes and correct alternatives for stage 10_encoders.

A ``decoder_block`` mistake is the reference with one slip (``slip(reference("encoders",
"DecoderBlock"), (old, new))``). Every other cell is written from a template with the right
code in every slot (a rewrite, not the reference's text); a mistake changes one slot, or is
the right cell with one slip (``slip``). Each declares the clauses (``clauses.md`` ids) it
breaks: every clause has a mistake that breaks it alone. The tests keep the questions apart:
the classifier runs on the grader's encoders, the decoder block with the grader's
cross-attention, Seq2Seq with the grader's encoder and decoder blocks, and greedy_decode and
train_seq2seq on stand-in models. The one coupling is by design: ``seq2seq_works`` trains
the student's ``Seq2Seq`` (its wiring, with the grader's parts) with the student's
``train_seq2seq``. So the ``seq2seq`` mistakes here are ones that still train (its own tests
find them), and the ``seq2seq_works`` mistakes are in the training loop.
"""

from autograder.authoring.catalogue import Variant, reference, slip

# ---------------------------------------------------------------- encoder

_ENCODER = """
class Encoder(nn.Module):
    def __init__(self, vocab_size, max_len, n_layer=2, n_head=4, n_embd=64, ff_dim=None, dropout=0.0, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.max_len = max_len
        hidden = ff_dim if ff_dim is not None else 4 * n_embd
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Embedding(max_len, n_embd)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            [TransformerBlock(n_embd, n_head, hidden, dropout=dropout, norm_first={norm_first}) for _ in range(n_layer)]
        )
        self.ln_f = LayerNorm(n_embd)

    def forward(self, idx):
        B, T = idx.shape
        {length_check}
        x = self.drop({embed})
        mask = {mask}
        for block in self.blocks:
            x = block(x, mask=mask)
        return {final}
"""

_ENCODER_RIGHT = {
    "norm_first": "True",
    "length_check": (
        'if T > self.max_len:\n            raise ValueError(f"{{T}} tokens, but max_len is {{self.max_len}}")'
    ),
    "embed": "self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device))",
    "mask": "padding_mask(idx, self.pad_id)",
    "final": "self.ln_f(x)",
}


def _encoder(**changes: str) -> str:
    return _ENCODER.format(**{**_ENCODER_RIGHT, **changes})


# ---------------------------------------------------------------- classifier

_CLASSIFIER = """
class SequenceClassifier(nn.Module):
    def __init__(self, encoder, num_classes, pooling="mean"):
        super().__init__()
        {check}
        self.encoder = encoder
        self.pooling = pooling
        self.head = nn.Linear(encoder.tok_emb.embedding_dim, num_classes)

    def forward(self, idx):
        h = self.encoder(idx)
        if self.pooling == "first":
            pooled = {first}
        else:
            real = {real}
            pooled = {mean}
        return self.head(pooled)
"""

_CLASSIFIER_RIGHT = {
    "check": 'if pooling not in ("mean", "first"):\n            raise ValueError(f"unknown pooling {pooling!r}")',
    "first": "h[:, 0]",
    "real": "(idx != self.encoder.pad_id).unsqueeze(-1).float()",
    "mean": "(h * real).sum(dim=1) / real.sum(dim=1)",
}


def _classifier(**changes: str) -> str:
    return _CLASSIFIER.format(**{**_CLASSIFIER_RIGHT, **changes})


# ---------------------------------------------------------------- mlm_mask

_MLM = """
def mlm_mask_tokens(ids, mask_id, vocab_size, special_ids=(), prob=0.15, generator=None):
    if not 0 <= prob <= 1:
        raise ValueError(f"prob must be in [0, 1], got {{prob}}")
    device = generator.device if generator is not None else ids.device
    {inputs}
    special = torch.isin(ids, torch.tensor(list(special_ids), dtype=ids.dtype, device=ids.device))
    chosen = (torch.rand(ids.shape, {draw}device=device).to(ids.device) < prob){not_special}
    labels = {labels}
    u = torch.rand(ids.shape, generator=generator, device=device).to(ids.device)
    {split}
    random_ids = torch.randint({random_range}, ids.shape, generator=generator, device=device).to(ids.device)
    inputs[to_mask] = mask_id
    inputs[to_random] = random_ids[to_random]
    return inputs, labels
"""

_MLM_RIGHT = {
    "inputs": "inputs = ids.clone()",
    "draw": "generator=generator, ",
    "not_special": " & ~special",
    "labels": "ids.masked_fill(~chosen, -100)",
    "split": "to_mask = chosen & (u < 0.8)\n    to_random = chosen & (u >= 0.8) & (u < 0.9)",
    "random_range": "vocab_size",
}


def _mlm(**changes: str) -> str:
    return _MLM.format(**{**_MLM_RIGHT, **changes})


# ---------------------------------------------------------------- cross_attention

_CROSS = """
class CrossAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, dropout=0.0):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"{{num_heads}} heads do not divide {{embed_dim}}")
        self.num_heads = num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, memory, memory_mask=None):
        q = split_heads(self.q_proj(x), self.num_heads)
        k = split_heads(self.k_proj({keys_from}), self.num_heads)
        v = split_heads(self.v_proj({values_from}), self.num_heads)
        scores = q @ k.transpose(-2, -1) / math.sqrt({width})
        if memory_mask is not None:
            {masking}
        weights = F.softmax(scores, dim={softmax_dim})
        return self.drop({output})
"""

_CROSS_RIGHT = {
    "keys_from": "memory",
    "values_from": "memory",
    "width": "q.size(-1)",
    "masking": 'scores = scores.masked_fill(memory_mask.unsqueeze(1), float("-inf"))',
    "softmax_dim": "-1",
    "output": "self.out_proj(merge_heads(self.drop(weights) @ v))",
}


def _cross(**changes: str) -> str:
    return _CROSS.format(**{**_CROSS_RIGHT, **changes})


# ---------------------------------------------------------------- decoder_block


def _decoder(*changes: tuple[str, str]) -> str:
    """The reference ``DecoderBlock`` with each ``(old, new)`` of ``changes`` made."""
    return slip(reference("encoders", "DecoderBlock"), *changes)


# ---------------------------------------------------------------- seq2seq

_SEQ2SEQ = """
class Seq2Seq(nn.Module):
    def __init__(self, src_vocab, tgt_vocab, max_len, n_layer=2, n_head=4, n_embd=64, pad_id=0):
        super().__init__()
        self.pad_id = pad_id
        self.encoder = Encoder(src_vocab, max_len, n_layer=n_layer, n_head=n_head, n_embd=n_embd, pad_id=pad_id)
        self.tgt_emb = nn.Embedding(tgt_vocab, n_embd)
        self.tgt_pos_emb = nn.Embedding(max_len, n_embd)
        self.decoder_blocks = nn.ModuleList([DecoderBlock(n_embd, n_head, 4 * n_embd) for _ in range(n_layer)])
        self.ln_f = LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, tgt_vocab)

    def forward(self, src, tgt_in):
        T = tgt_in.size(1)
        memory = self.encoder(src)
        x = self.tgt_emb(tgt_in) + {target_positions}(torch.arange(T, device=tgt_in.device))
        for block in self.decoder_blocks:
            x = block(x, memory, self_mask={self_mask}, memory_mask={memory_mask})
        return self.head(self.ln_f(x))
"""

_SEQ2SEQ_RIGHT = {
    "target_positions": "self.tgt_pos_emb",
    "self_mask": "causal_mask(T, device=tgt_in.device)",
    "memory_mask": "padding_mask(src, self.pad_id)",
}


def _seq2seq(**changes: str) -> str:
    return _SEQ2SEQ.format(**{**_SEQ2SEQ_RIGHT, **changes})


_GREEDY = """
def greedy_decode(model, src, start_id, end_id, max_len):
    if max_len < 0:
        raise ValueError(f"max_len must be >= 0, got {{max_len}}")
    out = torch.full((src.size(0), 1), start_id, dtype=torch.long, device=src.device)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for _ in range(max_len):
            next_id = model(src, out)[:, -1].argmax(dim=-1)
            {finished}
            out = torch.cat([out, next_id[:, None]], dim=1)
            done |= next_id == end_id
            {stop}
    model.train(was_training)
    return {result}
"""

_GREEDY_RIGHT = {
    "finished": "next_id = next_id.masked_fill(done, model.pad_id)",
    "stop": "if done.all():\n                break",
    "result": "out[:, 1:]",
}


def _greedy(**changes: str) -> str:
    return _GREEDY.format(**{**_GREEDY_RIGHT, **changes})


# ---------------------------------------------------------------- seq2seq_works

_TRAIN = """
def train_seq2seq(model, src, tgt, *, steps, batch_size, lr, start_id, generator=None, grad_clip=1.0):
    if steps < 1 or batch_size < 1 or lr <= 0:
        raise ValueError("steps, batch_size and lr must be positive")
    if src.size(0) != tgt.size(0):
        raise ValueError("src and tgt need the same number of rows")
    device = next(model.parameters()).device
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        {rows}
        source, target = {batch}
        tgt_in = {decoder_input}
        labels = {labels}
        logits = model(source, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100)
        {update}
        losses.append(loss.item())
    return losses
"""

_TRAIN_RIGHT = {
    "rows": "rows = torch.randint(src.size(0), (batch_size,), generator=generator)",
    "batch": "src[rows].to(device), tgt[rows].to(device)",
    "decoder_input": "shift_right(target, start_id)",
    "labels": "target.masked_fill(target == model.pad_id, -100)",
    "update": (
        "optimizer.zero_grad()\n"
        "        loss.backward()\n"
        "        if grad_clip is not None:\n"
        "            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)\n"
        "        optimizer.step()"
    ),
}


def _train(**changes: str) -> str:
    return _TRAIN.format(**{**_TRAIN_RIGHT, **changes})


MISTAKES = [
    # encoder
    Variant(
        "encoder",
        "a causal mask left in the encoder",
        {"Encoder": _encoder(mask="causal_mask(T, device=idx.device) | padding_mask(idx, self.pad_id)")},
        clauses=("no-causal",),
    ),
    Variant("encoder", "no padding mask", {"Encoder": _encoder(mask="None")}, clauses=("pad-blocked",)),
    Variant(
        "encoder",
        "the final LayerNorm named norm, not ln_f",
        {
            "Encoder": slip(
                _encoder(), ("self.ln_f = LayerNorm", "self.norm = LayerNorm"), ("self.ln_f(x)", "self.norm(x)")
            )
        },
        clauses=("parts",),
    ),
    Variant("encoder", "no final LayerNorm", {"Encoder": _encoder(final="x")}, clauses=("forward",)),
    Variant(
        "encoder",
        "F.dropout on the embeddings, active in eval mode too",
        {
            "Encoder": _encoder(
                embed="F.dropout(self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device)), self.drop.p)"
            )
        },
        clauses=("dropout",),
        hidden_only="no public test sets dropout: the public encoders all have dropout=0.0",
    ),
    Variant(
        "encoder",
        "pad_id taken as 0 whatever the argument",
        {"Encoder": _encoder(mask="padding_mask(idx, 0)")},
        clauses=("pad-id",),
    ),
    Variant(
        "encoder", "no position embeddings", {"Encoder": _encoder(embed="self.tok_emb(idx)")}, clauses=("forward",)
    ),
    Variant("encoder", "no ValueError past max_len", {"Encoder": _encoder(length_check="pass")}, clauses=("max-len",)),
    Variant(
        "encoder",
        "one block by default",
        {"Encoder": slip(_encoder(), ("n_layer=2", "n_layer=1"))},
        clauses=("defaults",),
        hidden_only="the public tests give every encoder its n_layer, n_head and n_embd",
    ),
    Variant(
        "encoder",
        "ff_dim=None taken as n_embd",
        {"Encoder": slip(_encoder(), ("else 4 * n_embd", "else n_embd"))},
        clauses=("ff-dim",),
    ),
    # classifier
    Variant(
        "classifier",
        "mean over every position, padding included",
        {"SequenceClassifier": _classifier(mean="h.mean(dim=1)")},
        hints=("padding averaged in",),
        clauses=("mean",),
    ),
    Variant(
        "classifier",
        "padding zeroed but the sum divided by T",
        {"SequenceClassifier": _classifier(mean="(h * real).sum(dim=1) / h.size(1)")},
        hints=("divided by T",),
        clauses=("mean",),
    ),
    Variant(
        "classifier",
        "the real positions summed, not averaged",
        {"SequenceClassifier": _classifier(mean="(h * real).sum(dim=1)")},
        hints=("summed, not averaged",),
        clauses=("mean",),
    ),
    Variant(
        "classifier",
        "first pooling takes the last position",
        {"SequenceClassifier": _classifier(first="h[:, -1]")},
        clauses=("first",),
    ),
    Variant(
        "classifier",
        "no ValueError for an unknown pooling",
        {"SequenceClassifier": _classifier(check="pass")},
        clauses=("pooling-error",),
    ),
    Variant(
        "classifier",
        "padding recognised as token 0, not encoder.pad_id",
        {"SequenceClassifier": _classifier(real="(idx != 0).unsqueeze(-1).float()")},
        clauses=("mean",),
    ),
    Variant(
        "classifier",
        "a head without a bias",
        {
            "SequenceClassifier": slip(
                _classifier(), ("embedding_dim, num_classes)", "embedding_dim, num_classes, bias=False)")
            )
        },
        clauses=("head",),
    ),
    Variant(
        "classifier",
        "probabilities (a softmax) instead of logits",
        {
            "SequenceClassifier": slip(
                _classifier(), ("return self.head(pooled)", "return self.head(pooled).softmax(dim=-1)")
            )
        },
        clauses=("logits",),
    ),
    Variant(
        "classifier",
        "first pooling by default",
        {"SequenceClassifier": slip(_classifier(), ('num_classes, pooling="mean"', 'num_classes, pooling="first"'))},
        clauses=("pooling-default",),
    ),
    # mlm_mask
    Variant(
        "mlm_mask",
        "80/10/10 applied to every position, not only the chosen ones",
        {"mlm_mask_tokens": _mlm(split="to_mask = u < 0.8\n    to_random = (u >= 0.8) & (u < 0.9)")},
        clauses=("labels", "special", "prob"),
    ),
    Variant(
        "mlm_mask",
        "labels read from the corrupted inputs",
        {
            "mlm_mask_tokens": slip(
                _mlm(), ("return inputs, labels", "return inputs, inputs.masked_fill(~chosen, -100)")
            )
        },
        clauses=("labels",),
    ),
    Variant(
        "mlm_mask", "ids modified in place", {"mlm_mask_tokens": _mlm(inputs="inputs = ids")}, clauses=("ids-kept",)
    ),
    Variant(
        "mlm_mask", "special tokens may be chosen", {"mlm_mask_tokens": _mlm(not_special="")}, clauses=("special",)
    ),
    Variant(
        "mlm_mask",
        "the choice drawn from the global random state",
        {"mlm_mask_tokens": _mlm(draw="")},
        clauses=("generator",),
    ),
    Variant(
        "mlm_mask",
        "random ids from 0 to vocab_size - 2",
        {"mlm_mask_tokens": _mlm(random_range="vocab_size - 1")},
        clauses=("uniform",),
    ),
    Variant(
        "mlm_mask",
        "positions chosen with probability 0.15 whatever prob",
        {
            "mlm_mask_tokens": slip(
                _mlm(), ("device=device).to(ids.device) < prob)", "device=device).to(ids.device) < 0.15)")
            )
        },
        clauses=("prob",),
    ),
    Variant(
        "mlm_mask",
        "the random 10% drawn from the 20% left after the 80%",
        {
            "mlm_mask_tokens": _mlm(
                split=(
                    "to_mask = chosen & (u < 0.8)\n"
                    "    to_random = chosen & ~to_mask & "
                    "(torch.rand(ids.shape, generator=generator, device=device).to(ids.device) < 0.1)"
                )
            )
        },
        hints=("random 10% drawn from the remaining 20%",),
        clauses=("split",),
    ),
    Variant(
        "mlm_mask",
        "no ValueError for prob outside [0, 1]",
        {
            "mlm_mask_tokens": slip(
                _mlm(),
                ('    if not 0 <= prob <= 1:\n        raise ValueError(f"prob must be in [0, 1], got {prob}")\n', ""),
            )
        },
        clauses=("prob-error",),
        hidden_only="no public test passes a prob outside [0, 1]",
    ),
    Variant(
        "mlm_mask",
        "labels filled with -100.0, a float",
        {"mlm_mask_tokens": _mlm(labels="torch.where(chosen, ids, torch.full(ids.shape, -100.0))")},
        clauses=("dtype",),
        hidden_only="the public tests compare values whatever the dtype; the dtype is a hidden test's",
    ),
    # cross_attention
    Variant(
        "cross_attention",
        "keys and values from the decoder (self-attention)",
        {"CrossAttention": _cross(keys_from="x", values_from="x")},
        clauses=("forward",),
    ),
    Variant(
        "cross_attention",
        "memory_mask ignored",
        {"CrossAttention": _cross(masking="pass")},
        clauses=("mask-padding", "mask-per-query"),
    ),
    Variant(
        "cross_attention",
        "a (B, T_q, T_k) memory_mask unsqueezed on the wrong axis",
        {"CrossAttention": _cross(masking='scores = scores.masked_fill(memory_mask.unsqueeze(2), float("-inf"))')},
        clauses=("mask-per-query",),
    ),
    Variant(
        "cross_attention",
        "scores divided by sqrt(C), not sqrt(D)",
        {"CrossAttention": _cross(width="x.size(-1)")},
        clauses=("forward",),
    ),
    Variant(
        "cross_attention",
        "softmax over the queries",
        {"CrossAttention": _cross(softmax_dim="-2")},
        clauses=("forward",),
    ),
    Variant(
        "cross_attention",
        "F.dropout on the attention weights, active in eval mode too",
        {"CrossAttention": _cross(output="self.out_proj(merge_heads(F.dropout(weights, self.drop.p) @ v))")},
        clauses=("dropout",),
        hidden_only="no public test sets dropout: the public modules all have dropout=0.0",
    ),
    Variant(
        "cross_attention",
        "no ValueError when num_heads does not divide embed_dim",
        {"CrossAttention": slip(_cross(), ("embed_dim % num_heads != 0", "embed_dim < num_heads"))},
        clauses=("heads-error",),
    ),
    Variant(
        "cross_attention",
        "dropout 0.1 by default",
        {"CrossAttention": slip(_cross(), ("num_heads, dropout=0.0)", "num_heads, dropout=0.1)"))},
        clauses=("projections",),
        hidden_only="the public tests compare values in eval mode, where dropout does nothing",
    ),
    Variant(
        "cross_attention",
        "memory_mask viewed as (B, 1, T_q, T_k): the (B, 1, T_k) padding mask breaks",
        {
            "CrossAttention": _cross(
                masking='scores = scores.masked_fill(memory_mask.view(x.size(0), 1, x.size(1), -1), float("-inf"))'
            )
        },
        clauses=("mask-padding",),
    ),
    Variant(
        "cross_attention",
        "memory_mask without a default",
        {"CrossAttention": slip(_cross(), ("memory, memory_mask=None)", "memory, memory_mask)"))},
        clauses=("mask-none",),
    ),
    # decoder_block
    Variant(
        "decoder_block",
        "self-attention without the causal mask",
        {
            "DecoderBlock": _decoder(
                ("self.ln1(x), mask=self_mask)", "self.ln1(x), mask=None)"),
                ("self.self_attn(x, mask=self_mask)", "self.self_attn(x, mask=None)"),
            )
        },
        clauses=("self-mask",),
    ),
    Variant(
        "decoder_block",
        "the memory normalised with ln2 too",
        {"DecoderBlock": _decoder(("self.ln2(x), memory,", "self.ln2(x), self.ln2(memory),"))},
        hints=("memory normalised with ln2",),
        clauses=("memory-raw",),
    ),
    Variant(
        "decoder_block",
        "no residual around the cross-attention",
        {"DecoderBlock": _decoder(("x = x + self.cross_attn(", "x = self.cross_attn("))},
        clauses=("pre-norm",),
    ),
    Variant(
        "decoder_block",
        "memory_mask not passed on",
        {
            "DecoderBlock": _decoder(
                ("self.ln2(x), memory, memory_mask=memory_mask)", "self.ln2(x), memory, memory_mask=None)"),
                ("self.cross_attn(x, memory, memory_mask=memory_mask)", "self.cross_attn(x, memory, memory_mask=None)"),
            )
        },
        clauses=("memory-mask",),
    ),
    Variant(
        "decoder_block",
        "the feed-forward always GELU",
        {"DecoderBlock": _decoder(("ff_dim, activation=activation,", 'ff_dim, activation="gelu",'))},
        clauses=("activation",),
    ),
    Variant(
        "decoder_block",
        "always pre-norm",
        {"DecoderBlock": _decoder(("self.norm_first = norm_first", "self.norm_first = True"))},
        clauses=("post-norm",),
    ),
    Variant(
        "decoder_block",
        "dropout not passed on to the sublayers",
        {
            "DecoderBlock": _decoder(
                (
                    "MultiHeadAttention(embed_dim, num_heads, dropout=dropout)",
                    "MultiHeadAttention(embed_dim, num_heads)",
                ),
                ("CrossAttention(embed_dim, num_heads, dropout=dropout)", "CrossAttention(embed_dim, num_heads)"),
                ("activation=activation, dropout=dropout)", "activation=activation)"),
            )
        },
        clauses=("dropout",),
        hidden_only="no public test sets dropout: the public blocks all have dropout=0.0",
    ),
    Variant(
        "decoder_block",
        "the feed-forward named mlp, not ff",
        {
            "DecoderBlock": _decoder(
                ("self.ff = FeedForward", "self.mlp = FeedForward"),
                ("self.ff(self.ln3(x))", "self.mlp(self.ln3(x))"),
                ("self.ln3(x + self.ff(x))", "self.ln3(x + self.mlp(x))"),
            )
        },
        clauses=("parts",),
    ),
    Variant(
        "decoder_block",
        "ReLU by default",
        {"DecoderBlock": _decoder(('activation: str = "gelu"', 'activation: str = "relu"'))},
        clauses=("defaults",),
        hidden_only="the public tests give every block its activation and norm_first",
    ),
    # seq2seq
    Variant(
        "seq2seq", "no causal self-mask in the decoder", {"Seq2Seq": _seq2seq(self_mask="None")}, clauses=("causal",)
    ),
    Variant(
        "seq2seq",
        "source padding not blocked in cross-attention",
        {"Seq2Seq": _seq2seq(memory_mask="None")},
        clauses=("src-padding",),
    ),
    Variant(
        "seq2seq",
        "target positions from the encoder's table",
        {"Seq2Seq": _seq2seq(target_positions="self.encoder.pos_emb")},
        clauses=("forward",),
    ),
    Variant(
        "seq2seq",
        "greedy decoding leaves the model in eval mode",
        {"greedy_decode": slip(_greedy(), ("    model.train(was_training)\n", ""))},
        clauses=("greedy-mode",),
    ),
    Variant(
        "seq2seq",
        "greedy decoding puts the model in training mode after, whatever the caller's mode (model.train())",
        {"greedy_decode": slip(_greedy(), ("    model.train(was_training)\n", "    model.train()\n"))},
        clauses=("greedy-mode",),
    ),
    Variant(
        "seq2seq",
        "greedy decoding returns the start token too",
        {"greedy_decode": _greedy(result="out")},
        hints=("start token returned",),
        clauses=("greedy-output",),
    ),
    Variant(
        "seq2seq",
        "greedy decoding replaces the end tokens by padding in the result",
        {"greedy_decode": _greedy(result="out[:, 1:].masked_fill(out[:, 1:] == end_id, model.pad_id)")},
        hints=("end token dropped",),
        clauses=("greedy-output",),
    ),
    Variant(
        "seq2seq",
        "greedy decoding always runs max_len steps",
        {"greedy_decode": _greedy(stop="pass")},
        clauses=("greedy-stop",),
    ),
    Variant(
        "seq2seq",
        "finished rows padded with 0, not model.pad_id",
        {"greedy_decode": _greedy(finished="next_id = next_id.masked_fill(done, 0)")},
        clauses=("greedy-output",),
    ),
    Variant(
        "seq2seq",
        "greedy decoding takes max_len + 1 steps",
        {"greedy_decode": slip(_greedy(), ("range(max_len)", "range(max_len + 1)"))},
        clauses=("greedy-max-len",),
    ),
    Variant(
        "seq2seq",
        "greedy decoding starts from token 0, not start_id",
        {
            "greedy_decode": slip(
                _greedy(),
                (
                    "torch.full((src.size(0), 1), start_id, dtype=torch.long, device=src.device)",
                    "torch.zeros((src.size(0), 1), dtype=torch.long, device=src.device)",
                ),
            )
        },
        clauses=("greedy-feedback",),
    ),
    Variant(
        "seq2seq",
        "no ValueError for a negative max_len",
        {"greedy_decode": slip(_greedy(), ("if max_len < 0:", "if max_len is None:"))},
        clauses=("greedy-error",),
        hidden_only="no public test passes a negative max_len",
    ),
    Variant(
        "seq2seq",
        "n_head not passed to the encoder",
        {
            "Seq2Seq": slip(
                _seq2seq(),
                (
                    "n_layer=n_layer, n_head=n_head, n_embd=n_embd, pad_id=pad_id)",
                    "n_layer=n_layer, n_embd=n_embd, pad_id=pad_id)",
                ),
            )
        },
        clauses=("encoder-decoder",),
        hidden_only="the public tests replace the encoder by a stand-in and do not look at its arguments",
    ),
    Variant(
        "seq2seq",
        "the final LayerNorm named norm, not ln_f",
        {
            "Seq2Seq": slip(
                _seq2seq(),
                ("self.ln_f = LayerNorm", "self.norm = LayerNorm"),
                ("self.head(self.ln_f(x))", "self.head(self.norm(x))"),
            )
        },
        clauses=("parts",),
    ),
    Variant(
        "seq2seq",
        "width 32 by default",
        {"Seq2Seq": slip(_seq2seq(), ("n_embd=64, pad_id=0", "n_embd=32, pad_id=0"))},
        clauses=("defaults",),
        hidden_only="the public tests give every model its n_layer, n_head and n_embd",
    ),
    # seq2seq_works
    Variant(
        "seq2seq_works",
        "the decoder reads the targets unshifted",
        {"train_seq2seq": _train(decoder_input="target")},
        clauses=("teacher-forcing",),
    ),
    Variant(
        "seq2seq_works",
        "Adam instead of AdamW",
        {"train_seq2seq": slip(_train(), ("torch.optim.AdamW(", "torch.optim.Adam("))},
        clauses=("adamw",),
        hidden_only="no public test looks at the optimiser",
    ),
    Variant(
        "seq2seq_works", "padding scored in the loss", {"train_seq2seq": _train(labels="target")}, clauses=("loss",)
    ),
    Variant(
        "seq2seq_works",
        "gradients zeroed between backward and step",
        {"train_seq2seq": _train(update=("loss.backward()\n        optimizer.zero_grad()\n        optimizer.step()"))},
        clauses=("zero-grad",),
    ),
    Variant(
        "seq2seq_works",
        "sources and targets drawn with different rows",
        {
            "train_seq2seq": _train(
                batch=(
                    "src[rows].to(device), "
                    "tgt[torch.randint(src.size(0), (batch_size,), generator=generator)].to(device)"
                )
            )
        },
        clauses=("teacher-forcing",),
    ),
    Variant(
        "seq2seq_works",
        "rows drawn from the global random state",
        {"train_seq2seq": _train(rows="rows = torch.randint(src.size(0), (batch_size,))")},
        clauses=("generator",),
    ),
    Variant(
        "seq2seq_works",
        "no gradient clipping",
        {"train_seq2seq": _train(update=("optimizer.zero_grad()\n        loss.backward()\n        optimizer.step()"))},
        hidden_only="AdamW's step hides the gradient's scale, so clipping shows only in the gradients at the optimiser's step: "
        "the hidden tests record them by wrapping the optimiser's step, which a public test in the student's notebook does not do",
        clauses=("clip",),
    ),
    Variant(
        "seq2seq_works",
        "losses kept as tensors",
        {"train_seq2seq": slip(_train(), ("losses.append(loss.item())", "losses.append(loss.detach())"))},
        clauses=("losses-per-step",),
    ),
    Variant(
        "seq2seq_works",
        "the model left in the mode it came in",
        {"train_seq2seq": slip(_train(), ("    model.train()\n", ""))},
        clauses=("train-mode",),
        hidden_only="the public tests hand over models in training mode",
    ),
    Variant(
        "seq2seq_works",
        "rows drawn from 0 to N - 2",
        {"train_seq2seq": _train(rows="rows = torch.randint(src.size(0) - 1, (batch_size,), generator=generator)")},
        clauses=("uniform-rows",),
        hidden_only="only 60 steps over a small data set show a row never drawn; the public tests take a few steps",
    ),
    Variant(
        "seq2seq_works",
        "no ValueError for a non-positive lr",
        {"train_seq2seq": slip(_train(), ("batch_size < 1 or lr <= 0:", "batch_size < 1:"))},
        clauses=("arg-errors",),
        hidden_only="no public test passes bad arguments",
    ),
]

ALTERNATIVES = [
    Variant(
        "encoder",
        "an inline key mask, positions expanded, GPT-2 initialisation",
        {
            "Encoder": """
        class Encoder(nn.Module):
            def __init__(self, vocab_size, max_len, n_layer=2, n_head=4, n_embd=64, ff_dim=None, dropout=0.0, pad_id=0):
                super().__init__()
                self.pad_id, self.max_len = pad_id, max_len
                self.tok_emb = nn.Embedding(vocab_size, n_embd)
                self.pos_emb = nn.Embedding(max_len, n_embd)
                self.dropout = nn.Dropout(dropout)
                width = ff_dim or 4 * n_embd
                self.blocks = nn.ModuleList()
                for _ in range(n_layer):
                    self.blocks.append(TransformerBlock(n_embd, n_head, width, dropout, "gelu", True))
                self.ln_f = LayerNorm(n_embd)
                for module in self.modules():
                    if isinstance(module, (nn.Linear, nn.Embedding)):
                        nn.init.normal_(module.weight, std=0.02)

            def forward(self, idx):
                n, t = idx.shape
                if t > self.max_len:
                    raise ValueError("the sequence is longer than max_len")
                positions = torch.arange(t, device=idx.device).unsqueeze(0).expand(n, t)
                h = self.dropout(self.tok_emb(idx) + self.pos_emb(positions))
                keys_blocked = (idx == self.pad_id)[:, None, :]
                for block in self.blocks:
                    h = block(h, keys_blocked)
                return self.ln_f(h)
    """
        },
    ),
    Variant(
        "encoder",
        "stage 07's initialisation (normal 0.02, biases at zero), positions sliced from pos_emb.weight",
        {
            "Encoder": """
        class Encoder(nn.Module):
            def __init__(self, vocab_size, max_len, n_layer=2, n_head=4, n_embd=64, ff_dim=None, dropout=0.0, pad_id=0):
                super().__init__()
                if ff_dim is None:
                    ff_dim = 4 * n_embd
                self.pad_id = pad_id
                self.tok_emb = nn.Embedding(vocab_size, n_embd)
                self.pos_emb = nn.Embedding(max_len, n_embd)
                self.drop = nn.Dropout(dropout)
                self.blocks = nn.ModuleList(
                    TransformerBlock(n_embd, n_head, ff_dim, dropout=dropout, activation="gelu", norm_first=True)
                    for _ in range(n_layer)
                )
                self.ln_f = LayerNorm(n_embd)
                self.apply(self._init_weights)

            @staticmethod
            def _init_weights(module):
                if isinstance(module, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(module.weight, mean=0.0, std=0.02)
                if isinstance(module, nn.Linear) and module.bias is not None:
                    nn.init.zeros_(module.bias)

            def forward(self, idx):
                T = idx.size(1)
                if T > self.pos_emb.num_embeddings:
                    raise ValueError(f"{T} tokens do not fit in {self.pos_emb.num_embeddings} positions")
                x = self.drop(self.tok_emb(idx) + self.pos_emb.weight[:T])
                mask = padding_mask(idx, self.pad_id)
                for block in self.blocks:
                    x = block(x, mask=mask)
                return self.ln_f(x)
    """
        },
    ),
    Variant(
        "classifier",
        "the head on every position, then a masked average of the logits",
        {
            "SequenceClassifier": """
        class SequenceClassifier(nn.Module):
            def __init__(self, encoder, num_classes, pooling="mean"):
                super().__init__()
                if pooling == "mean" or pooling == "first":
                    self.pooling = pooling
                else:
                    raise ValueError("pooling must be 'mean' or 'first'")
                self.encoder = encoder
                self.head = nn.Linear(encoder.tok_emb.embedding_dim, num_classes)

            def forward(self, idx):
                scores = self.head(self.encoder(idx))  # (B, T, K): a linear head commutes with the mean
                if self.pooling == "first":
                    return scores.select(1, 0)
                padding = (idx == self.encoder.pad_id).unsqueeze(-1)
                total = scores.masked_fill(padding, 0.0).sum(1)
                return total / (~padding).sum(1)
    """
        },
    ),
    Variant(
        "classifier",
        "the width read from encoder.ln_f (a LayerNorm(C), as the notebook promises)",
        {
            "SequenceClassifier": """
        class SequenceClassifier(nn.Module):
            def __init__(self, encoder, num_classes, pooling="mean"):
                super().__init__()
                if pooling not in {"mean", "first"}:
                    raise ValueError(f"unknown pooling {pooling!r}")
                self.encoder, self.pooling = encoder, pooling
                width = encoder.ln_f.normalized_shape[0]  # the encoder's final LayerNorm(n_embd)
                self.head = nn.Linear(width, num_classes)

            def forward(self, idx):
                h = self.encoder(idx)
                if self.pooling == "first":
                    return self.head(h[:, 0, :])
                keep = (idx != self.encoder.pad_id).to(h.dtype)
                pooled = torch.einsum("btc,bt->bc", h, keep) / keep.sum(1, keepdim=True)
                return self.head(pooled)
    """
        },
    ),
    Variant(
        "mlm_mask",
        "Bernoulli choice and one multinomial draw for the 80/10/10",
        {
            "mlm_mask_tokens": """
        def mlm_mask_tokens(ids, mask_id, vocab_size, special_ids=(), prob=0.15, generator=None):
            if prob < 0 or prob > 1:
                raise ValueError("prob must lie in [0, 1]")
            where = generator.device if generator is not None else ids.device
            flat = ids.reshape(-1)
            eligible = torch.ones_like(flat, dtype=torch.bool)
            for special in special_ids:
                eligible &= flat != special
            coins = torch.bernoulli(torch.full(flat.shape, float(prob), device=where), generator=generator).bool().to(ids.device)
            chosen = coins & eligible
            action = torch.multinomial(torch.tensor([0.8, 0.1, 0.1], device=where), flat.numel(), replacement=True, generator=generator).to(ids.device)
            noise = torch.randint(0, vocab_size, flat.shape, generator=generator, device=where).to(ids.device)
            out = flat.clone()
            out = torch.where(chosen & (action == 0), torch.full_like(out, mask_id), out)
            out = torch.where(chosen & (action == 1), noise, out)
            labels = torch.where(chosen, flat, torch.full_like(flat, -100))
            return out.view_as(ids), labels.view_as(ids)
    """
        },
    ),
    Variant(
        "cross_attention",
        "einsum scores and F.scaled_dot_product_attention's allowed-mask",
        {
            "CrossAttention": """
        class CrossAttention(nn.Module):
            def __init__(self, embed_dim, num_heads, dropout=0.0):
                super().__init__()
                if embed_dim % num_heads:
                    raise ValueError("embed_dim must be divisible by num_heads")
                self.h = num_heads
                self.p = dropout
                self.q_proj, self.k_proj = nn.Linear(embed_dim, embed_dim), nn.Linear(embed_dim, embed_dim)
                self.v_proj, self.out_proj = nn.Linear(embed_dim, embed_dim), nn.Linear(embed_dim, embed_dim)
                self.out_drop = nn.Dropout(dropout)

            def forward(self, x, memory, memory_mask=None):
                b, t, c = x.shape
                q = self.q_proj(x).view(b, t, self.h, c // self.h).permute(0, 2, 1, 3)
                k = self.k_proj(memory).view(b, -1, self.h, c // self.h).permute(0, 2, 1, 3)
                v = self.v_proj(memory).view(b, -1, self.h, c // self.h).permute(0, 2, 1, 3)
                allowed = None if memory_mask is None else ~memory_mask[:, None]
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, dropout_p=self.p if self.training else 0.0)
                return self.out_drop(self.out_proj(torch.einsum("bhtd->bthd", y).reshape(b, t, c)))
    """
        },
    ),
    Variant(
        "decoder_block",
        "the three sublayers in a loop over (norm, function) pairs",
        {
            "DecoderBlock": """
        class DecoderBlock(nn.Module):
            def __init__(self, embed_dim, num_heads, ff_dim, dropout=0.0, activation="gelu", norm_first=True):
                super().__init__()
                self.norm_first = norm_first
                self.ln1, self.ln2, self.ln3 = LayerNorm(embed_dim), LayerNorm(embed_dim), LayerNorm(embed_dim)
                self.self_attn = MultiHeadAttention(embed_dim, num_heads, dropout)
                self.cross_attn = CrossAttention(embed_dim, num_heads, dropout)
                self.ff = FeedForward(embed_dim, ff_dim, activation, dropout)

            def forward(self, x, memory, self_mask=None, memory_mask=None):
                sublayers = [
                    (self.ln1, lambda h: self.self_attn(h, mask=self_mask)),
                    (self.ln2, lambda h: self.cross_attn(h, memory, memory_mask)),
                    (self.ln3, self.ff),
                ]
                for norm, f in sublayers:
                    x = x + f(norm(x)) if self.norm_first else norm(x + f(x))
                return x
    """
        },
    ),
    Variant(
        "seq2seq",
        "an expanded (B, T, S) memory mask, and decoding into a preallocated buffer",
        {
            "Seq2Seq": """
        class Seq2Seq(nn.Module):
            def __init__(self, src_vocab, tgt_vocab, max_len, n_layer=2, n_head=4, n_embd=64, pad_id=0):
                super().__init__()
                self.pad_id = pad_id
                self.tgt_emb = nn.Embedding(tgt_vocab, n_embd)
                self.tgt_pos_emb = nn.Embedding(max_len, n_embd)
                self.encoder = Encoder(src_vocab, max_len, n_layer, n_head, n_embd, pad_id=pad_id)
                self.decoder_blocks = nn.ModuleList(DecoderBlock(n_embd, n_head, 4 * n_embd, 0.0, "gelu", True) for _ in range(n_layer))
                self.ln_f = LayerNorm(n_embd)
                self.head = nn.Linear(n_embd, tgt_vocab, bias=True)

            def forward(self, src, tgt_in):
                n, t = tgt_in.shape
                memory = self.encoder(src)
                cross_mask = (src == self.pad_id)[:, None, :].expand(n, t, src.size(1))
                future = torch.triu(torch.ones(t, t, dtype=torch.bool, device=src.device), 1)
                h = self.tgt_pos_emb(torch.arange(t, device=src.device)) + self.tgt_emb(tgt_in)
                for block in self.decoder_blocks:
                    h = block(h, memory, future, cross_mask)
                return self.head(self.ln_f(h))
        """,
            "greedy_decode": """
        def greedy_decode(model, src, start_id, end_id, max_len):
            if max_len < 0:
                raise ValueError("max_len cannot be negative")
            n = src.shape[0]
            buffer = torch.full((n, max_len + 1), model.pad_id, dtype=torch.long, device=src.device)
            buffer[:, 0] = start_id
            alive = torch.ones(n, dtype=torch.bool, device=src.device)
            length = 0
            mode = model.training
            model.eval()
            try:
                with torch.inference_mode():
                    while length < max_len and alive.any():
                        best = model(src, buffer[:, : length + 1])[:, length].argmax(-1)
                        buffer[alive, length + 1] = best[alive]
                        alive &= best != end_id
                        length += 1
            finally:
                model.train(mode)
            return buffer[:, 1 : length + 1]
        """,
        },
    ),
    Variant(
        "seq2seq",
        "GPT-2's initialisation of every layer (normal, std 0.02)",
        {
            "Seq2Seq": _seq2seq().replace(
                "        self.head = nn.Linear(n_embd, tgt_vocab)\n",
                "        self.head = nn.Linear(n_embd, tgt_vocab)\n"
                "        for module in self.modules():\n"
                "            if isinstance(module, (nn.Linear, nn.Embedding)):\n"
                "                nn.init.normal_(module.weight, mean=0.0, std=0.02)\n",
            )
        },
    ),
    Variant(
        "seq2seq_works",
        "rows by randperm, labels by torch.where, cross-entropy on (B, V, T)",
        {
            "train_seq2seq": """
        def train_seq2seq(model, src, tgt, *, steps, batch_size, lr, start_id, generator=None, grad_clip=1.0):
            if min(steps, batch_size) <= 0 or not lr > 0:
                raise ValueError("steps, batch_size and lr must be positive")
            if len(src) != len(tgt):
                raise ValueError("src and tgt must have as many rows")
            device = next(model.parameters()).device
            opt = torch.optim.AdamW(model.parameters(), lr)
            model.train(True)
            history = []
            for step in range(steps):
                pick = torch.randperm(len(src), generator=generator)[:batch_size] if batch_size <= len(src) else \\
                    torch.randint(len(src), (batch_size,), generator=generator)
                x, y = src[pick].to(device), tgt[pick].to(device)
                decoder_in = torch.cat([torch.full_like(y[:, :1], start_id), y[:, :-1]], dim=1)
                target = torch.where(y == model.pad_id, torch.full_like(y, -100), y)
                logits = model(x, decoder_in)
                loss = F.cross_entropy(logits.transpose(1, 2), target)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                if grad_clip:
                    nn.utils.clip_grad_norm_(model.parameters(), max_norm=grad_clip)
                opt.step()
                history.append(loss.item())
            return history
    """
        },
    ),
]
