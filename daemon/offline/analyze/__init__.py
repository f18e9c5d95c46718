"""`rocketwatch analyze`: logs, store directories and thread dumps after the fact, as one timeline."""
