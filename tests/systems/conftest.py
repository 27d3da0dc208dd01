"""The studies' fixtures the systems' tests share (a database engine for calls made through the
call manager)."""

from tests.studies.conftest import engine  # noqa: F401  (a pytest fixture, found by its name)
