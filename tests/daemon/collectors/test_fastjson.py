"""The fastjson parser: fastjson's quirks, clean failures, and property-based round trips."""

from __future__ import annotations

import contextlib
import json
import math
import struct
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.collectors.remoting import frame
from daemon.collectors.remoting.fastjson import FastjsonError, FrozenDict, loads, parse_message_queue

# ---- fastjson quirks ----


def test_integer_keys_become_ints() -> None:
    assert loads(b'{"brokerAddrs":{0:"127.0.0.1:10911",1:"b:1"}}') == {
        "brokerAddrs": {0: "127.0.0.1:10911", 1: "b:1"}
    }
    assert loads(b'{"0":"a"}') == {"0": "a"}


def test_object_keys_become_hashable_frozen_dicts() -> None:
    doc = loads(
        b'{{"brokerName":"b","queueId":3,"topic":"T"}:{"brokerOffset":5},{"topic":"T","brokerName":"b","queueId":4}:{}}'
    )
    keys = list(doc)
    assert all(isinstance(k, FrozenDict) for k in keys)
    assert keys[0].get("queueId") == 3 and keys[0]["topic"] == "T"
    assert doc[keys[0]] == {"brokerOffset": 5}
    # Key order does not matter for equality or hashing (Go clients write topic first).
    assert FrozenDict({"topic": "T", "brokerName": "b", "queueId": 3}) in doc


def test_array_and_constant_keys() -> None:
    doc = loads(b'{[1,[2]]:"a",null:"n",true:"t"}')
    assert doc == {(1, (2,)): "a", None: "n", True: "t"}


def test_null_nan_infinity() -> None:
    doc = loads(b'{"a":null,"b":NaN,"c":Infinity,"d":-Infinity,"e":1.0E-4,"f":-0}')
    assert doc["a"] is None and math.isnan(doc["b"])
    assert doc["c"] == math.inf and doc["d"] == -math.inf
    assert doc["e"] == 1.0e-4 and doc["f"] == 0


def test_raw_utf8_and_escapes_and_whitespace() -> None:
    assert loads('{\t"k" :\n "é\\n\\u00e9😀" }'.encode()) == {"k": "é\né😀"}
    assert loads(b"\xef\xbb\xbf[1]") == [1]  # BOM tolerated
    assert loads('{"s":"tab\there"}') == {"s": "tab\there"}  # raw control char tolerated


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (b"", "unexpected end"),
        (b"{", "unexpected end"),
        (b'{"a" 1}', "expected ':'"),
        (b'{"a":1 "b":2}', "expected ',' or '}'"),
        (b"[1 2]", "expected ',' or ']'"),
        (b"[1,]", "expected a value"),
        (b'"abc', "bad string"),
        (b"[1] x", "unexpected data"),
        (b"\xff\xfe", "not UTF-8"),
        (b"tru", "expected a value"),
    ],
)
def test_bad_input_names_offset_and_snippet(text: bytes, fragment: str) -> None:
    with pytest.raises(FastjsonError) as info:
        loads(text)
    assert fragment in str(info.value)
    assert info.value.offset >= 0


def test_error_offset_is_in_bytes() -> None:
    with pytest.raises(FastjsonError) as info:
        loads('{"é":x}'.encode())
    assert info.value.offset == len('{"é":'.encode())
    assert "x" in info.value.snippet


@pytest.mark.parametrize("opener", ["[", "{", '{"a":', "{{", "[{"])
def test_deep_nesting_is_rejected_cleanly(opener: str) -> None:
    with pytest.raises(FastjsonError, match="nesting deeper than"):
        loads(opener * 200_000)


def test_depth_limit_is_configurable() -> None:
    assert loads("[[[1]]]", max_depth=3) == [[[1]]]
    with pytest.raises(FastjsonError):
        loads("[[[1]]]", max_depth=2)


def test_huge_integer_is_rejected_not_hung() -> None:
    with pytest.raises(FastjsonError, match="too long"):
        loads("9" * 100_000)


@pytest.mark.timeout(60)
def test_large_documents_parse_in_linear_time() -> None:
    # 40,000 object-keyed entries, 2 MB of text (≈ 0.4 s): a parser that rescans the text per
    # entry or per character (quadratic) would need hours for it, so the test's timeout is the
    # bound and no stopwatch is needed.
    big = (
        "[" + ",".join(f'{{{{"topic":"T","queueId":{i}}}:{{"a":1.5,"b":"x"}}}}' for i in range(40_000)) + "]"
    )
    parsed = loads(big)
    assert len(parsed) == 40_000
    assert parsed[-1] == {FrozenDict({"topic": "T", "queueId": 39_999}): {"a": 1.5, "b": "x"}}


# ---- parse_message_queue ----


@pytest.mark.parametrize(
    "key",
    [
        FrozenDict({"brokerName": "broker-a", "queueId": 3, "topic": "T"}),
        FrozenDict({"topic": "T", "brokerName": "broker-a", "queueId": 3}),
        FrozenDict({"queueId": "3", "topic": "T", "brokerName": "broker-a"}),
        '{"topic":"T","brokerName":"broker-a","queueId":3}',
        "MessageQueue [topic=T, brokerName=broker-a, queueId=3]",
    ],
)
def test_parse_message_queue_any_order(key: Any) -> None:
    assert parse_message_queue(key) == ("T", "broker-a", 3)


def test_parse_message_queue_from_parsed_go_style_key() -> None:
    doc = loads(b'{"mqTable":{{"topic":"%RETRY%g","brokerName":"b","queueId":0}:{"dropped":false}}}')
    (key,) = doc["mqTable"]
    assert parse_message_queue(key) == ("%RETRY%g", "b", 0)


