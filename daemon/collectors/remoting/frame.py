"""RocketMQ remoting frames: length prefix, JSON or ROCKETMQ-binary header, body (ref §1.1–1.3).

A frame on the wire is `L:int32 | (serializeType << 24 | H):int32 | header[H] | body`, all
big-endian, where L counts every byte after itself. Both header serializations are decoded by
the frame's prefix byte, never assumed: a 4.9.7 broker answers in the request's serialization.
"""

from __future__ import annotations

import asyncio
import json
import struct
from dataclasses import dataclass, field

JSON = 0
ROCKETMQ = 1

FLAG_RESPONSE = 1
FLAG_ONEWAY = 2

# What the Java side accepts by default (com.rocketmq.remoting.frameMaxLength, 16 MiB); a reader
# allows more than it sends because a client's jstack-bearing running info can be large.
DEFAULT_MAX_FRAME = 16 * 1024 * 1024

LANGUAGE_CODES: dict[str, int] = {
    "JAVA": 0, "CPP": 1, "DOTNET": 2, "PYTHON": 3, "DELPHI": 4, "ERLANG": 5, "RUBY": 6,
    "OTHER": 7, "HTTP": 8, "GO": 9, "PHP": 10, "OMS": 11, "RUST": 12, "NODE_JS": 13,
}  # fmt: skip
LANGUAGE_NAMES: dict[int, str] = {v: k for k, v in LANGUAGE_CODES.items()}


class FrameError(Exception):
    """The bytes on the connection are not a valid remoting frame."""


@dataclass
class RemotingCommand:
    """One request or response: the header fields plus the raw body bytes."""

    code: int
    opaque: int = 0
    flag: int = 0
    language: str = "PYTHON"
    version: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    serialize_type: int = JSON

    @property
    def is_response(self) -> bool:
        """True when the RESPONSE flag bit is set."""
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        """True when the ONEWAY flag bit is set (no response will come)."""
        return bool(self.flag & FLAG_ONEWAY)


def _encode_json_header(cmd: RemotingCommand) -> bytes:
    header: dict[str, object] = {
        "code": cmd.code,
        "flag": cmd.flag,
        "language": cmd.language,
        "opaque": cmd.opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": cmd.version,
    }
    if cmd.ext_fields:
        header["extFields"] = {k: str(v) for k, v in cmd.ext_fields.items()}
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    # fastjson writes bean keys sorted and without spaces; so do we.
    return json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _encode_binary_header(cmd: RemotingCommand) -> bytes:
    if not -32768 <= cmd.code <= 32767:
        raise FrameError(f"request code {cmd.code} does not fit the ROCKETMQ binary header; use JSON")
    remark = cmd.remark.encode() if cmd.remark else b""
    ext = b"".join(
        struct.pack(">h", len(k.encode())) + k.encode() + struct.pack(">i", len(str(v).encode())) + str(v).encode()
        for k, v in cmd.ext_fields.items()
    )
    return (
        struct.pack(">hBhii", cmd.code, LANGUAGE_CODES.get(cmd.language, 7), cmd.version, cmd.opaque, cmd.flag)
        + struct.pack(">i", len(remark))
        + remark
        + struct.pack(">i", len(ext))
        + ext
    )


def encode(cmd: RemotingCommand) -> bytes:
    """The complete frame for `cmd`, length prefix included."""
    header = _encode_json_header(cmd) if cmd.serialize_type == JSON else _encode_binary_header(cmd)
    total = 4 + len(header) + len(cmd.body)
    return struct.pack(">ii", total, (cmd.serialize_type << 24) | len(header)) + header + cmd.body


def _decode_json_header(raw: bytes) -> RemotingCommand:
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FrameError(f"JSON header is not valid JSON: {exc}") from None
    if not isinstance(header, dict) or not isinstance(header.get("code"), int):
        raise FrameError(f"JSON header lacks an integer 'code': {raw[:200]!r}")
    ext = header.get("extFields") or {}
    if not isinstance(ext, dict):
        raise FrameError("JSON header field 'extFields' is not an object")
    try:
        return RemotingCommand(
            code=header["code"],
            opaque=int(header.get("opaque", 0)),
            flag=int(header.get("flag", 0)),
            language=str(header.get("language", "OTHER")),
            version=int(header.get("version", 0)),
            remark=header.get("remark"),
            ext_fields={str(k): "" if v is None else str(v) for k, v in ext.items()},
            serialize_type=JSON,
        )
    except (TypeError, ValueError) as exc:
        raise FrameError(f"JSON header has a field of the wrong type: {exc}") from None


