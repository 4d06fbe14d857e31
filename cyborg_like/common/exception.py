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
                message = self.msg_fmt % self._shown(kwargs)
            except (KeyError, TypeError):
                message = self.msg_fmt
        self.message = message
        super().__init__(message)

    def _shown(self, kwargs):
        """The values put in the message (all of them, by default)."""
        return kwargs

    def __str__(self):
        return self.message


class NotFound(CyborgLikeException):
    msg_fmt = 'Resource could not be found.'
    error_code = 'accel.not_found'

    #: What was looked up comes from the client: one longer than this is
    #: cut, so a 6 KB name sent is not answered back in the 404 (nor fills
    #: the log).
    LONGEST_SHOWN = 255

    def _shown(self, kwargs):
        return {key: '%s... (%d characters)' % (value[:64], len(value))
                if isinstance(value, str) and len(value) > self.LONGEST_SHOWN
                else value for key, value in kwargs.items()}


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


class CallDoneBefore(ServiceUnavailable):
    """A call delivered again by the broker after a delivery that was
    carried out (db/change_recorder.py): nothing is done twice."""
    msg_fmt = ('Request %(request_id)s: this call of %(method)s was carried '
               'out before (the message bus delivered it twice) and its '
               'answer cannot be given again; GET /v2/changes?request_id='
               '%(request_id)s names what it changed.')


class Overloaded(ServiceUnavailable):
    msg_fmt = ('The conductor has as much work queued as it accepts; try '
               'again later.')
    error_code = 'accel.overloaded'


class LimitsUnavailable(ServiceUnavailable):
    msg_fmt = ('Project limits could not be read from Keystone: %(reason)s')
    error_code = 'accel.quota.limits_unavailable'


class RequestDeadlinePassed(ServiceUnavailable):
    msg_fmt = ('Request %(request_id)s was dropped: its caller stopped '
               'waiting %(late).1fs before it could start.')
    error_code = 'accel.deadline_passed'


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


class DeviceProfileUuidExists(Conflict):
    # Cyborg answers 500 (its database's error); a conflict is a 409.
    msg_fmt = 'A device profile with uuid %(uuid)s already exists.'
    error_code = 'accel.device_profile.uuid_exists'


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


class InstanceAlreadyBound(Invalid):
    # 400 with Cyborg's words: clients match on the code.
    msg_fmt = ('Instance %(instance)s already has accelerator requests. '
               'Cannot bind additional ARQs.')
    error_code = 'accel.arq.instance_bound'


class BindingSuperseded(Conflict):
    """The binding a piece of work belongs to is no longer the ARQ's
    (it was unbound, bound again, failed or deleted meanwhile)."""
    msg_fmt = ('The binding of accelerator request %(uuid)s was '
               'superseded.')
    error_code = 'accel.arq.binding_superseded'


class ARQDeleteBoundForbidden(Forbidden):
    # Cyborg's words ("requires a service token"): its tests and clients
    # match on them. Only Nova may free a device a guest holds.
    msg_fmt = ('Accelerator request %(uuid)s is %(state)s: deleting it '
               'requires a service token. Use the Compute API to manage '
               'instance accelerators.')
    error_code = 'accel.arq.delete_bound_forbidden'


class ARQUnbindBoundForbidden(Forbidden):
    msg_fmt = ('Accelerator request %(uuid)s is %(state)s: unbinding it '
               'requires a service token. Use the Compute API to manage '
               'instance accelerators.')
    error_code = 'accel.arq.unbind_bound_forbidden'


class BindFailed(CyborgLikeException):
    """Why a binding could not complete; becomes the ARQ's state_reason."""
    msg_fmt = '%(reason)s'
    error_code = 'accel.arq.bind_failed'


class ReleasePending(BindFailed):
    """The deployable's previous holder is still being released by its
    host; a binding may wait for it."""
    msg_fmt = 'Deployable %(deployable)s is being released by its host.'


class TooManyAccelerators(Invalid):
    msg_fmt = ('Device profile %(name)s asks for %(count)d accelerators; at '
               'most %(bound)d may be requested at once.')
    error_code = 'accel.arq.too_many_accelerators'


class QuotaExceeded(Forbidden):
    msg_fmt = ('Quota exceeded for %(resource)s: limit %(limit)s, in use '
               '%(in_use)s, requested %(requested)s.')
    error_code = 'accel.quota.exceeded'


class QuotaLimitsInKeystone(Conflict):
    msg_fmt = ('Accelerator limits come from Keystone unified limits '
               '([quota] driver = unified_limits): set or remove the limits '
               'of project %(project)s with Keystone\'s limit API '
               '(/v3/limits, resource names "class:<RESOURCE CLASS>"; '
               '"openstack limit create").')
    error_code = 'accel.quota.limits_in_keystone'


class HostNotFound(NotFound):
    msg_fmt = 'Host %(hostname)s could not be found.'
    error_code = 'accel.host.not_found'


class DriverOperationInProgress(Conflict):
    msg_fmt = ('Host %(hostname)s already has driver operation '
               '%(operation)s in progress.')
    error_code = 'accel.host.driver_operation_in_progress'


