"""Driver source shared by the frontend-attribute tests (xla_metadata, compute_on):
`tagged_ops(text)` lists the ops of a lowered module, each with its
`mhlo.frontend_attributes` (`'sine{a = "1"}'`), for comparing plax with JAX."""

TAGGED_OPS = r'''
import re

def tagged_ops(text):
    ops = []
    for line in text.splitlines():
        m = re.search(r"= (?:stablehlo\.([a-z_]+)|(call) @)", line)
        if m:
            attrs = re.search(r"mhlo\.frontend_attributes = (\{[^}]*\})", line)
            ops.append((m.group(1) or m.group(2)) + (attrs.group(1) if attrs else ""))
    return ops
'''
