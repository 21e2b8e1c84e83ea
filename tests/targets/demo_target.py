"""Target: pytop's bundled demo workload (the file given as argv[1], pytop/demo.py), which a new
user sees first. It is loaded (its imports done) before it reports, then runs."""

import runpy
import sys

from report import ready, thread_info

demo = runpy.run_path(sys.argv[1], run_name="pytop_demo")
ready({"threads": {"main": thread_info()}, "version": list(sys.version_info[:3])})
demo["main"]()
