"""Realistic mistakes and correct alternatives for stage 07_gpt.

Each cell is written from a template with the right code in every slot; a mistake
changes one slot. The tests keep the questions apart: ``train`` runs on the grader's
stand-in models, so a ``GPT`` mistake costs nothing there. The one coupling is by
design: ``training_works`` trains the student's ``GPT`` with the student's ``train``.
So the ``model`` and ``train`` mistakes of MISTAKES are ones that still train well enough
(the unit tests find them), and the ``training_works`` mistakes are ones that only training
can show: weights that start badly. The ``train`` mistakes that also stop the learning
(batches whose targets are not the next tokens, gradients zeroed before the step) are in
COUPLED.
"""

from autograder.authoring.catalogue import Variant

# ---------------------------------------------------------------- model

_GPT = """
{config_class}class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        {config_check}
        self.config = {config_kept}
        C = config.n_embd
        hidden = {hidden}
        self.tok_emb = nn.Embedding(config.vocab_size, C)
        self.pos_emb = nn.Embedding({pos_rows}, C)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList({blocks})
        self.ln_f = LayerNorm(C)
        {head}
        self.apply(self._init_weights)
        {after_init}

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            {init}
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        {length_check}
        pos = torch.arange(T, device=idx.device)
        x = {embedded}
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=idx.device), diagonal=1)
        for block in self.blocks:
            x = block(x, {mask})
        logits = self.head({final})
        loss = {no_loss}
        if targets is not None:
            {loss}
        return logits, loss
"""

_GPT_RIGHT = {
    "config_class": "",
    "config_kept": "config",
    "hidden": "config.ff_dim or 4 * C",
    "pos_rows": "config.block_size",
    "embedded": "self.drop(self.tok_emb(idx) + self.pos_emb(pos))",
    "no_loss": "None",
    "config_check": (
        'for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):\n'
        "            if getattr(config, name) < 1:\n"
        '                raise ValueError(f"config.{name} must be positive")'
    ),
    "blocks": (
        "[TransformerBlock(C, config.n_head, hidden, dropout=config.dropout, norm_first=config.norm_first)\n"
        "             for _ in range(config.n_layer)]"
    ),
    "head": (
        "self.head = nn.Linear(C, config.vocab_size, bias=False)\n"
        "        if config.tie_weights:\n"
        "            self.head.weight = self.tok_emb.weight"
    ),
    "after_init": "",
    "init": "nn.init.normal_(module.weight, mean=0.0, std=0.02)",
    "length_check": (
        "if T > self.config.block_size:\n"
        '            raise ValueError(f"{T} tokens, but block_size is {self.config.block_size}")'
    ),
    "mask": "mask=mask",
    "final": "self.ln_f(x)",
    "loss": "loss = F.cross_entropy(logits.reshape(B * T, -1), targets.reshape(B * T), ignore_index=-100)",
}

_NANOGPT_CONFIG = """@dataclass
class GPTConfig:
    vocab_size: int
    block_size: int
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    ff_dim: int | None = None
    dropout: float = 0.0
    tie_weights: bool = True
    norm_first: bool = True


"""


def _gpt(**changes: str) -> str:
    return _GPT.format(**{**_GPT_RIGHT, **changes})


# ---------------------------------------------------------------- params

_PARAMS = """
def num_parameters(config):
    C, V, L = config.n_embd, config.vocab_size, config.n_layer
    hidden = {hidden}
    embeddings = {embeddings}
    block = {attention} + {norms} + (C * hidden + hidden) + (hidden * C + C) + {extra}
    head = {head}
    return embeddings + L * block + {final} + head
"""

_PARAMS_RIGHT = {
    "hidden": "config.ff_dim if config.ff_dim is not None else 4 * C",
    "embeddings": "V * C + config.block_size * C",
    "attention": "4 * (C * C + C)",
    "norms": "4 * C",
    "extra": "0",
    "head": "0 if config.tie_weights else V * C",
    "final": "2 * C",
}


def _params(**changes: str) -> str:
    return _PARAMS.format(**{**_PARAMS_RIGHT, **changes})


# ---------------------------------------------------------------- device

_DEVICE = """
def get_device():
    if {first}:
        return {first_device}
    if {second}:
        return {second_device}
    return {cpu}
"""

_DEVICE_RIGHT = {
    "first": "torch.cuda.is_available()",
    "first_device": 'torch.device("cuda")',
    "second": "torch.backends.mps.is_available()",
    "second_device": 'torch.device("mps")',
    "cpu": 'torch.device("cpu")',
}


