"""The sessions' apps, hub side: the route to each session's apps' own origin (proxy.py)."""
