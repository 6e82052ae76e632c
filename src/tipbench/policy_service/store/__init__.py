"""The policy service's state: one narrow interface (`StateStore`) over the decision log,
the models, the profiles and the serving config, with its SQL in one class and its two
dialects (SQLite, PostgreSQL). The public names are `tipbench.policy_service`'s."""
