"""A cluster's sources: name servers, a rocketmq-exporter, or both; at least one."""

import textwrap
from datetime import timedelta

import pytest

from config.loader import ConfigLoadError, load_config


def _load(tmp_path, text):
    path = tmp_path / "rocketwatch.yaml"
    path.write_text(textwrap.dedent(text))
    return load_config(path)


def test_an_exporter_alone_is_a_source(tmp_path):
    config = _load(
        tmp_path,
        """\
        clusters:
          - name: prod
            exporter:
              url: http://10.0.0.5:5557/metrics
              timeout: 3s
        """,
    )
    cluster = config.clusters[0]
    assert cluster.namesrv == []
    assert cluster.exporter.url == "http://10.0.0.5:5557/metrics"
    assert cluster.exporter.timeout == timedelta(seconds=3)


def test_both_sources_together_and_the_default_path_and_timeout(tmp_path):
    config = _load(
        tmp_path,
        """\
        clusters:
          - name: prod
            namesrv: "10.0.0.1:9876;10.0.0.2:9876"
            exporter: {url: "http://exporter.internal:5557"}
        """,
    )
    cluster = config.clusters[0]
    assert cluster.namesrv == ["10.0.0.1:9876", "10.0.0.2:9876"]
    assert cluster.exporter.url == "http://exporter.internal:5557/metrics"
    assert cluster.exporter.timeout == timedelta(seconds=10)


@pytest.mark.parametrize(
    ("cluster_yaml", "line", "field", "message"),
    [
        (
            "- name: prod\n",
            2,
            "clusters.0",
            "cluster 'prod' needs a source: namesrv (host:port list), exporter (url) or logs",
        ),
        ("- name: prod\n  namesrv: []\n", 2, "clusters.0", "needs a source"),
        (
            "- name: prod\n  exporter: {url: '10.0.0.5:5557'}\n",
            3,
            "clusters.0.exporter.url",
            "expected an http(s) URL such as http://10.0.0.5:5557/metrics, got '10.0.0.5:5557'",
        ),
        (
            "- name: prod\n  exporter: {url: 'http://h:5557', timeout: 0s}\n",
            3,
            "clusters.0.exporter.timeout",
            "more than 0 s",
        ),
        ("- name: prod\n  exporter: {uri: 'http://h:5557'}\n", 3, "clusters.0.exporter.uri", "unknown field"),
    ],
)
def test_mistakes_are_positioned(tmp_path, cluster_yaml, line, field, message):
    path = tmp_path / "rocketwatch.yaml"
    path.write_text("clusters:\n" + textwrap.indent(cluster_yaml, "  "))
    with pytest.raises(ConfigLoadError) as err:
        load_config(path)
    errors = [str(e) for e in err.value.errors]
    assert any(e.startswith(f"{path}:{line}:") and f"{field}:" in e and message in e for e in errors), errors
