"""Rules: declarative rewrites, dataflow patterns and callbacks as rules, and the rule library."""
