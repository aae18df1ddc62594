"""Realistic mistakes and correct alternatives for stage 01_tokenisation."""

from autograder.authoring.catalogue import Variant

MISTAKES = [
    # build_vocab
    Variant("build_vocab", "ids in order of first appearance", {"build_vocab": '''
        def build_vocab(text):
            chars = list(dict.fromkeys(text))
            stoi = {c: i for i, c in enumerate(chars)}
            return stoi, {i: c for c, i in stoi.items()}
    '''}),
    Variant("build_vocab", "ids start at 1", {"build_vocab": '''
        def build_vocab(text):
            chars = sorted(set(text))
            stoi = {c: i + 1 for i, c in enumerate(chars)}
            return stoi, {i: c for c, i in stoi.items()}
    '''}),
    Variant("build_vocab", "maps returned in the wrong order", {"build_vocab": '''
        def build_vocab(text):
            chars = sorted(set(text))
            return {i: c for i, c in enumerate(chars)}, {c: i for i, c in enumerate(chars)}
    '''}),
    Variant("build_vocab", "sorted without removing duplicates", {"build_vocab": '''
        def build_vocab(text):
            chars = sorted(text)
            stoi = {c: i for i, c in enumerate(chars)}
            itos = {i: c for c, i in stoi.items()}
            return stoi, itos
    '''}),
    # encode_decode
    Variant("encode_decode", "unknown characters silently dropped", {"encode": '''
        def encode(text, stoi):
            return [stoi[c] for c in text if c in stoi]
    '''}),
    Variant("encode_decode", "KeyError instead of ValueError", {"encode": '''
        def encode(text, stoi):
            return [stoi[c] for c in text]
    '''}),
    Variant("encode_decode", "decode cannot take a tensor", {"decode": '''
        def decode(ids, itos):
            return "".join(itos[i] for i in ids)
    '''}),
    Variant("encode_decode", "decode joins with spaces", {"decode": '''
        def decode(ids, itos):
            return " ".join(itos[int(i)] for i in ids)
    '''}),
    # train_val_split
    Variant("train_val_split", "rounds instead of truncating", {"train_val_split": '''
        def train_val_split(data, val_fraction=0.1):
            n = round(len(data) * (1 - val_fraction))
            return data[:n], data[n:]
    '''}),
    Variant("train_val_split", "counts the validation part first", {"train_val_split": '''
        def train_val_split(data, val_fraction=0.1):
            n_val = int(len(data) * val_fraction)
            return data[: len(data) - n_val], data[len(data) - n_val :]
    '''}),
    Variant("train_val_split", "shuffles before splitting", {"train_val_split": '''
        def train_val_split(data, val_fraction=0.1):
            data = data[torch.randperm(len(data))]
            n = int(len(data) * (1 - val_fraction))
            return data[:n], data[n:]
    '''}),
    Variant("train_val_split", "validation taken from the start", {"train_val_split": '''
        def train_val_split(data, val_fraction=0.1):
            n_val = len(data) - int(len(data) * (1 - val_fraction))
            return data[n_val:], data[:n_val]
    '''}),
    # get_batch
    Variant("get_batch", "last valid start never drawn", {"get_batch": '''
        def get_batch(data, block_size, batch_size, generator=None):
            ix = torch.randint(len(data) - block_size - 1, (batch_size,), generator=generator)
            x = torch.stack([data[i : i + block_size] for i in ix])
            y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix])
            return x, y
    '''}),
    Variant("get_batch", "targets not shifted", {"get_batch": '''
        def get_batch(data, block_size, batch_size, generator=None):
            ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
            x = torch.stack([data[i : i + block_size] for i in ix])
            return x, x.clone()
    '''}),
    Variant("get_batch", "ignores the generator", {"get_batch": '''
        def get_batch(data, block_size, batch_size, generator=None):
            ix = torch.randint(len(data) - block_size, (batch_size,))
            x = torch.stack([data[i : i + block_size] for i in ix])
            y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix])
            return x, y
    '''}),
    Variant("get_batch", "batch shaped (T, B)", {"get_batch": '''
        def get_batch(data, block_size, batch_size, generator=None):
            ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
            x = torch.stack([data[i : i + block_size] for i in ix], dim=1)
            y = torch.stack([data[i + 1 : i + block_size + 1] for i in ix], dim=1)
            return x, y
    '''}),
    Variant("get_batch", "consecutive windows from one random start", {"get_batch": '''
        def get_batch(data, block_size, batch_size, generator=None):
            start = int(torch.randint(len(data) - block_size - batch_size + 1, (1,), generator=generator))
            x = torch.stack([data[start + b : start + b + block_size] for b in range(batch_size)])
            y = torch.stack([data[start + b + 1 : start + b + block_size + 1] for b in range(batch_size)])
            return x, y
    '''}),
    # ngram
    Variant("ngram", "alpha added without alpha * V in the denominator", {"NGramLM": '''
        class NGramLM:
            def __init__(self, n, vocab_size, alpha=1.0):
                self.n, self.V, self.alpha = n, vocab_size, alpha

            def fit(self, ids):
                ids = list(ids.tolist() if isinstance(ids, torch.Tensor) else ids)
                self.c, self.h = {}, {}
                for t in range(self.n - 1, len(ids)):
                    ctx = tuple(ids[t - self.n + 1 : t])
                    self.c[ctx + (ids[t],)] = self.c.get(ctx + (ids[t],), 0) + 1
                    self.h[ctx] = self.h.get(ctx, 0) + 1
                return self

            def prob(self, context, token):
                context = list(context.tolist() if isinstance(context, torch.Tensor) else context)
                ctx = tuple(context[len(context) - self.n + 1 :]) if self.n > 1 else ()
                return (self.c.get(ctx + (token,), 0) + self.alpha) / (self.h.get(ctx, 0) + self.alpha)

            def perplexity(self, ids):
                ids = list(ids.tolist() if isinstance(ids, torch.Tensor) else ids)
                nll = [-math.log(self.prob(ids[t - self.n + 1 : t], ids[t])) for t in range(self.n - 1, len(ids))]
                return math.exp(sum(nll) / len(nll))
    '''}),
    Variant("ngram", "uses the first n-1 ids of a long context", {"NGramLM": '''
        class NGramLM:
            def __init__(self, n, vocab_size, alpha=1.0):
                self.n, self.V, self.alpha = n, vocab_size, alpha

            def fit(self, ids):
                ids = list(ids.tolist() if isinstance(ids, torch.Tensor) else ids)
                self.c, self.h = {}, {}
                for t in range(self.n - 1, len(ids)):
                    ctx = tuple(ids[t - self.n + 1 : t])
                    self.c[ctx + (ids[t],)] = self.c.get(ctx + (ids[t],), 0) + 1
                    self.h[ctx] = self.h.get(ctx, 0) + 1
                return self

            def prob(self, context, token):
                context = list(context.tolist() if isinstance(context, torch.Tensor) else context)
                ctx = tuple(context[: self.n - 1])
                return (self.c.get(ctx + (token,), 0) + self.alpha) / (self.h.get(ctx, 0) + self.alpha * self.V)

            def perplexity(self, ids):
                ids = list(ids.tolist() if isinstance(ids, torch.Tensor) else ids)
                nll = [-math.log(self.prob(ids[t - self.n + 1 : t], ids[t])) for t in range(self.n - 1, len(ids))]
                return math.exp(sum(nll) / len(nll))
    '''}),
    Variant("ngram", "perplexity averages over every position", {"NGramLM": '''
        class NGramLM:
            def __init__(self, n, vocab_size, alpha=1.0):
                self.n, self.V, self.alpha = n, vocab_size, alpha

            def fit(self, ids):
                ids = list(ids.tolist() if isinstance(ids, torch.Tensor) else ids)
                self.c, self.h = {}, {}
                for t in range(self.n - 1, len(ids)):
                    ctx = tuple(ids[t - self.n + 1 : t])
                    self.c[ctx + (ids[t],)] = self.c.get(ctx + (ids[t],), 0) + 1
                    self.h[ctx] = self.h.get(ctx, 0) + 1
                return self

            def prob(self, context, token):
                context = list(context.tolist() if isinstance(context, torch.Tensor) else context)
                ctx = tuple(context[len(context) - self.n + 1 :]) if self.n > 1 else ()
                return (self.c.get(ctx + (token,), 0) + self.alpha) / (self.h.get(ctx, 0) + self.alpha * self.V)

            def perplexity(self, ids):
                ids = list(ids.tolist() if isinstance(ids, torch.Tensor) else ids)
                nll = [-math.log(self.prob(ids[t - self.n + 1 : t], ids[t])) for t in range(self.n - 1, len(ids))]
                return math.exp(sum(nll) / len(ids))
    '''}),
    Variant("ngram", "perplexity returns the mean NLL without the exp", {"NGramLM": '''
        class NGramLM:
            def __init__(self, n, vocab_size, alpha=1.0):
                self.n, self.V, self.alpha = n, vocab_size, alpha

            def fit(self, ids):
                ids = list(ids.tolist() if isinstance(ids, torch.Tensor) else ids)
                self.c, self.h = {}, {}
                for t in range(self.n - 1, len(ids)):
                    ctx = tuple(ids[t - self.n + 1 : t])
                    self.c[ctx + (ids[t],)] = self.c.get(ctx + (ids[t],), 0) + 1
                    self.h[ctx] = self.h.get(ctx, 0) + 1
                return self

            def prob(self, context, token):
                context = list(context.tolist() if isinstance(context, torch.Tensor) else context)
                ctx = tuple(context[len(context) - self.n + 1 :]) if self.n > 1 else ()
                return (self.c.get(ctx + (token,), 0) + self.alpha) / (self.h.get(ctx, 0) + self.alpha * self.V)

            def perplexity(self, ids):
                ids = list(ids.tolist() if isinstance(ids, torch.Tensor) else ids)
                nll = [-math.log(self.prob(ids[t - self.n + 1 : t], ids[t])) for t in range(self.n - 1, len(ids))]
                return sum(nll) / len(nll)
    '''}),
    # kneser_ney
    Variant("kneser_ney", "unseen history gets a uniform row", {"kneser_ney_bigram": '''
        def kneser_ney_bigram(ids, vocab_size, discount=0.75):
            if not 0 <= discount <= 1:
                raise ValueError("discount must be in [0, 1]")
            ids = torch.as_tensor(ids).long()
            c = torch.zeros(vocab_size, vocab_size, dtype=torch.float64)
            c.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1, dtype=torch.float64), accumulate=True)
            seen = (c > 0).double()
            pcont = seen.sum(0) / seen.sum()
            ca = c.sum(1, keepdim=True)
            table = (c - discount).clamp(min=0) / ca.clamp(min=1) + discount * seen.sum(1, keepdim=True) / ca.clamp(min=1) * pcont
            table[ca.squeeze(1) == 0] = 1.0 / vocab_size
            return table.float()
    '''}),
    Variant("kneser_ney", "unigram frequency instead of continuation counts", {"kneser_ney_bigram": '''
        def kneser_ney_bigram(ids, vocab_size, discount=0.75):
            if not 0 <= discount <= 1:
                raise ValueError("discount must be in [0, 1]")
            ids = torch.as_tensor(ids).long()
            c = torch.zeros(vocab_size, vocab_size, dtype=torch.float64)
            c.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1, dtype=torch.float64), accumulate=True)
            seen = (c > 0).double()
            pcont = c.sum(0) / c.sum()
            ca = c.sum(1, keepdim=True)
            table = (c - discount).clamp(min=0) / ca.clamp(min=1) + discount * seen.sum(1, keepdim=True) / ca.clamp(min=1) * pcont
            return torch.where(ca > 0, table, pcont.expand_as(table)).float()
    '''}),
    Variant("kneser_ney", "table transposed (column a holds P(. | a))", {"kneser_ney_bigram": '''
        def kneser_ney_bigram(ids, vocab_size, discount=0.75):
            if not 0 <= discount <= 1:
                raise ValueError("discount must be in [0, 1]")
            ids = torch.as_tensor(ids).long()
            c = torch.zeros(vocab_size, vocab_size, dtype=torch.float64)
            c.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1, dtype=torch.float64), accumulate=True)
            seen = (c > 0).double()
            pcont = seen.sum(0) / seen.sum()
            ca = c.sum(1, keepdim=True)
            table = (c - discount).clamp(min=0) / ca.clamp(min=1) + discount * seen.sum(1, keepdim=True) / ca.clamp(min=1) * pcont
            return torch.where(ca > 0, table, pcont.expand_as(table)).T.contiguous().float()
    '''}),
    Variant("kneser_ney", "no check of the discount", {"kneser_ney_bigram": '''
        def kneser_ney_bigram(ids, vocab_size, discount=0.75):
            ids = torch.as_tensor(ids).long()
            c = torch.zeros(vocab_size, vocab_size, dtype=torch.float64)
            c.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1, dtype=torch.float64), accumulate=True)
            seen = (c > 0).double()
            pcont = seen.sum(0) / seen.sum()
            ca = c.sum(1, keepdim=True)
            table = (c - discount).clamp(min=0) / ca.clamp(min=1) + discount * seen.sum(1, keepdim=True) / ca.clamp(min=1) * pcont
            return torch.where(ca > 0, table, pcont.expand_as(table)).float()
    '''}),
]

