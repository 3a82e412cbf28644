"""Storage records: plain frozen dataclasses (nothing else of genbot); timestamps are Unix seconds
from the store's clock, days UTC ``YYYY-MM-DD``."""