class DevicesInUse(Conflict):
    msg_fmt = ('Host %(hostname)s has accelerator requests bound to devices '
               'driven by %(family)s: %(arqs)s. Unbind them, or ask to wait '
               'for their release ("wait_for_release") or to force the '
               'operation ("force", admin only).')
    error_code = 'accel.host.devices_in_use'


class OperationNotCancellable(Conflict):
    msg_fmt = ('Operation %(uuid)s cannot be cancelled: %(reason)s')
    error_code = 'accel.operation.not_cancellable'


class PlaybookRunning(Conflict):
    msg_fmt = ('Host %(hostname)s is already running the playbook of '
               'operation %(operation)s.')
    error_code = 'accel.agent.playbook_running'
class InvalidImage(Invalid):
    msg_fmt = 'Invalid image: %(reason)s'
    error_code = 'accel.bitstream.invalid_image'


class ImageDataNotFound(NotFound):
    msg_fmt = 'No image data at %(location)s.'
    error_code = 'accel.bitstream.data_not_found'


class TooLarge(Invalid):
    """A request body beyond a configured size (413)."""
    msg_fmt = 'The request body is too large.'
    error_code = 'accel.request.too_large'


class BitstreamNotFound(NotFound):
    msg_fmt = 'Image %(uuid)s could not be found in the catalog.'
    error_code = 'accel.bitstream.not_found'


class BitstreamBadState(Conflict):
    msg_fmt = ('Image %(uuid)s is %(status)s; this needs it to be one of '
               '%(expected)s.')
    error_code = 'accel.bitstream.bad_state'


class BitstreamInUse(Conflict):
    msg_fmt = 'Image %(uuid)s is in use: %(where)s.'
    error_code = 'accel.bitstream.in_use'


class ImageTooLarge(TooLarge):
    msg_fmt = ('The image is larger than [catalog] max_image_size '
               '(%(limit)d bytes).')
    error_code = 'accel.bitstream.too_large'


class ImageDigestMismatch(Invalid):
    msg_fmt = ('The uploaded data has sha256 %(actual)s, not the %(expected)s '
               'the client announced.')
    error_code = 'accel.bitstream.digest_mismatch'


class ImageMetadataMismatch(Invalid):
    msg_fmt = ('The image header declares %(key)s %(declared)s, but the '
               'catalog has %(given)s.')
    error_code = 'accel.bitstream.metadata_mismatch'


class IncompatibleImage(Conflict):
    msg_fmt = ('Image %(image)s needs interface %(needed)s; region '
               '%(region)s offers %(offered)s.')
    error_code = 'accel.bitstream.incompatible'


class Gone(CyborgLikeException):
    msg_fmt = 'The resource is no longer available.'
    error_code = 'accel.gone'


class AvailabilityCursorInvalid(Invalid):
    msg_fmt = ('Cursor %(cursor)s is not one this feed gave: it is newer '
               'than the newest change. Ask again without since.')
    error_code = 'accel.availability.cursor_invalid'


class AvailabilityCursorExpired(Gone):
    msg_fmt = ('Cursor %(cursor)s is older than the changes this feed '
               'keeps ([conductor] availability_changes_retention). Ask '
               'again without since for the whole feed.')
    error_code = 'accel.availability.cursor_expired'



class LeaseNotFound(NotFound):
    msg_fmt = 'Lease %(uuid)s could not be found.'
    error_code = 'accel.lease.not_found'


class LeaseConflict(Conflict):
    """The devices cannot be guaranteed: ``lease`` (a uuid) holds one of
    them in an overlapping window. For the lessor: the conductor answers
    a project LeaseNotFree instead, which names nobody's objects."""
    msg_fmt = ('The devices cannot be guaranteed: lease %(lease)s holds '
               'device %(device)s from %(starts_at)s to %(ends_at)s '
               '(UTC, grace included).')
    error_code = 'accel.lease.conflict'


class LeaseDeviceHeld(LeaseConflict):
    """Another project's workload holds a device and the lease may not
    preempt it (cyborg:lease:preempt). For the lessor, as LeaseConflict.
    """
    msg_fmt = ('The devices cannot be guaranteed: accelerator request '
               '%(arq)s of project %(project)s (instance %(instance)s) '
               'holds device %(device)s, and this lease may not preempt '
               "another project's workload (cyborg:lease:preempt).")


class LeaseNotFree(Conflict):
    """A project's view of LeaseConflict and LeaseDeviceHeld: how many
    devices were free, never whose lease or workload holds the others."""
    msg_fmt = ('The devices cannot be guaranteed: %(free)d of the '
               '%(wanted)d device(s) asked are free in every window of the '
               'lease (the first from %(first)s).')
    error_code = 'accel.lease.conflict'


class LeaseLimitExceeded(Forbidden):
    msg_fmt = ('Lease limit exceeded for %(what)s: limit %(limit)s, held '
               'by the active leases of the project %(in_use)s, requested '
               '%(requested)s ([leases] project_max_%(what)s).')
    error_code = 'accel.lease.limit_exceeded'


class LeaseNoDevices(Conflict):
    msg_fmt = ('Only %(found)d device(s) match the lease (%(what)s); '
               '%(count)d asked.')
    error_code = 'accel.lease.no_devices'


class LeaseBadState(Conflict):
    msg_fmt = 'Lease %(uuid)s is %(state)s; only an active lease can end.'
    error_code = 'accel.lease.bad_state'
