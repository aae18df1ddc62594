"""Realistic mistakes and correct alternatives for stage 01_tokenisation."""

from autograder.authoring.catalogue import Variant

# A correct n-gram class; each ngram mistake replaces one of its {PLACEHOLDERS}.
_NGRAM = """
    class NGramLM:
        def __init__(self, n, vocab_size, alpha={ALPHA_DEFAULT}):
            {INIT_CHECK}
            self.n, self.V, self.alpha = n, vocab_size, alpha

        def fit(self, ids):
            ids = {FIT_IDS}
            self.c, self.h = {}, {}
            for t in range(self.n - 1, len(ids)):
                ctx = tuple(ids[t - self.n + 1 : t])
                self.c[ctx + (ids[t],)] = self.c.get(ctx + (ids[t],), 0) + 1
                {COUNT_CONTEXT}
            {FIT_RETURN}

        def prob(self, context, token):
            context = {PROB_CONTEXT}
            {PROB_CHECK}
            ctx = {CONTEXT}
            return (self.c.get(ctx + (token,), 0) + {ADD}) / (self.h.get(ctx, 0) + {ADD_TOTAL})

        def perplexity(self, ids):
            ids = list(ids.tolist() if isinstance(ids, torch.Tensor) else ids)
            {PERPLEXITY_CHECK}
            nll = [-math.log(self.prob(ids[t - self.n + 1 : t], ids[t])) for t in range(self.n - 1, len(ids))]
            return {PERPLEXITY}
"""

_NGRAM_RIGHT = {
    "ALPHA_DEFAULT": "1.0",
    "FIT_IDS": "list(ids.tolist() if isinstance(ids, torch.Tensor) else ids)",
    "PROB_CONTEXT": "list(context.tolist() if isinstance(context, torch.Tensor) else context)",
    "INIT_CHECK": 'if n < 1 or vocab_size < 1 or alpha <= 0: raise ValueError(f"bad arguments n={n}, vocab_size={vocab_size}, alpha={alpha}")',
    "COUNT_CONTEXT": "self.h[ctx] = self.h.get(ctx, 0) + 1",
    "FIT_RETURN": "return self",
    "PROB_CHECK": 'if len(context) < self.n - 1: raise ValueError(f"need {self.n - 1} context ids, got {len(context)}")',
    "CONTEXT": "tuple(context[len(context) - self.n + 1 :]) if self.n > 1 else ()",
    "ADD": "self.alpha",
    "ADD_TOTAL": "self.alpha * self.V",
    "PERPLEXITY_CHECK": 'if len(ids) < self.n: raise ValueError(f"need at least {self.n} ids, got {len(ids)}")',
    "PERPLEXITY": "math.exp(sum(nll) / len(nll))",
}


def _ngram(**changes: str) -> str:
    code = _NGRAM
    for key, value in (_NGRAM_RIGHT | changes).items():
        code = code.replace("{" + key + "}", value)
    return code


