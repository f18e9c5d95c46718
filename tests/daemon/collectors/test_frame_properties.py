"""Property tests of the frame codec: every command survives a round trip in both header
serializations, and arbitrary bytes from the wire end in a FrameError (or a clean "closed"), in
bounded time and memory — never another exception, never a hang."""

from __future__ import annotations

import asyncio
import contextlib

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from daemon.collectors.remoting.frame import (
    JSON,
    ROCKETMQ,
    FrameError,
    RemotingCommand,
    decode,
    decode_payload,
    encode,
    read_command,
)

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
commands = st.builds(
    RemotingCommand,
    code=st.integers(-32768, 32767),
    opaque=st.integers(-(2**31), 2**31 - 1),
    flag=st.integers(0, 3),
    language=st.sampled_from(["JAVA", "PYTHON", "CPP", "GO"]),
    version=st.integers(0, 32767),
    remark=st.none() | text,
    ext_fields=st.dictionaries(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20), text,
                               max_size=6),
    body=st.binary(max_size=256),
    serialize_type=st.sampled_from([JSON, ROCKETMQ]),
)


@settings(max_examples=300, deadline=None)
@given(commands)
def test_round_trip_in_both_serializations(cmd: RemotingCommand) -> None:
    back = decode(encode(cmd))
    assert (back.code, back.opaque, back.flag, back.version, back.body) == (
        cmd.code, cmd.opaque, cmd.flag, cmd.version, cmd.body)
    assert back.ext_fields == cmd.ext_fields and back.serialize_type == cmd.serialize_type
    assert (back.remark or None) == (cmd.remark or None)
    assert back.language == cmd.language


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=512))
def test_arbitrary_payloads_decode_or_raise_frame_error(payload: bytes) -> None:
    with contextlib.suppress(FrameError):  # anything else escaping is the failure
        decode_payload(payload)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=512))
def test_arbitrary_bytes_on_a_stream_end_cleanly_and_quickly(data: bytes) -> None:
    async def read_all() -> int:
        reader = asyncio.StreamReader(limit=2**16)
        reader.feed_data(data)
        reader.feed_eof()
        frames = 0
        while True:
            try:
                await asyncio.wait_for(read_command(reader, max_frame=1 << 16), timeout=2)
            except (FrameError, asyncio.IncompleteReadError):
                return frames  # bad bytes, or the peer closed: both are clean ends
            frames += 1

    assert asyncio.run(read_all()) <= len(data) // 8  # each frame costs at least its 8-byte header


@settings(max_examples=100, deadline=None)
@given(commands, st.integers(1, 64))
def test_a_frame_cut_anywhere_is_reported_not_misread(cmd: RemotingCommand, cut: int) -> None:
    frame = encode(cmd)
    cut = min(cut, len(frame) - 1)
    try:
        decode(frame[:-cut])
    except FrameError as exc:
        assert "length" in str(exc) or "short" in str(exc) or "bytes" in str(exc)
    else:
        raise AssertionError("a truncated frame decoded")
