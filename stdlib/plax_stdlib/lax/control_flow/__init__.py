"""Structured control flow: higher-order primitives carrying closed Jaxprs
(`cond`, `while`, `scan`, `linear_solve`) and the API built on them."""
from plax_stdlib.lax.control_flow.associative_scan import associative_scan
from plax_stdlib.lax.control_flow.cond import cond, cond_p, switch
from plax_stdlib.lax.control_flow.custom_root import custom_root
from plax_stdlib.lax.control_flow.linear_solve import custom_linear_solve, linear_solve_p
from plax_stdlib.lax.control_flow.loops import fori_loop, while_loop, while_p
from plax_stdlib.lax.control_flow.map import map
from plax_stdlib.lax.control_flow.scan import scan, scan_p
from plax_stdlib.lax.control_flow import scan_lowering  # noqa: F401  (its closed_call_p)

__all__ = ["associative_scan", "cond", "cond_p", "custom_linear_solve", "custom_root", "fori_loop",
           "linear_solve_p", "map", "scan", "scan_p", "switch", "while_loop", "while_p"]
