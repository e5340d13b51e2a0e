"""Microbenchmarks: what this machine really does for deep learning, on CPU and GPU.

Everything here runs inside a child process (see ``hwadvisor.benchrun``); torch is imported only
inside the functions that use it.
"""