def _device(**changes: str) -> str:
    return _DEVICE.format(**{**_DEVICE_RIGHT, **changes})


# ---------------------------------------------------------------- train

_TRAIN_STEP = """
def train_step(model, optimizer, x, y, grad_clip={default}):
    {check}
    {zero}
    _, loss = model(x, y)
    {backward_and_clip}
    {step}
    {after_step}
    return {result}
"""

_TRAIN_STEP_RIGHT = {
    "default": "1.0",
    "step": "optimizer.step()",
    "result": "loss.item()",
    "check": ('if grad_clip is not None and grad_clip <= 0:\n        raise ValueError("grad_clip must be positive")'),
    "zero": "optimizer.zero_grad()",
    "after_step": "",
    "backward_and_clip": (
        "loss.backward()\n"
        "    if grad_clip is not None:\n"
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)"
    ),
}


def _train_step(**changes: str) -> str:
    return _TRAIN_STEP.format(**{**_TRAIN_STEP_RIGHT, **changes})


_ESTIMATE = """
def estimate_loss(model, data, block_size, batch_size, eval_iters, generator=None):
    {check}
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    losses = []
    with torch.no_grad():
        for _ in range(eval_iters):
            {batch}
            _, loss = model(x.to(device), y.to(device))
            losses.append(loss.item())
    {restore}
    return {result}
"""

_ESTIMATE_RIGHT = {
    "check": 'if eval_iters < 1 or batch_size < 1:\n        raise ValueError("eval_iters and batch_size must be positive")',
    "batch": "x, y = get_batch(data, block_size, batch_size, generator)",
    "restore": "model.train(was_training)",
    "result": "sum(losses) / len(losses)",
}


def _estimate(**changes: str) -> str:
    return _ESTIMATE.format(**{**_ESTIMATE_RIGHT, **changes})


_TRAIN = """
def train(model, train_data, val_data, *, steps, batch_size, lr, device, eval_interval, eval_iters, warmup,
          generator=None, grad_clip=1.0, weight_decay=0.1, progress=True, keep_best=False):
    if min(steps, batch_size, eval_interval, eval_iters) < 1 or lr <= 0 or {warmup_check}:
        raise ValueError("steps, batch_size, eval_interval, eval_iters and lr must be positive, and 0 <= warmup <= steps")
    block_size = model.config.block_size
    {to_device}
    decay = [p for p in model.parameters() if {decayed}]
    no_decay = [p for p in model.parameters() if not ({decayed})]
    optimizer = {optimizer}(
        [{{"params": decay, "weight_decay": weight_decay}}, {{"params": no_decay, "weight_decay": 0.0}}],
        lr=lr, betas={betas},
    )

    def lr_at(s):
        if s < warmup:
            return {warmup_lr}
        return {decay_lr}

    history = {{"step": [], "train_loss": [], "val_loss": [], "lr": []}}
    best = {{}}

    def evaluate(done):
        history["step"].append({step_entry})
        history["train_loss"].append(estimate_loss(model, train_data, block_size, batch_size, eval_iters, generator))
        history["val_loss"].append(estimate_loss(model, val_data, block_size, batch_size, eval_iters, generator))
        if {tracking} and (not best or {judged} < best["loss"]):
            best.update(loss={judged}, step={best_step}, weights={snapshot})

    evaluate(0)
    {before_loop}
    bar = tqdm(range(steps), disable={disable})
    for s in bar:
        rate = lr_at(s)
        {set_lr}
        history["lr"].append(rate)
        {batch}
        train_step(model, optimizer, {inputs}, {clip})
        if {evaluate_when}:
            evaluate(s + 1)
            bar.set_postfix(val=history["val_loss"][-1])
    {restore_when}:
        {restore}
    if keep_best:
        history["best_step"], history["best_val_loss"] = best["step"], best["loss"]
    return history
"""

