import os
import tempfile

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache():
    """Keep test builds out of the user's cache."""
    with tempfile.TemporaryDirectory(prefix="loopcost-test-cache-") as d:
        old = os.environ.get("LOOPCOST_CACHE_DIR")
        os.environ["LOOPCOST_CACHE_DIR"] = d
        yield d
        if old is None:
            os.environ.pop("LOOPCOST_CACHE_DIR", None)
        else:
            os.environ["LOOPCOST_CACHE_DIR"] = old
