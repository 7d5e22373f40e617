"""Pieces the hardware-queue workloads share that are not workloads themselves.

``decoder`` (a small KV-cache transformer) and ``relu_mlp`` (one layer's hand-written forward and
backward) are model parts; ``segments`` and ``stage_intervals`` name recorded stream intervals by the
work that ran in them (pure: no torch); ``spin`` calibrates spin kernels through the timing loop.
Every module of ``aorta.hw_queue.workloads`` is one registered workload.
"""