_TRAIN_RIGHT = {
    "warmup_check": "not 0 <= warmup <= steps",
    "to_device": "model.to(device)",
    "step_entry": "done",
    "tracking": "keep_best",
    "disable": "not progress",
    "restore_when": "if keep_best",
    "betas": "(0.9, 0.95)",
    "clip": "grad_clip",
    "decayed": "p.dim() >= 2",
    "optimizer": "torch.optim.AdamW",
    "warmup_lr": "lr * (s + 1) / warmup",
    "decay_lr": "lr * 0.5 * (1 + math.cos(math.pi * (s - warmup) / max(1, steps - warmup)))",
    "before_loop": "",
    "set_lr": 'for group in optimizer.param_groups:\n            group["lr"] = rate',
    "batch": "x, y = get_batch(train_data, block_size, batch_size, generator)",
    "inputs": "x.to(device), y.to(device)",
    "evaluate_when": "(s + 1) % eval_interval == 0 or s + 1 == steps",
    "judged": 'history["val_loss"][-1]',
    "best_step": "done",
    "snapshot": "{k: v.detach().clone() for k, v in model.state_dict().items()}",
    "restore": 'model.load_state_dict(best["weights"])',
}


def _train(**changes: str) -> str:
    return _TRAIN.format(**{**_TRAIN_RIGHT, **changes})


_ONE_BATCH = dict(before_loop="x, y = get_batch(train_data, block_size, batch_size, generator)", batch="pass")
_FIRST_WINDOWS = (
    "starts = torch.randint(block_size, (batch_size,), generator=generator)\n"
    "        x = torch.stack([train_data[i : i + block_size] for i in starts.tolist()])\n"
    "        y = torch.stack([train_data[i + 1 : i + block_size + 1] for i in starts.tolist()])"
)


def _gpt_init(line: str) -> str:
    return _gpt(init=line)


_NO_PUBLIC = "no public test {}"