@pytest.mark.parametrize(
    "key",
    [
        FrozenDict({"topic": "T"}),
        3,
        "nonsense",
        FrozenDict({"topic": "T", "brokerName": "b", "queueId": "x"}),
    ],
)
def test_parse_message_queue_rejects_non_queues(key: Any) -> None:
    with pytest.raises(FastjsonError):
        parse_message_queue(key)


# ---- property tests ----

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
# Keys that are objects/arrays are parsed frozen all the way down, so generate them frozen.
_frozen = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text(max_size=6), inner, max_size=3).map(FrozenDict)
    ),
    max_leaves=8,
)
_keys = (
    st.text(max_size=10)
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.dictionaries(
        st.sampled_from(["topic", "brokerName", "queueId", "x"]), _frozen, min_size=1, max_size=3
    ).map(FrozenDict)
    | st.lists(_frozen, min_size=1, max_size=3).map(tuple)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=30,
)


def fastjson_dumps(value: Any) -> str:
    """Serialise like fastjson: non-string map keys raw, object keys as objects, raw UTF-8."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ",".join(fastjson_dumps(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{fastjson_dumps(k)}:{fastjson_dumps(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


@given(_values)
@settings(max_examples=300)
def test_round_trip(value: Any) -> None:
    text = fastjson_dumps(value)
    assert loads(text) == value
    assert loads(text.encode("utf-8")) == value


@given(_values, st.sampled_from([" ", "\t", "\n", "\r\n"]))
def test_round_trip_pretty_printed(value: Any, ws: str) -> None:
    text = (
        fastjson_dumps(value).replace(",", "," + ws).replace(":", ws + ":" + ws)
        if not _has_str(value)
        else None
    )
    if text is not None:
        assert loads(ws + text + ws) == value


def _has_str(value: Any) -> bool:
    # Whitespace injection by replace() would corrupt string contents; only inject into string-free docs.
    if isinstance(value, str):
        return True
    if isinstance(value, Mapping):
        return any(_has_str(k) or _has_str(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_str(v) for v in value)
    return False


@pytest.mark.timeout(120)
@given(st.binary(max_size=2000))
@settings(max_examples=500, deadline=None)
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    # Never hangs either: catastrophic backtracking on 2,000 bytes would not end, and the test's
    # timeout fails it (no per-example stopwatch, which a loaded machine would trip).
    with contextlib.suppress(FastjsonError):
        loads(data)


@given(st.text(alphabet='{}[]:,"0123456789-.eE \\ntrufalsNI', max_size=400))
@settings(max_examples=500)
def test_json_like_garbage_never_crashes(text: str) -> None:
    with contextlib.suppress(FastjsonError):
        loads(text)


@given(st.binary(max_size=600))
@settings(max_examples=500)
def test_frame_decode_of_arbitrary_bytes(data: bytes) -> None:
    for candidate in (data, struct.pack(">i", len(data)) + data):
        with contextlib.suppress(frame.FrameError):
            frame.decode(candidate)


@given(st.integers(min_value=0, max_value=2), st.binary(max_size=300))
@settings(max_examples=300)
def test_frame_decode_with_plausible_prefix(serialize_type: int, data: bytes) -> None:
    header_len = min(len(data), 300)
    payload = struct.pack(">I", (serialize_type << 24) | header_len) + data
    with contextlib.suppress(frame.FrameError):
        frame.decode(struct.pack(">i", len(payload)) + payload)


# ---- the fast path (C decoder after marking odd keys) reads exactly what the parser reads ----


def _typed(value: Any) -> Any:
    """`value` with every scalar tagged by its type, so 1 and 1.0 and True differ in a comparison."""
    if isinstance(value, Mapping):
        return (type(value).__name__, sorted(((_typed(k), _typed(v)) for k, v in value.items()), key=repr))
    if isinstance(value, list | tuple):
        return (type(value).__name__, [_typed(v) for v in value])
    return (type(value).__name__, repr(value))


def _parsed_by_the_parser(text: str) -> Any:
    from daemon.collectors.remoting.fastjson import _Parser

    return _Parser(text, 100).value(0, False)


def test_every_real_body_reads_as_the_parser_reads_it() -> None:
    from tests.fixtures_path import WIRE

    bodies = [frame.decode(path.read_bytes()).body for path in sorted(WIRE.glob("*.frame"))]
    bodies = [b for b in bodies if b and b.lstrip()[:1] in (b"{", b"[")]
    assert len(bodies) >= 10, "the 4.9.7 captures hold JSON bodies"
    for body in bodies:
        text = body.decode()
        assert _typed(loads(body)) == _typed(_parsed_by_the_parser(text))


@pytest.mark.parametrize("text", [
    '{"a":"x,1:y","b":{0:"z"}}',                       # a number key's shape inside a string
    '{"p":"{\\"topic\\":\\"T\\"}:v","q":{{"topic":"T","brokerName":"b","queueId":1}:2}}',
    '{"a":{"b":[1,{"c":2}]},"d":{ 7 : [1.5, -0.0, 1e3]}}',
    '{{"topic":"T","brokerName":"b","queueId":1}:{"o":1},"plain":2}',  # mixed keys in one map
])
def test_odd_looking_strings_and_keys_read_as_the_parser_reads_them(text: str) -> None:
    assert _typed(loads(text)) == _typed(_parsed_by_the_parser(text))


@given(_values)
@settings(max_examples=300, deadline=None)
def test_fast_path_matches_the_parser(value: Any) -> None:
    text = fastjson_dumps(value)
    assert _typed(loads(text)) == _typed(_parsed_by_the_parser(text))


def test_a_body_carrying_the_fast_paths_marker_reads_as_written() -> None:
    assert loads('{"\ue0007":1,"a":{0:2}}') == {"\ue0007": 1, "a": {0: 2}}