ALTERNATIVES = [
    Variant("build_vocab", "list index lookup", {"build_vocab": '''
        def build_vocab(text):
            chars = sorted(list(set(text)))
            stoi = dict((c, chars.index(c)) for c in chars)
            itos = dict(enumerate(chars))
            return stoi, itos
    '''}),
    Variant("encode_decode", "comprehensions with a try block", {"encode": '''
        def encode(text, stoi):
            try:
                return [stoi[c] for c in text]
            except KeyError as err:
                raise ValueError(f"unknown character {err.args[0]!r}") from None
    ''', "decode": '''
        def decode(ids, itos):
            return "".join(map(itos.__getitem__, torch.as_tensor(ids).tolist()))
    '''}),
    Variant("train_val_split", "torch.split", {"train_val_split": '''
        def train_val_split(data, val_fraction=0.1):
            n = int(len(data) * (1 - val_fraction))
            train, val = torch.split(data, [n, len(data) - n])
            return train, val
    '''}),
    Variant("get_batch", "vectorised indexing", {"get_batch": '''
        def get_batch(data, block_size, batch_size, generator=None):
            starts = torch.randint(0, len(data) - block_size, (batch_size, 1), generator=generator)
            offsets = torch.arange(block_size)
            return data[starts + offsets].long(), data[starts + offsets + 1].long()
    '''}),
    Variant("ngram", "Counter-based counts", {"NGramLM": '''
        class NGramLM:
            def __init__(self, n, vocab_size, alpha=1.0):
                self.n, self.V, self.alpha = n, vocab_size, alpha

            def fit(self, ids):
                from collections import Counter

                ids = [int(i) for i in ids]
                grams = [tuple(ids[t - self.n + 1 : t + 1]) for t in range(self.n - 1, len(ids))]
                self.grams = Counter(grams)
                self.ctx = Counter(g[:-1] for g in grams)
                return self

            def prob(self, context, token):
                ctx = tuple(int(i) for i in context)[-(self.n - 1):] if self.n > 1 else ()
                return (self.grams[ctx + (int(token),)] + self.alpha) / (self.ctx[ctx] + self.alpha * self.V)

            def perplexity(self, ids):
                ids = [int(i) for i in ids]
                logs = [math.log(self.prob(ids[:t], ids[t])) for t in range(self.n - 1, len(ids))]
                return math.exp(-sum(logs) / len(logs))
    '''}),
    Variant("kneser_ney", "plain Python loops", {"kneser_ney_bigram": '''
        def kneser_ney_bigram(ids, vocab_size, discount=0.75):
            if discount < 0 or discount > 1:
                raise ValueError(f"discount {discount} is not in [0, 1]")
            ids = [int(i) for i in ids]
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
    '''}),
]