MISTAKES = [
    # model
    Variant(
        "model",
        "no weight tying",
        {"GPT": _gpt(head="self.head = nn.Linear(C, config.vocab_size, bias=False)")},
        hints=("head not tied",),
        clauses=("tied",),
    ),
    Variant(
        "model",
        "the head keeps its bias",
        {
            "GPT": _gpt(
                head=(
                    "self.head = nn.Linear(C, config.vocab_size)\n"
                    "        if config.tie_weights:\n"
                    "            self.head.weight = self.tok_emb.weight"
                )
            )
        },
        hints=("head with a bias",),
        clauses=("head",),
    ),
    Variant("model", "no final LayerNorm before the head", {"GPT": _gpt(final="x")}, clauses=("ln-f",)),
    Variant(
        "model",
        "targets flattened with .view, which refuses a slice of a batch (nanoGPT's form)",
        {"GPT": _gpt(loss="loss = F.cross_entropy(logits.view(B * T, -1), targets.view(B * T), ignore_index=-100)")},
        clauses=("slices",),
    ),
    Variant("model", "the blocks run without the causal mask", {"GPT": _gpt(mask="mask=None")}, clauses=("causal",)),
    Variant(
        "model",
        "no ValueError for a sequence longer than block_size",
        {"GPT": _gpt(length_check="pass")},
        clauses=("length",),
    ),
    Variant(
        "model",
        "nanoGPT's defaults copied into GPTConfig (12 layers, 12 heads, 768 wide)",
        {"GPT": _gpt(config_class=_NANOGPT_CONFIG)},
        clauses=("defaults",),
    ),
    Variant(
        "model",
        "the same block object repeated n_layer times",
        {
            "GPT": _gpt(
                blocks="[TransformerBlock(C, config.n_head, hidden, dropout=config.dropout, norm_first=config.norm_first)] * config.n_layer"
            )
        },
        clauses=("blocks",),
    ),
    Variant(
        "model",
        "config.dropout not given to the blocks",
        {
            "GPT": _gpt(
                blocks="[TransformerBlock(C, config.n_head, hidden, norm_first=config.norm_first) for _ in range(config.n_layer)]"
            )
        },
        clauses=("dropout",),
    ),
    Variant(
        "model",
        "the loss written by hand, so -100 targets are not skipped",
        {"GPT": _gpt(loss="loss = -F.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).mean()")},
        clauses=("loss",),
    ),
    Variant("model", "no check of the configuration's sizes", {"GPT": _gpt(config_check="pass")}, clauses=("errors",)),
    Variant(
        "model",
        "the head is tied whatever tie_weights says",
        {
            "GPT": _gpt(
                head=(
                    "self.head = nn.Linear(C, config.vocab_size, bias=False)\n"
                    "        self.head.weight = self.tok_emb.weight"
                )
            )
        },
        hints=("head tied when tie_weights=False",),
        clauses=("untied",),
    ),
    Variant(
        "model",
        "self.config rebuilt from vocab_size and block_size alone (the other fields at their defaults)",
        {"GPT": _gpt(config_kept="GPTConfig(config.vocab_size, config.block_size)")},
        hidden_only=_NO_PUBLIC.format("reads self.config's fields"),
        clauses=("config-kept",),
    ),
    Variant(
        "model",
        "the position table sized by vocab_size",
        {"GPT": _gpt(pos_rows="config.vocab_size")},
        clauses=("tables",),
    ),
    Variant(
        "model",
        "ff_dim ignored: the blocks always 4 * n_embd wide",
        {"GPT": _gpt(hidden="4 * C")},
        hidden_only=_NO_PUBLIC.format("builds a GPT with a given ff_dim"),
        clauses=("ff-dim",),
    ),
    Variant(
        "model",
        "pre-norm blocks whatever norm_first says",
        {
            "GPT": _gpt(
                blocks="[TransformerBlock(C, config.n_head, hidden, dropout=config.dropout, norm_first=True) for _ in range(config.n_layer)]"
            )
        },
        hidden_only=_NO_PUBLIC.format("builds a post-norm GPT"),
        clauses=("norm-first",),
    ),
    Variant(
        "model",
        "the token vectors scaled by sqrt(n_embd) before the positions are added",
        {
            "GPT": _gpt(
                embedded="self.drop(self.tok_emb(idx) * math.sqrt(C_) + self.pos_emb(pos))".replace(
                    "C_", "self.config.n_embd"
                )
            )
        },
        clauses=("logits",),
    ),
    Variant(
        "model",
        "a zero loss, not None, without targets",
        {"GPT": _gpt(no_loss="torch.zeros((), device=idx.device)")},
        clauses=("no-targets",),
    ),
    # params
    Variant(
        "params",
        "the tied matrix counted twice",
        {"num_parameters": _params(head="V * C")},
        hints=("tied matrix counted twice",),
        clauses=("tied-once",),
    ),
    Variant(
        "params", "position embeddings left out", {"num_parameters": _params(embeddings="V * C")}, clauses=("pos-emb",)
    ),
    Variant(
        "params",
        "attention projections counted without biases",
        {"num_parameters": _params(attention="4 * C * C")},
        clauses=("biases",),
    ),
    Variant(
        "params", "ff_dim ignored (always 4 * n_embd)", {"num_parameters": _params(hidden="4 * C")}, clauses=("ff-dim",)
    ),
    Variant("params", "the final LayerNorm forgotten", {"num_parameters": _params(final="0")}, clauses=("norms",)),
    Variant(
        "params",
        "one LayerNorm per block (two vectors), not two",
        {"num_parameters": _params(norms="2 * C")},
        clauses=("norms",),
    ),
    Variant("params", "an untied head not counted", {"num_parameters": _params(head="0")}, clauses=("untied",)),
    Variant(
        "params",
        "post-norm blocks counted with a LayerNorm more",
        {"num_parameters": _params(extra="(0 if config.norm_first else 2 * C)")},
        hidden_only=_NO_PUBLIC.format("counts a post-norm configuration"),
        clauses=("no-extra",),
    ),
    # device
    Variant(
        "device",
        "returns strings instead of torch.device",
        {"get_device": _device(first_device='"cuda"', second_device='"mps"', cpu='"cpu"')},
        hints=("a string, not a torch.device",),
        clauses=("torch-device",),
    ),
    Variant(
        "device",
        "MPS asked before CUDA",
        {
            "get_device": _device(
                first="torch.backends.mps.is_available()",
                first_device='torch.device("mps")',
                second="torch.cuda.is_available()",
                second_device='torch.device("cuda")',
            )
        },
        clauses=("cuda-first",),
    ),
    Variant(
        "device",
        "torch.cuda.is_available without the call",
        {"get_device": _device(first="torch.cuda.is_available")},
        hints=("is_available not called",),
        clauses=("calls",),
    ),
    Variant("device", "Apple GPUs never considered", {"get_device": _device(second="False")}, clauses=("mps",)),
    Variant(
        "device",
        "mps.is_built() asked instead of is_available()",
        {"get_device": _device(second="torch.backends.mps.is_built()")},
        clauses=("calls",),
    ),
    Variant(
        "device",
        "no return for the CPU: None when there is no GPU",
        {"get_device": _device(cpu="None")},
        clauses=("cpu",),
    ),
    # train: train_step
    Variant(
        "train",
        "no zero_grad: gradients pile up across steps",
        {"train_step": _train_step(zero="pass")},
        hints=("gradients not zeroed",),
        clauses=("zero-first",),
    ),
    Variant(
        "train",
        "gradients zeroed after the step instead of before",
        {"train_step": _train_step(zero="pass", after_step="optimizer.zero_grad()")},
        hints=("gradients zeroed after the step",),
        clauses=("zero-first",),
    ),
    Variant(
        "train",
        "gradients clipped before the backward pass",
        {
            "train_step": _train_step(
                backward_and_clip=(
                    "if grad_clip is not None:\n"
                    "        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)\n"
                    "    loss.backward()"
                )
            )
        },
        clauses=("clip",),
    ),
    Variant(
        "train", "train_step accepts grad_clip=0", {"train_step": _train_step(check="pass")}, clauses=("clip-error",)
    ),
    Variant(
        "train",
        "the loss summed over the batch's rows before the backward pass",
        {
            "train_step": _train_step(
                backward_and_clip=(
                    "(loss * x.size(0)).backward()\n"
                    "    if grad_clip is not None:\n"
                    "        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)"
                )
            )
        },
        hidden_only="the gradients' scale needs the reference's gradients, which no public test holds",
        clauses=("backward",),
    ),
    Variant(
        "train",
        "grad_clip=None clips to 1.0 all the same",
        {
            "train_step": _train_step(
                backward_and_clip="loss.backward()\n    torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip or 1.0)"
            )
        },
        hidden_only="the public test's unclipped norm is near 1: only the reference's norm tells them apart",
        clauses=("clip-none",),
    ),
    Variant(
        "train",
        "grad_clip defaults to None",
        {"train_step": _train_step(default="None")},
        hidden_only=_NO_PUBLIC.format("calls train_step without grad_clip"),
        clauses=("clip-default",),
    ),
    Variant(
        "train",
        "the optimiser steps before the gradients are clipped",
        {
            "train_step": _train_step(
                backward_and_clip=(
                    "loss.backward()\n"
                    "    optimizer.step()\n"
                    "    if grad_clip is not None:\n"
                    "        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)"
                ),
                step="pass",
            )
        },
        clauses=("step",),
    ),
    Variant(
        "train",
        "train_step returns the loss tensor, not a float",
        {"train_step": _train_step(result="loss.detach()")},
        clauses=("float",),
    ),
    Variant(
        "train",
        "train_step switches the model to training mode",
        {"train_step": _train_step(zero="model.train()\n    optimizer.zero_grad()")},
        hidden_only=_NO_PUBLIC.format("calls train_step on a model in eval mode"),
        clauses=("mode-kept",),
    ),
    # train: estimate_loss
    Variant(
        "train",
        "estimate_loss leaves the model in eval mode",
        {"estimate_loss": _estimate(restore="pass")},
        clauses=("estimate-mode",),
    ),
    Variant(
        "train",
        "estimate_loss puts the model in training mode after, whatever the caller's mode (model.train())",
        {"estimate_loss": _estimate(restore="model.train()")},
        clauses=("estimate-mode",),
    ),
    Variant(
        "train",
        "estimate_loss returns the sum, not the mean",
        {"estimate_loss": _estimate(result="sum(losses)")},
        clauses=("estimate-mean",),
    ),
    Variant(
        "train",
        "estimate_loss: the targets are the inputs themselves",
        {
            "estimate_loss": _estimate(
                batch="x, _ = get_batch(data, block_size, batch_size, generator)\n            y = x"
            )
        },
        hidden_only=_NO_PUBLIC.format("looks at estimate_loss's targets"),
        clauses=("estimate-batches",),
    ),
    Variant(
        "train",
        "estimate_loss checks none of its arguments",
        {"estimate_loss": _estimate(check="pass")},
        clauses=("estimate-errors",),
    ),
    # train: train
    Variant(
        "train", "no warm-up: cosine decay from the first step", {"train": _train(warmup_lr="lr")}, clauses=("warmup",)
    ),
    Variant(
        "train",
        "warm-up lr * s / warmup: the first step's rate is 0",
        {"train": _train(warmup_lr="lr * s / warmup")},
        clauses=("warmup",),
    ),
    Variant(
        "train",
        "the cosine counted from step 0, not from the end of the warm-up",
        {"train": _train(decay_lr="lr * 0.5 * (1 + math.cos(math.pi * s / steps))")},
        hidden_only="the public run is too short to show the shape of the decay",
        clauses=("cosine",),
    ),
    Variant(
        "train",
        "the schedule is recorded but never given to the optimiser",
        {"train": _train(set_lr="pass")},
        clauses=("lr-applied",),
    ),
    Variant("train", "weight decay on every parameter", {"train": _train(decayed="True")}, clauses=("weight-decay",)),
    Variant(
        "train",
        "no evaluation after the last step",
        {"train": _train(evaluate_when="(s + 1) % eval_interval == 0")},
        clauses=("evaluations",),
    ),
    Variant(
        "train",
        "history['step'] holds the evaluation's number, not the steps done",
        {"train": _train(step_entry='len(history["step"])')},
        clauses=("history",),
    ),
    Variant("train", "grad_clip not passed on to train_step", {"train": _train(clip="1.0")}, clauses=("clip-passed",)),
    Variant("train", "AdamW's default betas (0.9, 0.999)", {"train": _train(betas="(0.9, 0.999)")}, clauses=("adamw",)),
    Variant(
        "train",
        "keep_best keeps model.state_dict() itself, the live tensors, not a copy",
        {"train": _train(snapshot="model.state_dict()")},
        hints=("the best weights not kept",),
        clauses=("keep-best",),
    ),
    Variant(
        "train",
        "keep_best notes the best but never loads its weights back",
        {"train": _train(restore="pass")},
        hints=("the best weights not kept",),
        clauses=("keep-best",),
    ),
    Variant(
        "train",
        "keep_best judges by the training loss",
        {"train": _train(judged='history["train_loss"][-1]')},
        clauses=("keep-best",),
    ),
    Variant(
        "train",
        "best_step is the evaluation's index, not the steps done",
        {"train": _train(best_step='len(history["step"]) - 1')},
        hints=("best_step is the evaluation's index",),
        clauses=("best-step",),
    ),
    Variant(
        "train",
        "the best weights put back even without keep_best",
        {"train": _train(tracking="True", restore_when="if best")},
        hidden_only=_NO_PUBLIC.format("trains without keep_best and looks at the weights"),
        clauses=("last-weights",),
    ),
    Variant(
        "train",
        "the training batches drawn from the validation data",
        {"train": _train(batch="x, y = get_batch(val_data, block_size, batch_size, generator)")},
        clauses=("batches",),
    ),
    Variant(
        "train",
        "the training batches drawn without the generator",
        {"train": _train(batch="x, y = get_batch(train_data, block_size, batch_size)")},
        hidden_only=_NO_PUBLIC.format("runs train twice with the same seed"),
        clauses=("generator",),
    ),
    Variant(
        "train",
        "a string method called on device (device.startswith)",
        {
            "train": _train(
                to_device='model.to(device)\n    if device.startswith("cuda"):\n        torch.backends.cuda.matmul.allow_tf32 = True'
            )
        },
        hidden_only=_NO_PUBLIC.format("gives train a torch.device"),
        clauses=("device-arg",),
    ),
    Variant(
        "train",
        "progress read the wrong way round (disable=progress)",
        {"train": _train(disable="progress")},
        clauses=("progress",),
    ),
    Variant(
        "train",
        "warmup > steps accepted",
        {"train": _train(warmup_check="warmup < 0")},
        hidden_only=_NO_PUBLIC.format("gives train a warmup longer than steps"),
        clauses=("train-errors",),
    ),
    # training_works: what only training shows (the tests of model load their own weights, so a
    # GPT whose weights start badly passes them, and fails to learn)
    Variant(
        "training_works",
        "every weight initialised to zero",
        {"GPT": _gpt_init("nn.init.zeros_(module.weight)")},
        clauses=("learns",),
    ),
    Variant(
        "training_works",
        "every weight initialised to one",
        {"GPT": _gpt_init("nn.init.ones_(module.weight)")},
        clauses=("learns",),
    ),
    Variant(
        "training_works",
        "every weight set to the constant 0.02",
        {"GPT": _gpt_init("nn.init.constant_(module.weight, 0.02)")},
        clauses=("learns",),
    ),
    Variant(
        "training_works",
        "every parameter drawn with normal_(p, 0.02): mean 0.02, standard deviation 1",
        {"GPT": _gpt(after_init="for p in self.parameters():\n            nn.init.normal_(p, 0.02)")},
        clauses=("learns",),
    ),
]


