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


class NotAuthenticatedError(ServiceError):
    """No usable credential came with a request that needs one (401)."""


class ForbiddenError(ServiceError):
    """The caller is known but may not do this (403)."""


class TooManyRequestsError(ServiceError):
    """The caller is over a rate limit (429); `retry_after_s` says when to try again."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
