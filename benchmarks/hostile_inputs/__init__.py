"""The hostile-input cases of the commands that read and write files, run as a user would
(`python -m benchmarks.hostile_inputs.run`)."""
