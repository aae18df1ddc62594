"""The numbers 08's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``).

The one figure is the loss of stage 07's CPU real run, whose model section 4's demo
wrote with: it takes many minutes of CPU, so it is read from the results
``benchmarks/real_run_cpu.py`` recorded in ``benchmarks/RESULTS_real_run.json``.
"""

from autograder.authoring.claims import Claim, recorded

REAL_RUN = "benchmarks/RESULTS_real_run.json"

CLAIMS = [
    Claim(
        "its CPU model, exact validation loss 1.526",
        recorded(REAL_RUN, "real_run", "exact_val_loss"),
        low=1.5255,
        high=1.5265,
    ),
]
