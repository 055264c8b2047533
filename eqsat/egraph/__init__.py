"""The e-graph: term shapes, the egglog backend, Python-side tables and types, lowering and lifting."""
