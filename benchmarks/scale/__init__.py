"""The scale-out parts: export, mining, BUCC and streaming (`python -m benchmarks.scale.run`)."""