def _decode_binary_header(raw: bytes) -> RemotingCommand:
    try:
        code, lang, version, opaque, flag = struct.unpack_from(">hBhii", raw, 0)
        pos = 13
        (remark_len,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        if remark_len < 0 or pos + remark_len > len(raw):
            raise FrameError(f"binary header remark length {remark_len} exceeds the header")
        remark = raw[pos : pos + remark_len].decode("utf-8", "replace") if remark_len else None
        pos += remark_len
        (ext_len,) = struct.unpack_from(">i", raw, pos)
        pos += 4
        if ext_len < 0 or pos + ext_len > len(raw):
            raise FrameError(f"binary header extFields length {ext_len} exceeds the header")
        ext: dict[str, str] = {}
        end = pos + ext_len
        while pos < end:
            (klen,) = struct.unpack_from(">h", raw, pos)
            pos += 2
            key = raw[pos : pos + klen].decode("utf-8", "replace")
            pos += klen
            (vlen,) = struct.unpack_from(">i", raw, pos)
            pos += 4
            if klen < 0 or vlen < 0 or pos + vlen > end:
                raise FrameError("binary header extFields entry runs past the header")
            ext[key] = raw[pos : pos + vlen].decode("utf-8", "replace")
            pos += vlen
    except struct.error as exc:
        raise FrameError(f"binary header is truncated: {exc}") from None
    return RemotingCommand(
        code=code,
        opaque=opaque,
        flag=flag,
        language=LANGUAGE_NAMES.get(lang, "OTHER"),
        version=version,
        remark=remark,
        ext_fields=ext,
        serialize_type=ROCKETMQ,
    )


def decode_payload(payload: bytes) -> RemotingCommand:
    """Decode the bytes after the length prefix (the `L` bytes) into a command."""
    if len(payload) < 4:
        raise FrameError(f"frame of {len(payload)} bytes is shorter than its header length field")
    (mark,) = struct.unpack_from(">I", payload, 0)
    serialize_type, header_len = mark >> 24, mark & 0xFFFFFF
    if header_len > len(payload) - 4:
        raise FrameError(f"decode error, bad header length {header_len} in a frame of {len(payload)} bytes")
    raw_header = payload[4 : 4 + header_len]
    if serialize_type == JSON:
        cmd = _decode_json_header(raw_header)
    elif serialize_type == ROCKETMQ:
        cmd = _decode_binary_header(raw_header)
    else:
        raise FrameError(f"unknown serialize type {serialize_type} (expected 0 JSON or 1 ROCKETMQ)")
    cmd.body = bytes(payload[4 + header_len :])
    return cmd


def decode(frame: bytes) -> RemotingCommand:
    """Decode one complete frame (length prefix included)."""
    if len(frame) < 4:
        raise FrameError("frame shorter than its length prefix")
    (length,) = struct.unpack_from(">i", frame, 0)
    if length != len(frame) - 4:
        raise FrameError(f"length prefix says {length} bytes follow, frame has {len(frame) - 4}")
    return decode_payload(frame[4:])


async def read_command(reader: asyncio.StreamReader, max_frame: int = DEFAULT_MAX_FRAME) -> RemotingCommand:
    """Read one frame from a stream; rejects frames over `max_frame` before allocating them.

    Raises asyncio.IncompleteReadError when the peer closes, FrameError on bad bytes.
    """
    prefix = await reader.readexactly(4)
    (length,) = struct.unpack(">i", prefix)
    if length < 4 or length > max_frame:
        raise FrameError(f"frame length {length} outside 4..{max_frame} bytes (max_frame setting)")
    payload = await reader.readexactly(length)
    return decode_payload(payload)
