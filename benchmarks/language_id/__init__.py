"""Language identification on held-out sentences, and routing among a bundle's languages
(`python -m benchmarks.language_id.run`)."""
