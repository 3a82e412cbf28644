"""The query layer of genbot's storage: portable SQL and the dialect layer under it."""