# Mistakes in train or train_step that the public tests of train catch and that also stop
# the model from learning: they lose points on train and, by design, on training_works
# (which trains the student's GPT with the student's train). check-stage holds every
# MISTAKES entry to "its own question only", so these are graded in test_gpt.py instead.
COUPLED = [
    Variant(
        "train",
        "gradients zeroed between the backward pass and the step",
        {"train_step": _train_step(zero="pass", step="optimizer.zero_grad()\n    optimizer.step()")},
    ),
    Variant(
        "train",
        "the optimiser steps before the backward pass",
        {
            "train_step": _train_step(
                backward_and_clip=(
                    "optimizer.step()\n"
                    "    loss.backward()\n"
                    "    if grad_clip is not None:\n"
                    "        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)"
                ),
                step="pass",
            )
        },
    ),
    Variant("train", "train_step never steps the optimiser", {"train_step": _train_step(step="pass")}),
    Variant(
        "train", "targets are the input windows themselves", {"train": _train(inputs="x.to(device), x.to(device)")}
    ),
    Variant("train", "inputs and targets swapped", {"train": _train(inputs="y.to(device), x.to(device)")}),
    Variant("train", "one batch drawn before the loop and reused", {"train": _train(**_ONE_BATCH)}),
    Variant("train", "windows start only within the first block_size tokens", {"train": _train(batch=_FIRST_WINDOWS)}),
]


