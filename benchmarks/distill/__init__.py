"""Multilingual knowledge distillation: acceptance, forgetting, recipes and studies
(`python -m benchmarks.distill.run`)."""