"""A conductor or broker that is away: 503, Retry-After, our error body."""

import json

import oslo_messaging as messaging
import pytest

from cyborg_like.api import errors
from cyborg_like.common import exception
from cyborg_like.common import rpc


@pytest.mark.parametrize('error', [
    messaging.MessagingTimeout('No answer to list_devices within 2.0s'),
    messaging.MessageDeliveryFailure(
        'Unable to connect to AMQP server on 10.1.2.3:5672 after 2 tries'),
    exception.RequestDeadlinePassed(request_id='req-1', late=1.5),
    rpc.WriteNotDone('create_arqs', messaging.MessageDeliveryFailure(
        'Unable to connect to AMQP server on 10.1.2.3:5672 after 2 tries')),
])
def test_unavailable_is_503_with_retry_after(error):
    resp = errors.from_exception(error, retry_after=7)
    assert resp.status_int == 503
    assert resp.headers['Retry-After'] == '7'
    fault = json.loads(json.loads(resp.body)['error_message'])
    assert fault['faultcode'] == 'Server'
    assert fault['error_code'].startswith('accel.')
    # The broker's address is an internal: logged, never answered.
    assert '10.1.2.3' not in resp.text and '5672' not in resp.text


def test_other_errors_carry_no_retry_after():
    resp = errors.from_exception(exception.DeviceNotFound(uuid='x'),
                                 retry_after=7)
    assert resp.status_int == 404
    assert 'Retry-After' not in resp.headers


@pytest.mark.parametrize('failure, code', [
    (messaging.MessagingTimeout('No answer to create_arqs within 3.0s'),
     'accel.unavailable'),
    (messaging.MessageDeliveryFailure('Unable to connect to AMQP server'),
     'accel.conductor.unreachable')])
def test_an_unanswered_write_says_what_its_503_means(failure, code):
    resp = errors.from_exception(rpc.WriteNotDone('create_arqs', failure),
                                 retry_after=7)
    assert resp.status_int == 503
    fault = json.loads(json.loads(resp.body)['error_message'])
    assert fault['error_code'] == code
    assert 'not carried out' in fault['faultstring']
    assert 'answer was lost' in fault['faultstring']
