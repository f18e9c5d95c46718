"""The daemon's HTTP endpoints: metrics, health, readiness, alerts and reload (localhost by default)."""
