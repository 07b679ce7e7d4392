"""`Status` error bodies shaped like the real API server's.

Every non-2xx answer of the fake server is one of these, so clients that parse
`reason`/`code`/`details` (kubectl's "Error from server (Forbidden): ...",
the python client's ApiException.body) behave as against a real cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .resources import ResourceType

# The etcd3 storage layer's message when a continue token's revision has been
# compacted; it then hands back a new token that continues at the latest
# revision (an inconsistent, but complete-from-here, list).
INCONSISTENT_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. "
    "You can start a new list without the continue parameter, or use the continue token "
    "in this response to retrieve the remainder of the results. Continuing with the "
    "provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may "
    "show up in the list."
)


class ApiError(Exception):
    """An HTTP error answered with a v1 `Status` body."""

    def __init__(self, code: int, reason: str, message: str, details: Mapping[str, Any] | None = None,
                 headers: Mapping[str, str] | None = None, list_continue: str | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details) if details is not None else None
        self.headers = dict(headers or {})
        self.list_continue = list_continue

    def body(self) -> dict[str, Any]:
        meta: dict[str, Any] = {}
        if self.list_continue:
            meta["continue"] = self.list_continue
        out: dict[str, Any] = {
            "kind": "Status", "apiVersion": "v1", "metadata": meta,
            "status": "Failure", "message": self.message, "reason": self.reason,
        }
        if self.details is not None:
            out["details"] = self.details
        out["code"] = self.code
        return out


def _resource_details(rtype: ResourceType, name: str | None) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if rtype.group:
        details["group"] = rtype.group
    details["kind"] = rtype.plural
    return details


def not_found_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def not_found_object(rtype: ResourceType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{rtype.qualified} "{name}" not found',
                    _resource_details(rtype, name))


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden_resource(rtype: ResourceType, user: str, verb: str, subresource: str,
                       namespace: str, name: str) -> ApiError:
    resource = rtype.plural + (f"/{subresource}" if subresource else "")
    subject = rtype.qualified + (f' "{name}"' if name else "")
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    msg = (f'{subject} is forbidden: User "{user}" cannot {verb} resource "{resource}" '
           f'in API group "{rtype.group}" {scope}')
    return ApiError(403, "Forbidden", msg, _resource_details(rtype, name))


def forbidden_path(user: str, verb: str, path: str) -> ApiError:
    return ApiError(403, "Forbidden", f'forbidden: User "{user}" cannot {verb} path "{path}"', {})


def method_not_allowed() -> ApiError:
    # Our read-only server rejects every write before authorization, so the
    # answer is the same whatever the caller's RBAC would have allowed.
    return ApiError(405, "MethodNotAllowed",
                    "the server does not allow this method on the requested resource", {},
                    headers={"Allow": "GET, HEAD"})


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def not_acceptable(accept: str) -> ApiError:
    return ApiError(406, "NotAcceptable",
                    "only the following media types are accepted: application/json", {})


def too_many_requests(retry_after: int) -> ApiError:
    # What API Priority and Fairness answers when a request is rejected.
    return ApiError(429, "TooManyRequests", "Too many requests, please try again later.",
                    {"retryAfterSeconds": retry_after},
                    headers={"Retry-After": str(retry_after)})


def internal_error(cause: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {cause}",
                    {"causes": [{"message": cause}]})


def expired_continue(new_token: str) -> ApiError:
    return ApiError(410, "Expired", INCONSISTENT_CONTINUE, list_continue=new_token)
