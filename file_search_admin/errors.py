"""What can stop a command, as types; the command line prints each as one line and exits non-zero."""

from __future__ import annotations

from botocore.exceptions import ClientError


class AdminError(Exception):
    """A problem the user can fix; the message is one line that names it."""


class BucketNotFoundError(AdminError):
    pass


class TableNotFoundError(AdminError):
    pass


class QueueNotFoundError(AdminError):
    pass


class PlacementMismatchError(AdminError):
    """The table's indexes say the deployment's placement is not the one the command was given."""


class MigrateNotNeededError(AdminError):
    """migrate was asked for a deployment whose Z-order index is off."""


class DeploymentError(AdminError):
    """The stack, its state machine output or the state machine itself does not exist."""


class AccessDeniedError(AdminError):
    pass


ACCESS_DENIED = frozenset(
    {"AccessDenied", "AccessDeniedException", "403", "UnauthorizedOperation", "UnrecognizedClientException"}
)


def error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


def denied(error: ClientError, what: str) -> AccessDeniedError:
    """AccessDenied as one line naming the operation and the resource."""
    operation = error.operation_name or "the request"
    return AccessDeniedError(f"access denied: {operation} on {what} ({error_code(error)})")


def one_line(error: BaseException) -> str:
    """Any error as one line: AWS's own message when it has one, never a traceback."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        message = details.get("Message") or error_code(error)
        return f"{error.operation_name or 'AWS'} failed: {error_code(error)}: {message}".replace("\n", " ")
    return (str(error) or type(error).__name__).replace("\n", " ")
