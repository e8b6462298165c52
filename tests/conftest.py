"""Shared fixtures: ``backend`` runs a test once per built kernel backend.

A test that takes ``backend`` runs inside ``minitorch.backends.using(name)`` for every name in
``minitorch.backends.available`` ("numpy" always, "c" when the extension is built); the fixture's
value is that name. Tests that parametrize ``backend`` themselves override this fixture.
"""
import pytest

import minitorch


@pytest.fixture(params=sorted(minitorch.backends.available))
def backend(request):
    with minitorch.backends.using(request.param):
        yield request.param
