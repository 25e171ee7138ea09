"""The task corpus: records, synthetic projects, registry mutants, manifests, queries, splits."""
