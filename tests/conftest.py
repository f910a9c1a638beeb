"""Shared fixtures. Each area keeps its fixtures in its own module under tests/fixtures/."""
pytest_plugins = [
    "tests.fixtures.paper",
    "tests.fixtures.service",
    "tests.fixtures.cluster",
    "tests.fixtures.spark",
    "tests.fixtures.bench",
]