# ---------------------------------------------------------------- correct in other styles

_GPT_OTHER_STYLE = """
class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        if min(config.vocab_size, config.block_size, config.n_layer, config.n_head, config.n_embd) <= 0:
            raise ValueError(f"every size of the configuration must be positive: {{config}}")
        self.config = config
        width = config.n_embd
        self.tok_emb = nn.Embedding(config.vocab_size, width)
        self.pos_emb = nn.Embedding(config.block_size, width)
        self.blocks = nn.ModuleList(
            TransformerBlock(width, config.n_head, config.ff_dim if config.ff_dim else 4 * width,
                             config.dropout, "gelu", config.norm_first)
            for _ in range(config.n_layer)
        )
        self.ln_f = LayerNorm(width)
        self.head = nn.Linear(width, config.vocab_size, bias=False)
        self.emb_drop = nn.Dropout(config.dropout)
        {init}
        if config.tie_weights:
            self.tok_emb.weight = self.head.weight

    def forward(self, idx, targets=None):
        if idx.ndim != 2:
            raise ValueError(f"idx must be (B, T), got shape {{tuple(idx.shape)}}")
        T = idx.size(1)
        if T > self.config.block_size:
            raise ValueError(f"cannot read {{T}} tokens with a block size of {{self.config.block_size}}")
        x = self.emb_drop(self.tok_emb(idx) + self.pos_emb.weight[:T])
        future = ~torch.tril(torch.ones(T, T, dtype=torch.bool, device=idx.device))
        for block in self.blocks:
            x = block(x, future)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=-100)
"""

