"""Public tests of stage 05_multihead: students run these in the notebook with check()."""

import torch

from autograder.kit import Suite, catch, close, equal, raises, randn, satisfies, set_parameters

suite = Suite(public=True)

# Sizes that all differ (B=2, T=3, C=20, H=4, D=5), so that a swapped axis shows up.
PB, PT, PC, PH = 2, 3, 20, 4
PD = PC // PH


def _where_from(value, t_len, c_len):
    """For an arange input of shape (B, T, C): the (b, t, c) a value came from."""
    v = int(value)
    return v // (t_len * c_len), (v // c_len) % t_len, v % c_len


def _split_layout(got):
    problem = None if type(got) is torch.Tensor else f"expected a torch.Tensor, got {type(got).__name__}"
    if problem is None and tuple(got.shape) != (PB, PH, PT, PD):
        problem = f"expected shape (B, H, T, D) = {(PB, PH, PT, PD)}, got {tuple(got.shape)}"
    if problem:
        return problem
    for b in range(PB):
        for h in range(PH):
            for t in range(PT):
                for d in range(PD):
                    src = _where_from(got[b, h, t, d], PT, PC)
                    if src != (b, t, h * PD + d):
                        return (
                            f"heads[{b}, {h}, {t}, {d}] should be feature {h * PD + d} of x[{b}, {t}] "
                            f"(head {h} holds features {h * PD}..{h * PD + PD - 1} of every position), "
                            f"but it is feature {src[2]} of x[{src[0]}, {src[1]}]"
                        )
    return None


@suite.case("heads", "split_heads: (2, 3, 20) with 4 heads gives (2, 4, 3, 5), head h holds features h*5 .. h*5+4", points=1, check=satisfies(_split_layout))
def _(ns):
    x = torch.arange(PB * PT * PC, dtype=torch.float32).view(PB, PT, PC)
    return ns.split_heads(x, PH)


def _merge_layout(got):
    problem = None if type(got) is torch.Tensor else f"expected a torch.Tensor, got {type(got).__name__}"
    if problem is None and tuple(got.shape) != (PB, PT, PC):
        problem = f"expected shape (B, T, H*D) = {(PB, PT, PC)}, got {tuple(got.shape)}"
    if problem:
        return problem
    for b in range(PB):
        for t in range(PT):
            for c in range(PC):
                # the input was arange over (B, H, T, D): value = ((b*H + h)*T + t)*D + d
                v = int(got[b, t, c])
                src = (v // (PH * PT * PD), (v // (PT * PD)) % PH, (v // PD) % PT, v % PD)
                if src != (b, c // PD, t, c % PD):
                    return (
                        f"merged[{b}, {t}, {c}] should be y[{b}, {c // PD}, {t}, {c % PD}] "
                        f"(head {c // PD} at position {t}), but it is y[{src[0]}, {src[1]}, {src[2]}, {src[3]}]"
                    )
    return None


@suite.case("heads", "merge_heads: (2, 4, 3, 5) gives (2, 3, 20) with the heads side by side", points=1, check=satisfies(_merge_layout))
def _(ns):
    y = torch.arange(PB * PH * PT * PD, dtype=torch.float32).view(PB, PH, PT, PD)
    return ns.merge_heads(y)


@suite.case("heads", "merge_heads(split_heads(x)) gives x back", points=1, check=close(rtol=0.0, atol=0.0), expected=randn(PB, PT, PC, seed=5))
def _(ns):
    return ns.merge_heads(ns.split_heads(randn(PB, PT, PC, seed=5), PH))


@suite.case("heads", "split_heads raises ValueError when the heads do not divide C", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.split_heads, randn(PB, PT, PC, seed=6), 3)


# The tests of MultiHeadAttention below use ONE head where they look at values: with a
# single head, split_heads and merge_heads have nothing to rearrange, so these tests do
# not depend on them (they have their own tests above). Several heads are tested when
# your work is graded; the demonstration after this check compares several heads with
# PyTorch's own module.


@suite.case("mha", "four nn.Linear(C, C) projections q_proj, k_proj, v_proj, out_proj", points=1, check=equal(), expected=[("Linear", [20, 20], [20])] * 4)
def _(ns):
    module = ns.MultiHeadAttention(PC, PH)
    found = []
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        layer = getattr(module, name)
        found.append((type(layer).__name__, list(layer.weight.shape), list(layer.bias.shape)))
    return found


@suite.case("mha", "embed_dim that num_heads does not divide raises ValueError", points=1, check=raises("ValueError"))
def _(ns):
    return catch(ns.MultiHeadAttention, PC, 3)


def _one_head(ns, seed):
    module = ns.MultiHeadAttention(PC, 1)
    set_parameters(module, seed)
    return module.eval()


@suite.case("mha", "one head: output (B, T, C) and weights (B, 1, T, T)", points=1, check=equal(), expected=([PB, PT, PC], [PB, 1, PT, PT], [PB, PT, PC]))
def _(ns):
    module = _one_head(ns, 1)
    x = randn(PB, PT, PC, seed=7)
    out, weights = module(x, return_weights=True)
    return list(out.shape), list(weights.shape), list(module(x).shape)


def _same_as_torch(got):
    mine, theirs, my_weights, their_weights = got
    for label, a, b in (("output", mine, theirs), ("weights", my_weights, their_weights)):
        verdict = close(rtol=1e-4, atol=1e-5)(a, b, True)
        if not verdict.passed:
            return f"your {label} and nn.MultiheadAttention's (same weights) do not agree: {verdict.message}"
    return None


@suite.case("mha", "one head with a causal mask equals nn.MultiheadAttention with the same weights", points=2, check=satisfies(_same_as_torch))
def _(ns):
    module = _one_head(ns, 2)
    theirs = torch.nn.MultiheadAttention(PC, 1, batch_first=True).eval()
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([module.q_proj.weight, module.k_proj.weight, module.v_proj.weight]))
        theirs.in_proj_bias.copy_(torch.cat([module.q_proj.bias, module.k_proj.bias, module.v_proj.bias]))
        theirs.out_proj.weight.copy_(module.out_proj.weight)
        theirs.out_proj.bias.copy_(module.out_proj.bias)
    x = randn(PB, PT, PC, seed=8)
    causal = torch.ones(PT, PT, dtype=torch.bool).triu(1)
    out, weights = module(x, mask=causal, return_weights=True)
    their_out, their_weights = theirs(x, x, x, attn_mask=causal, need_weights=True, average_attn_weights=False)
    return out, their_out, weights, their_weights


def _causal_property(got):
    early, late = got
    if not early <= 1e-6:
        return f"changing the last token changed the outputs at earlier positions (by up to {early:.3g}): the mask is not applied as intended"
    if not late >= 1e-6:
        return "changing the last token did not change its own output"
    return None


@suite.case("mha", "one head with a causal mask: changing the last token leaves earlier outputs alone", points=1, check=satisfies(_causal_property))
def _(ns):
    module = _one_head(ns, 3)
    x = randn(PB, PT, PC, seed=9)
    changed = x.clone()
    changed[:, -1] = randn(PB, PC, seed=10)
    causal = torch.ones(PT, PT, dtype=torch.bool).triu(1)
    with torch.no_grad():
        a, b = module(x, mask=causal), module(changed, mask=causal)
    return float((a[:, :-1] - b[:, :-1]).abs().max()), float((a[:, -1] - b[:, -1]).abs().max())