# name -> (the placeholders it changes, the clauses it breaks)
_NGRAM_MISTAKES = {
    "alpha added without alpha * V in the denominator": ({"ADD_TOTAL": "self.alpha"}, ("add-alpha",)),
    "uses the first n-1 ids of a long context": ({"CONTEXT": "tuple(context[: self.n - 1])"}, ("last-ids",)),
    "perplexity averages over every position": ({"PERPLEXITY": "math.exp(sum(nll) / len(ids))"}, ("perplexity",)),
    "perplexity returns the mean NLL without the exp": ({"PERPLEXITY": "sum(nll) / len(nll)"}, ("perplexity",)),
    "a unigram model keeps the whole context (context[-(n-1):] with n = 1)": (
        {"CONTEXT": "tuple(context[-(self.n - 1):])"},
        ("unigram",),
    ),
    "alpha ignored (always add-one)": ({"ADD": "1", "ADD_TOTAL": "self.V"}, ("add-alpha",)),
    "c(h) counts every occurrence of the context, even at the end": (
        {
            "COUNT_CONTEXT": "pass",
            "FIT_RETURN": (
                "for t in range(len(ids) - self.n + 2):\n"
                "                ctx = tuple(ids[t : t + self.n - 1])\n"
                "                self.h[ctx] = self.h.get(ctx, 0) + 1\n"
                "            return self"
            ),
        },
        ("context-count",),
    ),
    "perplexity returns a tensor (torch.exp)": (
        {"PERPLEXITY": "torch.exp(torch.tensor(sum(nll) / len(nll)))"},
        ("perplexity-forms",),
    ),
    "fit does not return self": ({"FIT_RETURN": "pass"}, ("fit-self",)),
    "no ValueError for bad n, vocab_size or alpha": ({"INIT_CHECK": "pass"}, ("init-error",)),
    "prob accepts a context shorter than n-1": ({"PROB_CHECK": "pass"}, ("prob-error",)),
    "perplexity of too few ids divides by zero": ({"PERPLEXITY_CHECK": "pass"}, ("perplexity-error",)),
    "default alpha of 0.5": ({"ALPHA_DEFAULT": "0.5"}, ("default-alpha",)),
    # list(tensor) holds 0-d tensors, which hash by identity: no count is ever found again
    "fit iterates a tensor without .tolist()": ({"FIT_IDS": "list(ids)"}, ("fit-forms",)),
    "prob iterates a tensor context without .tolist()": ({"PROB_CONTEXT": "list(context)"}, ("prob-forms",)),
}
# A correct Kneser-Ney table; each kneser_ney mistake replaces one of its {PLACEHOLDERS}.
_KN = """
    def kneser_ney_bigram(ids, vocab_size, discount={DEFAULT}):
        if {DISCOUNT_OUTSIDE}:
            raise ValueError("discount must be in [0, 1]")
        ids = torch.as_tensor(ids).long()
        {BIGRAM_CHECK}
        c = torch.zeros(vocab_size, vocab_size, dtype=torch.float64)
        c.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1, dtype=torch.float64), accumulate=True)
        seen = (c > 0).double()
        pcont = {PCONT}
        ca = c.sum(1, keepdim=True)
        backoff = {BACKOFF}
        table = (c - discount).clamp(min=0) / ca.clamp(min=1) + backoff * pcont
        table = {UNSEEN}
        return {RETURN}
"""

_KN_RIGHT = {
    "DEFAULT": "0.75",
    "DISCOUNT_OUTSIDE": "not 0 <= discount <= 1",
    "BIGRAM_CHECK": 'if len(ids) < 2: raise ValueError("need at least two tokens")',
    "PCONT": "seen.sum(0) / seen.sum()",
    "BACKOFF": "discount * seen.sum(1, keepdim=True) / ca.clamp(min=1)",
    "UNSEEN": "torch.where(ca > 0, table, pcont.expand_as(table))",
    "RETURN": "table.float()",
}


def _kn(**changes: str) -> str:
    code = _KN
    for key, value in (_KN_RIGHT | changes).items():
        code = code.replace("{" + key + "}", value)
    return code


# name -> (the placeholders it changes, the hints it must trigger, the clauses it breaks)
_KN_MISTAKES = {
    "unseen history gets a uniform row": (
        {"UNSEEN": "torch.where(ca > 0, table, torch.full_like(table, 1.0 / vocab_size))"},
        (),
        ("unseen",),
    ),
    "a history seen only as the last id gets the formula (a row of zeros), not Pcont": (
        {"UNSEEN": "torch.where(torch.isin(torch.arange(vocab_size), ids)[:, None], table, pcont.expand_as(table))"},
        (),
        ("unseen",),
    ),
    "unigram frequency instead of continuation counts": ({"PCONT": "c.sum(0) / c.sum()"}, (), ("pcont",)),
    "table transposed (column a holds P(. | a))": (
        {"RETURN": "table.T.contiguous().float()"},
        ("table transposed",),
        ("rows",),
    ),
    "no check of the discount": ({"DISCOUNT_OUTSIDE": "False"}, (), ("range",)),
    "a float64 table": ({"RETURN": "table"}, (), ("dtype",)),
    "discount 1 rejected": ({"DISCOUNT_OUTSIDE": "not 0 <= discount < 1"}, (), ("ends",)),
    "backoff weight from the count of a, not its distinct followers": (
        {"BACKOFF": "discount * ca / ca.clamp(min=1)"},
        (),
        ("formula",),
    ),
    "no ValueError for fewer than two tokens": ({"BIGRAM_CHECK": "pass"}, (), ("no-bigram",)),
    "default discount of 0.5": ({"DEFAULT": "0.5"}, (), ("default",)),
}

