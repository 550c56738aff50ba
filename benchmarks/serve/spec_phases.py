"""The phases' timing that the load generator and everything reading its output agree on. Nothing is imported
here: the generator starts once per phase, pinned to the client's core, and must start fast."""

SETTLE_S = 10.0
"""A recovery's p99 counts from this far into the phase: issue 39 asks for the sustainable p99 back within 10 s."""
WINDOW_S = 10.0
"""The p99 and the server's account are also reported per this many seconds of a phase."""
