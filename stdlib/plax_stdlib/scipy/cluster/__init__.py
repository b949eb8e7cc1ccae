"""`plax.scipy.cluster`: clustering; `plax.scipy.cluster.vq` assigns observations
to their nearest codes."""
from plax_stdlib.scipy.cluster import vq as vq
