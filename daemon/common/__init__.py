"""Small helpers several daemon packages use (charts)."""
