"""How big a recording grows, and how often it says where a reader may start: the numbers the
writer's thread (queued.py) keeps and the command line (--record-max-size) offers. Nothing is
imported here, so that the command line reads them without loading the recorder."""

DEFAULT_MAX_SIZE = 100 << 20  # --record-max-size: a flight recorder that runs for days stays this small
MIN_MAX_SIZE = 256 << 10  # ... and at least this: below it a file would keep a few windows only
KEY_SECONDS = 300.0  # a key frame at least this often (where a seek into a long recording starts)...
KEY_BYTES = 16 << 20  # ... or after this many bytes (a recording without a bound) ...
KEY_SHARE = 8  # ... or an eighth of the bound (so that rotation keeps 5/8 to 3/4 of it) ...
KEY_WEIGHT = 2  # ... but only after twice the last key's bytes: keys are at most a third of a file
KEEP_SHARE = 0.75  # rotation keeps at most this share of the bound
