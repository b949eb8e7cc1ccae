"""`plax.scipy.optimize`: unconstrained minimization with BFGS (`minimize`), traceable
end to end (it runs under `jit` and `vmap`)."""
from plax_stdlib.scipy.optimize.minimize import OptimizeResults as OptimizeResults
from plax_stdlib.scipy.optimize.minimize import minimize as minimize
