"""The loss-curve PNG of a run."""

from __future__ import annotations

from pathlib import Path


def plot_losses(
    history: dict[str, list], path: Path, title: str = "", best: tuple[int | None, float | None] = (None, None)
) -> Path:
    """Plot the batch losses, the training estimate and the exact validation loss against the step,
    and mark ``best = (step, loss)``, the evaluation whose weights were kept; save ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    if history["batch_loss"]:
        ax.plot(history["batch_step"], history["batch_loss"], color="0.75", lw=0.8, label="batch (train)")
    ax.plot(history["step"], history["train_loss"], "o-", ms=3, label="train (estimate)")
    ax.plot(history["step"], history["val_loss"], "o-", ms=3, label="validation (exact)")
    best_step, best_val = best
    if best_step is not None:
        ax.axvline(best_step, color="0.4", ls="--", lw=0.8)
        ax.plot([best_step], [best_val], "*", ms=12, color="C3", label=f"kept: step {best_step}, {best_val:.4f}")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats per token)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
