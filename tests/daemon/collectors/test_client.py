"""RemotingClient and AdminClient against a tiny in-test server speaking real frames."""

from __future__ import annotations

import asyncio
import logging
import struct

import pytest

from daemon.collectors.remoting import frame
from daemon.collectors.remoting.admin import AdminClient
from daemon.collectors.remoting.client import RemotingClient
from daemon.collectors.remoting.codes import CLIENT_VERSION, RequestCode
from daemon.collectors.remoting.errors import (
    ConsumerNotOnline,
    RemotingBodyError,
    RemotingConnectError,
    RemotingConnectionLost,
    RemotingError,
    RemotingFrameError,
    RemotingTimeout,
    SystemErrorResponse,
    TopicNotExist,
)
from tests.daemon.collectors.fake_server import FakeServer, response_bytes
from tests.daemon.collectors.wire import response

pytestmark = pytest.mark.timeout(30)


async def echo(server: FakeServer, cmd: frame.RemotingCommand, writer: asyncio.StreamWriter) -> None:
    """Answer with the request's extFields, after `delay` seconds if asked."""
    await asyncio.sleep(float(cmd.ext_fields.get("delay", "0")))
    writer.write(response_bytes(cmd, ext=dict(cmd.ext_fields)))


def test_concurrent_requests_matched_by_opaque_out_of_order() -> None:
    async def main() -> None:
        async with FakeServer(echo) as server, RemotingClient() as client:
            # Earlier requests are answered later: responses arrive in reverse order.
            calls = [
                client.invoke(server.addr, 30, {"i": str(i), "delay": str((10 - i) * 0.02)}, timeout=5)
                for i in range(10)
            ]
            results = await asyncio.gather(*calls)
            assert [r.ext_fields["i"] for r in results] == [str(i) for i in range(10)]
            assert server.connections == 1
            assert len({r.opaque for r in results}) == 10
            req = server.requests[0]
            assert (req.language, req.version, req.serialize_type, req.flag) == (
                "PYTHON",
                CLIENT_VERSION,
                frame.JSON,
                0,
            )
            assert client.server_version(server.addr) == 407

    asyncio.run(main())


