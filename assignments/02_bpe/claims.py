"""The numbers 02's notebook states, each with the measurement that makes it true
(``autograder.authoring.claims``; measured by ``test_claims.py``).

The efficiency ratios take minutes to measure (every learner of the catalogue graded
through the engine): ``benchmarks/bpe_efficiency.py`` measures them and records them in
``benchmarks/RESULTS_bpe_efficiency.json``.
"""

from autograder.authoring.claims import Claim, recorded

RATIOS = "benchmarks/RESULTS_bpe_efficiency.json"

CLAIMS = [
    Claim("needs about 2 to 8 calibration times", recorded(RATIOS, "summary", "fast_min"), low=1.5, high=2.5),
    Claim("needs about 2 to 8 calibration times", recorded(RATIOS, "summary", "fast_max"), low=7.0, high=9.0),
    Claim("word after each merge need more than 30", recorded(RATIOS, "summary", "slow_min"), low=30, high=1e9),
]
