"""Input sources: offline files (`files`) and, imported lazily, the live cluster reader."""
