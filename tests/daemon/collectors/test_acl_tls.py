"""ACL-protected and TLS brokers: requests carry a Signature the broker can verify; TLS is spoken when
configured, and a broker with an untrusted certificate fails with a clear connect error."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import logging
import ssl
import subprocess
from pathlib import Path

import pytest
from pydantic import SecretStr

from daemon.collectors.remoting.acl import AclCredentials
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.collectors.remoting.errors import RemotingConnectError, RemotingError
from daemon.collectors.remoting.frame import RemotingCommand
from tests.daemon.collectors.fake_server import FakeServer, response_bytes
from tests.daemon.collectors.wire import body

SECRET = "s3cr3t-never-logged"
KVTABLE = body("t1_28_GET_BROKER_RUNTIME_INFO")


def broker_acl_check(cmd: RemotingCommand) -> bool:
    """What the broker's PlainAccessValidator does: recompute the signature over the sorted extFields."""
    fields = {k: v for k, v in cmd.ext_fields.items() if k != "Signature"}
    content = "".join(v for _, v in sorted(fields.items())).encode() + cmd.body
    expected = base64.b64encode(hmac.new(SECRET.encode(), content, hashlib.sha1).digest()).decode()
    return fields.get("AccessKey") == "monitor" and cmd.ext_fields.get("Signature") == expected


async def acl_broker(server: FakeServer, cmd: RemotingCommand, writer: asyncio.StreamWriter) -> None:
    if broker_acl_check(cmd):
        writer.write(response_bytes(cmd, body=KVTABLE))
    else:
        writer.write(response_bytes(cmd, 16, remark="No accessKey is configured"))


def test_signed_requests_pass_the_broker_acl_and_the_secret_is_never_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    creds = AclCredentials("monitor", SecretStr(SECRET))

    async def run() -> None:
        async with FakeServer(acl_broker) as server:
            async with RemotingClient(default_timeout=2.0, credentials=creds) as client:
                kv = await AdminClient(client).get_broker_runtime_info(server.addr)
                assert kv["brokerVersionDesc"] == "V4_9_7"
                # Request with fields: the signature covers them (consumerGroup is part of the content).
                response = await client.invoke(server.addr, 203, {"consumerGroup": "ordersA"})
                assert response.code == 0
            async with RemotingClient(default_timeout=2.0) as unsigned:
                with pytest.raises(RemotingError, match="16|NO_PERMISSION|accessKey"):
                    await AdminClient(unsigned).get_broker_runtime_info(server.addr)

    asyncio.run(run())
    assert SECRET not in caplog.text and SECRET not in repr(creds)


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("tls")
    key, crt = d / "key.pem", d / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(crt),
         "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )
    return key, crt


async def plain_broker(server: FakeServer, cmd: RemotingCommand, writer: asyncio.StreamWriter) -> None:
    writer.write(response_bytes(cmd, body=KVTABLE))


def test_tls_broker_is_collected_over_tls_and_an_untrusted_one_is_named(cert: tuple[Path, Path]) -> None:
    key, crt = cert
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(crt, key)
    trusting = ssl.create_default_context(cafile=str(crt))

    async def run() -> None:
        async with FakeServer(plain_broker, ssl_context=server_ctx) as server:
            async with RemotingClient(default_timeout=3.0, ssl_context=trusting) as client:
                kv = await AdminClient(client).get_broker_runtime_info(server.addr)
                assert kv["brokerVersionDesc"] == "V4_9_7"
            async with RemotingClient(default_timeout=3.0, ssl_context=ssl.create_default_context()) as client:
                with pytest.raises(RemotingConnectError, match="TLS handshake failed.*CERTIFICATE_VERIFY_FAILED"):
                    await AdminClient(client).get_broker_runtime_info(server.addr)

    asyncio.run(run())


def test_cluster_security_config_gives_a_signing_client_and_names_a_missing_secret() -> None:
    from config.models import ClusterConfig
    from daemon.collectors.security import client_options

    cluster = ClusterConfig.model_validate({
        "name": "c", "namesrv": "127.0.0.1:9876",
        "security": {"access_key": "monitor", "secret_key_env": "RW_ACL_SECRET"},
    })
    options = client_options(cluster.security, {"RW_ACL_SECRET": SECRET})

    async def run() -> None:
        async with FakeServer(acl_broker) as server, RemotingClient(default_timeout=2.0, **options) as client:
            assert (await AdminClient(client).get_broker_runtime_info(server.addr))["brokerVersion"] == "407"

    asyncio.run(run())
    with pytest.raises(ValueError, match="RW_ACL_SECRET is not set"):
        client_options(cluster.security, {})
    with pytest.raises(ValueError, match="together"):
        ClusterConfig.model_validate({"name": "c", "namesrv": "h:1", "security": {"access_key": "monitor"}})