MISTAKES = [
    # build_vocab
    Variant(
        "build_vocab",
        "ids in order of first appearance",
        {
            "build_vocab": """
        def build_vocab(text):
            chars = list(dict.fromkeys(text))
            stoi = {c: i for i, c in enumerate(chars)}
            return stoi, {i: c for c, i in stoi.items()}
    """
        },
        hints=("ids in order of first appearance",),
        clauses=("sorted-ids",),
    ),
    Variant(
        "build_vocab",
        "ids start at 1",
        {
            "build_vocab": """
        def build_vocab(text):
            chars = sorted(set(text))
            stoi = {c: i + 1 for i, c in enumerate(chars)}
            return stoi, {i: c for c, i in stoi.items()}
    """
        },
        hints=("ids start at 1",),
        clauses=("sorted-ids",),
    ),
    Variant(
        "build_vocab",
        "characters outside ASCII left out",
        {
            "build_vocab": """
        def build_vocab(text):
            chars = sorted(c for c in set(text) if c.isascii())
            stoi = {c: i for i, c in enumerate(chars)}
            return stoi, {i: c for c, i in stoi.items()}
    """
        },
        clauses=("unicode",),
    ),
    Variant(
        "build_vocab",
        "maps returned in the wrong order",
        {
            "build_vocab": """
        def build_vocab(text):
            chars = sorted(set(text))
            return {i: c for i, c in enumerate(chars)}, {c: i for i, c in enumerate(chars)}
    """
        },
        hints=("maps swapped",),
        clauses=("pair",),
    ),
    Variant(
        "build_vocab",
        "sorted without removing duplicates",
        {
            "build_vocab": """
        def build_vocab(text):
            chars = sorted(text)
            stoi = {c: i for i, c in enumerate(chars)}
            itos = {i: c for c, i in stoi.items()}
            return stoi, itos
    """
        },
        hints=("repeated characters numbered",),
        clauses=("distinct",),
    ),
    # encode_decode
    Variant(
        "encode_decode",
        "decode assumes a tensor (ids.tolist())",
        {
            "decode": """
        def decode(ids, itos):
            return "".join(itos[i] for i in ids.tolist())
    """
        },
        clauses=("decode-list",),
    ),
    Variant(
        "encode_decode",
        "unknown characters silently dropped",
        {
            "encode": """
        def encode(text, stoi):
            return [stoi[c] for c in text if c in stoi]
    """
        },
        clauses=("unknown-error",),
    ),
    Variant(
        "encode_decode",
        "KeyError instead of ValueError",
        {
            "encode": """
        def encode(text, stoi):
            return [stoi[c] for c in text]
    """
        },
        clauses=("unknown-error",),
    ),
    Variant(
        "encode_decode",
        "decode cannot take a tensor",
        {
            "decode": """
        def decode(ids, itos):
            return "".join(itos[i] for i in ids)
    """
        },
        clauses=("decode-tensor",),
    ),
    Variant(
        "encode_decode",
        "decode joins with spaces",
        {
            "decode": """
        def decode(ids, itos):
            return " ".join(itos[int(i)] for i in ids)
    """
        },
        clauses=("decode-join",),
    ),
    Variant(
        "encode_decode",
        "encode returns a tensor",
        {
            "encode": """
        def encode(text, stoi):
            for ch in text:
                if ch not in stoi:
                    raise ValueError(f"character {ch!r} is not in the vocabulary")
            return torch.tensor([stoi[ch] for ch in text], dtype=torch.long)
    """
        },
        clauses=("encode-list",),
    ),
    Variant(
        "encode_decode",
        "the ValueError does not name the character",
        {
            "encode": """
        def encode(text, stoi):
            if not set(text) <= set(stoi):
                raise ValueError("the text holds characters outside the vocabulary")
            return [stoi[ch] for ch in text]
    """
        },
        clauses=("error-names",),
    ),
    # train_val_split
    Variant(
        "train_val_split",
        "rounds instead of truncating",
        {
            "train_val_split": """
        def train_val_split(data, val_fraction=0.1):
            if not 0 <= val_fraction < 1:
                raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
            n = round(len(data) * (1 - val_fraction))
            return data[:n], data[n:]
    """
        },
        hints=("training length not int(len * (1 - val_fraction))",),
        clauses=("floor",),
    ),
    Variant(
        "train_val_split",
        "counts the validation part first",
        {
            "train_val_split": """
        def train_val_split(data, val_fraction=0.1):
            if not 0 <= val_fraction < 1:
                raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
            n_val = int(len(data) * val_fraction)
            return data[: len(data) - n_val], data[len(data) - n_val :]
    """
        },
        hints=("training length not int(len * (1 - val_fraction))",),
        clauses=("floor",),
    ),
    Variant(
        "train_val_split",
        "shuffles before splitting",
        {
            "train_val_split": """
        def train_val_split(data, val_fraction=0.1):
            if not 0 <= val_fraction < 1:
                raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
            data = data[torch.randperm(len(data))]
            n = int(len(data) * (1 - val_fraction))
            return data[:n], data[n:]
    """
        },
        clauses=("contiguous",),
    ),
    Variant(
        "train_val_split",
        "validation taken from the start",
        {
            "train_val_split": """
        def train_val_split(data, val_fraction=0.1):
            if not 0 <= val_fraction < 1:
                raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
            n_val = len(data) - int(len(data) * (1 - val_fraction))
            return data[n_val:], data[:n_val]
    """
        },
        clauses=("contiguous",),
    ),
    Variant(
        "train_val_split",
        "default val_fraction of 0.2",
        {
            "train_val_split": """
        def train_val_split(data, val_fraction=0.2):
            if not 0 <= val_fraction < 1:
                raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
            n = int(len(data) * (1 - val_fraction))
            return data[:n], data[n:]
    """
        },
        clauses=("default",),
    ),
    Variant(
        "train_val_split",
        "no check of val_fraction",
        {
            "train_val_split": """
        def train_val_split(data, val_fraction=0.1):
            n = int(len(data) * (1 - val_fraction))
            return data[:n], data[n:]
    """
        },
        clauses=("range",),
    ),
    Variant(
        "train_val_split",
        "slices from the end: data[-0:] is all of it",
        {
            "train_val_split": """
        def train_val_split(data, val_fraction=0.1):
            if not 0 <= val_fraction < 1:
                raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
            n_val = len(data) - int(len(data) * (1 - val_fraction))
            return data[:-n_val], data[-n_val:]
    """
        },
        clauses=("zero",),
    ),
    Variant(
        "train_val_split",
        "parts rebuilt with torch.tensor(list), always int64",
        {
            "train_val_split": """
        def train_val_split(data, val_fraction=0.1):
            if not 0 <= val_fraction < 1:
                raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
            n = int(len(data) * (1 - val_fraction))
            return torch.tensor(data[:n].tolist()), torch.tensor(data[n:].tolist())
    """
        },
        clauses=("dtype",),
    ),
    # get_batch
    Variant(
        "get_batch",
        "last valid start never drawn",
        {
            "get_batch": """
        def get_batch(data, block_size, batch_size, generator=None):
            if len(data) <= block_size:
                raise ValueError("data too short")
            ix = torch.randint(len(data) - block_size - 1, (batch_size,), generator=generator)
            x = torch.stack([data[i : i + block_size] for i in ix]).long()
            y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix]).long()
            return x, y
    """
        },
        clauses=("starts",),
    ),
    Variant(
        "get_batch",
        "targets not shifted",
        {
            "get_batch": """
        def get_batch(data, block_size, batch_size, generator=None):
            if len(data) <= block_size:
                raise ValueError("data too short")
            ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
            x = torch.stack([data[i : i + block_size] for i in ix]).long()
            return x, x.clone()
    """
        },
        clauses=("windows",),
    ),
    Variant(
        "get_batch",
        "ignores the generator",
        {
            "get_batch": """
        def get_batch(data, block_size, batch_size, generator=None):
            if len(data) <= block_size:
                raise ValueError("data too short")
            ix = torch.randint(len(data) - block_size, (batch_size,))
            x = torch.stack([data[i : i + block_size] for i in ix]).long()
            y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix]).long()
            return x, y
    """
        },
        clauses=("generator",),
    ),
    Variant(
        "get_batch",
        "batch shaped (T, B)",
        {
            "get_batch": """
        def get_batch(data, block_size, batch_size, generator=None):
            if len(data) <= block_size:
                raise ValueError("data too short")
            ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
            x = torch.stack([data[i : i + block_size] for i in ix], dim=1).long()
            y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix], dim=1).long()
            return x, y
    """
        },
        hints=("batch shaped (T, B)",),
        clauses=("shape",),
    ),
    Variant(
        "get_batch",
        "consecutive windows from one random start",
        {
            "get_batch": """
        def get_batch(data, block_size, batch_size, generator=None):
            if len(data) <= block_size:
                raise ValueError("data too short")
            start = int(torch.randint(len(data) - block_size - batch_size + 1, (1,), generator=generator))
            x = torch.stack([data[start + b : start + b + block_size] for b in range(batch_size)]).long()
            y = torch.stack([data[start + b + 1 : start + b + block_size + 1] for b in range(batch_size)]).long()
            return x, y
    """
        },
        clauses=("uniform",),
    ),
    Variant(
        "get_batch",
        "one start too many (up to len(data) - T)",
        {
            "get_batch": """
        def get_batch(data, block_size, batch_size, generator=None):
            if len(data) <= block_size:
                raise ValueError("data too short")
            ix = torch.randint(len(data) - block_size + 1, (batch_size,), generator=generator)
            x = torch.stack([data[i : i + block_size] for i in ix]).long()
            y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix]).long()
            return x, y
    """
        },
        clauses=("starts",),
    ),
    Variant(
        "get_batch",
        "x and y keep the dtype of the data",
        {
            "get_batch": """
        def get_batch(data, block_size, batch_size, generator=None):
            if len(data) <= block_size:
                raise ValueError("data too short")
            ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
            x = torch.stack([data[i : i + block_size] for i in ix])
            y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix])
            return x, y
    """
        },
        clauses=("dtype",),
    ),
    Variant(
        "get_batch",
        "no ValueError for data too short",
        {
            "get_batch": """
        def get_batch(data, block_size, batch_size, generator=None):
            ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
            x = torch.stack([data[i : i + block_size] for i in ix]).long()
            y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix]).long()
            return x, y
    """
        },
        clauses=("too-short",),
    ),
    Variant(
        "get_batch",
        "generator required (no default)",
        {
            "get_batch": """
        def get_batch(data, block_size, batch_size, generator):
            if len(data) <= block_size:
                raise ValueError("data too short")
            ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
            x = torch.stack([data[i : i + block_size] for i in ix]).long()
            y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix]).long()
            return x, y
    """
        },
        clauses=("optional",),
    ),
    # ngram: each changes one part of the correct class _NGRAM above
    *(
        Variant("ngram", name, {"NGramLM": _ngram(**changes)}, clauses=clauses)
        for name, (changes, clauses) in _NGRAM_MISTAKES.items()
    ),
    # kneser_ney: each changes one part of the correct function _KN above
    *(
        Variant("kneser_ney", name, {"kneser_ney_bigram": _kn(**changes)}, hints=hints, clauses=clauses)
        for name, (changes, hints, clauses) in _KN_MISTAKES.items()
    ),
    Variant(
        "kneser_ney",
        "plain loops over a tensor's 0-d items (no int())",
        {
            # dict keys of 0-d tensors hash by identity: every pair of a tensor counts as a new bigram type
            "kneser_ney_bigram": """
        def kneser_ney_bigram(ids, vocab_size, discount=0.75):
            if not 0 <= discount <= 1:
                raise ValueError(f"discount {discount} is not in [0, 1]")
            ids = list(ids)
            if len(ids) < 2:
                raise ValueError("fewer than two tokens hold no bigram")
            pairs = {}
            for a, b in zip(ids, ids[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + 1
            before, after, count = [0] * vocab_size, [0] * vocab_size, [0] * vocab_size
            for (a, b), n in pairs.items():
                before[b] += 1
                after[a] += 1
                count[a] += n
            table = torch.zeros(vocab_size, vocab_size)
            for a in range(vocab_size):
                for w in range(vocab_size):
                    cont = before[w] / len(pairs)
                    if count[a] == 0:
                        table[a, w] = cont
                    else:
                        table[a, w] = max(pairs.get((a, w), 0) - discount, 0) / count[a] + discount * after[a] / count[a] * cont
            return table
    """
        },
        clauses=("ids-forms",),
    ),
]