_GPT2_INIT = """residual = 0.02 / math.sqrt(2 * config.n_layer)
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, std=residual if name.endswith(("out_proj.weight", "fc2.weight")) else 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)"""

_TRAIN_OTHER_STYLE = {
    "train_step": """
        def train_step(model, optimizer, x, y, grad_clip=1.0):
            if grad_clip is not None and not grad_clip > 0:
                raise ValueError(f"grad_clip must be None or positive, not {grad_clip}")
            model.zero_grad(set_to_none=True)
            loss = model(x, targets=y)[1]
            loss.backward()
            if grad_clip:
                nn.utils.clip_grad_norm_(model.parameters(), max_norm=grad_clip)
            optimizer.step()
            return float(loss.detach())
    """,
    "estimate_loss": """
        def estimate_loss(model, data, block_size, batch_size, eval_iters, generator=None):
            if eval_iters <= 0 or batch_size <= 0 or data.numel() < block_size + 1:
                raise ValueError("need eval_iters > 0, batch_size > 0 and at least block_size + 1 tokens")
            mode = model.training
            model.eval()
            device = next(model.parameters()).device
            window = torch.arange(block_size + 1)
            results = torch.zeros(eval_iters)
            with torch.inference_mode():
                for i in range(eval_iters):
                    starts = torch.randint(0, len(data) - block_size, (batch_size, 1), generator=generator)
                    rows = data[starts + window].to(device)
                    results[i] = model(rows[:, :-1], rows[:, 1:])[1].item()
            model.train(mode)
            return results.mean().item()
    """,
    "train": """
        def train(model, train_data, val_data, *, steps, batch_size, lr, device, eval_interval, eval_iters, warmup,
                  generator=None, grad_clip=1.0, weight_decay=0.1, progress=True, keep_best=False):
            import io

            for name, value in (("steps", steps), ("batch_size", batch_size), ("eval_interval", eval_interval), ("eval_iters", eval_iters), ("lr", lr)):
                if value <= 0:
                    raise ValueError(f"{name} must be positive, got {value}")
            if warmup < 0 or warmup > steps:
                raise ValueError(f"warmup must be between 0 and steps, got {warmup}")
            T = model.config.block_size
            model = model.to(device)
            groups = [
                {"params": [p for p in model.parameters() if p.ndim > 1], "weight_decay": weight_decay},
                {"params": [p for p in model.parameters() if p.ndim <= 1], "weight_decay": 0.0},
            ]
            optimizer = torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))

            def factor(s):
                if s < warmup:
                    return (s + 1) / warmup
                return 0.5 * (1.0 + math.cos(math.pi * (s - warmup) / max(1, steps - warmup)))

            scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
            history = {"step": [], "train_loss": [], "val_loss": [], "lr": [], "batch_loss": []}
            window = torch.arange(T + 1)
            with tqdm(total=steps, disable=not progress, desc="train") as bar:
                for s in range(steps + 1):
                    if s % eval_interval == 0 or s == steps:
                        history["step"].append(s)
                        history["train_loss"].append(estimate_loss(model, train_data, T, batch_size, eval_iters, generator))
                        history["val_loss"].append(estimate_loss(model, val_data, T, batch_size, eval_iters, generator))
                        if keep_best and history["val_loss"][-1] < min(history["val_loss"][:-1], default=math.inf):
                            buffer = io.BytesIO()
                            torch.save(model.state_dict(), buffer)  # serialised: a copy
                            history["best_step"], history["best_val_loss"] = s, history["val_loss"][-1]
                    if s == steps:
                        break
                    rows = train_data[torch.randint(0, len(train_data) - T, (batch_size, 1), generator=generator) + window]
                    history["lr"].append(scheduler.get_last_lr()[0])
                    history["batch_loss"].append(train_step(model, optimizer, rows[:, :-1].to(device), rows[:, 1:].to(device), grad_clip))
                    scheduler.step()
                    bar.update(1)
            if keep_best:
                buffer.seek(0)
                model.load_state_dict(torch.load(buffer))
            return history
    """,
}

