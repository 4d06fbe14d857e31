import pytest

from tests.functional import cloud as cloud_module


@pytest.fixture
def cloud():
    cloud = cloud_module.Cloud().start()
    try:
        yield cloud
    finally:
        cloud.stop()
