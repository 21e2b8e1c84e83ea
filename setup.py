"""Only here because cffi's extension build is declared through setuptools' `cffi_modules`."""

from setuptools import setup

setup(cffi_modules=["native/build_ffi.py:ffibuilder"])
