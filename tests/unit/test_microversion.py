import pytest
import webob.exc

from cyborg_like.api import microversion as mv


@pytest.mark.parametrize('header, expected', [
    (None, '2.0'),
    ('accelerator 2.1', '2.1'),
    ('accelerator latest', '2.4'),
    ('accelerator 2.4', '2.4'),
    ('ACCELERATOR 2.2', '2.2'),
    ('compute 2.90, accelerator 2.3', '2.3'),
    ('compute 2.90', '2.0'),        # another service's version only
    ('2.2', '2.2'),                 # bare version, as Cyborg accepts
])
def test_requested(header, expected):
    headers = {} if header is None else {mv.HEADER: header}
    assert str(mv.requested(headers)) == expected


@pytest.mark.parametrize('header', ['accelerator 2.5', 'accelerator 1.9',
                                    'accelerator 3.0'])
def test_unsupported_is_not_acceptable(header):
    with pytest.raises(webob.exc.HTTPNotAcceptable) as raised:
        mv.requested({mv.HEADER: header})
    assert raised.value.headers[mv.MAX_HEADER] == '2.4'


@pytest.mark.parametrize('header', [
    'accelerator 2', 'accelerator two', 'accelerator 2.x',
    'accelerator 2.1.1', 'accelerator 2.1 extra', 'accelerator',
    'accelerator 2.1 2.2', 'compute 2.1, accelerator 2.2 x',
])
def test_malformed_is_a_bad_request(header):
    with pytest.raises(webob.exc.HTTPBadRequest):
        mv.requested({mv.HEADER: header})


def test_a_bad_request_quotes_an_excerpt_only():
    with pytest.raises(webob.exc.HTTPBadRequest) as raised:
        mv.requested({mv.HEADER: 'accelerator 2.' + 'x' * 100000})
    assert len(raised.value.detail) < 200


def test_service_type_wins_over_a_bare_version():
    assert str(mv.requested({mv.HEADER: '2.1, accelerator 2.2'})) == '2.2'


def test_ordering():
    assert mv.Version(2, 10) > mv.Version(2, 9)
    assert mv.Version(2, 3) == mv.DEVICE_STATUS
