"""`python -m plax.extend`: print the primitive coverage table."""
from plax.extend import coverage

print(coverage())
