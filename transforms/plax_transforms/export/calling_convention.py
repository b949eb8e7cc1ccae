"""The calling-convention versions of exported modules (JAX's numbering): what plax
writes, and the range it calls."""
minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10
CALLING_CONVENTION_VERSION = 10
