"""Replay layer: runs a schedule on the modeled hardware in simulated time (SimPy only here).

``links.FlowNetwork`` shares link bandwidth among concurrent flows (fluid, max-min fair); the
engine issues ops per rank, rendezvous collectives, and turns their plans into flows.
"""
