"""Statistics both loops share: levels, estimates, intervals, paired tests, PPI++ and
confidence sequences.

Neutral ground: nothing here knows a leaderboard, a policy, MLflow or the rest of tipbench;
the bench loop (`compare`, `human_tier`, `promote`) and the policy loop read their figures from
here. What lives where:

- `ALPHA`, `CONFIDENCE`, `Z`, `Estimate`, `json_number`, `json_numbers` (`_estimate`): the
  levels, the one estimate-with-interval type (and its text), NaN- and infinity-safe numbers
  for JSON;
- `Condition`, `all_passed`, `gate_fields` (`_gate`): the shape of both promotion gates
  and the one way they write it;
- `mean_interval`, `paired_comparison`, `PairedComparison`, `verdict` (`_sign_flip`): exact
  sign-flip intervals and tests on few values, the percentile bootstrap on more (Hartigan,
  1969), a paired comparison and its JSON;
- `Judged`, `Sample`, `estimate` (`_ppi`, `_moments`): prediction-powered means of many
  automatic scores corrected by a known sample of human ones (PPI++, Angelopoulos, Duchi
  and Zrnic, 2023; active inference, Zrnic and Candès, 2024), the scenario the unit;
- `differences` (`_paired`): two such estimates paired by scenario, and t quantiles;
- `decide_leader`, `sequence_radius`, `sequence_estimate` (`_confseq`): confidence
  sequences valid at every look up to the experiment's horizon (Lan and DeMets, 1983), the
  leader they decide, a comparison with the best (Hsu, 1996), and one sequence as an
  `Estimate`;
- `resolution_variance` (`_floor`): the variance floor an integer scale leaves (Sheppard).
"""

from tipbench.stats._confseq import (
    MIN_DF,
    LeaderDecision,
    Sequences,
    cell_scenarios,
    comparable_cells,
    decide_leader,
    horizon_boundary,
    scenarios_needed,
    sequence_estimate,
    sequence_radius,
    sequences,
    small_sample_factor,
    smallest_gap,
)
from tipbench.stats._estimate import (
    ALPHA,
    CONFIDENCE,
    Estimate,
    IntervalMethod,
    Z,
    json_number,
    json_numbers,
)
from tipbench.stats._floor import STEP_VARIANCE, resolution_variance
from tipbench.stats._gate import Condition, all_passed, gate_fields
from tipbench.stats._judged import Judged, Sample
from tipbench.stats._paired import (
    Difference,
    PairPool,
    differences,
    half_width,
    pool_pairs,
    t_p_value,
    t_quantile,
)
from tipbench.stats._ppi import Estimates, estimate
from tipbench.stats._sign_flip import (
    EXACT_MAX_PAIRS,
    PairedComparison,
    Verdict,
    bootstrap_mean_ci,
    mean_interval,
    min_attainable_p,
    paired_comparison,
    pairs_needed,
    sign_flip_interval,
    tied,
    verdict,
)

__all__ = [
    "ALPHA",
    "CONFIDENCE",
    "EXACT_MAX_PAIRS",
    "MIN_DF",
    "STEP_VARIANCE",
    "Condition",
    "Difference",
    "Estimate",
    "Estimates",
    "IntervalMethod",
    "Judged",
    "LeaderDecision",
    "PairPool",
    "PairedComparison",
    "Sample",
    "Sequences",
    "Verdict",
    "Z",
    "all_passed",
    "bootstrap_mean_ci",
    "cell_scenarios",
    "comparable_cells",
    "decide_leader",
    "differences",
    "estimate",
    "gate_fields",
    "half_width",
    "horizon_boundary",
    "json_number",
    "json_numbers",
    "mean_interval",
    "min_attainable_p",
    "paired_comparison",
    "pairs_needed",
    "pool_pairs",
    "resolution_variance",
    "scenarios_needed",
    "sequence_estimate",
    "sequence_radius",
    "sequences",
    "sign_flip_interval",
    "small_sample_factor",
    "smallest_gap",
    "t_p_value",
    "t_quantile",
    "tied",
    "verdict",
]
