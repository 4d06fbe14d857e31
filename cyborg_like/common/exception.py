"""Exceptions shared by every part of cyborg_like.

They carry no HTTP knowledge: the API maps their *kind* (the base class) to a
status code at the edge. They cross RPC intact: oslo.messaging rebuilds them
on the caller's side from ``args`` and ``kwargs`` because this module is in
the transport's ``allowed_remote_exmods``.
"""


class CyborgLikeException(Exception):
    """Base class; ``msg_fmt`` is filled from the keyword arguments."""

    msg_fmt = 'An unknown error occurred.'
    #: Stable dotted code shown to API clients beside the message.
    error_code = 'accel.error'

    def __init__(self, message=None, **kwargs):
        self.kwargs = kwargs
        if message is None:
            try:
                message = self.msg_fmt % kwargs
            except (KeyError, TypeError):
                message = self.msg_fmt
        self.message = message
        super().__init__(message)

    def __str__(self):
        return self.message


class NotFound(CyborgLikeException):
    msg_fmt = 'Resource could not be found.'
    error_code = 'accel.not_found'


class Invalid(CyborgLikeException):
    msg_fmt = 'Invalid input.'
    error_code = 'accel.invalid'


class Conflict(CyborgLikeException):
    msg_fmt = 'Conflict with the current state of the resource.'
    error_code = 'accel.conflict'


class Forbidden(CyborgLikeException):
    msg_fmt = 'Not authorized.'
    error_code = 'accel.forbidden'


class ServiceUnavailable(CyborgLikeException):
    msg_fmt = 'The service is unavailable, try again later.'
    error_code = 'accel.unavailable'


class DeviceNotFound(NotFound):
    msg_fmt = 'Device %(uuid)s could not be found.'
    error_code = 'accel.device.not_found'


class DeployableNotFound(NotFound):
    msg_fmt = 'Deployable %(uuid)s could not be found.'
    error_code = 'accel.deployable.not_found'


class MarkerNotFound(Invalid):
    msg_fmt = 'Marker %(marker)s could not be found.'
    error_code = 'accel.marker.not_found'


class InvalidInventory(Invalid):
    msg_fmt = 'Invalid inventory from host %(host)s: %(reason)s'
    error_code = 'accel.inventory.invalid'


class DriverError(CyborgLikeException):
    msg_fmt = 'Driver %(driver)s failed: %(reason)s'
    error_code = 'accel.driver.error'


class DeviceProfileNotFound(NotFound):
    msg_fmt = 'Device profile %(name)s could not be found.'
    error_code = 'accel.device_profile.not_found'


class DeviceProfileExists(Conflict):
    msg_fmt = 'A device profile named %(name)s already exists.'
    error_code = 'accel.device_profile.exists'


class DeviceProfileInUse(Conflict):
    msg_fmt = ('Device profile %(name)s is used by %(count)d accelerator '
               'request(s); delete them first.')
    error_code = 'accel.device_profile.in_use'


class ARQNotFound(NotFound):
    msg_fmt = 'Accelerator request %(uuid)s could not be found.'
    error_code = 'accel.arq.not_found'


class ARQBadState(Conflict):
    msg_fmt = ('Accelerator request %(uuid)s is in state %(state)s; '
               'expected one of %(expected)s.')
    error_code = 'accel.arq.bad_state'


class InstanceAlreadyBound(Conflict):
    msg_fmt = ('Instance %(instance)s already has accelerator requests; '
               'cannot bind more.')
    error_code = 'accel.arq.instance_bound'


class BindFailed(CyborgLikeException):
    """Why a binding could not complete; becomes the ARQ's state_reason."""
    msg_fmt = '%(reason)s'
    error_code = 'accel.arq.bind_failed'


class QuotaExceeded(Forbidden):
    msg_fmt = ('Quota exceeded for %(resource)s: limit %(limit)s, in use '
               '%(in_use)s, requested %(requested)s.')
    error_code = 'accel.quota.exceeded'