_SELF_CHECKING_CONFIG = """@dataclass
class GPTConfig:
    vocab_size: int
    block_size: int
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    ff_dim: int | None = None
    dropout: float = 0.0
    tie_weights: bool = True
    norm_first: bool = True

    def __post_init__(self):
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_head ({self.n_head}) must divide n_embd ({self.n_embd})")


"""

ALTERNATIVES = [
    Variant(
        "model",
        "a GPTConfig that checks itself (__post_init__): the ValueError comes when the config is made",
        {"GPT": _gpt(config_class=_SELF_CHECKING_CONFIG, config_check="pass")},
    ),
    Variant(
        "model",
        "tied the other way round, a tril mask, cross-entropy on (B, V, T)",
        {"GPT": _GPT_OTHER_STYLE.format(init=_GPT2_INIT)},
    ),
    Variant(
        "params",
        "a list of parameter shapes, multiplied out",
        {
            "num_parameters": """
        def num_parameters(config):
            C, V = config.n_embd, config.vocab_size
            hidden = config.ff_dim or 4 * C
            shapes = [(V, C), (config.block_size, C)]
            for _ in range(config.n_layer):
                shapes += [(C, C), (C,)] * 4 + [(C,)] * 4 + [(C, hidden), (hidden,), (hidden, C), (C,)]
            shapes += [(C,), (C,)]
            if not config.tie_weights:
                shapes.append((V, C))
            return sum(math.prod(shape) for shape in shapes)
    """
        },
    ),
    Variant(
        "device",
        "a loop over the GPU kinds in order of preference",
        {
            "get_device": """
        def get_device():
            for name, available in (("cuda", torch.cuda.is_available), ("mps", torch.backends.mps.is_available)):
                if available():
                    return torch.device(name)
            return torch.device("cpu")
    """
        },
    ),
    Variant("train", "LambdaLR, windows by index arithmetic, inference_mode", _TRAIN_OTHER_STYLE),
    Variant(
        "training_works",
        "PyTorch's default initialisation and a LambdaLR loop",
        {"GPT": _GPT_OTHER_STYLE.format(init="pass"), **_TRAIN_OTHER_STYLE},
    ),
]
