"""Domain errors raised by services; `backend.api.errors` maps them to HTTP statuses."""


class ServiceError(Exception):
    """Base class for expected, user-facing failures."""


class NotFoundError(ServiceError):
    """The requested object does not exist (404)."""


class TooLargeError(ServiceError):
    """The input is over a configured size limit (413)."""


class InvalidInputError(ServiceError):
    """The input is unusable, for a reason given in the message (422)."""


class StorageFullError(ServiceError):
    """The blob store has no space left; nothing was stored (507)."""
