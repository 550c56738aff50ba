"""FOCUS auxiliary spaces compared, one tokenizer per language
(`python -m benchmarks.vocabulary_transfer.run`)."""