ALTERNATIVES = [
    Variant(
        "build_vocab",
        "list index lookup",
        {
            "build_vocab": """
        def build_vocab(text):
            chars = sorted(list(set(text)))
            stoi = dict((c, chars.index(c)) for c in chars)
            itos = dict(enumerate(chars))
            return stoi, itos
    """
        },
    ),
    Variant(
        "encode_decode",
        "comprehensions with a try block",
        {
            "encode": """
        def encode(text, stoi):
            try:
                return [stoi[c] for c in text]
            except KeyError as err:
                raise ValueError(f"unknown character {err.args[0]!r}") from None
    """,
            "decode": """
        def decode(ids, itos):
            return "".join(map(itos.__getitem__, torch.as_tensor(ids).tolist()))
    """,
        },
    ),
    Variant(
        "train_val_split",
        "torch.split",
        {
            "train_val_split": """
        def train_val_split(data, val_fraction=0.1):
            if val_fraction < 0 or val_fraction >= 1:
                raise ValueError(f"val_fraction {val_fraction} is outside [0, 1)")
            n = int(len(data) * (1 - val_fraction))
            train, val = torch.split(data, [n, len(data) - n])
            return train, val
    """
        },
    ),
    Variant(
        "get_batch",
        "vectorised indexing",
        {
            "get_batch": """
        def get_batch(data, block_size, batch_size, generator=None):
            if block_size >= len(data):
                raise ValueError(f"block_size {block_size} leaves no room for a target in {len(data)} tokens")
            starts = torch.randint(0, len(data) - block_size, (batch_size, 1), generator=generator)
            offsets = torch.arange(block_size)
            return data[starts + offsets].long(), data[starts + offsets + 1].long()
    """
        },
    ),
    Variant(
        "ngram",
        "Counter-based counts",
        {
            "NGramLM": """
        class NGramLM:
            def __init__(self, n, vocab_size, alpha=1.0):
                if n < 1:
                    raise ValueError(f"n must be at least 1, got {n}")
                if vocab_size < 1 or alpha <= 0:
                    raise ValueError(f"need vocab_size >= 1 and alpha > 0, got {vocab_size} and {alpha}")
                self.n, self.V, self.alpha = n, vocab_size, alpha

            def fit(self, ids):
                from collections import Counter

                ids = [int(i) for i in ids]
                grams = [tuple(ids[t - self.n + 1 : t + 1]) for t in range(self.n - 1, len(ids))]
                self.grams = Counter(grams)
                self.ctx = Counter(g[:-1] for g in grams)
                return self

            def prob(self, context, token):
                if len(context) < self.n - 1:
                    raise ValueError(f"the context holds {len(context)} ids, fewer than n-1 = {self.n - 1}")
                ctx = tuple(int(i) for i in context)[-(self.n - 1):] if self.n > 1 else ()
                return (self.grams[ctx + (int(token),)] + self.alpha) / (self.ctx[ctx] + self.alpha * self.V)

            def perplexity(self, ids):
                ids = [int(i) for i in ids]
                if len(ids) < self.n:
                    raise ValueError(f"{len(ids)} ids hold no position with a full context")
                logs = [math.log(self.prob(ids[:t], ids[t])) for t in range(self.n - 1, len(ids))]
                return math.exp(-sum(logs) / len(logs))
    """
        },
    ),
    Variant(
        "ngram",
        "float32 tensors of counts (about 1e-7 off the double-precision reference)",
        {
            "NGramLM": """
        class NGramLM:
            def __init__(self, n, vocab_size, alpha=1.0):
                if n < 1 or vocab_size < 1 or alpha <= 0:
                    raise ValueError(f"bad arguments n={n}, vocab_size={vocab_size}, alpha={alpha}")
                self.n, self.V, self.alpha = n, vocab_size, alpha
                self.rows = {}

            def fit(self, ids):
                ids = torch.as_tensor(ids).tolist()
                self.rows = {}
                for t in range(self.n - 1, len(ids)):
                    row = self.rows.setdefault(tuple(ids[t - self.n + 1 : t]), torch.zeros(self.V))
                    row[ids[t]] += 1
                return self

            def _row(self, context):
                context = torch.as_tensor(context, dtype=torch.long).tolist()
                if len(context) < self.n - 1:
                    raise ValueError(f"the context holds {len(context)} ids, fewer than n-1 = {self.n - 1}")
                counts = self.rows.get(tuple(context[len(context) - self.n + 1 :]) if self.n > 1 else (), torch.zeros(self.V))
                return (counts + self.alpha) / (counts.sum() + self.alpha * self.V)

            def prob(self, context, token):
                return self._row(context)[int(token)].item()

            def perplexity(self, ids):
                ids = torch.as_tensor(ids).tolist()
                if len(ids) < self.n:
                    raise ValueError(f"{len(ids)} ids hold no position with a full context")
                logs = torch.stack([self._row(ids[:t])[ids[t]].log() for t in range(self.n - 1, len(ids))])
                return torch.exp(-logs.mean()).item()
    """
        },
    ),
    Variant(
        "kneser_ney",
        "plain Python loops",
        {
            "kneser_ney_bigram": """
        def kneser_ney_bigram(ids, vocab_size, discount=0.75):
            if discount < 0 or discount > 1:
                raise ValueError(f"discount {discount} is not in [0, 1]")
            ids = [int(i) for i in ids]
            if len(ids) < 2:
                raise ValueError("fewer than two tokens hold no bigram")
            pairs = {}
            for a, b in zip(ids, ids[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + 1
            before = [0] * vocab_size
            after = [0] * vocab_size
            count = [0] * vocab_size
            for (a, b), n in pairs.items():
                before[b] += 1
                after[a] += 1
                count[a] += n
            types = len(pairs)
            table = torch.zeros(vocab_size, vocab_size)
            for a in range(vocab_size):
                for w in range(vocab_size):
                    cont = before[w] / types
                    if count[a] == 0:
                        table[a, w] = cont
                    else:
                        table[a, w] = max(pairs.get((a, w), 0) - discount, 0) / count[a] + discount * after[a] / count[a] * cont
            return table
    """
        },
    ),
]
