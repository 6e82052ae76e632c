"""Judge (phase B): the human and automatic tiers and the agreement between them."""

from tipbench.judge._agreement import (
    Agreement,
    agreement,
    krippendorff_alpha_ordinal,
    quadratic_weighted_kappa,
)

__all__ = [
    "Agreement",
    "agreement",
    "krippendorff_alpha_ordinal",
    "quadratic_weighted_kappa",
]
