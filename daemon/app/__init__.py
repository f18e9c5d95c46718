"""The running daemon: its wiring (daemon.py), jobs, reload (reloader, config_diff, rulebook), lifecycle (shutdown, watchdog, sd_notify), self-monitoring, and collect --once."""
