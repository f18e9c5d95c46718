"""After the fact: analyze (logs, store dirs, thread dumps), replay, rule unit tests, a broker store directory read offline."""