def test_timeout_then_connection_still_usable(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        release = asyncio.Event()  # the server holds its answer to a "held" request until this is set
        late_sent = asyncio.Event()

        async def held(server: FakeServer, cmd: frame.RemotingCommand, writer: asyncio.StreamWriter) -> None:
            if "held" in cmd.ext_fields:
                await release.wait()
                writer.write(response_bytes(cmd, ext=dict(cmd.ext_fields)))
                await writer.drain()
                late_sent.set()
            else:
                await echo(server, cmd, writer)

        async with FakeServer(held) as server, RemotingClient() as client:
            # The client gives up at its timeout while the server still holds the answer (a client
            # that waited for the answer instead would hang here until the test's timeout).
            with pytest.raises(RemotingTimeout) as info:
                await client.invoke(server.addr, RequestCode.GET_CONSUME_STATS, {"held": "1"}, timeout=0.1)
            assert not release.is_set()
            assert info.value.code == 208 and info.value.timeout == 0.1
            assert "did not answer GET_CONSUME_STATS (208) within 0.1 s" in str(info.value)
            ok = await client.invoke(server.addr, 30, {"i": "after"}, timeout=2)
            assert ok.ext_fields["i"] == "after"
            release.set()
            await late_sent.wait()
            # The late answer came first on the connection: matched nothing and was dropped.
            again = await client.invoke(server.addr, 30, {"i": "again"}, timeout=2)
            assert again.ext_fields["i"] == "again"
            assert server.connections == 1
            assert "no request waits for it" in caplog.text

    with caplog.at_level(logging.DEBUG, logger="daemon.collectors.remoting.client"):
        asyncio.run(main())


def test_server_closing_mid_frame_fails_then_reconnects() -> None:
    async def half_then_close(
        server: FakeServer, cmd: frame.RemotingCommand, writer: asyncio.StreamWriter
    ) -> None:
        if server.connections == 1:
            data = response_bytes(cmd, body=b"x" * 100)
            writer.write(data[: len(data) // 2])
            await writer.drain()
            writer.close()
        else:
            await echo(server, cmd, writer)

    async def main() -> None:
        async with FakeServer(half_then_close) as server, RemotingClient() as client:
            with pytest.raises(RemotingConnectionLost, match="mid-frame"):
                await client.invoke(server.addr, 30, timeout=2)
            ok = await client.invoke(server.addr, 30, {"i": "1"}, timeout=2)
            assert ok.ext_fields["i"] == "1"
            assert server.connections == 2

    asyncio.run(main())


def test_broken_connection_fails_every_request_in_flight() -> None:
    async def close_on_third(
        server: FakeServer, cmd: frame.RemotingCommand, writer: asyncio.StreamWriter
    ) -> None:
        if len(server.requests) >= 3:
            writer.close()

    async def main() -> None:
        async with FakeServer(close_on_third) as server, RemotingClient() as client:
            results = await asyncio.gather(
                *(client.invoke(server.addr, 30, timeout=3) for _ in range(3)), return_exceptions=True
            )
            assert all(isinstance(r, RemotingConnectionLost) for r in results), results

    asyncio.run(main())


@pytest.mark.parametrize(
    "prefix", [struct.pack(">i", 2**31 - 1), struct.pack(">i", 2048), struct.pack(">i", -5)]
)
def test_oversized_length_prefix_is_a_frame_error(prefix: bytes) -> None:
    async def bad_prefix(
        server: FakeServer, cmd: frame.RemotingCommand, writer: asyncio.StreamWriter
    ) -> None:
        writer.write(prefix + b"\x00" * 16)

    async def main() -> None:
        async with FakeServer(bad_prefix) as server, RemotingClient(max_frame=1024) as client:
            with pytest.raises(frame.FrameError) as info:
                await client.invoke(server.addr, 30, timeout=2)
            assert isinstance(info.value, RemotingFrameError)
            assert "max_frame" in str(info.value)

    asyncio.run(main())


def test_server_requests_and_unmatched_responses_are_ignored() -> None:
    async def noisy(server: FakeServer, cmd: frame.RemotingCommand, writer: asyncio.StreamWriter) -> None:
        writer.write(
            frame.encode(frame.RemotingCommand(code=40, opaque=999, language="JAVA"))
        )  # a server request
        writer.write(response_bytes(cmd, opaque=cmd.opaque + 1000))  # matches nothing
        writer.write(response_bytes(cmd, ext={"real": "yes"}))

    async def main() -> None:
        async with FakeServer(noisy) as server, RemotingClient() as client:
            r = await client.invoke(server.addr, 30, timeout=2)
            assert r.ext_fields == {"real": "yes"}

    asyncio.run(main())


def test_binary_header_response_is_decoded_by_prefix() -> None:
    async def binary(server: FakeServer, cmd: frame.RemotingCommand, writer: asyncio.StreamWriter) -> None:
        writer.write(response_bytes(cmd, ext={"offset": "3782"}, serialize_type=frame.ROCKETMQ))

    async def main() -> None:
        async with FakeServer(binary) as server, RemotingClient() as client:
            r = await client.invoke(server.addr, 30, {"topic": "T", "queueId": "3"}, timeout=2)
            assert r.serialize_type == frame.ROCKETMQ and r.ext_fields == {"offset": "3782"}

    asyncio.run(main())


def test_connect_refused_is_a_connect_error() -> None:
    async def main() -> None:
        async with FakeServer(echo) as server:
            addr = server.addr
        async with RemotingClient() as client:
            with pytest.raises(RemotingConnectError, match="cannot connect to"):
                await client.invoke(addr, 30, timeout=2)

    asyncio.run(main())


def test_close_fails_requests_in_flight() -> None:
    async def main() -> None:
        received = asyncio.Event()

        async def never(server: FakeServer, cmd: frame.RemotingCommand, writer: asyncio.StreamWriter) -> None:
            received.set()
            await asyncio.Event().wait()  # never answers

        async with FakeServer(never) as server:
            client = RemotingClient()
            pending = asyncio.ensure_future(client.invoke(server.addr, 30, timeout=10))
            await received.wait()  # the request is on the wire, waiting for its answer
            await client.close()
            with pytest.raises(RemotingConnectionLost):
                await pending

    asyncio.run(main())


# ---- AdminClient: request fields and error mapping ----


async def replay(server: FakeServer, cmd: frame.RemotingCommand, writer: asyncio.StreamWriter) -> None:
    """Answer with a captured real response chosen by request code (and group)."""
    group = cmd.ext_fields.get("consumerGroup", "")
    names = {
        106: "t1_106_GET_BROKER_CLUSTER_INFO",
        105: "t1_105_GET_ROUTEINFO_BY_TOPIC_NoSuchTopic_v401",
        203: "t1_ERR_203_GET_CONSUMER_CONNECTION_LIST_offlineGroup"
        if group == "offlineGroup"
        else f"t1_203_GET_CONSUMER_CONNECTION_LIST_{group}",
        208: f"t1_208_GET_CONSUME_STATS_{group}",
        307: f"t1_307_GET_CONSUMER_RUNNING_INFO_{group}_5764",
        28: "t1_28_GET_BROKER_RUNTIME_INFO",
    }
    if cmd.code not in names:
        writer.write(response_bytes(cmd, 1, remark="the custom field <x> is null"))
        return
    captured = response(names[cmd.code])
    captured.opaque = cmd.opaque
    writer.write(frame.encode(captured))


def test_admin_calls_against_captured_responses() -> None:
    async def main() -> None:
        async with FakeServer(replay) as server, RemotingClient() as client:
            admin = AdminClient(client)
            info = await admin.get_cluster_info(server.addr)
            assert info.clusters == {"DefaultCluster": ["broker-a"]}
            stats = await admin.get_consume_stats(server.addr, "stuckGroup")
            assert stats.total_diff == 3712
            running = await admin.get_consumer_running_info(
                server.addr, "stuckGroup", "192.0.2.2@5764#7903510994656"
            )
            assert running.status_table["OrderTopic"].consume_ok_tps == 7.0
            conn = await admin.get_consumer_connections(server.addr, "stuckGroup")
            assert conn.client_ids == ["192.0.2.2@5764#7903510994656"]
            runtime = await admin.get_broker_runtime_info(server.addr)
            assert runtime["brokerVersionDesc"] == "V4_9_7"

            with pytest.raises(ConsumerNotOnline) as offline:
                await admin.get_consumer_connections(server.addr, "offlineGroup")
            assert str(offline.value) == (
                f"broker {server.addr} answered GET_CONSUMER_CONNECTION_LIST (203) for group offlineGroup "
                "with 206 CONSUMER_NOT_ONLINE: the consumer group[offlineGroup] not online"
            )
            with pytest.raises(TopicNotExist) as missing:
                await admin.get_route(server.addr, "NoSuchTopic")
            assert missing.value.code == 17 and missing.value.role == "namesrv"
            with pytest.raises(SystemErrorResponse, match="SYSTEM_ERROR"):
                await admin.query_consume_time_span(server.addr, "T", "g")

            by_code = {r.code: r.ext_fields for r in server.requests}
            assert by_code[208] == {"consumerGroup": "stuckGroup"}
            assert by_code[307] == {
                "consumerGroup": "stuckGroup",
                "clientId": "192.0.2.2@5764#7903510994656",
                "jstackEnable": "false",
            }
            assert by_code[105] == {"topic": "NoSuchTopic"}
            assert by_code[303] == {"topic": "T", "group": "g"}

    asyncio.run(main())


def test_admin_optional_fields_and_bad_body() -> None:
    async def garbage(server: FakeServer, cmd: frame.RemotingCommand, writer: asyncio.StreamWriter) -> None:
        writer.write(response_bytes(cmd, body=b"{not json"))

    async def main() -> None:
        async with FakeServer(garbage) as server, RemotingClient() as client:
            admin = AdminClient(client)
            with pytest.raises(RemotingBodyError, match="unreadable body") as info:
                await admin.get_consume_stats(server.addr, "g", topic="T")
            assert isinstance(info.value, RemotingError)
            with pytest.raises(RemotingBodyError):
                await admin.get_consumer_running_info(server.addr, "g", "c", jstack=True)
            with pytest.raises(RemotingBodyError):
                await admin.get_topic_stats(server.addr, "T")
            fields = [r.ext_fields for r in server.requests]
            assert fields[0] == {"consumerGroup": "g", "topic": "T"}
            assert fields[1]["jstackEnable"] == "true"
            assert fields[2] == {"topic": "T"}

    asyncio.run(main())
