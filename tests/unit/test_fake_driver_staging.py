"""The fake driver's staging lines: a bitstream or firmware image that
waits, fails, or waits then fails (a late failure, issue 34)."""

import pytest

from cyborg_like.common import exception
from cyborg_like.conf import CONF
from cyborg_like.drivers import fake


@pytest.fixture
def slept(monkeypatch):
    waits = []
    monkeypatch.setattr(fake.time, 'sleep', waits.append)
    return waits


@pytest.mark.parametrize('image, waits, failure', [
    (b'SLEEP 7\nFAIL bitstream rejected by the shell\n\x00\x01', [7.0],
     'bitstream rejected by the shell'),
    (b'FAIL\nSLEEP 7\n', [], 'programming failed'),
    (b'SLEEP 2\n\x00\x01FAIL in the data\n', [2.0], None),
    (b'\x00\x01 plain data\n', [], None),
])
def test_staging_lines_act_in_order(tmp_path, slept, image, waits, failure):
    driver = fake.FakeDriver(CONF)
    path = tmp_path / 'image.bit'
    path.write_bytes(image)
    if failure:
        with pytest.raises(exception.DriverError) as raised:
            driver.program('0000:5e:00.0', 'region0', str(path), 'bs-1')
        assert failure in str(raised.value)
        assert driver._programmed == {}
    else:
        driver.program('0000:5e:00.0', 'region0', str(path), 'bs-1')
        assert list(driver._programmed.values()) == ['bs-1']
    assert slept == waits
