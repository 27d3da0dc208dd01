"""Moved: the validation of the naturalness scorers is `python -m naturalness validate --swb DIR`."""

import sys

sys.exit("benchmarks/turnnat_validation.py moved: run `python -m naturalness validate --swb DIR` "
         "(naturalness/validation/)")
