"""Settings of the native-metrics collector: each 5.1+ broker's own Prometheus endpoint (DESIGN §5).

A RocketMQ 5.1+ broker with `metricsExporterType=PROM` serves `/metrics` on
`metricsPromExporterPort` (5557 by default) of `metricsPromExporterHost`. rocketwatch finds the
brokers in the cluster's broker table (runtime info over remoting) and scrapes `<host>:<port>`;
a proxy or a broker on another port is given by explicit URL.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from config.durations import Duration

DEFAULT_PORT = 5557  # metricsPromExporterPort's default


class NativeMetricsConfig(BaseModel):
    """Where and how to read the brokers' native metrics; `mode: auto` scrapes the 5.1+ brokers that serve them."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["auto", "on", "off"] = Field(
        default="auto",
        description="auto: scrape every 5.1+ broker of the broker table; one that refuses the connection has "
        "its exporter off (metricsExporterType=DISABLE, the broker's default) and is skipped without an alert. "
        "on: every refusal is a failed collection. off: never scrape",
    )
    port: int = Field(default=DEFAULT_PORT, ge=1, le=65535, description="the brokers' metricsPromExporterPort")
    path: str = Field(default="/metrics", description="path of the page on each broker")
    https: bool = Field(default=False, description="speak TLS to the brokers' endpoints")
    urls: list[str] = Field(
        default_factory=list,
        description="explicit pages (a proxy, or a broker on another host or port), scraped besides the brokers",
    )
    brokers: bool = Field(default=True, description="scrape <broker host>:<port>; false: only the explicit urls")
    timeout: Duration = Field(
        default=timedelta(seconds=5), description="for one page"
    )
    username: str | None = Field(default=None, description="basic auth user; the password comes from password_env")
    password_env: str | None = Field(default=None, description="environment variable or systemd credential")
    tls_ca_file: str | None = Field(default=None, description="CA bundle for the endpoints' certificates")

    @field_validator("urls")
    @classmethod
    def _http_urls(cls, value: list[str]) -> list[str]:
        out = []
        for url in value:
            parts = urlsplit(url.strip())
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"expected an http(s) URL such as http://10.0.0.5:5557/metrics, got {url!r}")
            out.append(parts._replace(path=parts.path if parts.path not in ("", "/") else "/metrics").geturl())
        return out

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        return value if value.startswith("/") else "/" + value

    @model_validator(mode="after")
    def _auth_pair(self) -> NativeMetricsConfig:
        if (self.username is None) != (self.password_env is None):
            raise ValueError("give username and password_env together (the password is never written in the file)")
        if self.timeout.total_seconds() <= 0:
            raise ValueError("timeout must be more than 0 s")
        return self
