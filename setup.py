"""Only here because cffi's extension build is declared through setuptools' `cffi_modules`. cffi
builds it for CPython's limited API (an .abi3.so): the wheel says so (cp39-abi3), so one wheel
installs on every CPython pytop runs under."""

from setuptools import setup

setup(cffi_modules=["native/build_ffi.py:ffibuilder"], options={"bdist_wheel": {"py_limited_api": "cp39"}})
