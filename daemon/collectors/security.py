"""A cluster's ACL account and TLS settings (config `security:`) as a RemotingClient's arguments."""

from __future__ import annotations

import os
import ssl
from collections.abc import Mapping
from typing import Any

from pydantic import SecretStr

from config.receivers import secret_value
from daemon.collectors.remoting.acl import AclCredentials


def client_options(security: Any, env: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """`credentials` and `ssl_context` for RemotingClient; ValueError names a missing secret."""
    if security is None:
        return {}
    options: dict[str, Any] = {}
    if security.access_key:
        secret = secret_value(security.secret_key_env, env)
        if secret is None:
            raise ValueError(
                f"ACL access key {security.access_key!r}: environment variable or credential "
                f"{security.secret_key_env} is not set"
            )
        options["credentials"] = AclCredentials(security.access_key, SecretStr(secret))
    if security.tls:
        cafile = str(security.tls_ca_file) if security.tls_ca_file else None
        options["ssl_context"] = ssl.create_default_context(cafile=cafile)
    return options
