"""Recordings (issue 37): a session written as it samples, read back in the same view. This
first part is the container (container.py): the file's framing, which every later part writes
its windows into; docs/recording.md says its byte layout."""
