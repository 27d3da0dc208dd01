"""Validation of the naturalness scorers on perturbed Switchboard pairs (`python -m naturalness validate`).

- `generators`: the three independently written pair generators (the builder, the crosscheck
  generator with and without equal-length crops, the blind generator), each in both forms of
  "hold instead of shift" (mute: the answer silenced; excise: the answer cut out).
- `comparators`: the reference table's context-free yardsticks, the duration likelihood and the
  naive rule, scored beside the registered scorers.
- `run`: builds the pairs, scores them and writes one result file per generator and form to
  `results/` (committed).
- `tables`: the model card's validation tables, rendered from those result files only.
"""
