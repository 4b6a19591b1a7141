"""Column-level lineage: plan model, resolver, rendering, capture, store, queries, exports."""
