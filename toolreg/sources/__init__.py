"""Tools from outside: an HTTP API's OpenAPI document (`OpenAPI`), and the per-user
`Credentials` its calls (and a `toolreg.mcp.Mount`'s) are made with, resolved per call.

Nothing here is imported by `import toolreg`; httpx (for calls) and PyYAML (for a YAML
document: `pip install 'toolreg[openapi]'`) load when first used.
"""

from __future__ import annotations

from .credentials import CredentialKind, CredentialRequest, Credentials, Secret
from .document import OpenAPIError
from .http import ApiResponse
from .openapi import OpenAPI, Operation

__all__ = [
    "ApiResponse",
    "CredentialKind",
    "CredentialRequest",
    "Credentials",
    "OpenAPI",
    "OpenAPIError",
    "Operation",
    "Secret",
]
