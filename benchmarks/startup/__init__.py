"""How long the command line takes to answer `--help` (`python -m benchmarks.startup.run`)."""
