"""--push: what pytop samples, sent on every 10 s per process as pprof to a fleet's profiling
server (Grafana Pyroscope's ingest API). destination.py says where and under which names,
sender.py sends the profiles that sampling cut (sampling/pushing.py) from a thread of its own,
so that a slow or failing server never holds sampling up."""
