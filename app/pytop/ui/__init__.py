"""pytop's Textual app: it only ever shows Snapshots the sampler publishes."""
