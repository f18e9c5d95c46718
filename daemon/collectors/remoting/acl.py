"""ACL request signing (ref §1.5, AclClientRPCHook): AccessKey + Signature extFields on every request.

Signature = Base64(HmacSHA1(secret, the values of all extFields sorted by key, then the body)). The
secret stays a SecretStr and is read only here, so it never reaches a log or a repr.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass

from pydantic import SecretStr

ACCESS_KEY = "AccessKey"
SECURITY_TOKEN = "SecurityToken"
SIGNATURE = "Signature"


@dataclass(frozen=True)
class AclCredentials:
    """An ACL account: access key, secret key, optional STS security token."""

    access_key: str
    secret_key: SecretStr
    security_token: str | None = None


def signed_fields(ext_fields: dict[str, str], body: bytes, credentials: AclCredentials) -> dict[str, str]:
    """`ext_fields` plus AccessKey (and SecurityToken) and the Signature the broker's ACL checks."""
    fields = {k: v for k, v in ext_fields.items() if k != SIGNATURE}
    fields[ACCESS_KEY] = credentials.access_key
    if credentials.security_token:
        fields[SECURITY_TOKEN] = credentials.security_token
    # Java sorts the keys in a TreeMap (String.compareTo: UTF-16 order, same as Python for these keys).
    content = "".join(fields[k] for k in sorted(fields)).encode("utf-8") + body
    secret = credentials.secret_key.get_secret_value().encode("utf-8")
    fields[SIGNATURE] = base64.b64encode(hmac.new(secret, content, hashlib.sha1).digest()).decode("ascii")
    return fields
