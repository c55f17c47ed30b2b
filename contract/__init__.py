"""The run contract as code: what the controller, the host runner and the analysis agree on.

Standard library only, because the host runner imports it on testbed hosts that have nothing but Python.
docs/contracts.md describes these modules; each fact lives here once.
"""
