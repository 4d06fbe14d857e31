"""An error of the agent or of a step, as the text an ARQ's or an
operation's ``state_reason`` shows."""

import oslo_messaging as messaging

from cyborg_like.common import exception


def reason(error):
    if isinstance(error, exception.CyborgLikeException):
        return error.message
    if isinstance(error, messaging.MessagingTimeout):
        return 'The agent did not answer in time.'
    if isinstance(error, messaging.RemoteError):
        return '%s: %s' % (error.exc_type, error.value)
    return '%s: %s' % (type(error).__name__, error)
